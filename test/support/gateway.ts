import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, Context } from 'aws-lambda';
import { compareSpecificity, decodeParam } from '#shared/http/paths';
import { checkResponse } from './response-check';
import { buildEvent, lambdaContext } from '../../scripts/local-stack/api-gateway-event';
import {
  ROOT,
  httpApiEvents,
  loadServerlessConfig,
  type HttpApiEvent,
} from '../../scripts/local-stack/serverless-config';

/**
 * A local stand-in for API Gateway (HTTP API, payload format 2.0) that the integration tests drive
 * over real HTTP. Routes come from serverless.yml; each request becomes the event API Gateway would
 * build (scripts/local-stack/api-gateway-event.ts) and is handed to the real handler module in this
 * process.
 */
type Handler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyResultV2>;

const MAX_PAYLOAD = 10 * 1024 * 1024;

export interface Gateway {
  url: string;
  close(): Promise<void>;
  /** Builds the event API Gateway would send for a request, and invokes the matched handler in-process. */
  invoke(request: {
    method: string;
    path: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
  }): Promise<APIGatewayProxyResultV2>;
}

function matchPath(template: string, path: string): Record<string, string> | undefined {
  const want = template.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    if (w.startsWith('{') && w.endsWith('}')) {
      if (!got[i]) return undefined;
      params[w.slice(1, -1)] = got[i]!;
    } else if (w !== got[i]) return undefined;
  }
  return params;
}

export interface GatewayOptions {
  /**
   * Ignore a trailing slash when matching a route, as serverless offline does (`DELETE /v3/grants/g/`
   * reaches `DELETE /v3/grants/{grant_id}`), and hand the function the path as sent: tests use it to
   * prove that the functions themselves refuse a path that is not their route's own. By default
   * routes match exactly, as API Gateway matches them.
   */
  ignoreTrailingSlash?: boolean;
}

export async function startGateway(options: GatewayOptions = {}): Promise<Gateway> {
  const events = httpApiEvents(loadServerlessConfig());
  const routes = events.filter((e) => e.method !== '*').sort((a, b) => compareSpecificity(a.path, b.path));
  const fallback = events.find((e) => e.method === '*');
  const handlers = new Map<string, Promise<Handler>>();

  const load = (event: HttpApiEvent): Promise<Handler> => {
    let handler = handlers.get(event.handler);
    if (!handler) {
      const dot = event.handler.lastIndexOf('.');
      const file = join(ROOT, `${event.handler.slice(0, dot)}.ts`);
      const name = event.handler.slice(dot + 1);
      handler = import(file).then((m: Record<string, Handler>) => m[name]!);
      handlers.set(event.handler, handler);
    }
    return handler;
  };

  const route = (
    method: string,
    path: string,
  ): { event: HttpApiEvent; routeKey: string; params?: Record<string, string> } | undefined => {
    const matched = options.ignoreTrailingSlash && path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    for (const event of routes) {
      if (event.method !== method && event.method !== 'ANY') continue;
      const params = matchPath(event.path, matched);
      if (params) return { event, routeKey: `${event.method} ${event.path}`, params };
    }
    return fallback ? { event: fallback, routeKey: '$default' } : undefined;
  };

  const dispatch = async (request: {
    method: string;
    url: string;
    headers: Record<string, string>;
    body: Buffer;
    sourceIp: string;
  }) => {
    const pathOnly = request.url.split('?')[0]!;
    const found = route(request.method, decodeParam(pathOnly));
    if (!found)
      return { statusCode: 404, headers: { 'content-type': 'application/json' }, body: '{"message":"Not Found"}' };
    const handler = await load(found.event);
    const event = buildEvent({ routeKey: found.routeKey, params: found.params }, request);
    return handler(event, lambdaContext(found.event.function));
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_PAYLOAD) chunks.push(chunk);
    });
    req.on('end', async () => {
      if (size > MAX_PAYLOAD) {
        res.writeHead(413, { 'content-type': 'application/json' }).end('{"message":"Request Entity Too Large"}');
        return;
      }
      // API Gateway joins every repeated header with commas (Node keeps only the first of some, such as Authorization).
      const headers: Record<string, string> = {};
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const name = req.rawHeaders[i]!.toLowerCase();
        const value = req.rawHeaders[i + 1]!;
        headers[name] = name in headers ? `${headers[name]},${value}` : value;
      }
      try {
        const result = await dispatch({
          method: req.method ?? 'GET',
          url: req.url ?? '/',
          headers,
          body: Buffer.concat(chunks),
          sourceIp: req.socket.remoteAddress?.replace(/^::ffff:/, '') ?? '127.0.0.1',
        });
        if (typeof result === 'string' || !('statusCode' in result)) {
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(typeof result === 'string' ? result : JSON.stringify(result));
          return;
        }
        const body =
          result.body === undefined ? '' : result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body;
        const type = String((result.headers ?? {})['content-type'] ?? '');
        if (type.startsWith('application/json') && !(result.headers ?? {})['content-encoding']) {
          const url = new URL(req.url ?? '/', 'http://gateway');
          const problems = checkResponse(
            req.method ?? 'GET',
            decodeParam(url.pathname),
            url.searchParams,
            result.statusCode ?? 200,
            JSON.parse(String(body)),
          );
          if (problems.length) {
            // A view that drifted from its schema fails the test that called it, loudly.
            process.stderr.write(
              `gateway: ${req.method} ${url.pathname} answered outside its response schema:\n  ${problems.join('\n  ')}\n`,
            );
            res
              .writeHead(599, { 'content-type': 'application/json' })
              .end(JSON.stringify({ message: 'response outside its schema', problems }));
            return;
          }
        }
        res.writeHead(result.statusCode ?? 200, result.headers as Record<string, string>);
        res.end(body);
      } catch (error) {
        // What API Gateway answers when the integration fails.
        process.stderr.write(`gateway: handler threw: ${(error as Error).stack}\n`);
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"message":"Internal Server Error"}');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
    invoke: async ({ method, path, headers = {}, body }) =>
      dispatch({
        method,
        url: path,
        headers,
        body: Buffer.isBuffer(body) ? body : Buffer.from(body ?? ''),
        sourceIp: '127.0.0.1',
      }) as Promise<APIGatewayProxyResultV2>,
  };
}
