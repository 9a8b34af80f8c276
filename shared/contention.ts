/**
 * Optimistic writes that lose to a concurrent writer read again and retry. Many writers on one item
 * at once (50 clients updating one thread) would keep colliding if they retried in step, so each
 * waits a random share of a window that doubles per attempt (full jitter), up to 200 ms.
 */
export const CONTENTION_ATTEMPTS = 12;

export const contentionPause = (attempt: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(200, 10 * 2 ** attempt)));
