import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import type { ApplicationContext, SessionContext } from '#shared/caller';
import type { GrantRecord } from '#shared/db/grants';
import type { CompiledValidateFunction } from '#shared/http/validation';
import type { Logger } from '#shared/logger';
import type { ResponseOf } from '#shared/schema-types';
import type { UploadedFile } from '#shared/uploaded-file';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * One endpoint. Route tables (`functions/<group>/routes.ts`) are plain data built from these, so
 * the fallback function, the OpenAPI generator and the infrastructure generator can read
 * them without loading any handler code.
 */
export interface RouteSpec {
  readonly method: HttpMethod;
  /** API Gateway path template, e.g. `/v3/grants/{grant_id}`. */
  readonly path: string;
  readonly summary: string;
  /**
   * `api_key` (default) requires `Authorization: Bearer <API key>`; `none` is public and reads no
   * credential; `optional` is public too, but a request that carries `Authorization: Bearer` is
   * authenticated before its body is read: a session of the function's session authenticator (the
   * scheduler's), else the API key, else 401.
   */
  readonly auth?: 'api_key' | 'none' | 'optional';
  readonly query?: JSONSchema;
  /** JSON request body schema; a route without one ignores any body it is sent. */
  readonly body?: JSONSchema;
  /** The body may be omitted (it is then validated as `{}`). */
  readonly bodyOptional?: boolean;
  /** The body is a JSON array (its schema an array), not an object: the contract's import-group-events. */
  readonly arrayBody?: boolean;
  /** Largest JSON body accepted, in bytes (default 1 MiB). */
  readonly maxBodyBytes?: number;
  /** Hint for the 413 answer to an over-long JSON body (e.g. "send multipart/form-data instead"). */
  readonly maxBodyHint?: string;
  /**
   * Also accept `multipart/form-data` up to this many bytes: a `message` part holding the JSON body
   * (validated with the same schema) and one file part per attachment.
   */
  readonly multipartMaxBytes?: number;
  /** Grant-scoped routes answer 403 for a blocked grant unless they allow it (the grant endpoints do). */
  readonly allowBlockedGrant?: boolean;
  /** Schema of `data` (an object, or one item of a list) in the success envelope. */
  readonly response?: JSONSchema;
  readonly responseKind?: 'object' | 'list' | 'empty' | 'binary' | 'page';
  /** The success status of an object answer, when not 200 (the response middleware answers it; so does the OpenAPI output). */
  readonly status?: 201;
  /** Whether `select` is accepted; the spec forbids it on DELETE, send, create draft, attachments. */
  readonly select?: boolean;
  /** Also accept `application/x-www-form-urlencoded` bodies (the OAuth token endpoints, RFC 6749 §4.1.3). */
  readonly formBody?: boolean;
  /** `oauth`: errors answer in the OAuth shape `{error, error_description, error_code, error_uri}` (the token endpoints). */
  readonly errors?: 'oauth';
  /**
   * The route's OpenAPI tag when it is not its function's group: a route moved to a function of its
   * own (for a smaller bundle) stays with its resource in the published description.
   */
  readonly tag?: string;
}

export type RouteTable = Readonly<Record<string, RouteSpec>>;

/**
 * What a function needs of a route at run time: the spec without its schemas and summary (the
 * validators are generated from the schemas: a route has a body validator exactly when it has a
 * body schema; `select` needs only the response's field names).
 */
export type RuntimeRoute = Omit<RouteSpec, 'query' | 'body' | 'response' | 'summary' | 'tag'> & {
  /** Top-level fields `select` may name (undefined: the response is not an object schema). */
  readonly selectable?: readonly string[];
};

/** Shape of `functions/<group>/routes.generated.cjs` (scripts/generate-routes.ts). */
export interface GeneratedRoutes {
  routes: Record<string, RuntimeRoute>;
  query: Record<string, CompiledValidateFunction>;
  body: Record<string, CompiledValidateFunction>;
}

type QueryOf<R extends RouteSpec> = R['query'] extends JSONSchema ? FromSchema<R['query']> : Record<string, never>;
type BodyOf<R extends RouteSpec> = R['body'] extends JSONSchema ? FromSchema<R['body']> : undefined;
/** The names in a path template: `/v3/grants/{grant_id}/folders/{folder_id}` → `'grant_id' | 'folder_id'`. */
type ParamNames<P extends string> = P extends `${string}{${infer Name}}${infer Rest}` ? Name | ParamNames<Rest> : never;
type ParamsOf<R extends RouteSpec> = { readonly [K in ParamNames<R['path']>]: string };
/** What a route's success answer carries in `data` (one item of a list), from its response schema. */
export type DataOf<R extends RouteSpec> = R['response'] extends JSONSchema ? ResponseOf<R['response']> : object;
type GrantOf<R extends RouteSpec> = R['path'] extends `${string}{grant_id}${string}` ? { grant: GrantRecord } : {};
/** Who called: the application (API key routes), maybe the application or a session (`optional`), nobody (`none`). */
type CallerOf<R extends RouteSpec> = R['auth'] extends 'optional'
  ? { app: ApplicationContext | undefined; session: SessionContext | undefined }
  : R['auth'] extends 'none'
    ? {}
    : { app: ApplicationContext };

/** What a handler receives: already authenticated, parsed, validated and (for grant paths) resolved. */
export type RouteRequest<R extends RouteSpec> = {
  requestId: string;
  /** The path's parameters, by the names of its template. */
  params: ParamsOf<R>;
  query: QueryOf<R>;
  body: BodyOf<R>;
  headers: Record<string, string>;
  /** Files of a multipart/form-data request, in order. */
  files: UploadedFile[];
  sourceIp: string;
  userAgent: string;
  log: Logger;
  event: APIGatewayProxyEventV2;
} & GrantOf<R> &
  CallerOf<R>;

/** A handler's answer; `D` is what its response schema documents (checked when the handler compiles). */
export type RouteResult<D = object> =
  | { kind: 'object'; data: D; status?: number; headers?: Record<string, string>; envelope?: Record<string, unknown> }
  | { kind: 'list'; data: D[]; nextCursor?: string | undefined }
  | { kind: 'empty'; status?: number }
  /** Raw bytes (attachment downloads): the only success responses that are not JSON. */
  | { kind: 'binary'; contentType: string; filename: string; content: Buffer; ownType?: boolean; noStore?: boolean }
  /** An HTML page (the booking page): its scripts and styles carry `nonce`, the only ones its CSP allows. */
  | { kind: 'page'; html: string; nonce: string; status?: number; formActions?: readonly string[] }
  /** 302 to `location`, with a JSON body naming it. */
  | { kind: 'redirect'; location: string }
  /** A JSON object answered as it is, beside `request_id` rather than in `data` (the OAuth token response). */
  | { kind: 'flat'; data: D }
  /** Plain text a provider's protocol requires (Graph's subscription validation echoes its token): never for our own API. */
  | { kind: 'text'; text: string };

export type RouteHandler<R extends RouteSpec> = (request: RouteRequest<R>) => Promise<RouteResult<DataOf<R>>>;

export type RouteHandlers<T extends RouteTable> = { [K in keyof T]: RouteHandler<T[K]> };

/** `envelope`: fields beside `data` in the answer (the send answer's `grant_id`). */
export const ok = <D>(
  data: D,
  options: { status?: number; headers?: Record<string, string>; envelope?: Record<string, unknown> } = {},
) => ({
  kind: 'object' as const,
  data,
  ...options,
});
export const list = <D extends object>(data: D[], nextCursor?: string) => ({ kind: 'list' as const, data, nextCursor });
export const empty = () => ({ kind: 'empty' as const });
export const binary = (content: Buffer, contentType: string, filename: string) => ({
  kind: 'binary' as const,
  content,
  contentType,
  filename,
});
/** An HTML page whose inline script and style carry `nonce` (see the response middleware's CSP). */
/** `formActions`: origins the page's forms may lead to besides this one (a form whose answer redirects there). */
export const page = (html: string, nonce: string, status?: number, formActions?: readonly string[]) => ({
  kind: 'page' as const,
  html,
  nonce,
  ...(status !== undefined ? { status } : {}),
  ...(formActions?.length ? { formActions } : {}),
});
/**
 * A document the API itself produced (e.g. text/calendar), answered with its own media type.
 * `noStore`: never kept by a cache (the open pixel: each load must reach us).
 */
export const document = (
  content: Buffer,
  contentType: string,
  filename: string,
  options: { noStore?: boolean } = {},
) => ({
  kind: 'binary' as const,
  content,
  contentType,
  filename,
  ownType: true,
  ...(options.noStore ? { noStore: true } : {}),
});
export const redirect = (location: string) => ({ kind: 'redirect' as const, location });
/** Plain text, for a provider's handshake that requires it (see RouteResult). */
export const text = (content: string) => ({ kind: 'text' as const, text: content });
/** An answer without the `data` envelope: `{request_id, ...data}` (OAuth token responses, RFC 6749 §5.1). */
export const flat = <D extends object>(data: D) => ({ kind: 'flat' as const, data });

export const routeKey = (spec: Pick<RouteSpec, 'method' | 'path'>) => `${spec.method} ${spec.path}`;
