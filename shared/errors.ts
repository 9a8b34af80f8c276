import { ERROR_TYPES } from '#schemas/common';

/**
 * The error hierarchy. Every error a client can cause is one of these; the error middleware turns
 * them into the envelope `{request_id, error: {type, message}}`. Anything else is logged and
 * answered with a generic 500 (`expose: false`), so internals never reach a client.
 */

export type ErrorStatus = keyof typeof ERROR_TYPES;
export type ErrorType = (typeof ERROR_TYPES)[ErrorStatus];

export class ApiError extends Error {
  readonly status: ErrorStatus;
  readonly type: ErrorType;
  readonly expose: boolean;
  readonly headers: Record<string, string>;

  constructor(
    status: ErrorStatus,
    message: string,
    options: { cause?: unknown; expose?: boolean; headers?: Record<string, string> } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = new.target.name;
    this.status = status;
    this.type = ERROR_TYPES[status];
    this.expose = options.expose ?? status < 500;
    this.headers = options.headers ?? {};
  }
}

export class InvalidRequestError extends ApiError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(400, message, options);
  }
}

export class AuthenticationError extends ApiError {
  constructor(message: string) {
    super(401, message);
  }
}

export class ForbiddenError extends ApiError {
  constructor(message: string) {
    super(403, message);
  }
}

export class NotFoundError extends ApiError {
  constructor(message: string) {
    super(404, message);
  }
}

export class MethodNotAllowedError extends ApiError {
  constructor(method: string, path: string, allowed: readonly string[]) {
    super(405, `${method} is not allowed on ${path}; allowed methods: ${allowed.join(', ')}`, {
      headers: { allow: allowed.join(', ') },
    });
  }
}

export class ConflictError extends ApiError {
  constructor(message: string) {
    super(409, message);
  }
}

export class PayloadTooLargeError extends ApiError {
  constructor(message: string) {
    super(413, message);
  }
}

export class UnsupportedMediaTypeError extends ApiError {
  constructor(message: string) {
    super(415, message);
  }
}

/** The outside mail relay refused or could not be reached; nothing was sent or stored. */
export class MailDeliveryError extends ApiError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(502, message, { ...options, expose: true });
  }
}

/** A provider's API failed or did not answer in time (its 5xx, a timeout, a refused connection): `provider_error`. */
export class ProviderError extends ApiError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(504, message, { ...options, expose: true });
  }
}

export class RateLimitError extends ApiError {
  constructor(message: string, retryAfterSeconds: number) {
    super(429, message, { headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) } });
  }
}

/** OAuth 2.0 error codes of the token endpoints (RFC 6749 §5.2, RFC 7009). */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'invalid_token'
  | 'server_error';

/**
 * An error of the token endpoints (`POST /v3/connect/token`, `/revoke`, `GET /v3/connect/tokeninfo`), answered in the OAuth shape
 * `{error, error_description, error_code, error_uri}` (with `request_id` beside it) on routes whose
 * spec says `errors: 'oauth'`; other errors there are mapped to the OAuth code of their status.
 */
export class OAuthError extends ApiError {
  constructor(
    readonly code: OAuthErrorCode,
    message: string,
  ) {
    super(code === 'invalid_client' ? 401 : 400, message);
  }
}

/** The OAuth code an error answers with on an OAuth route. */
export function oauthCodeOf(error: ApiError): OAuthErrorCode {
  if (error instanceof OAuthError) return error.code;
  if (error.status === 401) return 'invalid_client';
  if (error.status >= 500) return 'server_error';
  return 'invalid_request';
}

/**
 * A write to a provider's server made under the version last read, refused because another client
 * changed the object first (a CardDAV 412). Never answered as such: the caller reads the server's
 * version back, stores it, and answers 409.
 */
export class ChangedOnServerError extends Error {
  constructor(what: string) {
    super(`${what} changed on the server since it was last read`);
    this.name = 'ChangedOnServerError';
  }
}
