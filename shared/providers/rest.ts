import { env } from '#shared/config';
import { ProviderError } from '#shared/errors';
import { guardedFetch, type FetchLike } from '#shared/net/fetch';

/**
 * What the REST clients of live providers (shared/google/client.ts, shared/microsoft/client.ts) share:
 * reading a provider's "later" (Retry-After), the wait before the next attempt, and its JSON answers.
 */

/** Attempts per call, and the total a call may wait between them (an API request has about 29 s in all). */
export const MAX_ATTEMPTS = 4;
export const WAIT_BUDGET_MS = 8_000;

/**
 * The HTTP client of provider REST calls: the guarded client (https to public addresses; http to
 * loopback in local mode), 15 s a call, answers up to 64 MB (a Gmail `raw` message of its 35 MB limit
 * as base64 inside JSON; a Graph message's MIME).
 */
export const restFetch = /* @__PURE__ */ guardedFetch({
  policy: { local: env.webhookLocalMode() },
  timeoutMs: 15_000,
  maxResponseBytes: 64 * 1024 * 1024,
  userAgent: 'Switchboard/1.0',
});

/** What tests change of a REST client. */
export interface RestClientOptions {
  /** Another fetch (the default is `restFetch`). */
  fetch?: FetchLike;
  /** How waiting is done. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

export const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A grant's access token, read once for a client's calls (a listing's gets share it), and read again
 * after `forget` (a 401). `first` is a read already under way (with the connector's). A read that
 * fails is forgotten, and is never an unhandled rejection: it may fail before any call awaits it (an
 * unhandled rejection ends a Lambda's process).
 */
export function tokenCache(read: () => Promise<string>, first?: Promise<string>) {
  let cached: Promise<string> | undefined;
  const keep = (reading: Promise<string>) => {
    const kept = reading.catch((error: unknown) => {
      cached = undefined;
      throw error;
    });
    kept.catch(() => undefined);
    return kept;
  };
  cached = first && keep(first);
  return {
    get: () => (cached ??= keep(read())),
    forget: () => {
      cached = undefined;
    },
  };
}

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
