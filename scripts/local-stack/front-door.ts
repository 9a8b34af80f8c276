import {
  createServer,
  request as forward,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { noEndpointMessage } from '#shared/http/paths';
import { newId } from '#shared/ids';
import { ERROR_TYPES } from '#schemas/common';

/**
 * The HTTP server of `npm start`, in front of serverless offline, in the place API Gateway holds when
 * deployed. Requests go through unchanged, except that repeated headers are joined with commas as
 * API Gateway joins them (serverless offline would keep only the last Authorization header). What
 * cannot reach a function, or what serverless offline's own server (hapi) would refuse outside the
 * API's error envelope, is answered here, in the envelope, with a request ID in `x-request-id`:
 *
 *   the functions are not ready yet (npm start is starting)          503 service_unavailable, Retry-After
 *   request line or headers over 10 KB (API Gateway's limit)          431 invalid_request_error
 *   a request Node cannot parse (bad method token, bad framing)       400 / 405 in the envelope
 *   a request target that is not a path (`*`, `http://host/…`)      400 invalid_request_error
 *   a path with an invalid percent escape                             400 invalid_request_error
 *   a path with a trailing slash (another path to API Gateway)        404 not_found_error
 *   a Content-Type that is not type/subtype; multipart without a valid boundary   415 unsupported_media_type_error
 *   a body over 10 MiB (API Gateway's and serverless offline's limit)  413 payload_too_large
 *   CONNECT                                                           405 method_not_allowed_error
 *   an answer that did not come from a function's HTTP stack (every one carries `x-request-id`):
 *     a failed invocation (serverless offline answers those with a Lambda error body, sometimes as 200)  502
 *     a refusal of serverless offline's own server (hapi: `{"statusCode":400,…}`)  its status, in the envelope
 *
 * A refused body is read to its end (up to a bound) before the answer, so a client that sends the
 * whole body before reading, as Node's fetch does, reads the answer instead of a broken pipe.
 */
export const MAX_REQUEST_HEAD_BYTES = 10 * 1024;
export const MAX_BODY_BYTES = 10 * 1024 * 1024;
/** Node refuses anything larger outright; below it, this server answers by the rules above. */
const PARSER_MAX_HEADER_BYTES = 128 * 1024;
/**
 * How much of a refused body is read and dropped so that the client gets to read the answer; past
 * this the answer goes out at once and the connection closes (a client still sending then sees it
 * closed, as with API Gateway).
 */
const MAX_DISCARD_BYTES = 64 * 1024 * 1024;
/** How long a refused body may pause before the connection is closed. */
const STALL_MS = 5_000;
/** Seconds a client is asked to wait while the API starts. */
const STARTING_RETRY_AFTER_SECONDS = 2;

type Status = 400 | 401 | 403 | 404 | 405 | 409 | 413 | 415 | 429 | 431 | 500 | 502 | 503;
const TYPES: Record<Status, string> = {
  400: ERROR_TYPES[400],
  401: ERROR_TYPES[401],
  403: ERROR_TYPES[403],
  404: ERROR_TYPES[404],
  405: ERROR_TYPES[405],
  409: ERROR_TYPES[409],
  413: ERROR_TYPES[413],
  415: ERROR_TYPES[415],
  429: ERROR_TYPES[429],
  431: ERROR_TYPES[400],
  500: ERROR_TYPES[500],
  // A function that could not answer: not the mail relay's error type of the same status.
  502: ERROR_TYPES[500],
  503: ERROR_TYPES[503],
};
const REASONS: Record<Status, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

function envelope(status: Status, message: string, extra: Record<string, string> = {}) {
  const requestId = newId('request');
  const body = JSON.stringify({ request_id: requestId, error: { type: TYPES[status], message } });
  const headers = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    'x-content-type-options': 'nosniff',
    'x-request-id': requestId,
    ...extra,
  };
  return { body, headers, requestId };
}

/**
 * Answers in the envelope. The request's body is read to its end and dropped first (so a client that
 * sends its whole body before reading, as Node's fetch does, gets the answer rather than a broken pipe);
 * `early` answers at once and drops the rest of the body after (for a body that is refused by its
 * declared length). Past MAX_DISCARD_BYTES, or when the client stops sending for STALL_MS, the
 * connection closes.
 */
function answer(
  req: IncomingMessage,
  res: ServerResponse,
  status: Status,
  message: string,
  extra: Record<string, string> = {},
  early = false,
) {
  if (res.headersSent) return void res.destroy();
  const send = (close: boolean) => {
    if (res.headersSent || res.destroyed) return;
    const { body, headers } = envelope(status, message, close ? { ...extra, connection: 'close' } : extra);
    res.writeHead(status, headers).end(body);
  };
  if (req.complete) return send(false);
  if (early) send(false);
  let dropped = 0;
  const giveUp = () => {
    stop();
    if (res.headersSent) req.socket.destroy();
    else send(true);
  };
  const timer = setTimeout(giveUp, STALL_MS);
  const onData = (chunk: Buffer) => {
    dropped += chunk.length;
    timer.refresh();
    if (dropped > MAX_DISCARD_BYTES) giveUp();
  };
  const onEnd = () => {
    stop();
    send(false);
  };
  const stop = () => {
    clearTimeout(timer);
    req.off('data', onData);
    req.off('end', onEnd);
  };
  req.on('data', onData);
  req.once('end', onEnd);
  req.once('error', () => {
    stop();
    res.destroy();
  });
  req.resume();
}

/** An answer written straight to a socket, for requests Node's parser refused before any response existed. */
function answerSocket(socket: Socket, status: Status, message: string) {
  if (!socket.writable) return socket.destroy();
  const { body, headers } = envelope(status, message, { connection: 'close' });
  const head = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${status} ${REASONS[status]}\r\n${head}\r\n${body}`);
}

/** RFC 2046 §5.1.1: 1 to 70 characters of bchars, the last one not a space. */
const BOUNDARY = /^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/;

/** The boundary parameter of a multipart Content-Type: its value, '' when empty, undefined when absent. */
export function boundaryOf(contentType: string): string | undefined {
  const match = /;\s*boundary\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/i.exec(contentType);
  if (!match) return undefined;
  return match[1] !== undefined ? match[1].replace(/\\(.)/g, '$1') : match[2]!.trim();
}

/** What is wrong with a request before it is forwarded, if anything. */
export function refusal(
  req: Pick<IncomingMessage, 'method' | 'url' | 'rawHeaders' | 'headers'>,
): { status: Status; message: string; early?: boolean } | undefined {
  const url = req.url ?? '/';
  const headBytes =
    req.method!.length + url.length + 11 + req.rawHeaders.reduce((n, part) => n + Buffer.byteLength(part) + 2, 0);
  if (headBytes > MAX_REQUEST_HEAD_BYTES) {
    return {
      status: 431,
      message: `The request line and headers are ${headBytes} bytes; at most ${MAX_REQUEST_HEAD_BYTES} are accepted (as API Gateway does): send long values in a body`,
    };
  }
  if (!url.startsWith('/')) {
    return { status: 400, message: notAPath(url) };
  }
  const path = url.split('?')[0]!;
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return { status: 400, message: `The path has an invalid percent escape: ${path.slice(0, 200)}` };
  }
  // API Gateway matches paths exactly; serverless offline's router would drop a trailing slash and
  // hand `DELETE /v3/grants/{id}/` to the grant itself.
  if (decoded.length > 1 && decoded.endsWith('/'))
    return { status: 404, message: noEndpointMessage(req.method!, decoded) };
  const contentType = req.headers['content-type'];
  if (contentType !== undefined) {
    if (!/^[\w!#$&^.+-]+\/[\w!#$&^.+-]+\s*(;.*)?$/s.test(contentType)) {
      return {
        status: 415,
        message: `Content-Type '${contentType.slice(0, 100)}' is not a media type; send application/json`,
      };
    }
    if (/^multipart\//i.test(contentType)) {
      const boundary = boundaryOf(contentType);
      if (boundary === undefined)
        return {
          status: 415,
          message: 'multipart/form-data needs a boundary parameter of 1 to 70 characters (RFC 2046)',
        };
      if (!BOUNDARY.test(boundary)) {
        return {
          status: 415,
          message: `The multipart boundary '${boundary.slice(0, 80)}' is not valid: it must be 1 to 70 letters, digits or '()+_,-./:=? characters, not ending in a space (RFC 2046)`,
        };
      }
    }
  }
  const length = Number(req.headers['content-length'] ?? 0);
  if (length > MAX_BODY_BYTES) return { status: 413, message: tooLarge(length), early: true };
  return undefined;
}

const notAPath = (target?: string) =>
  `The request target must be a path starting with '/', such as /v3/grants${target ? `; got '${target.slice(0, 100)}'` : ''}`;

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

/** Every answer of the functions' HTTP stack carries its request ID (shared/http/middleware/response.ts). */
const fromFunction = (headers: IncomingHttpHeaders) => typeof headers['x-request-id'] === 'string';

/** A readable reason from an answer that did not come from a function (a Lambda error or hapi's JSON). */
function upstreamReason(body: string): string {
  try {
    const parsed = JSON.parse(body) as { errorType?: string; errorMessage?: string; message?: string; error?: string };
    if (parsed.errorMessage) return `${parsed.errorType ?? 'Error'}: ${parsed.errorMessage}`;
    return parsed.message ?? parsed.error ?? body;
  } catch {
    return body;
  }
}

export interface FrontDoor {
  port: number;
  /** From now on requests go to the functions (until then: 503 "starting"). */
  ready(): void;
  close(): Promise<void>;
}

export async function startFrontDoor(options: {
  port: number;
  host?: string;
  target: { host: string; port: number };
  /** Whether to serve at once (default) or answer 503 until `ready()`. */
  starting?: boolean;
  /** Told of every answer that did not come from a function, with what the client was not shown. */
  onFailure?: (failure: { requestId: string; method: string; path: string; status: number; body: string }) => void;
}): Promise<FrontDoor> {
  let isReady = !options.starting;
  const server: Server = createServer(
    { maxHeaderSize: PARSER_MAX_HEADER_BYTES, requireHostHeader: false },
    (req, res) => {
      const refused = refusal(req);
      if (refused) return answer(req, res, refused.status, refused.message, {}, refused.early);
      if (!isReady) {
        return answer(req, res, 503, 'starting: the local API is starting; retry in a moment', {
          'retry-after': String(STARTING_RETRY_AFTER_SECONDS),
        });
      }
      const upstream = forward(
        {
          host: options.target.host,
          port: options.target.port,
          method: req.method,
          path: req.url,
          headers: joinedHeaders(req.rawHeaders),
        },
        (reply) => {
          if (fromFunction(reply.headers)) {
            res.writeHead(reply.statusCode ?? 502, reply.rawHeaders);
            reply.pipe(res);
            return;
          }
          // Not an answer of our HTTP stack: read it (small: an error body) and answer in the envelope.
          const chunks: Buffer[] = [];
          reply.on('data', (chunk: Buffer) => chunks.length < 64 && chunks.push(chunk));
          reply.on('end', () => {
            const body = Buffer.concat(chunks).toString('utf8');
            const status = reply.statusCode ?? 502;
            const refusedByServer = status >= 400 && status < 500 && status in TYPES;
            const shown: Status = refusedByServer ? (status as Status) : 502;
            const message = refusedByServer
              ? `The request was refused before reaching a function: ${upstreamReason(body).slice(0, 300)}`
              : 'The function could not run (its invocation failed); the npm start console has the details';
            const { body: text, headers, requestId } = envelope(shown, message);
            options.onFailure?.({
              requestId,
              method: req.method ?? '',
              path: (req.url ?? '').split('?')[0]!,
              status,
              body: body.slice(0, 2000),
            });
            if (!res.headersSent) res.writeHead(shown, headers).end(text);
          });
        },
      );
      upstream.on('error', (error) => {
        if (!res.headersSent) answer(req, res, 502, `The local API is not reachable: ${error.message}`);
        else res.destroy();
      });
      let received = 0;
      const onData = (chunk: Buffer) => {
        received += chunk.length;
        if (received > MAX_BODY_BYTES) {
          req.off('data', onData);
          req.unpipe(upstream);
          upstream.destroy();
          answer(req, res, 413, tooLarge());
        }
      };
      req.on('data', onData);
      req.pipe(upstream);
    },
  );
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    switch (error.code) {
      case 'HPE_HEADER_OVERFLOW':
        return answerSocket(
          socket,
          431,
          `The request line and headers are over ${PARSER_MAX_HEADER_BYTES} bytes; at most ${MAX_REQUEST_HEAD_BYTES} are accepted (as API Gateway does)`,
        );
      case 'HPE_INVALID_METHOD':
        return answerSocket(
          socket,
          405,
          'The request method is not an HTTP method this API serves (methods are upper case: GET, POST, PUT, PATCH, DELETE)',
        );
      case 'HPE_INVALID_URL':
        return answerSocket(socket, 400, notAPath());
      case 'ECONNRESET':
        return socket.destroy();
      default:
        return answerSocket(socket, 400, `The HTTP request could not be parsed (${error.code ?? error.message})`);
    }
  });
  server.on('connect', (_req: IncomingMessage, socket: Socket) =>
    answerSocket(socket, 405, 'CONNECT is not allowed: this is not a proxy'),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    ready: () => void (isReady = true),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
