import { createHash, randomBytes } from 'node:crypto';

/**
 * API keys are 256-bit random secrets shown once; only their SHA-256 is stored. A fast hash is the
 * right tool for high-entropy keys (no dictionary to attack) and keeps authentication to one
 * GetItem by hash.
 */
export const API_KEY_PREFIX = 'sbk_';

export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey, 'utf8').digest('hex');
}

/** The first characters of a key, kept to tell keys apart: `sbk_` and four more, or four of a chosen key (local seeding). */
export const keyPrefixOf = (apiKey: string) =>
  apiKey.startsWith(API_KEY_PREFIX) ? apiKey.slice(0, API_KEY_PREFIX.length + 4) : apiKey.slice(0, 4);

/**
 * The name of the key an application is created with (admin CLI, local seeding), also answered for
 * such keys stored before keys had names.
 */
export const FIRST_KEY_NAME = 'first key';
