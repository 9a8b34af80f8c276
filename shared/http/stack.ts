import middy from '@middy/core';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { gzipSync } from 'node:zlib';
import { authenticate, type ApplicationContext } from '#shared/applications/authenticate';
import type { GrantRecord } from '#shared/db/grants';
import { resolveGrant } from '#shared/grants/resolve';
import {
  ApiError,
  InvalidRequestError,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
} from '#shared/http/errors';
import { compareSpecificity, decodeParam, matchTemplate } from '#shared/http/paths';
import { routeKey, type RouteHandlers, type RouteResult, type RouteSpec, type RouteTable } from '#shared/http/route';
import { parseSelect, project, selectableFields } from '#shared/http/select';
import { toValidator, type GeneratedValidators, type Validator } from '#shared/http/validation';
import { newId } from '#shared/ids';
import { logger, type Logger } from '#shared/logger';

/**
 * The one HTTP middleware stack. Every endpoint function is `httpApi(routes, handlers)`; the order is
 *
 *   1. response  (after/onError, runs last): envelope, select, x-request-id, gzip, access log, errors
 *   2. routing   match the API Gateway route key, decode path parameters (404/405 when nothing matches)
 *   3. auth      `Authorization: Bearer <API key>` → application
 *   4. body      size limit, content type, JSON parsing (@middy/http-json-body-parser)
 *   5. validate  ajv-compiled query and body schemas, `select`
 *   6. grant     resolve `{grant_id}` within the calling application
 *   7. handler   one domain call, returns a RouteResult
 */
const DEFAULT_MAX_BODY = 1024 * 1024;
const GZIP_MIN_BYTES = 200;
const JSON_CONTENT_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;.*)?$/i;

interface CompiledRoute {
  spec: RouteSpec;
  handler: (request: never) => Promise<RouteResult>;
  validateQuery?: Validator;
  validateBody?: Validator;
  selectable?: readonly string[];
}

interface State {
  requestId: string;
  started: number;
  log: Logger;
  route?: CompiledRoute;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  headers: Record<string, string>;
  app?: ApplicationContext;
  grant?: GrantRecord;
  select?: string[];
}

type Request = middy.Request<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Context, Record<string, unknown>>;
/** Per-invocation state, keyed by the event object (the one thing both middlewares and the handler see). */
const states = new WeakMap<object, State>();
const stateOf = (request: { event: object }): State => states.get(request.event)!;

function lowerHeaders(headers: APIGatewayProxyEventV2['headers'] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) if (value !== undefined) out[name.toLowerCase()] = value;
  return out;
}

function compile(
  routes: RouteTable,
  validators: GeneratedValidators,
  handlers: Record<string, (request: never) => Promise<RouteResult>>,
): Map<string, CompiledRoute> {
  const compiled = new Map<string, CompiledRoute>();
  for (const [name, spec] of Object.entries(routes)) {
    const handler = handlers[name];
    const query = validators.query[name];
    const body = validators.body[name];
    // Fail at cold start, not on a request, when the generated validators do not match the table.
    if (!handler) throw new Error(`No handler for route ${name}`);
    if (!query || (spec.body !== undefined) !== (body !== undefined)) {
      throw new Error(`Validators for route ${name} are missing or stale; run \`npm run generate\``);
    }
    compiled.set(routeKey(spec), {
      spec,
      handler,
      validateQuery: toValidator(query, 'query'),
      validateBody: body ? toValidator(body, 'body') : undefined,
      selectable: selectableFields(spec.response),
    });
  }
  return compiled;
}

// 1. response ------------------------------------------------------------------------------------
function render(state: State, status: number, payload: object, event: APIGatewayProxyEventV2, extra: Record<string, string> = {}) {
  const json = JSON.stringify(payload);
  const headers: Record<string, string> = {
    'content-type': 'application/json; charset=utf-8',
    'x-request-id': state.requestId,
    ...extra,
  };
  const acceptsGzip = /\bgzip\b/i.test(state.headers['accept-encoding'] ?? lowerHeaders(event.headers)['accept-encoding'] ?? '');
  if (acceptsGzip && Buffer.byteLength(json) >= GZIP_MIN_BYTES) {
    headers['content-encoding'] = 'gzip';
    headers.vary = 'accept-encoding';
    return { statusCode: status, headers, body: gzipSync(json).toString('base64'), isBase64Encoded: true };
  }
  return { statusCode: status, headers, body: json, isBase64Encoded: false };
}

function accessLog(state: State, event: APIGatewayProxyEventV2, status: number) {
  state.log.info('request', {
    method: event.requestContext?.http?.method,
    route: state.route ? routeKey(state.route.spec) : event.rawPath,
    status,
    duration_ms: Date.now() - state.started,
    application_id: state.app?.applicationId,
  });
}

const responseMiddleware = (): middy.MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2> => ({
  before: (request) => {
    const requestId = newId('request');
    states.set(request.event, {
      requestId,
      started: Date.now(),
      log: logger.child({ request_id: requestId, aws_request_id: request.context?.awsRequestId }),
      params: {},
      query: {},
      body: undefined,
      headers: lowerHeaders(request.event.headers),
    });
  },
  after: (request) => {
    const state = stateOf(request as Request);
    const result = request.response as unknown as RouteResult;
    const select = state.select;
    let status = 200;
    let payload: object;
    let extra: Record<string, string> = {};
    switch (result.kind) {
      case 'object':
        status = result.status ?? 200;
        extra = result.headers ?? {};
        payload = { request_id: state.requestId, data: select ? project(result.data, select) : result.data };
        break;
      case 'list':
        payload = {
          request_id: state.requestId,
          data: select ? result.data.map((item) => project(item, select)) : result.data,
          ...(result.nextCursor ? { next_cursor: result.nextCursor } : {}),
        };
        break;
      case 'empty':
        status = result.status ?? 200;
        payload = { request_id: state.requestId };
        break;
      default: {
        const exhaustive: never = result;
        throw new Error(`Unknown result ${JSON.stringify(exhaustive)}`);
      }
    }
    request.response = render(state, status, payload, request.event, extra);
    accessLog(state, request.event, status);
  },
  onError: (request) => {
    let state = states.get(request.event);
    if (!state) {
      const requestId = newId('request');
      state = { requestId, started: Date.now(), log: logger.child({ request_id: requestId }), params: {}, query: {}, body: undefined, headers: {} };
    }
    const error = request.error;
    let apiError: ApiError;
    if (error instanceof ApiError && error.expose) {
      apiError = error;
    } else {
      state.log.error('unhandled error', { error: error ?? undefined });
      apiError = new ApiError(500, `Internal error; quote request id ${state.requestId} when reporting it`, { expose: false });
    }
    const payload = { request_id: state.requestId, error: { type: apiError.type, message: apiError.message } };
    request.response = render(state, apiError.status, payload, request.event, apiError.headers);
    accessLog(state, request.event, apiError.status);
  },
});

// 2. routing -------------------------------------------------------------------------------------
function routing(compiled: Map<string, CompiledRoute>, known: readonly RouteSpec[]): middy.MiddlewareObj<APIGatewayProxyEventV2> {
  const templates = [...known].sort((a, b) => compareSpecificity(a.path, b.path));
  return {
    before: (request) => {
      const state = stateOf(request as Request);
      const event = request.event;
      const method = (event.requestContext?.http?.method ?? '').toUpperCase();
      const rawPath = event.rawPath ?? event.requestContext?.http?.path ?? '/';
      const route = compiled.get(event.routeKey);
      if (route) {
        state.route = route;
        // Decode from the raw path when it matches the template, so parameters are decoded exactly once.
        const fromPath = matchTemplate(route.spec.path, rawPath);
        const params: Record<string, string> = {};
        for (const [name, value] of Object.entries(event.pathParameters ?? {})) if (value !== undefined) params[name] = decodeParam(value);
        state.params = fromPath ?? params;
        return;
      }
      // $default route: tell an unknown path (404) from a known path with the wrong method (405).
      const allowed = templates.filter((t) => matchTemplate(t.path, rawPath)).map((t) => t.method);
      if (allowed.length) throw new MethodNotAllowedError(method, rawPath, [...new Set(allowed)]);
      throw new NotFoundError(`No endpoint ${method} ${rawPath}; see the API reference for the available /v3 paths`);
    },
  };
}

// 3. authentication ------------------------------------------------------------------------------
const authentication = (): middy.MiddlewareObj<APIGatewayProxyEventV2> => ({
  before: async (request) => {
    const state = stateOf(request as Request);
    if ((state.route!.spec.auth ?? 'api_key') === 'none') return;
    state.app = await authenticate(state.headers.authorization);
    state.log = state.log.child({ application_id: state.app.applicationId });
  },
});

// 4. body ----------------------------------------------------------------------------------------
const jsonBody = (): middy.MiddlewareObj<APIGatewayProxyEventV2> => {
  const parse = httpJsonBodyParser().before!;
  return {
    before: async (request) => {
      const state = stateOf(request as Request);
      const spec = state.route!.spec;
      if (!spec.body) return;
      const raw = request.event.body;
      if (raw === undefined || raw === null || raw === '') {
        throw new InvalidRequestError('A JSON request body is required');
      }
      const size = request.event.isBase64Encoded ? Math.floor((raw.length * 3) / 4) : Buffer.byteLength(raw);
      const max = spec.maxBodyBytes ?? DEFAULT_MAX_BODY;
      if (size > max) throw new PayloadTooLargeError(`The request body is larger than ${Math.round(max / 1024)} KB`);
      const contentType = state.headers['content-type'];
      if (!contentType || !JSON_CONTENT_TYPE.test(contentType)) {
        throw new UnsupportedMediaTypeError(`Content-Type must be application/json (got ${contentType ? `'${contentType.slice(0, 100)}'` : 'none'})`);
      }
      // Our own check above gives the precise 415; the parser sees a normalised content type.
      const event = { ...request.event, headers: { 'content-type': 'application/json' } };
      try {
        await parse({ ...request, event } as never);
      } catch (error) {
        const detail = (error as { cause?: { message?: string } }).cause?.message;
        throw new InvalidRequestError(`The request body is not valid JSON${detail ? `: ${detail}` : ''}`, { cause: error });
      }
      state.body = event.body;
    },
  };
};

// 5. validation ----------------------------------------------------------------------------------
const validation = (): middy.MiddlewareObj<APIGatewayProxyEventV2> => ({
  before: (request) => {
    const state = stateOf(request as Request);
    const route = state.route!;
    const query: Record<string, unknown> = { ...(request.event.queryStringParameters ?? {}) };
    if ('select' in query && !route.spec.select) {
      throw new InvalidRequestError(`'select' is not supported on ${route.spec.method} ${route.spec.path}`);
    }
    route.validateQuery?.(query);
    // ajv does not re-check finiteness after coercing `1e400` or `-Infinity` from a query string.
    const infinite = Object.entries(query).find(([, value]) => typeof value === 'number' && !Number.isFinite(value));
    if (infinite) throw new InvalidRequestError(`Invalid query: '${infinite[0]}' must be a finite number`);
    if (typeof query.select === 'string') state.select = parseSelect(query.select, route.selectable);
    state.query = query;
    route.validateBody?.(state.body);
  },
});

// 6. grant resolution ----------------------------------------------------------------------------
const grantResolution = (): middy.MiddlewareObj<APIGatewayProxyEventV2> => ({
  before: async (request) => {
    const state = stateOf(request as Request);
    const raw = state.params.grant_id;
    if (raw === undefined || !state.app) return;
    state.grant = await resolveGrant(state.app, raw);
  },
});

/**
 * Builds the Lambda handler of one endpoint group from its route table, its generated validators
 * and one handler per route. `knownRoutes` is only given to the `$default`
 * function, which answers for every path no route matched.
 */
export function httpApi<T extends RouteTable>(
  routes: T,
  validators: GeneratedValidators,
  handlers: RouteHandlers<T>,
  options: { knownRoutes?: readonly RouteSpec[] } = {},
) {
  const compiled = compile(routes, validators, handlers as unknown as Record<string, (request: never) => Promise<RouteResult>>);
  const known = options.knownRoutes ?? Object.values(routes);
  return middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2>()
    .use(responseMiddleware())
    .use(routing(compiled, known))
    .use(authentication())
    .use(jsonBody())
    .use(validation())
    .use(grantResolution())
    .handler(async (event) => {
      const state = states.get(event)!;
      const result = await state.route!.handler({
        requestId: state.requestId,
        app: state.app,
        params: state.params,
        query: state.query,
        body: state.body,
        headers: state.headers,
        sourceIp: event.requestContext?.http?.sourceIp ?? '',
        userAgent: state.headers['user-agent'] ?? '',
        log: state.log,
        event,
        grant: state.grant,
      } as never);
      // The response middleware turns the RouteResult into the API Gateway result.
      return result as unknown as APIGatewayProxyStructuredResultV2;
    });
}
