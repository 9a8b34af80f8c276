/**
 * Errors in the shape Microsoft Graph answers them (`#/components/responses/error`, an ODataError:
 * `{ error: { code, message, innerError } }`), shared by the Graph fake's state, its query parser and
 * the server that turns them into HTTP answers.
 */

/** An error Graph answers: HTTP status, the `error.code` clients branch on, and a message. */
export class GraphError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export interface GraphErrorBody {
  error: {
    code: string;
    message: string;
    innerError: { date: string; 'request-id': string; 'client-request-id': string };
  };
}

/** Graph's error body; `innerError` carries the date and the request's IDs, as Graph's does. */
export function graphErrorBody(e: GraphError, requestId: string, clientRequestId: string, now: number): GraphErrorBody {
  return {
    error: {
      code: e.code,
      message: e.message,
      innerError: {
        date: new Date(now).toISOString().replace(/\.\d{3}Z$/, ''),
        'request-id': requestId,
        'client-request-id': clientRequestId,
      },
    },
  };
}

export const badRequest = (message: string) => new GraphError(400, 'BadRequest', message);
export const invalidRequest = (message: string) => new GraphError(400, 'ErrorInvalidRequest', message);
export const itemNotFound = () =>
  new GraphError(404, 'ErrorItemNotFound', 'The specified object was not found in the store.');

/**
 * What Graph may do but the local fake does not (a filter it cannot evaluate, an `$expand` it does not
 * serve): answered 400 in Graph's shape, never with a wider result, and recorded as a request violation
 * so that a test relying on it fails loudly.
 */
export class UnsupportedByFakeError extends GraphError {
  constructor(what: string) {
    super(400, 'BadRequest', `${what} is not implemented by the local Graph fake`);
  }
}
