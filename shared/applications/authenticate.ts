import { env } from '#shared/config';
import { getApiKey } from '#shared/db/applications';
import { AuthenticationError, InvalidRequestError } from '#shared/errors';
import type { ApplicationId } from '#shared/ids';
import { clock } from '#shared/time';
import { hashApiKey } from '#shared/applications/api-keys';

export interface ApplicationContext {
  applicationId: ApplicationId;
  /** How the caller authenticated; access tokens arrive with the OAuth issue. */
  credential: 'api_key';
}

/**
 * Resolved keys are remembered for a short time per container so that a warm function does not
 * read DynamoDB twice per request. Only hashes are kept, never keys.
 */
const CACHE_MS = env.apiKeyCacheSeconds() * 1000;
const MAX_CACHE_ENTRIES = 1000;
const cache = new Map<string, { appId: ApplicationId; until: number }>();

function bearer(authorization: string | undefined): string {
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

export async function authenticate(authorization: string | undefined): Promise<ApplicationContext> {
  const token = bearer(authorization);
  if (token.length > 512) throw new AuthenticationError('Invalid API key');
  const hash = hashApiKey(token);
  const now = clock.nowMs();
  const cached = cache.get(hash);
  if (cached && cached.until > now) return { applicationId: cached.appId, credential: 'api_key' };

  const record = await getApiKey(hash);
  if (!record) throw new AuthenticationError('Invalid API key');
  if (CACHE_MS > 0) {
    if (cache.size >= MAX_CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
    cache.set(hash, { appId: record.application_id, until: now + CACHE_MS });
  }
  return { applicationId: record.application_id, credential: 'api_key' };
}
