import { RateLimitError } from '#shared/errors';
import { env } from '#shared/config';

/**
 * Provider B's limits per mailbox (Outlook's service limits behind Microsoft Graph: 4 concurrent
 * requests and 10,000 requests per 10 minutes, per application and mailbox), kept by each function
 * instance for the grants it serves (one grant is one application's mailbox):
 *  - Concurrency: at most MAX_IN_FLIGHT requests of one mailbox at once. A `$batch` counts as the
 *    requests Graph runs from it at once (it dispatches up to four of a batch's requests together),
 *    so a batch of 20 takes every slot: batching saves round trips, never the mailbox's concurrency.
 *    Beyond that, requests queue in order (a batch is never starved by the single calls behind it).
 *  - Requests: a bucket of REQUESTS_PER_WINDOW per WINDOW_MS that allows a minute's worth at once. A
 *    call waits for its request, or is refused at once, as 429 with the wait as Retry-After, when the
 *    wait is longer than its request can afford, instead of being sent to earn Graph's 429.
 * Instances do not share these counts (that would cost a table round trip per call); Graph's own
 * 429 and 503 answers, retried by the client after their Retry-After, hold the rest.
 */

export const MAX_IN_FLIGHT = 4;
export const REQUESTS_PER_WINDOW = 10_000;
export const WINDOW_MS = 10 * 60_000;
/** The granularity of request waits, in ms: calls paced at once leave together (one batch). */
const PACE_MS = 100;
/** Mailboxes remembered at once; idle ones are forgotten first. */
const MAX_MAILBOXES = 1_000;

export interface MailboxLimitsOptions {
  now?: () => number;
  /** Requests per WINDOW_MS (default REQUESTS_PER_WINDOW). */
  requestsPerWindow?: number;
  /** Requests that may be spent at once (default: a minute's worth). */
  burst?: number;
}

export class MailboxLimits {
  private readonly now: () => number;
  private readonly perMs: number;
  private readonly burst: number;
  private requests: number;
  private at: number;
  private inFlight = 0;
  private readonly queue: { weight: number; start: () => void }[] = [];

  constructor(options: MailboxLimitsOptions = {}) {
    this.now = options.now ?? Date.now;
    this.perMs = (options.requestsPerWindow ?? REQUESTS_PER_WINDOW) / WINDOW_MS;
    this.burst = options.burst ?? Math.max(1, Math.floor(this.perMs * 60_000));
    this.requests = this.burst;
    this.at = this.now();
  }

  get idle(): boolean {
    return this.inFlight === 0 && this.queue.length === 0;
  }

  /** Slots taken now (tests, metrics). */
  get busy(): number {
    return this.inFlight;
  }

  /** Takes `count` requests now or after a wait (returned, in ms); refuses with 429 when the wait exceeds `maxWaitMs`. */
  reserve(count: number, maxWaitMs: number): number {
    const now = this.now();
    this.requests = Math.min(this.burst, this.requests + (now - this.at) * this.perMs);
    this.at = now;
    const wait = this.requests >= count ? 0 : Math.ceil((count - this.requests) / this.perMs / PACE_MS) * PACE_MS;
    if (wait > maxWaitMs)
      throw new RateLimitError(
        "Provider B's request limit for this mailbox is spent for now; retry after the time given, or use a smaller limit and select",
        wait / 1000,
      );
    // Taken now even when waited for: the balance goes below zero, and the next caller waits longer.
    this.requests -= count;
    return wait;
  }

  /**
   * Runs `send` once `weight` slots (1 for a request, up to MAX_IN_FLIGHT for a batch) are free,
   * after those who asked before.
   */
  async slot<T>(weight: number, send: () => Promise<T>): Promise<T> {
    const taken = Math.min(MAX_IN_FLIGHT, Math.max(1, Math.floor(weight)));
    if (this.queue.length === 0 && this.inFlight + taken <= MAX_IN_FLIGHT) this.inFlight += taken;
    else await new Promise<void>((start) => this.queue.push({ weight: taken, start }));
    try {
      return await send();
    } finally {
      this.inFlight -= taken;
      this.startQueued();
    }
  }

  private startQueued(): void {
    while (this.queue.length && this.inFlight + this.queue[0]!.weight <= MAX_IN_FLIGHT) {
      const next = this.queue.shift()!;
      this.inFlight += next.weight;
      next.start();
    }
  }
}

const byGrant = new Map<string, MailboxLimits>();

/** The limits of one grant's mailbox in this instance. */
export function mailboxLimits(grantId: string): MailboxLimits {
  let limits = byGrant.get(grantId);
  if (!limits) {
    if (byGrant.size >= MAX_MAILBOXES) for (const [id, l] of byGrant) if (l.idle) byGrant.delete(id);
    limits = new MailboxLimits({ requestsPerWindow: env.microsoftGraphRequestsPer10Minutes() });
    byGrant.set(grantId, limits);
  }
  return limits;
}
