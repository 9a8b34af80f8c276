import * as oauth from '#shared/lazy/oauth';
import { env } from '#shared/config';
import type { UrlPolicy } from '#shared/net/addresses';
import { guardedFetch } from '#shared/net/fetch';
import { GuardedRequestError } from '#shared/net/request';
import {
  IdTokenError,
  InvalidGrantError,
  ProviderConfigurationError,
  ProviderOAuthError,
  ProviderUnavailableError,
} from '#shared/oauth/errors';

/**
 * How this module talks to authorization servers: every request goes through the guarded fetch
 * (shared/net/), under the same address policy as webhooks: https to public addresses only, and in
 * local mode (WEBHOOK_LOCAL_MODE, `npm start` and tests) plain http to loopback as well.
 */
export const POLICY: UrlPolicy = { local: env.webhookLocalMode() };
/** Per request. Authorization servers answer in well under a second; a Lambda should not wait longer. */
export const TIMEOUT_MS = 10_000;
/** Discovery documents, JWKS and token answers are a few kilobytes. */
export const MAX_RESPONSE_BYTES = 1024 * 1024;

const fetchGuarded = guardedFetch({
  policy: POLICY,
  timeoutMs: TIMEOUT_MS,
  maxResponseBytes: MAX_RESPONSE_BYTES,
  userAgent: 'Switchboard-OAuth/1.0',
});

/** Transport failures, 5xx and 429 become typed errors here, before the library reads the answer. */
async function providerFetch(url: string, init: RequestInit): Promise<Response> {
  const host = new URL(url).host;
  let response: Response;
  try {
    response = await fetchGuarded(url, init);
  } catch (error) {
    if (!(error instanceof GuardedRequestError)) throw error;
    if (error.kind === 'blocked')
      throw new ProviderConfigurationError(`refusing to contact the authorization server: ${error.message}`);
    throw new ProviderUnavailableError(
      `the authorization server at ${host} could not be reached (${error.kind}): ${error.message}`,
    );
  }
  if (response.status >= 500 || response.status === 429) {
    await response.body?.cancel();
    throw new ProviderUnavailableError(
      `the authorization server at ${host} answered HTTP ${response.status}; try again later`,
      { status: response.status },
    );
  }
  return response;
}

/**
 * The options every oauth4webapi call takes. A function, as are the code sets below: the library is
 * a lazy chunk (shared/lazy/oauth.ts), loaded by the first call that needs it, never at module init.
 */
const makeOptions = () => ({
  [oauth.customFetch]: providerFetch,
  // The guarded fetch allows http only to loopback in local mode; the library's own check would refuse it always.
  [oauth.allowInsecureRequests]: POLICY.local,
});
let options: ReturnType<typeof makeOptions> | undefined;
export const requestOptions = () => (options ??= makeOptions());

let codes: { idToken: Set<string>; configuration: Set<string> } | undefined;
const errorCodes = () =>
  (codes ??= {
    idToken: new Set<string>([oauth.JWT_TIMESTAMP_CHECK, oauth.JWT_CLAIM_COMPARISON, oauth.KEY_SELECTION]),
    configuration: new Set<string>([
      oauth.HTTP_REQUEST_FORBIDDEN,
      oauth.REQUEST_PROTOCOL_FORBIDDEN,
      oauth.MISSING_SERVER_METADATA,
      oauth.INVALID_SERVER_METADATA,
    ]),
  });

/**
 * One of our errors for whatever oauth4webapi threw. Only its fixed messages and codes are kept:
 * its `cause` holds the response body, which may hold tokens. `idToken`: the failure happened while
 * the answer's ID token was being verified, so a malformed answer is an ID token problem.
 */
export function translate(error: unknown, options: { idToken?: boolean } = {}): unknown {
  if (
    error instanceof ProviderOAuthError ||
    error instanceof ProviderUnavailableError ||
    error instanceof ProviderConfigurationError ||
    error instanceof IdTokenError
  ) {
    return error;
  }
  if (error instanceof oauth.ResponseBodyError) {
    const Type = error.error === 'invalid_grant' ? InvalidGrantError : ProviderOAuthError;
    return new Type(error.error, error.error_description, { status: error.status });
  }
  if (error instanceof oauth.WWWAuthenticateChallengeError) {
    const challenge = error.cause[0];
    const code = challenge?.parameters.error ?? 'invalid_token';
    return new ProviderOAuthError(code, challenge?.parameters.error_description, { status: error.status });
  }
  if (error instanceof oauth.OperationProcessingError) {
    if (errorCodes().configuration.has(error.code ?? ''))
      return new ProviderConfigurationError(`the authorization server's metadata cannot be used: ${error.message}`);
    if (
      errorCodes().idToken.has(error.code ?? '') ||
      (options.idToken && /JWT|id_token|ID Token/i.test(error.message))
    ) {
      return new IdTokenError(`the ID token was rejected: ${error.message}`);
    }
    const status =
      error.code === oauth.RESPONSE_IS_NOT_CONFORM && error.cause instanceof Response ? error.cause.status : undefined;
    return new ProviderOAuthError('invalid_response', undefined, {
      ...(status !== undefined ? { status } : {}),
      message: `the authorization server's answer could not be used${status !== undefined ? ` (HTTP ${status})` : ''}: ${error.message}`,
    });
  }
  if (error instanceof oauth.UnsupportedOperationError) {
    return options.idToken
      ? new IdTokenError(`the ID token was rejected: ${error.message}`)
      : new ProviderOAuthError('invalid_response', undefined, {
          message: `the authorization server's answer is not supported: ${error.message}`,
        });
  }
  return error;
}
