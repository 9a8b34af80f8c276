import { randomBytes } from 'node:crypto';

/**
 * An Exchange item ID as Graph answers it: as long as a real one (about 150 characters, base64url
 * with the store's prefix and the item kind's tail), so that nothing downstream gets by on shorter ones.
 */
export function exchangeId(tail: string): string {
  return `AAMkAD${randomBytes(108).toString('base64url')}${tail}`;
}
