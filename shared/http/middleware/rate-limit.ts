import type middy from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { GRANT_RATE_LIMIT, applicationRateLimit, type RateLimit } from '#shared/applications/rate-limits';
import { applicationRateLimitKey, grantRateLimitKey, type Key } from '#shared/db/keys';
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
 */
function take(bucket: Bucket): Promise<void> {
  const now = Date.now();
  const limits = bucketLimits(bucket.limit);
  const known = seen.get(bucket.key.pk);
  if (known !== undefined && known > now + limits.toleranceMs - limits.intervalMs)
    throw refusal(bucket, nextAllowedAt(known, limits), now);
  return takeToken(bucket.key, limits, now, known).then((result) => {
    remember(bucket.key, result.tat);
    if (!result.allowed) throw refusal(bucket, result.retryAt, now);
  });
}

/** The application's write still running while the grant is resolved, by request event. */
const pending = new WeakMap<object, Promise<void>>();

/**
 * The bucket of the calling application (`application`, right after authentication) or of the request's
 * grant (`grant`, right after grant resolution). The application's write runs while the grant is
 * resolved (the two are independent): a grant-scoped request waits for one round trip less. Its
 * outcome is awaited by the `grant` middleware before anything else, so a refused request goes no
 * further than the grant's lookup, and when the container already knows the application is refused
 * (above), not even that.
 */
export const rateLimit = (bucket: 'application' | 'grant'): middy.MiddlewareObj<APIGatewayProxyEventV2> => ({
  before: async (request) => {
    const state = stateOf(request);
    if (bucket === 'grant') {
      await pending.get(request.event);
      if (state.grant)
        await take({
          key: grantRateLimitKey(state.grant.id),
          limit: GRANT_RATE_LIMIT,
          whose: `Grant '${state.grant.id}'`,
          advice: '',
        });
      return;
    }
    const appId = state.app?.applicationId ?? state.session?.applicationId;
    if (!appId) return;
    const taking = take({
      key: applicationRateLimitKey(appId),
      limit: await applicationRateLimit(appId, Date.now()),
      whose: `Application '${appId}'`,
      advice: '; an application may change its own limit with PATCH /v3/applications {"rate_limit": …}',
    });
    // Awaited by the grant middleware; when grant resolution fails first, its answer is the request's
    // and this outcome is dropped (not an unhandled rejection).
    taking.catch(() => undefined);
    pending.set(request.event, taking);
  },
});
