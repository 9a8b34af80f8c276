/**
 * Errors in the shape Google's APIs answer them (`error.code`, `status`, `errors[0].reason`), shared by
 * the Gmail fake's state, its search and the server that turns them into HTTP answers.
 */

const STATUS_OF: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  // No google.rpc.Code maps to 410; Calendar answers it for an expired sync token.
  410: 'FAILED_PRECONDITION',
  413: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  503: 'UNAVAILABLE',
};

/** An error a Google API answers: HTTP code, message and the `errors[0].reason` clients branch on. */
export class GoogleApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly status: string;

  constructor(code: number, message: string, reason: string) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.status = STATUS_OF[code] ?? 'UNKNOWN';
  }
}

export interface GoogleErrorBody {
  error: {
    code: number;
    message: string;
    status: string;
    errors: { message: string; domain: 'global'; reason: string }[];
  };
}

export function googleErrorBody(e: GoogleApiError): GoogleErrorBody {
  return {
    error: {
      code: e.code,
      message: e.message,
      status: e.status,
      errors: [{ message: e.message, domain: 'global', reason: e.reason }],
    },
  };
}

export const invalid = (message: string) => new GoogleApiError(400, message, 'invalidArgument');
export const notFound = () => new GoogleApiError(404, 'Requested entity was not found.', 'notFound');
