import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { ApplicationContext, SessionContext } from '#shared/caller';
import type { GrantRecord } from '#shared/db/grants';
import type { RouteResult, RuntimeRoute } from '#shared/http/route';
import type { UploadedFile } from '#shared/uploaded-file';
import type { Validator } from '#shared/http/validation';
import { newId } from '#shared/ids';
import { logger, type Logger } from '#shared/logger';

/** A route of the function being invoked, with its validators, ready to dispatch. */
export interface CompiledRoute {
  spec: RuntimeRoute;
  handler: (request: never) => Promise<RouteResult>;
  validateQuery?: Validator;
  validateBody?: Validator;
}

/** What the middlewares learn about one request, in order. */
export interface State {
  requestId: string;
  started: number;
  log: Logger;
  route?: CompiledRoute;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  files: UploadedFile[];
  headers: Record<string, string>;
  app?: ApplicationContext;
  /** A scheduler session, on `optional` routes of a function that accepts them. */
  session?: SessionContext;
  grant?: GrantRecord;
  select?: string[];
}

/** Per-invocation state, keyed by the event object (the one thing both middlewares and the handler see). */
const states = new WeakMap<object, State>();

export const stateOf = (request: { event: object }): State => states.get(request.event)!;

export function lowerHeaders(headers: APIGatewayProxyEventV2['headers'] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) if (value !== undefined) out[name.toLowerCase()] = value;
  return out;
}

/** Starts the state of a request (its ID and logger); also used when failing before any middleware ran. */
export function beginState(event: APIGatewayProxyEventV2, awsRequestId?: string): State {
  const requestId = newId('request');
  const state: State = {
    requestId,
    started: Date.now(),
    log: logger.child({ request_id: requestId, aws_request_id: awsRequestId }),
    params: {},
    query: {},
    body: undefined,
    files: [],
    headers: lowerHeaders(event.headers),
  };
  states.set(event, state);
  return state;
}

export const existingState = (event: object): State | undefined => states.get(event);
