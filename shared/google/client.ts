import { randomBytes } from 'node:crypto';
import { providerAccessToken } from '#shared/accounts/provider-tokens';
import {
  answerOf,
  backoff,
  MAX_ATTEMPTS,
  restFetch,
  retryAfterMs,
  WAIT_BUDGET_MS,
  sleepFor,
  tokenCache,
  type RestClientOptions,
} from '#shared/providers/rest';
import { apiBaseOf } from '#shared/accounts/early-reads';
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
import { logger } from '#shared/logger';
import { GuardedRequestError } from '#shared/net/request';
import { BATCH_PATHS, decodeBatchAnswer, encodeBatch, MAX_BATCH } from '#shared/google/batch';
import { gmailUnits, grantLimits } from '#shared/google/limits';

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
 *
 * Calls marked `batch` that are made at the same time go out together, up to 50 in one request to
 * the API's batch endpoint (shared/google/batch.ts); each item is still its own call: its failure is
 * retried alone, in a later batch. Every Gmail call first takes its quota units, and at most a few
 * requests of one grant are in flight at once (shared/google/limits.ts).
 */

export type GoogleApi = 'gmail' | 'calendar' | 'people' | 'directory';

/** Where each API lives at the provider (the paths carry the rest: /gmail/v1/…, /calendar/v3/…, /v1/…). */
export const GOOGLE_API_BASES: Record<GoogleApi, string> = {
  gmail: 'https://gmail.googleapis.com',
  calendar: 'https://www.googleapis.com',
  people: 'https://people.googleapis.com',
  directory: 'https://admin.googleapis.com',
};

type QueryValue = string | number | boolean | readonly string[] | undefined;

export interface GoogleRequest {
  api: GoogleApi;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The REST path, e.g. `/gmail/v1/users/me/messages`. */
  path: string;
  query?: Record<string, QueryValue>;
  body?: unknown;
  /**
   * May travel in one batch with the other calls of its API made at the same time (the gets of a
   * listing): up to MAX_BATCH in one HTTP request. Each keeps its own answer, errors and retries.
   */
  batch?: boolean;
  /**
   * A media upload (a method whose discovery entry has `mediaUpload`): sent to the method's upload
   * path (`/upload` + path) as `uploadType=multipart`, `body` as the JSON metadata part and this as
   * the media part. Never batched.
   */
  media?: { contentType: string; content: Buffer };
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

export type GoogleClientOptions = RestClientOptions;

export interface GoogleClient {
  call<T>(request: GoogleRequest): Promise<T>;
  /** Provider calls made so far, retries included (the bench's "provider calls per request"). */
  readonly calls: number;
}

/** The client of one grant's provider A account. */
export async function googleClientOf(grant: GrantRecord, options: GoogleClientOptions = {}): Promise<GoogleClient> {
  // The access token is read while the connector is: the first call does not wait for both in turn.
  const token = providerAccessToken(grant);
  token.catch(() => undefined);
  const base = await apiBaseOf(grant);
  return newGoogleClient(grant, base, options, token);
}

export function newGoogleClient(
  grant: GrantRecord,
  apiBase: string | undefined,
  options: GoogleClientOptions = {},
  /** The grant's access token, already being read. */
  first?: Promise<string>,
): GoogleClient {
  const fetch = options.fetch ?? restFetch;
  const sleep = options.sleep ?? sleepFor;
  const random = options.random ?? Math.random;
  const limits = grantLimits(grant.id);
  let calls = 0;
  /** One HTTP request of the grant, within its concurrency bound. */
  const send = (url: URL, init: RequestInit) =>
    limits.slot(() => {
      calls++;
      return fetch(url, init);
    });
  const batcher = newBatcher((api) => new URL(BATCH_PATHS[api], apiBase ?? GOOGLE_API_BASES[api]), send);
  const urlOf = (request: GoogleRequest) => {
    const url = new URL(
      request.media ? `/upload${request.path}` : request.path,
      apiBase ?? GOOGLE_API_BASES[request.api],
    );
    if (request.media) url.searchParams.set('uploadType', 'multipart');
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) url.searchParams.append(name, String(one));
    }
    return url;
  };

  const tokens = tokenCache(() => providerAccessToken(grant), first);
  const accessToken = tokens.get;

  async function call<T>(request: GoogleRequest): Promise<T> {
    const url = urlOf(request);
    const method = request.method ?? 'GET';
    const units = request.api === 'gmail' ? gmailUnits(method, url.pathname) : 0;
    let waited = 0;
    let tokenRetried = false;
    const payload = request.media
      ? multipartRelated(request.body ?? {}, request.media)
      : request.body !== undefined
        ? { type: 'application/json', body: JSON.stringify(request.body) }
        : undefined;
    for (let attempt = 1; ; attempt++) {
      const token = await accessToken();
      if (units) {
        // Gmail's quota: wait for the units, or answer 429 now when the wait is more than is left.
        const { wait, at } = limits.reserve(units, WAIT_BUDGET_MS - waited);
        if (wait) {
          waited += wait;
          await limits.departure(at, sleep);
        }
      }
      const init: RequestInit = {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          ...(payload ? { 'content-type': payload.type } : {}),
        },
        ...(payload ? { body: payload.body } : {}),
      };
      let response: Response;
      try {
        response = await (request.batch ? batcher.send(request.api, url, init) : send(url, init));
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
      if (response.ok) return (response.status === 204 ? undefined : await answerOf(response, 'Provider A')) as T;
      const failure = await errorOf(response);
      if (response.status === 401 && !tokenRetried) {
        // A token revoked or rotated since it was read: read it again once (a refresh may have landed).
        tokenRetried = true;
        tokens.forget();
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

interface Queued {
  url: URL;
  init: RequestInit;
  resolve: (response: Response) => void;
  reject: (error: unknown) => void;
}

/**
 * Gathers the batchable calls made in one turn of the event loop, per API and access token, and
 * sends them as batches of at most MAX_BATCH (one call alone goes as itself). Each call gets its own
 * answer as a Response; a batch that fails as a whole gives every call its failure (a transport
 * error, or the batch's own error answer), and a call the batch's answer leaves out gets a 502.
 */
function newBatcher(
  batchUrl: (api: GoogleApi) => URL,
  send: (url: URL, init: RequestInit) => Promise<Response>,
): { send(api: GoogleApi, url: URL, init: RequestInit): Promise<Response> } {
  const queues = new Map<string, { api: GoogleApi; authorization: string; calls: Queued[] }>();
  let scheduled = false;

  async function sendBatch(api: GoogleApi, authorization: string, calls: Queued[]): Promise<void> {
    if (calls.length === 1) {
      const [one] = calls;
      return send(one!.url, one!.init).then(one!.resolve, one!.reject);
    }
    const { contentType, body } = encodeBatch(
      calls.map((c) => ({
        method: c.init.method ?? 'GET',
        target: `${c.url.pathname}${c.url.search}`,
        ...(typeof c.init.body === 'string' ? { body: c.init.body } : {}),
      })),
    );
    let answer: Response;
    try {
      answer = await send(batchUrl(api), {
        method: 'POST',
        headers: { authorization, 'content-type': contentType },
        body,
      });
    } catch (error) {
      for (const c of calls) c.reject(error);
      return;
    }
    const text = await answer.text();
    const type = answer.headers.get('content-type');
    if (!answer.ok || !type?.toLowerCase().startsWith('multipart/')) {
      // The batch itself was refused (a token, a rate limit, an outage): each call sees that answer.
      const status = answer.ok ? 502 : answer.status;
      for (const c of calls) c.resolve(new Response(text || null, { status, headers: answer.headers }));
      return;
    }
    const parts = decodeBatchAnswer(type, text);
    calls.forEach((c, i) =>
      c.resolve(
        parts.get(i) ??
          new Response(
            JSON.stringify({ error: { code: 502, message: 'the batch answer has no part for this call' } }),
            {
              status: 502,
            },
          ),
      ),
    );
  }

  function flush(): void {
    scheduled = false;
    const all = [...queues.values()];
    queues.clear();
    for (const { api, authorization, calls } of all)
      for (let i = 0; i < calls.length; i += MAX_BATCH) {
        const batch = calls.slice(i, i + MAX_BATCH);
        sendBatch(api, authorization, batch).catch((error: unknown) => batch.forEach((c) => c.reject(error)));
      }
  }

  return {
    send(api, url, init) {
      const authorization = new Headers(init.headers).get('authorization') ?? '';
      return new Promise<Response>((resolve, reject) => {
        const key = `${api} ${authorization}`;
        let queue = queues.get(key);
        if (!queue) queues.set(key, (queue = { api, authorization, calls: [] }));
        queue.calls.push({ url, init, resolve, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    },
  };
}

/** A media upload's body (Google's `uploadType=multipart`): the JSON metadata, then the media. */
function multipartRelated(metadata: unknown, media: { contentType: string; content: Buffer }) {
  const boundary = `switchboard_${randomBytes(12).toString('hex')}`;
  const head =
    `--${boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n${JSON.stringify(metadata)}\r\n` +
    `--${boundary}\r\nContent-Type: ${media.contentType}\r\n\r\n`;
  return {
    type: `multipart/related; boundary=${boundary}`,
    body: Buffer.concat([Buffer.from(head), media.content, Buffer.from(`\r\n--${boundary}--\r\n`)]),
  };
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
