import { env } from '#shared/config';
import { getApplicationRateLimit, type StoredRateLimit } from '#shared/db/applications';
import { InvalidRequestError } from '#shared/errors';
import type { ApplicationId } from '#shared/ids';

/**
 * The request rate limits of applications and grants (enforced by shared/http/middleware/rate-limit.ts):
 * the deployment's defaults, what an application may set for itself, and the limits in force for one.
 */

export interface RateLimit {
  requests_per_second: number;
  burst: number;
}

const DEPLOYMENT: RateLimit = { requests_per_second: env.rateLimitPerSecond(), burst: env.rateLimitBurst() };
const MAX_PER_SECOND = env.rateLimitMaxPerSecond();
/** An application's burst may reach twice the most it may set a second: two seconds' worth at once. */
const MAX_BURST = 2 * MAX_PER_SECOND;
export const GRANT_RATE_LIMIT: RateLimit = {
  requests_per_second: env.grantRateLimitPerSecond(),
  burst: env.grantRateLimitBurst(),
};

/** The limits in force for an application whose own are `stored` (none: the deployment's). */
export const effectiveRateLimit = (stored: StoredRateLimit | undefined): RateLimit =>
  stored ? { requests_per_second: stored.requests_per_second, burst: stored.burst } : { ...DEPLOYMENT };

/** A PATCH's `rate_limit` within the deployment's maximum, else a 400 saying it. */
export function checkRateLimitSetting(value: RateLimit | null | undefined): void {
  if (!value) return;
  if (value.requests_per_second > MAX_PER_SECOND)
    throw new InvalidRequestError(
      `'rate_limit.requests_per_second' may be at most ${MAX_PER_SECOND} on this deployment (RATE_LIMIT_MAX_PER_SECOND)`,
    );
  if (value.burst > MAX_BURST)
    throw new InvalidRequestError(
      `'rate_limit.burst' may be at most ${MAX_BURST} on this deployment (twice RATE_LIMIT_MAX_PER_SECOND)`,
    );
}

/**
 * An application's limits are an attribute of its item, which authentication does not read (it reads
 * the API key's item, the access token's or the session's): they are read once per warm container and
 * trusted for this long, as a resolved API key is, so a request costs no read for them. A change made
 * with PATCH applies at once in the container that served it, and within this time everywhere else.
 */
const CACHE_MS = 30_000;
const MAX_CACHE_ENTRIES = 1000;
const cache = new Map<ApplicationId, { limit: RateLimit; until: number }>();

/** The limits in force for an application. `now`: epoch milliseconds. */
export async function applicationRateLimit(appId: ApplicationId, now: number): Promise<RateLimit> {
  const cached = cache.get(appId);
  if (cached && cached.until > now) return cached.limit;
  const limit = effectiveRateLimit(await getApplicationRateLimit(appId));
  cache.delete(appId);
  if (cache.size >= MAX_CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
  cache.set(appId, { limit, until: now + CACHE_MS });
  return limit;
}

/** After a change of an application's limits: this container reads them again on its next request. */
export function forgetApplicationRateLimit(appId: ApplicationId): void {
  cache.delete(appId);
}
