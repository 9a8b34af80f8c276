import { createServer, request as forward, type IncomingMessage, type OutgoingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { newId } from '#shared/ids';
import { ERROR_TYPES } from '#schemas/common';

/**
 * The HTTP server of `npm start`, in front of serverless offline, in the place API Gateway holds when
 * deployed. Requests go through unchanged, except that repeated headers are joined with commas as
 * API Gateway joins them (serverless offline would keep only the last Authorization header). What
 * cannot reach a function, or what serverless offline's own server (hapi) would refuse outside the
 * API's error envelope, is answered here, in the envelope, with a request ID in `x-request-id`:
 *
 *   request line or headers over 10 KB (API Gateway's limit)      431 invalid_request_error
 *   a request Node cannot parse (bad method token, bad framing)     400 / 405 in the envelope
 *   a path with an invalid percent escape                           400 invalid_request_error
 *   a Content-Type that is not type/subtype, multipart without a boundary   415 unsupported_media_type_error
 *   a body over 10 MiB (API Gateway's and serverless offline's limit)        413 payload_too_large
 *   CONNECT                                                         405 method_not_allowed_error
 */
export const MAX_REQUEST_HEAD_BYTES = 10 * 1024;
export const MAX_BODY_BYTES = 10 * 1024 * 1024;
/** Node refuses anything larger outright; below it, this server answers by the rules above. */
const PARSER_MAX_HEADER_BYTES = 128 * 1024;

type Status = 400 | 405 | 413 | 415 | 431 | 502;
const TYPES: Record<Status, string> = {
  400: ERROR_TYPES[400],
  405: ERROR_TYPES[405],
  413: ERROR_TYPES[413],
  415: ERROR_TYPES[415],
  431: ERROR_TYPES[400],
  502: ERROR_TYPES[500],
};

function envelope(status: Status, message: string, extra: Record<string, string> = {}) {
  const requestId = newId('request');
  const body = JSON.stringify({ request_id: requestId, error: { type: TYPES[status], message } });
  const headers = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    'x-content-type-options': 'nosniff',
    'x-request-id': requestId,
    connection: 'close',
    ...extra,
  };
  return { body, headers };
}

function answer(res: ServerResponse, status: Status, message: string, extra?: Record<string, string>) {
  const { body, headers } = envelope(status, message, extra);
  res.writeHead(status, headers).end(body);
}

const REASONS: Record<Status, string> = { 400: 'Bad Request', 405: 'Method Not Allowed', 413: 'Payload Too Large', 415: 'Unsupported Media Type', 431: 'Request Header Fields Too Large', 502: 'Bad Gateway' };

/** An answer written straight to a socket, for requests Node's parser refused before any response existed. */
function answerSocket(socket: Socket, status: Status, message: string) {
  if (!socket.writable) return socket.destroy();
  const { body, headers } = envelope(status, message);
  const head = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  socket.end(`HTTP/1.1 ${status} ${REASONS[status]}\r\n${head}\r\n${body}`);
}

/** What is wrong with a request before it is forwarded, if anything. */
function refusal(req: IncomingMessage): { status: Status; message: string } | undefined {
  const url = req.url ?? '/';
  const headBytes = req.method!.length + url.length + 11 + req.rawHeaders.reduce((n, part, i) => n + Buffer.byteLength(part) + 2, 0);
  if (headBytes > MAX_REQUEST_HEAD_BYTES) {
    return { status: 431, message: `The request line and headers are ${headBytes} bytes; at most ${MAX_REQUEST_HEAD_BYTES} are accepted (as API Gateway does): send long values in a body` };
  }
  const path = url.split('?')[0]!;
  try {
    decodeURIComponent(path);
  } catch {
    return { status: 400, message: `The path has an invalid percent escape: ${path.slice(0, 200)}` };
  }
  const contentType = req.headers['content-type'];
  if (contentType !== undefined) {
    if (!/^[\w!#$&^.+-]+\/[\w!#$&^.+-]+\s*(;.*)?$/s.test(contentType)) {
      return { status: 415, message: `Content-Type '${contentType.slice(0, 100)}' is not a media type; send application/json` };
    }
    if (/^multipart\//i.test(contentType) && !/;\s*boundary=/i.test(contentType)) {
      return { status: 415, message: 'multipart/form-data needs a boundary parameter of 1 to 70 characters (RFC 2046)' };
    }
  }
  const length = Number(req.headers['content-length'] ?? 0);
  if (length > MAX_BODY_BYTES) return { status: 413, message: tooLarge(length) };
  return undefined;
}

const tooLarge = (bytes?: number) =>
  `Requests are limited to ${MAX_BODY_BYTES / 1024 / 1024} MiB${bytes ? ` (got ${(bytes / 1024 / 1024).toFixed(1)} MiB)` : ''}; API Gateway and Lambda deployed carry 6 MB`;

/** Headers as API Gateway hands them on: each name once, repeated values joined with commas. */
function joinedHeaders(raw: string[]): OutgoingHttpHeaders {
  const headers: Record<string, string> = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    headers[name] = name in headers ? `${headers[name]},${raw[i + 1]}` : raw[i + 1]!;
  }
  return headers;
}

export interface FrontDoor {
  port: number;
  close(): Promise<void>;
}

export async function startFrontDoor(options: { port: number; host?: string; target: { host: string; port: number } }): Promise<FrontDoor> {
  const server: Server = createServer({ maxHeaderSize: PARSER_MAX_HEADER_BYTES, requireHostHeader: false }, (req, res) => {
    const refused = refusal(req);
    if (refused) {
      req.resume();
      return answer(res, refused.status, refused.message);
    }
    const upstream = forward(
      { host: options.target.host, port: options.target.port, method: req.method, path: req.url, headers: joinedHeaders(req.rawHeaders) },
      (reply) => {
        res.writeHead(reply.statusCode ?? 502, reply.rawHeaders);
        reply.pipe(res);
      },
    );
    upstream.on('error', (error) => {
      if (!res.headersSent) answer(res, 502, `The local API is not reachable: ${error.message}`);
      else res.destroy();
    });
    let received = 0;
    req.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > MAX_BODY_BYTES) {
        upstream.destroy();
        req.unpipe(upstream);
        req.resume();
        if (!res.headersSent) answer(res, 413, tooLarge());
      }
    });
    req.pipe(upstream);
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    switch (error.code) {
      case 'HPE_HEADER_OVERFLOW':
        return answerSocket(socket, 431, `The request line and headers are over ${PARSER_MAX_HEADER_BYTES} bytes; at most ${MAX_REQUEST_HEAD_BYTES} are accepted (as API Gateway does)`);
      case 'HPE_INVALID_METHOD':
        return answerSocket(socket, 405, 'The request method is not an HTTP method this API serves (methods are upper case: GET, POST, PUT, PATCH, DELETE)');
      case 'ECONNRESET':
        return socket.destroy();
      default:
        return answerSocket(socket, 400, `The HTTP request could not be parsed (${error.code ?? error.message})`);
    }
  });
  server.on('connect', (_req: IncomingMessage, socket: Socket) => answerSocket(socket, 405, 'CONNECT is not allowed: this is not a proxy'));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
