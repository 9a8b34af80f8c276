import { env } from '#shared/config';
import { getApiKeyByHash } from '#shared/db/api-keys';
import { AuthenticationError, InvalidRequestError } from '#shared/errors';
import { accessTokenRecord, isAccessToken } from '#shared/accounts/issued-tokens';
import type { ApplicationId } from '#shared/ids';
import { clock } from '#shared/time';
import { hashApiKey } from '#shared/applications/api-keys';
import type { ApplicationContext, SessionContext } from '#shared/caller';

/**
 * Sessions a function accepts as bearer tokens besides API keys (the scheduler's public endpoints).
 * `resolve` answers the live session a token is, or undefined; `rejection` is the 401 message for a
 * token that is neither a live session nor an API key.
 */
export interface SessionAuthenticator {
  resolve(token: string): Promise<SessionContext | undefined>;
  rejection: string;
}

/**
 * Resolved keys are remembered for a short time per container so that a warm function does not
 * read DynamoDB twice per request. Only hashes are kept, never keys. A key deleted elsewhere is
 * trusted here until its entry lapses (at most CACHE_MS); a key's expiry is remembered with it, so
 * an expired key is refused from its expires_at on, cached or not.
 */
const CACHE_MS = env.apiKeyCacheSeconds() * 1000;
const MAX_CACHE_ENTRIES = 1000;
const cache = new Map<string, { appId: ApplicationId; until: number; expiresAt: number | undefined }>();

/**
 * Stops trusting a key (by its hash) in this container: a key deleted by a request is refused at once
 * by the instance that served the request, not a cache lifetime later.
 */
export function forgetApiKey(hash: string): void {
  cache.delete(hash);
}

/** 401 for a key past its expiry (Unix seconds), saying since when. */
function refuseExpired(expiresAt: number | undefined, nowMs: number): void {
  if (expiresAt === undefined || nowMs < expiresAt * 1000) return;
  throw new AuthenticationError(
    `This API key expired at ${new Date(expiresAt * 1000).toISOString()} (Unix ${expiresAt}); call with another API key of the application`,
  );
}

/** The token of `Authorization: Bearer <token>`: 401 when missing or malformed, 400 for several headers. */
export function bearerToken(authorization: string | undefined): string {
  if (!authorization) {
    throw new AuthenticationError('Missing Authorization header; send "Authorization: Bearer <API key>"');
  }
  // API Gateway joins repeated headers with commas, and no API key has one: two Authorization
  // headers are refused rather than one of them picked.
  if (authorization.includes(',')) {
    throw new InvalidRequestError('Send exactly one Authorization header ("Authorization: Bearer <API key>")');
  }
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
  if (!match) {
    throw new AuthenticationError('Malformed Authorization header; expected "Authorization: Bearer <API key>"');
  }
  return match[1]!;
}

/**
 * The application an `Authorization: Bearer` header authenticates: an API key, or an access token
 * (`sbat_…`, never cached: a revoked token stops working at once). 401 for anything else.
 */
export async function authenticate(authorization: string | undefined): Promise<ApplicationContext> {
  const token = bearerToken(authorization);
  if (isAccessToken(token)) {
    const record = await accessTokenRecord(token);
    if (!record)
      throw new AuthenticationError(
        'The access token is unknown, revoked or expired; exchange a new one at POST /v3/connect/token',
      );
    return {
      applicationId: record.application_id,
      credential: 'access_token',
      grantId: record.grant_id,
      scope: record.scope,
    };
  }
  if (token.length > 512) throw new AuthenticationError('Invalid API key');
  const hash = hashApiKey(token);
  const now = clock.nowMs();
  const cached = cache.get(hash);
  if (cached && cached.until > now) {
    refuseExpired(cached.expiresAt, now);
    return { applicationId: cached.appId, credential: 'api_key' };
  }

  const record = await getApiKeyByHash(hash);
  if (!record) throw new AuthenticationError('Invalid API key');
  if (CACHE_MS > 0) {
    if (cache.size >= MAX_CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
    cache.set(hash, { appId: record.application_id, until: now + CACHE_MS, expiresAt: record.key_expires_at });
  }
  refuseExpired(record.key_expires_at, now);
  return { applicationId: record.application_id, credential: 'api_key' };
}
