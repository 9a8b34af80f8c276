import type middy from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { GRANT_RATE_LIMIT, applicationRateLimit, type RateLimit } from '#shared/applications/rate-limits';
import { applicationRateLimitKey, grantRateLimitKey, type Key } from '#shared/db/keys';
import { grantIdNamed } from '#shared/grants/resolve';
import type { ApplicationId, GrantId } from '#shared/ids';
import { nextAllowedAt, takeToken, type BucketLimits } from '#shared/db/rate-limits';
import { RateLimitError } from '#shared/errors';
import { stateOf } from '#shared/http/middleware/state';

/**
 * Request rate limits, so that one application's burst cannot take a deployment's DynamoDB capacity and
 * Lambda concurrency from every other: a bucket per application (its own limits, else the deployment's)
 * for every request authenticated as it (API key, access token, scheduler session), taken right after
 * authentication; and a bucket per grant on `{grant_id}` routes, taken once the application's was and
 * the grant is resolved. Unauthenticated routes (a provider's push notifications,
 * the OAuth flow's pages, public booking pages) are nobody's application traffic and are never limited.
 * Refusals are 429 `rate_limit_error` with `Retry-After`.
 *
 * The buckets are in DynamoDB (shared/db/rate-limits.ts), shared by every instance. This container also
 * keeps the latest theoretical arrival time it saw of each bucket: tat only grows, so while the one
 * seen says the bucket is full, a request is refused without a DynamoDB call (a flood costs its
 * instances no writes), and otherwise it says which conditional write to try first.
 *
 * Time is the wall clock (Date.now()), not the injectable clock of shared/time.ts: the limits are about
 * real request rates, and a test that moves business time forward must not leave its buckets a minute
 * in the future.
 */
const MAX_SEEN = 10_000;
const seen = new Map<string, number>();

function remember(key: Key, tat: number): void {
  const id = key.pk;
  const before = seen.get(id);
  if (before !== undefined && before >= tat) return;
  seen.delete(id);
  if (seen.size >= MAX_SEEN) seen.delete(seen.keys().next().value!);
  seen.set(id, tat);
}

const bucketLimits = (limit: RateLimit): BucketLimits => {
  const intervalMs = 1000 / limit.requests_per_second;
  return { intervalMs, toleranceMs: limit.burst * intervalMs };
};

interface Bucket {
  key: Key;
  limit: RateLimit;
  /** What reached its limit, and what to do about it, for the message. */
  whose: string;
  advice: string;
}

function refusal(bucket: Bucket, retryAt: number, now: number): RateLimitError {
  const seconds = Math.max(1, Math.ceil((retryAt - now) / 1000));
  const { limit } = bucket;
  return new RateLimitError(
    `${bucket.whose} reached its rate limit of ${limit.requests_per_second} requests a second (burst ${limit.burst}); retry after ${seconds} s${bucket.advice}`,
    seconds,
  );
}

/**
 * Takes one request from a bucket, or throws the 429. The refusal this container can decide alone (the
 * tat it saw says the bucket is full) is thrown at once, before any await; the write is what the
 * returned promise waits for.
 *
 * A request is judged at `now`, read before its write is sent. Concurrent requests' writes can land in
 * another order than their clocks were read (one process serving many, a slow socket), and a request
 * whose write lands after one timed later finds the bucket fuller than it was at its own `now`: at the
 * edge of the burst it would be refused though the bucket had room. A refusal is therefore judged once
 * more at the time its answer came, when the bucket would have room then (one more write, only at that
 * edge).
 */
function take(bucket: Bucket): Promise<void> {
  const now = Date.now();
  const limits = bucketLimits(bucket.limit);
  const known = seen.get(bucket.key.pk);
  if (known !== undefined && known > now + limits.toleranceMs - limits.intervalMs)
    throw refusal(bucket, nextAllowedAt(known, limits), now);
  return takeToken(bucket.key, limits, now, known).then(async (first) => {
    let result = first;
    let at = now;
    if (!result.allowed) {
      const later = Date.now();
      if (later > now && result.tat <= later + limits.toleranceMs - limits.intervalMs) {
        result = await takeToken(bucket.key, limits, later, result.tat);
        at = later;
      }
    }
    remember(bucket.key, result.tat);
    if (!result.allowed) throw refusal(bucket, result.retryAt, at);
  });
}

const grantBucket = (appId: ApplicationId, grantId: GrantId): Bucket => ({
  key: grantRateLimitKey(appId, grantId),
  limit: GRANT_RATE_LIMIT,
  whose: `Grant '${grantId}'`,
  advice: '',
});

/** The writes still running while the grant is resolved, by request event. */
const pending = new WeakMap<object, { application: Promise<void>; grant?: { id: GrantId; taking: Promise<void> } }>();

/**
 * The bucket of the calling application (`application`, right after authentication) or of the request's
 * grant (`grant`, right after grant resolution). Both writes run while the grant is resolved (they are
 * independent of it): a grant-scoped request waits for one round trip, not three. The grant's bucket is
 * taken early when the path names the grant by ID (keyed by application and grant, so a request naming
 * another application's grant drains nothing of it); by email address or external ID, once the grant
 * is read. Outcomes are awaited by the `grant` middleware before anything else, the application's
 * first, so a refused request goes no further than the grant's lookup, and when the container already
 * knows the application is refused (above), not even that (and writes nothing).
 */
export const rateLimit = (bucket: 'application' | 'grant'): middy.MiddlewareObj<APIGatewayProxyEventV2> => ({
  before: async (request) => {
    const state = stateOf(request);
    if (bucket === 'grant') {
      const started = pending.get(request.event);
      await started?.application;
      if (!state.grant) return;
      if (started?.grant?.id === state.grant.id) await started.grant.taking;
      else await take(grantBucket(state.app!.applicationId, state.grant.id));
      return;
    }
    const appId = state.app?.applicationId ?? state.session?.applicationId;
    if (!appId) return;
    const application = take({
      key: applicationRateLimitKey(appId),
      limit: await applicationRateLimit(appId, Date.now()),
      whose: `Application '${appId}'`,
      advice: '; an application may change its own limit with PATCH /v3/applications {"rate_limit": …}',
    });
    // Awaited by the grant middleware; when grant resolution fails first, its answer is the request's
    // and these outcomes are dropped (not unhandled rejections).
    application.catch(() => undefined);
    const raw = state.params.grant_id;
    const grantId = raw !== undefined && state.app ? grantIdNamed(state.app, raw) : undefined;
    let grant: { id: GrantId; taking: Promise<void> } | undefined;
    if (grantId) {
      try {
        grant = { id: grantId, taking: take(grantBucket(appId, grantId)) };
        grant.taking.catch(() => undefined);
      } catch (refused) {
        // Refused by this container alone: the application's outcome comes first, then this one.
        grant = { id: grantId, taking: Promise.reject(refused) };
        grant.taking.catch(() => undefined);
      }
    }
    pending.set(request.event, { application, ...(grant ? { grant } : {}) });
  },
});
