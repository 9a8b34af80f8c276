import { env } from '#shared/config';
import { RateLimitError } from '#shared/errors';

/**
 * Provider A's limits per account, kept by each function instance for the grants it serves:
 *  - Gmail's quota units: each method costs what Google's usage-limits page says (messages.get 5,
 *    messages.send 100, history.list 2, …) against the project's quota per user (15,000 units a
 *    minute by default, GOOGLE_GMAIL_UNITS_PER_MINUTE), a moving average that allows short bursts
 *    (here: two seconds' worth). A call waits for its units; one that would
 *    wait longer than its request can afford is refused at once, as 429 with the wait as Retry-After,
 *    instead of being sent to earn Google's 429.
 *  - Concurrency: at most MAX_IN_FLIGHT HTTP requests of one grant at once (a batch is one).
 * Instances do not share these counts (that would cost a table round trip per call); the provider's
 * own 429 / 403 rate-limit answers, retried with backoff by the client, hold the rest.
 */

export const MAX_IN_FLIGHT = 8;
/** The granularity of quota waits, in ms. */
const PACE_MS = 100;
/** Grants remembered at once; idle ones are forgotten first. */
const MAX_GRANTS = 1_000;

/** Gmail's cost per method (developers.google.com/gmail/api/reference/quota), by HTTP method and path. */
const GMAIL_COSTS: [method: string, path: RegExp, units: number][] = [
  ['POST', /\/messages\/send$/, 100],
  ['POST', /\/drafts\/send$/, 100],
  ['POST', /\/watch$/, 100],
  ['POST', /\/stop$/, 50],
  ['POST', /\/messages\/(batchModify|batchDelete)$/, 50],
  ['POST', /\/messages(\/import)?$/, 25],
  ['GET', /\/history$/, 2],
  ['GET', /\/profile$/, 1],
  ['*', /\/labels(\/[^/]+)?$/, 1],
  ['*', /\/threads\/[^/]+\/(modify|trash|untrash)$/, 10],
  ['DELETE', /\/threads\/[^/]+$/, 20],
  ['GET', /\/threads(\/[^/]+)?$/, 10],
  ['PUT', /\/drafts\/[^/]+$/, 15],
  ['DELETE', /\/(drafts|messages)\/[^/]+$/, 10],
  ['POST', /\/drafts$/, 10],
  ['GET', /\/settings\//, 1],
];
const GMAIL_DEFAULT_COST = 5;

/** The units a Gmail call costs. */
export function gmailUnits(method: string, path: string): number {
  for (const [m, pattern, units] of GMAIL_COSTS) if ((m === '*' || m === method) && pattern.test(path)) return units;
  return GMAIL_DEFAULT_COST;
}

class GrantLimits {
  private readonly perSecond = env.googleGmailUnitsPerMinute() / 60;
  /** Two seconds' worth may be spent at once. */
  private readonly burst = 2 * this.perSecond;
  private units = this.burst;
  private at: number;
  private inFlight = 0;
  private readonly queue: (() => void)[] = [];
  /** The waits under way, by the tick they end at. */
  private readonly departures = new Map<number, Promise<void>>();

  constructor(private readonly now: () => number) {
    this.at = now();
  }

  get idle(): boolean {
    return this.inFlight === 0 && this.queue.length === 0 && this.departures.size === 0;
  }

  /**
   * Takes `units` now or at a later tick; refuses with 429 when the wait exceeds `maxWaitMs`. Ticks
   * are on one grid of PACE_MS (from the epoch), so the calls paced to one tick share its `at`.
   */
  reserve(units: number, maxWaitMs: number): { wait: number; at: number } {
    const now = this.now();
    this.units = Math.min(this.burst, this.units + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
    const at =
      this.units >= units ? now : Math.ceil((now + ((units - this.units) / this.perSecond) * 1000) / PACE_MS) * PACE_MS;
    const wait = at - now;
    if (wait > maxWaitMs)
      throw new RateLimitError(
        "Provider A's quota for this account is spent for now; retry after the time given, or use a smaller limit and select",
        wait / 1000,
      );
    // Taken now even when waited for: the balance goes below zero, and the next caller waits longer.
    this.units -= units;
    return { wait, at };
  }

  /**
   * Resolves at the tick `at` (from `reserve`). The calls of one tick share one timer, so they all go
   * on in one turn of the event loop and leave together (one batch), however the timers of separate
   * waits would have fallen.
   */
  departure(at: number, sleep: (ms: number) => Promise<void>): Promise<void> {
    let leaving = this.departures.get(at);
    if (!leaving) {
      leaving = sleep(Math.max(0, at - this.now())).finally(() => this.departures.delete(at));
      this.departures.set(at, leaving);
    }
    return leaving;
  }

  /** Runs `send` when fewer than MAX_IN_FLIGHT requests of the grant are under way. */
  async slot<T>(send: () => Promise<T>): Promise<T> {
    if (this.inFlight >= MAX_IN_FLIGHT) await new Promise<void>((resolve) => this.queue.push(resolve));
    else this.inFlight++;
    try {
      return await send();
    } finally {
      const next = this.queue.shift();
      if (next) next();
      else this.inFlight--;
    }
  }
}

const byGrant = new Map<string, GrantLimits>();

/** The limits of one grant in this instance. */
export function grantLimits(grantId: string, now: () => number = Date.now): GrantLimits {
  let limits = byGrant.get(grantId);
  if (!limits) {
    if (byGrant.size >= MAX_GRANTS) for (const [id, l] of byGrant) if (l.idle) byGrant.delete(id);
    limits = new GrantLimits(now);
    byGrant.set(grantId, limits);
  }
  return limits;
}

export type { GrantLimits };
