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
  PayloadTooLargeError,
  ProviderError,
  RateLimitError,
} from '#shared/errors';
import { logger } from '#shared/logger';
import { GuardedRequestError } from '#shared/net/request';
import {
  BATCH_PATH,
  batchUrlOf,
  decodeBatchAnswer,
  encodeBatch,
  GRAPH_VERSION,
  MAX_BATCH,
} from '#shared/microsoft/batch';
import { MAX_IN_FLIGHT, mailboxLimits, type MailboxLimits } from '#shared/microsoft/limits';

/**
 * Provider B's REST API (Microsoft Graph v1.0: Outlook mail, calendars, contacts) for one grant: a
 * thin `fetch` client, no vendor SDK. Each call carries the grant's access token (refreshed under
 * its lease by shared/accounts/provider-tokens.ts; `invalid_grant` there expires the grant), goes
 * through the guarded client (https to public addresses; http to loopback in local mode only), and
 * is retried when Graph says "later": 429 and 503 after their `Retry-After`, else after an
 * exponential backoff with full jitter, within a wait budget a request can afford. Its other
 * failures (500, 502, 504, a timeout, a lost connection) are retried only for calls that are safe
 * to repeat: a POST (a send, a create) may have been carried out. What is left when the budget is
 * spent becomes our error: 429 `rate_limit_error` with `Retry-After` for the limits, 504
 * `provider_error` for failures. Graph's other 4xx become ours (400, 403, 404, 409/412, 413) with
 * its message; a 410 or a `syncStateNotFound` (an expired delta token) is a GraphGoneError the
 * caller turns into a full sync. A 401 reads the token again once (a refresh may have landed).
 *
 * A connector's `settings.api_base_url` replaces the scheme and host of every call, the paths
 * (`/v1.0/…`) kept (the local fake; a proxy); `@odata.nextLink` and `@odata.deltaLink` are followed
 * only on that same base.
 *
 * Calls marked `batch` that are made at the same time go out together, up to 20 in one
 * `POST /v1.0/$batch` (shared/microsoft/batch.ts); each item is still its own call: its 429 or
 * failure is retried alone, in a later batch, and its answer is mapped as a single call's would be.
 * Every call first takes one of the mailbox's requests, and at most 4 requests of a mailbox are in
 * flight at once (shared/microsoft/limits.ts).
 */

/** Where Graph lives; paths carry the version (`/v1.0/me/messages`). */
export const GRAPH_API_BASE = 'https://graph.microsoft.com';

export type GraphMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

type QueryValue = string | number | boolean | readonly string[] | undefined;

export interface GraphRequest {
  method?: GraphMethod;
  /** The REST path with its version, e.g. `${client.mailbox}/messages`; may carry a query already. */
  path: string;
  /** OData options and parameters (`$select`, `$top`, …); a list is joined with commas, as OData takes it. */
  query?: Record<string, QueryValue>;
  /** Request headers: `Prefer`, `If-Match`, `ConsistencyLevel`… */
  headers?: Record<string, string>;
  /** JSON, unless `contentType` says otherwise. */
  body?: unknown;
  /** The body's media type when it is not JSON (sendMail's base64 MIME is `text/plain`): `body` is then sent as the string it is. */
  contentType?: string;
  /** `text`: the answer's body as text (a message's MIME `$value`); default: its JSON. */
  answer?: 'json' | 'text';
  /**
   * May travel in one `$batch` with the other calls made at the same time (the gets of a listing):
   * up to MAX_BATCH in one HTTP request. Each keeps its own answer, errors and retries.
   */
  batch?: boolean;
}

/** One page of a collection, with what follows it: more pages, or (a delta's last page) the next round's link. */
export interface GraphPage<T> {
  value: T[];
  nextLink?: string;
  deltaLink?: string;
}

/** Graph's error body: `{error: {code, message, innerError: {…}}}`. */
interface GraphErrorBody {
  error?: { code?: string; message?: string; innerError?: { code?: string } };
}

interface Failure {
  message: string;
  code?: string;
}

/**
 * Graph can no longer answer from the delta (or paging) link given: the token expired, the server's
 * state was reset, or the link is not on the API base the client calls. The caller starts over.
 */
export class GraphGoneError extends Error {
  constructor(readonly reason: string | undefined) {
    super(`provider B: the cursor is no longer valid (${reason ?? 'gone'})`);
    this.name = 'GraphGoneError';
  }
}

/** Graph's 400 as ours, with its error `code` for callers that tell them apart. */
export class GraphRequestError extends InvalidRequestError {
  constructor(
    message: string,
    readonly graphCode: string | undefined,
  ) {
    super(message);
  }
}

/** Graph's 404, with its code (`ErrorItemNotFound`, `MailboxNotEnabledForRESTAPI`, …). */
export class GraphNotFoundError extends NotFoundError {
  constructor(
    message: string,
    readonly graphCode: string | undefined,
  ) {
    super(message);
  }
}

/** Codes of a delta token Graph no longer knows (some workloads answer them with a 400, not a 410). */
const GONE_CODES = new Set(['syncstatenotfound', 'syncstateinvalid', 'resyncrequired']);
/** Graph's "later": the request was not carried out, whatever its method. */
const LIMITED = 429;
const UNAVAILABLE = 503;
/** Failures after which a request may have been carried out: retried only when repeating it is harmless. */
const FAILED_STATUSES = new Set([500, 502, 504]);
const IDEMPOTENT = new Set(['GET', 'PUT', 'PATCH', 'DELETE']);
export interface GraphClientOptions extends RestClientOptions {
  /** Tests: how the grant's access token is read (default: its provider tokens, refreshed under the lease). */
  accessToken?: () => Promise<string>;
  /** Tests: the mailbox's limits (default: the grant's in this instance). */
  limits?: MailboxLimits;
}

export interface GraphClient {
  /** The mailbox's path: `/v1.0/me`, or `/v1.0/users/{id}` for a grant of application permissions. */
  readonly mailbox: string;
  call<T>(request: GraphRequest): Promise<T>;
  /** Many calls at once, in batches of MAX_BATCH; each settles alone (its failed attempts retried alone). */
  all<T>(requests: readonly GraphRequest[]): Promise<PromiseSettledResult<T>[]>;
  /**
   * One page of a collection, from a request or from a link Graph gave (`@odata.nextLink`, a stored
   * `@odata.deltaLink`), sent with `headers` (a link carries its query, not the request's `Prefer`).
   * A link that is not on the client's API base is never called: it is a GraphGoneError.
   */
  page<T>(from: GraphRequest | string, headers?: Record<string, string>): Promise<GraphPage<T>>;
  /** Every page, following `@odata.nextLink` with the first request's headers; the last page has the deltaLink, if any. */
  pages<T>(from: GraphRequest | string, headers?: Record<string, string>): AsyncGenerator<GraphPage<T>, void>;
  /** Graph requests made so far, retries included (a batch is one). */
  readonly calls: number;
}

/** Whether a grant acts with application permissions (admin consent), on a mailbox it names, not as its user. */
export const actsAsApplication = (grant: Pick<GrantRecord, 'settings'>): boolean =>
  grant.settings.credential_type === 'adminconsent' || grant.settings.app_permission === true;

/**
 * The path of the grant's mailbox: `/v1.0/me` for a user's grant; `/v1.0/users/{id}` for one of
 * application permissions (its token is the application's, with no user: `/me` means nothing).
 */
export function mailboxPath(grant: Pick<GrantRecord, 'settings' | 'provider_user_id' | 'email'>): string {
  if (!actsAsApplication(grant)) return `${GRAPH_VERSION}/me`;
  const id = encodeURIComponent(grant.provider_user_id ?? grant.email).replace(/%40/g, '@');
  return `${GRAPH_VERSION}/users/${id}`;
}

/**
 * The path and query of a link Graph gave, if it may be called: absolute, on the same scheme, host
 * and port as `apiBase` (Graph's own by default), under the version; undefined otherwise.
 */
export function linkPath(link: string, apiBase: string | undefined): string | undefined {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    return undefined;
  }
  if (url.origin !== new URL(apiBase ?? GRAPH_API_BASE).origin || url.username || url.password || url.hash)
    return undefined;
  if (!url.pathname.startsWith(`${GRAPH_VERSION}/`)) return undefined;
  return `${url.pathname}${url.search}`;
}

/**
 * Every call asks for immutable IDs (`Prefer: IdType="ImmutableId"`, merged with the call's own
 * preferences): an Outlook item keeps its ID when it moves between folders, so a message's ID, its
 * metadata here and what webhooks announced about it stay true after a move.
 */
function withImmutableIds(headers: Record<string, string> | undefined): string {
  const given = Object.entries(headers ?? {})
    .filter(([name]) => name.toLowerCase() === 'prefer')
    .map(([, value]) => value);
  return [...given, 'IdType="ImmutableId"'].join(', ');
}

/** The client of one grant's provider B mailbox. */
export async function graphClientOf(grant: GrantRecord, options: GraphClientOptions = {}): Promise<GraphClient> {
  // The access token is read while the connector is: the first call does not wait for both in turn.
  const token = options.accessToken ? undefined : providerAccessToken(grant);
  token?.catch(() => undefined);
  const base = await apiBaseOf(grant);
  return newGraphClient(grant, base, options, token);
}

export function newGraphClient(
  grant: GrantRecord,
  apiBase: string | undefined,
  options: GraphClientOptions = {},
  /** The grant's access token, already being read. */
  first?: Promise<string>,
): GraphClient {
  const fetch = options.fetch ?? restFetch;
  const sleep = options.sleep ?? sleepFor;
  const random = options.random ?? Math.random;
  const readToken = options.accessToken ?? (() => providerAccessToken(grant));
  const limits = options.limits ?? mailboxLimits(grant.id);
  const base = apiBase ?? GRAPH_API_BASE;
  const mailbox = mailboxPath(grant);
  let calls = 0;
  /** One HTTP request of the mailbox, within its concurrency bound (`weight`: the requests Graph runs from it at once). */
  const send = (url: URL, init: RequestInit, weight = 1) =>
    limits.slot(weight, () => {
      calls++;
      return fetch(url, init);
    });
  const batcher = newBatcher(new URL(BATCH_PATH, base), send);

  const tokens = tokenCache(readToken, first);
  const accessToken = tokens.get;

  async function call<T>(request: GraphRequest): Promise<T> {
    const url = urlOf(base, request);
    const method = request.method ?? 'GET';
    const repeatable = IDEMPOTENT.has(method);
    const json = request.body !== undefined && request.contentType === undefined;
    const body = request.body === undefined ? undefined : json ? JSON.stringify(request.body) : textBody(request);
    const batchable = request.batch === true && batchUrlOf(`${url.pathname}${url.search}`) !== undefined;
    let waited = 0;
    let tokenRetried = false;
    for (let attempt = 1; ; attempt++) {
      const token = await accessToken();
      // The mailbox's requests: wait for one, or answer 429 now when the wait is more than is left.
      const wait = limits.reserve(1, WAIT_BUDGET_MS - waited);
      if (wait) {
        waited += wait;
        await sleep(wait);
      }
      const headers: Record<string, string> = {
        ...Object.fromEntries(
          Object.entries(request.headers ?? {}).filter(([name]) => name.toLowerCase() !== 'prefer'),
        ),
        prefer: withImmutableIds(request.headers),
        ...(body !== undefined ? { 'content-type': request.contentType ?? 'application/json' } : {}),
      };
      const init: RequestInit = {
        method,
        headers: {
          ...headers,
          authorization: `Bearer ${token}`,
          accept: request.answer === 'text' ? '*/*' : 'application/json',
        },
        ...(body !== undefined ? { body } : {}),
      };
      let response: Response;
      try {
        response = await (batchable ? batcher.send(url, init, headers) : send(url, init));
      } catch (error) {
        if (!(error instanceof GuardedRequestError)) throw error;
        if (error.kind === 'blocked')
          throw new InvalidRequestError(
            `Provider B's API at ${url.host} may not be called from here (${error.message}): check the microsoft connector's settings.api_base_url`,
          );
        const delay = backoff(attempt, undefined, random);
        if (repeatable && attempt < MAX_ATTEMPTS && waited + delay <= WAIT_BUDGET_MS) {
          waited += delay;
          await sleep(delay);
          continue;
        }
        throw new ProviderError(
          error.kind === 'timeout' ? 'Provider request timed out.' : `Provider B could not be reached (${error.kind})`,
          { cause: error },
        );
      }
      if (response.ok) {
        if (response.status === 204) return undefined as T;
        return (request.answer === 'text' ? await response.text() : await answerOf(response, 'Provider B')) as T;
      }
      const failure = await errorOf(response);
      if (response.status === 401 && !tokenRetried) {
        // A token revoked or rotated since it was read: read it again once (a refresh may have landed).
        tokenRetried = true;
        tokens.forget();
        continue;
      }
      const limited = response.status === LIMITED;
      if (limited || response.status === UNAVAILABLE || (repeatable && FAILED_STATUSES.has(response.status))) {
        const delay = backoff(attempt, retryAfterMs(response), random);
        if (attempt < MAX_ATTEMPTS && waited + delay <= WAIT_BUDGET_MS) {
          waited += delay;
          await sleep(delay);
          continue;
        }
        logger.info('provider B: retries spent', { grant_id: grant.id, status: response.status, attempts: attempt });
        if (limited)
          throw new RateLimitError(
            "Provider B's rate limit for this mailbox was reached; retry after the time given, or use a smaller limit and select",
            Math.ceil(Math.max(delay, 1000) / 1000),
          );
        throw new ProviderError(`Provider B failed (${response.status}): ${failure.message}`);
      }
      if (response.status >= 500) throw new ProviderError(`Provider B failed (${response.status}): ${failure.message}`);
      throw translate(response.status, failure);
    }
  }

  async function page<T>(from: GraphRequest | string, headers?: Record<string, string>): Promise<GraphPage<T>> {
    let request: GraphRequest;
    if (typeof from === 'string') {
      const path = linkPath(from, apiBase);
      if (path === undefined) throw new GraphGoneError('linkNotOnApiBase');
      request = { path, ...(headers ? { headers } : {}) };
    } else request = headers ? { ...from, headers: { ...from.headers, ...headers } } : from;
    const answer = await call<Record<string, unknown> | undefined>({ ...request, answer: 'json' });
    const value = answer?.value;
    if (!Array.isArray(value)) throw new ProviderError('Provider B answered a collection without its value');
    const next = answer?.['@odata.nextLink'];
    const delta = answer?.['@odata.deltaLink'];
    return {
      value: value as T[],
      ...(typeof next === 'string' ? { nextLink: next } : {}),
      ...(typeof delta === 'string' ? { deltaLink: delta } : {}),
    };
  }

  async function* pages<T>(
    from: GraphRequest | string,
    headers?: Record<string, string>,
  ): AsyncGenerator<GraphPage<T>, void> {
    const sent = headers ?? (typeof from === 'string' ? undefined : from.headers);
    let current = await page<T>(from, headers);
    yield current;
    while (current.nextLink !== undefined) {
      // A next page Graph points elsewhere is its fault, not an expired cursor of ours.
      if (linkPath(current.nextLink, apiBase) === undefined)
        throw new ProviderError(`Provider B gave a next page that is not on its API base (${base})`);
      current = await page<T>(current.nextLink, sent);
      yield current;
    }
  }

  return {
    mailbox,
    call,
    all: <T>(requests: readonly GraphRequest[]) =>
      Promise.allSettled(requests.map((r) => call<T>({ ...r, batch: true }))),
    page,
    pages,
    get calls() {
      return calls;
    },
  };
}

/** A body of another media type than JSON is sent as the text it is. */
function textBody(request: GraphRequest): string {
  if (typeof request.body !== 'string')
    throw new TypeError(`A ${request.contentType} body of provider B's ${request.path} must be a string`);
  return request.body;
}

/** The URL of a request on `base`: its path (with any query it carries), then its query. */
function urlOf(base: string, request: GraphRequest): URL {
  const url = new URL(request.path, base);
  const extra = Object.entries(request.query ?? {})
    .filter((entry): entry is [string, Exclude<QueryValue, undefined>] => entry[1] !== undefined)
    .map(
      ([name, value]) => `${encodeQuery(name)}=${encodeQuery(Array.isArray(value) ? value.join(',') : String(value))}`,
    );
  if (extra.length) url.search = url.search ? `${url.search}&${extra.join('&')}` : extra.join('&');
  return url;
}

/** Percent-encoding that leaves OData's `$` and `,` readable (a space is %20: OData filters do not take `+`). */
const encodeQuery = (value: string) => encodeURIComponent(value).replace(/%24/g, '$').replace(/%2C/gi, ',');

interface Queued {
  url: URL;
  init: RequestInit;
  /** The item's own headers (not the token: the batch's holds for all). */
  headers: Record<string, string>;
  resolve: (response: Response) => void;
  reject: (error: unknown) => void;
}

/**
 * Gathers the batchable calls made in one turn of the event loop, per access token, and sends them
 * as batches of at most MAX_BATCH (one call alone goes as itself). Each call gets its own answer as
 * a Response; a batch that fails as a whole gives every call its failure (a transport error, or the
 * batch's own error answer, with its Retry-After), and a call the batch's answer leaves out gets a 502.
 */
function newBatcher(
  batchUrl: URL,
  send: (url: URL, init: RequestInit, weight?: number) => Promise<Response>,
): { send(url: URL, init: RequestInit, headers: Record<string, string>): Promise<Response> } {
  const queues = new Map<string, Queued[]>();
  let scheduled = false;

  const missing = () =>
    new Response(
      JSON.stringify({
        error: { code: 'BatchItemMissing', message: 'the batch answer has no response for this call' },
      }),
      { status: 502, headers: { 'content-type': 'application/json' } },
    );

  async function sendBatch(authorization: string, calls: Queued[]): Promise<void> {
    if (calls.length === 1) {
      const [one] = calls;
      return send(one!.url, one!.init).then(one!.resolve, one!.reject);
    }
    const body = encodeBatch(
      calls.map((c) => ({
        method: c.init.method ?? 'GET',
        url: batchUrlOf(`${c.url.pathname}${c.url.search}`)!,
        headers: c.headers,
        ...(typeof c.init.body === 'string' ? { body: c.init.body } : {}),
      })),
    );
    let answer: Response;
    try {
      answer = await send(
        batchUrl,
        {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json', accept: 'application/json' },
          body,
        },
        Math.min(calls.length, MAX_IN_FLIGHT),
      );
    } catch (error) {
      for (const c of calls) c.reject(error);
      return;
    }
    const text = await answer.text();
    if (!answer.ok) {
      // The batch itself was refused (a token, a rate limit, an outage): each call sees that answer.
      for (const c of calls) c.resolve(new Response(text || null, { status: answer.status, headers: answer.headers }));
      return;
    }
    let parts = new Map<number, Response>();
    try {
      parts = decodeBatchAnswer(JSON.parse(text));
    } catch {
      // Not JSON: no call has an answer, each gets the 502 below.
    }
    calls.forEach((c, i) => c.resolve(parts.get(i) ?? missing()));
  }

  function flush(): void {
    scheduled = false;
    const all = [...queues.entries()];
    queues.clear();
    for (const [authorization, calls] of all)
      for (let i = 0; i < calls.length; i += MAX_BATCH) {
        const batch = calls.slice(i, i + MAX_BATCH);
        sendBatch(authorization, batch).catch((error: unknown) => batch.forEach((c) => c.reject(error)));
      }
  }

  return {
    send(url, init, headers) {
      const authorization = new Headers(init.headers).get('authorization') ?? '';
      return new Promise<Response>((resolve, reject) => {
        let queue = queues.get(authorization);
        if (!queue) queues.set(authorization, (queue = []));
        queue.push({ url, init, headers, resolve, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    },
  };
}

async function errorOf(response: Response): Promise<Failure> {
  const text = await response.text().catch(() => '');
  let body: GraphErrorBody = {};
  try {
    body = JSON.parse(text) as GraphErrorBody;
  } catch {
    // Not Graph's JSON error (a proxy's page): the status says enough.
  }
  const code = body.error?.code ?? body.error?.innerError?.code;
  return {
    message: (body.error?.message || `HTTP ${response.status}`).slice(0, 500),
    ...(code ? { code } : {}),
  };
}

/** A Graph 4xx as ours: what the client asked for was refused, with Graph's words. */
function translate(status: number, failure: Failure): Error {
  const said = `provider B: ${failure.message}`;
  if (GONE_CODES.has(failure.code?.toLowerCase() ?? '')) return new GraphGoneError(failure.code);
  switch (status) {
    case 400:
      return new GraphRequestError(said, failure.code);
    case 401:
      return new AuthenticationError(
        `Provider B refused the grant's access token (${failure.message}); authenticate the account again`,
      );
    case 403:
      return new ForbiddenError(said);
    case 404:
      return new GraphNotFoundError(said, failure.code);
    case 409:
    case 412:
      return new ConflictError(said);
    case 410:
      return new GraphGoneError(failure.code);
    case 413:
      return new PayloadTooLargeError(said);
    default:
      return new InvalidRequestError(`${said} (HTTP ${status})`);
  }
}
