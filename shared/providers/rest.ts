import { ProviderError } from '#shared/errors';

/**
 * What the REST clients of live providers (shared/google/client.ts, shared/microsoft/client.ts) share:
 * reading a provider's "later" (Retry-After), the wait before the next attempt, and its JSON answers.
 */

/** The first wait of the exponential backoff, when the provider names none. */
const BACKOFF_BASE_MS = 200;

/** Retry-After in ms (seconds or an HTTP date), when the answer gives one. */
export function retryAfterMs(response: Response): number | undefined {
  const value = response.headers.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

/** The provider's own wait when it gave one; else exponential with full jitter (`attempt` from 1). */
export const backoff = (attempt: number, given: number | undefined, random: () => number) =>
  given ?? Math.round(random() * BACKOFF_BASE_MS * 2 ** (attempt - 1));

/** A successful answer's JSON (undefined when empty); a body that is not JSON is the provider's failure. */
export async function answerOf(response: Response, provider: string): Promise<unknown> {
  const text = await response.text();
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new ProviderError(`${provider} answered ${response.status} with a body that is not JSON`);
  }
}
