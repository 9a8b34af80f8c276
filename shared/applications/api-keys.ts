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
