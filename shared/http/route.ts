import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import type { ApplicationContext } from '#shared/applications/authenticate';
import type { GrantRecord } from '#shared/db/grants';
import type { Logger } from '#shared/logger';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * One endpoint. Route tables (`functions/<group>/routes.ts`) are plain data built from these, so
 * the fallback function, the OpenAPI generator and the serverless.yml consistency test can read
 * them without loading any handler code.
 */
export interface RouteSpec {
  readonly method: HttpMethod;
  /** API Gateway path template, e.g. `/v3/grants/{grant_id}`. */
  readonly path: string;
  readonly summary: string;
  /** `api_key` (default) requires `Authorization: Bearer <API key>`. */
  readonly auth?: 'api_key' | 'none';
  readonly query?: JSONSchema;
  /** JSON request body schema; a route without one ignores any body it is sent. */
  readonly body?: JSONSchema;
  /** Largest JSON body accepted, in bytes (default 1 MiB). */
  readonly maxBodyBytes?: number;
  /** Schema of `data` (an object, or one item of a list) in the success envelope. */
  readonly response?: JSONSchema;
  readonly responseKind?: 'object' | 'list' | 'empty';
  /** Whether `select` is accepted; the spec forbids it on DELETE, send, create draft, attachments. */
  readonly select?: boolean;
}

export type RouteTable = Readonly<Record<string, RouteSpec>>;

type QueryOf<R extends RouteSpec> = R['query'] extends JSONSchema ? FromSchema<R['query']> : Record<string, never>;
type BodyOf<R extends RouteSpec> = R['body'] extends JSONSchema ? FromSchema<R['body']> : undefined;
type GrantOf<R extends RouteSpec> = R['path'] extends `${string}{grant_id}${string}` ? { grant: GrantRecord } : {};

/** What a handler receives: already authenticated, parsed, validated and (for grant paths) resolved. */
export type RouteRequest<R extends RouteSpec> = {
  requestId: string;
  app: ApplicationContext;
  params: Record<string, string>;
  query: QueryOf<R>;
  body: BodyOf<R>;
  headers: Record<string, string>;
  sourceIp: string;
  userAgent: string;
  log: Logger;
  event: APIGatewayProxyEventV2;
} & GrantOf<R>;

export type RouteResult =
  | { kind: 'object'; data: object; status?: number; headers?: Record<string, string> }
  | { kind: 'list'; data: object[]; nextCursor?: string | undefined }
  | { kind: 'empty'; status?: number };

export type RouteHandler<R extends RouteSpec> = (request: RouteRequest<R>) => Promise<RouteResult>;

export type RouteHandlers<T extends RouteTable> = { [K in keyof T]: RouteHandler<T[K]> };

export const ok = (data: object, options: { status?: number; headers?: Record<string, string> } = {}): RouteResult => ({
  kind: 'object',
  data,
  ...options,
});
export const list = (data: object[], nextCursor?: string): RouteResult => ({ kind: 'list', data, nextCursor });
export const empty = (): RouteResult => ({ kind: 'empty' });

export const routeKey = (spec: Pick<RouteSpec, 'method' | 'path'>) => `${spec.method} ${spec.path}`;
