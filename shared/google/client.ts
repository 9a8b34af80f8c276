import { env } from '#shared/config';
import { providerAccessToken } from '#shared/accounts/provider-tokens';
import { providerApiBase } from '#shared/connectors/service';
import type { GrantRecord } from '#shared/db/grants';
import {
  AuthenticationError,
  ConflictError,
  ForbiddenError,
  InvalidRequestError,
  NotFoundError,
  ProviderError,
  RateLimitError,
} from '#shared/errors';
import type { ApplicationId } from '#shared/ids';
import { logger } from '#shared/logger';
import { guardedFetch, type FetchLike } from '#shared/net/fetch';
import { GuardedRequestError } from '#shared/net/request';

/**
 * Provider A's REST APIs (Gmail v1, Calendar v3, People v1) for one grant: a thin `fetch` client,
 * no vendor SDK. Each call carries the grant's access token (refreshed under its lease by
 * shared/accounts/provider-tokens.ts), goes through the guarded client (https to public addresses;
 * http to loopback in local mode only), and is retried when the provider says "later": 429, 403
 * `rateLimitExceeded` / `userRateLimitExceeded`, its 5xx and timeouts, after `Retry-After` or an
 * exponential backoff with full jitter, within a wait budget a request can afford. What is left
 * when the budget is spent becomes our error: 429 `rate_limit_error` with `Retry-After` for the
 * provider's limits, 504 `provider_error` for its failures. Its other 4xx become ours (400, 404,
 * 409), with the provider's message; a 410 (an expired sync token) is a GoogleGoneError the caller
 * turns into a full sync. A connector's `settings.api_base_url` replaces the scheme and host of
 * every call, the paths kept (the local fake; a proxy).
 */

export type GoogleApi = 'gmail' | 'calendar' | 'people';

/** Where each API lives at the provider (the paths carry the rest: /gmail/v1/…, /calendar/v3/…, /v1/…). */
export const GOOGLE_API_BASES: Record<GoogleApi, string> = {
  gmail: 'https://gmail.googleapis.com',
  calendar: 'https://www.googleapis.com',
  people: 'https://people.googleapis.com',
};

type QueryValue = string | number | boolean | readonly string[] | undefined;

export interface GoogleRequest {
  api: GoogleApi;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The REST path, e.g. `/gmail/v1/users/me/messages`. */
  path: string;
  query?: Record<string, QueryValue>;
  body?: unknown;
}

/** Google's error body: `{error: {code, message, status, errors: [{reason, …}]}}`. */
interface GoogleErrorBody {
  error?: { code?: number; message?: string; status?: string; errors?: { reason?: string; message?: string }[] };
}

/** The provider answered 410: the sync token or history ID given is too old; the caller starts over. */
export class GoogleGoneError extends Error {
  constructor(readonly reason: string | undefined) {
    super(`provider A: the cursor is no longer valid (${reason ?? 'gone'})`);
    this.name = 'GoogleGoneError';
  }
}

/** The provider's 400 as ours, with Google's `status` (e.g. FAILED_PRECONDITION: a stale etag) for callers that tell them apart. */
export class GoogleRequestError extends InvalidRequestError {
  constructor(
    message: string,
    readonly googleStatus: string | undefined,
  ) {
    super(message);
  }
}

/** The provider's 404 for a cursor (Gmail history.list's too-old startHistoryId), told apart from a missing resource by the caller. */
export class GoogleNotFoundError extends NotFoundError {}

const RATE_LIMIT_REASONS = new Set(['rateLimitExceeded', 'userRateLimitExceeded', 'quotaExceeded']);
const RETRIED_STATUSES = new Set([429, 500, 502, 503, 504]);
/** Attempts per call, and the total a call may wait between them (an API request has about 29 s in all). */
const MAX_ATTEMPTS = 4;
const WAIT_BUDGET_MS = 8_000;
const BACKOFF_BASE_MS = 200;
const TIMEOUT_MS = 15_000;
/** A `raw` message of Gmail's 35 MB limit, as base64 inside JSON. */
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

const defaultFetch = /* @__PURE__ */ guardedFetch({
  policy: { local: env.webhookLocalMode() },
  timeoutMs: TIMEOUT_MS,
  maxResponseBytes: MAX_RESPONSE_BYTES,
  userAgent: 'Switchboard/1.0',
});

export interface GoogleClientOptions {
  /** Tests: another fetch (the default is the guarded client). */
  fetch?: FetchLike;
  /** Tests: how waiting is done. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

export interface GoogleClient {
  call<T>(request: GoogleRequest): Promise<T>;
  /** Provider calls made so far, retries included (the bench's "provider calls per request"). */
  readonly calls: number;
}

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The client of one grant's provider A account. */
export async function googleClientOf(grant: GrantRecord, options: GoogleClientOptions = {}): Promise<GoogleClient> {
  // The access token is read while the connector is: the first call does not wait for both in turn.
  const token = providerAccessToken(grant);
  token.catch(() => undefined);
  const base = await providerApiBase(grant.application_id as ApplicationId, 'google');
  return newGoogleClient(grant, base, options, token);
}

export function newGoogleClient(
  grant: GrantRecord,
  apiBase: string | undefined,
  options: GoogleClientOptions = {},
  /** The grant's access token, already being read. */
  token?: Promise<string>,
): GoogleClient {
  const fetch = options.fetch ?? defaultFetch;
  const sleep = options.sleep ?? sleepFor;
  const random = options.random ?? Math.random;
  let calls = 0;
  const urlOf = (request: GoogleRequest) => {
    const url = new URL(request.path, apiBase ?? GOOGLE_API_BASES[request.api]);
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) url.searchParams.append(name, String(one));
    }
    return url;
  };

  // The grant's access token, read once for the client's calls (a listing's gets share it); read again after a 401.
  const forgetOnFailure = (read: Promise<string>) =>
    read.catch((error: unknown) => {
      cached = undefined;
      throw error;
    });
  let cached: Promise<string> | undefined = token && forgetOnFailure(token);
  const accessToken = () => (cached ??= forgetOnFailure(providerAccessToken(grant)));

  async function call<T>(request: GoogleRequest): Promise<T> {
    const url = urlOf(request);
    let waited = 0;
    let tokenRetried = false;
    for (let attempt = 1; ; attempt++) {
      const token = await accessToken();
      calls++;
      let response: Response;
      try {
        response = await fetch(url, {
          method: request.method ?? 'GET',
          headers: {
            authorization: `Bearer ${token}`,
            accept: 'application/json',
            ...(request.body !== undefined ? { 'content-type': 'application/json' } : {}),
          },
          ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {}),
        });
      } catch (error) {
        if (!(error instanceof GuardedRequestError)) throw error;
        if (error.kind === 'blocked')
          throw new InvalidRequestError(
            `Provider A's API at ${url.host} may not be called from here (${error.message}): check the google connector's settings.api_base_url`,
          );
        const delay = backoff(attempt, undefined, random);
        if (attempt < MAX_ATTEMPTS && waited + delay <= WAIT_BUDGET_MS) {
          waited += delay;
          await sleep(delay);
          continue;
        }
        throw new ProviderError(
          error.kind === 'timeout' ? 'Provider request timed out.' : `Provider A could not be reached (${error.kind})`,
          { cause: error },
        );
      }
      if (response.ok) return (response.status === 204 ? undefined : await answerOf(response)) as T;
      const failure = await errorOf(response);
      if (response.status === 401 && !tokenRetried) {
        // A token revoked or rotated since it was read: read it again once (a refresh may have landed).
        tokenRetried = true;
        cached = undefined;
        continue;
      }
      const limited =
        response.status === 429 || (response.status === 403 && RATE_LIMIT_REASONS.has(failure.reason ?? ''));
      if (limited || RETRIED_STATUSES.has(response.status)) {
        const delay = backoff(attempt, retryAfterMs(response), random);
        if (attempt < MAX_ATTEMPTS && waited + delay <= WAIT_BUDGET_MS) {
          waited += delay;
          await sleep(delay);
          continue;
        }
        logger.info('provider A: retries spent', { grant_id: grant.id, status: response.status, attempts: attempt });
        if (limited)
          throw new RateLimitError(
            "Provider A's rate limit for this account was reached; retry after the time given, or use a smaller limit and select",
            Math.ceil(Math.max(delay, 1000) / 1000),
          );
        throw new ProviderError(`Provider A failed (${response.status}): ${failure.message}`);
      }
      throw translate(response.status, failure);
    }
  }

  return {
    call,
    get calls() {
      return calls;
    },
  };
}

/** Retry-After in ms (seconds or an HTTP date), when the answer gives one. */
function retryAfterMs(response: Response): number | undefined {
  const value = response.headers.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

/** The provider's own wait when it gave one; else exponential with full jitter. */
const backoff = (attempt: number, given: number | undefined, random: () => number) =>
  given ?? Math.round(random() * BACKOFF_BASE_MS * 2 ** (attempt - 1));

async function answerOf(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new ProviderError(`Provider A answered ${response.status} with a body that is not JSON`);
  }
}

async function errorOf(response: Response): Promise<{ message: string; reason?: string; status?: string }> {
  const text = await response.text().catch(() => '');
  let body: GoogleErrorBody = {};
  try {
    body = JSON.parse(text) as GoogleErrorBody;
  } catch {
    // Not Google's JSON error (a proxy's page): the status says enough.
  }
  const reason = body.error?.errors?.[0]?.reason;
  return {
    message: (body.error?.message ?? `HTTP ${response.status}`).slice(0, 500),
    ...(reason ? { reason } : {}),
    ...(body.error?.status ? { status: body.error.status } : {}),
  };
}

/** A provider 4xx as ours: what the client asked for was refused, with the provider's words. */
function translate(status: number, failure: { message: string; reason?: string; status?: string }): Error {
  const said = `provider A: ${failure.message}`;
  switch (status) {
    case 400:
      return new GoogleRequestError(said, failure.status);
    case 401:
      return new AuthenticationError(
        `Provider A refused the grant's access token (${failure.message}); authenticate the account again`,
      );
    case 403:
      return new ForbiddenError(said);
    case 404:
      return new GoogleNotFoundError(said);
    case 409:
    case 412:
      return new ConflictError(said);
    case 410:
      return new GoogleGoneError(failure.reason);
    default:
      return new InvalidRequestError(`${said} (HTTP ${status})`);
  }
}
