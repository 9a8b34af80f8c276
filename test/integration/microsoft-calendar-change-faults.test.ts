import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { graphCalendarChanges } from '#shared/microsoft/calendar-changes';
import { GraphGoneError } from '#shared/microsoft/client';
import type { GrantRecord } from '#shared/db/grants';
import { createSyncState, getSyncState, releaseSyncLease, saveSyncState, takeSyncLease } from '#shared/db/mail-sync';
import type { OutboxEntry } from '#shared/db/outbox';
import { ProviderError, RateLimitError } from '#shared/errors';
import type { Notification } from '#shared/notifications/notification';
import type { GrantId } from '#shared/ids';
import { clock } from '#shared/time';
import { startGraphFake, type FaultStatus, type GraphFake } from '../../scripts/local-stack/microsoft/server';
import { connectFakeMicrosoftGrant } from '../support/microsoft';
import { rng } from '../support/rng';

/**
 * Provider B's calendar changes under faults (shared/microsoft/calendar-changes.ts against the local
 * Graph fake), as google-calendar-change-faults.test.ts is for provider A: RUNS seeded steps, each a
 * few random changes made by another client (single events of the default calendar created, renamed
 * and deleted), then random faults armed for the runs to come (429 and 503 with a zero Retry-After,
 * 500; some outlasting the client's attempts; at the calendarView/delta, the event reads and the
 * calendar list; a 410 at the delta now and then) and, now and then, every delta link expired; then
 * one run as the service makes it: its own lease, each cursor committed through saveSyncState with its
 * notifications, now and then a commit that fails before its write. A run that throws is caught and the
 * next one goes on from the committed cursor.
 *
 * After an expired link (or a 410), the new round announces what was modified since the last round
 * began; an event deleted in that gap (from the expiry until a run commits a new link, and before it
 * if not announced yet) is what no API gives back: the model excuses those deletions only.
 *
 * The assertions, each with the bug it catches:
 *   1. every failure is one the faults explain (a rate limit, a provider failure, a 410 at a first
 *      request, a failed commit): an expired link not turned into a new round, a lease lost;
 *   2. no notification ID committed twice, no (event, change, version) twice (the ID's hash), no
 *      (event, title) or deletion twice: a cursor not committed with its notifications;
 *   3. every event announced created exactly once and first, if a run that succeeded saw it alive;
 *   4. after each run that succeeded and at the end, every live event announced with its latest title,
 *      every deletion of an announced event announced (unless excused): a change lost;
 *   5. a fault-free run after catching up announces nothing; the calendar list announces nothing.
 * Time stands still here: what keeps a change from being announced twice is the version each one was
 * announced in, not the clock (the clock-driven parts are microsoft-calendar-changes.test.ts's).
 */
const RUNS = 1000;
const SEED = 35;
let fake: GraphFake;
let grant: GrantRecord;
let email: string;
let primary: string;

beforeAll(async () => {
  // The runs follow each other far faster than a real mailbox's Graph limit allows (10,000 requests
  // per 10 minutes): the pace is raised for this file (the pacing is tested in microsoft-client.test.ts).
  vi.stubEnv('MICROSOFT_GRAPH_REQUESTS_PER_10_MINUTES', '100000000');
  fake = await startGraphFake();
  ({ grant, email } = await connectFakeMicrosoftGrant(fake, 'microsoft calendar change faults'));
  primary = fake.calendarId(email);
  await createSyncState(grant.id as GrantId, grant.application_id as never, clock.nowSeconds());
});

afterAll(async () => {
  vi.unstubAllEnvs();
  await fake?.close();
});

class CommitFault extends Error {}

/** One run as the service makes it; the notifications it committed. With `failAt`, that commit (from 0) throws before its write. */
async function run(failAt?: number): Promise<{ committed: Notification[]; error?: unknown }> {
  const leaseId = randomUUID();
  const state = (await takeSyncLease(grant.id as GrantId, leaseId, clock.nowSeconds(), 60))!;
  const committed: OutboxEntry[] = [];
  let commits = 0;
  let error: unknown;
  try {
    await graphCalendarChanges.run(grant, {
      state,
      save: async (next, outbox = []) => {
        if (failAt === commits++) throw new CommitFault('the commit failed before its write');
        await saveSyncState(next, leaseId, outbox);
        committed.push(...outbox);
      },
      outOfTime: () => false,
    });
  } catch (e) {
    error = e ?? new Error('thrown: nothing');
  }
  await releaseSyncLease(state, leaseId, 0);
  return {
    committed: committed.flatMap((e) => ('notification' in e ? [e.notification as Notification] : [])),
    ...(error !== undefined ? { error } : {}),
  };
}

const explained = (error: unknown) =>
  error instanceof CommitFault ||
  error instanceof RateLimitError ||
  error instanceof ProviderError ||
  error instanceof GraphGoneError;

const objectOf = (n: Notification) => n.data.object as { id: string; title?: string };
const changeKey = (n: Notification) => n.id.slice(-16);

interface Modelled {
  name: string;
  gone: boolean;
  /** A run that succeeded saw it alive: its creation must have been announced. */
  seen: boolean;
  /** Deleted in an expired link's gap: its deletion may never be announced. */
  excused: boolean;
}

const DELTA = /calendarView\/delta/;
const PATHS = [DELTA, DELTA, /\/events\//, /\/calendars$/] as const;
const DAY = 86_400_000;

describe("provider B's calendar changes under faults", () => {
  it(`loses no change and announces none twice over ${RUNS} seeded runs`, async () => {
    const random = rng(SEED);
    const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
    const pickLive = (list: readonly string[]) => (random() < 0.5 ? pick(list.slice(-5)) : pick(list));
    const events = new Map<string, Modelled>();
    const all: Notification[] = [];
    const unexplained: string[] = [];
    const lost = new Set<string>();
    const named = new Set<string>();
    const deleted = new Set<string>();
    let failures = 0;
    let expiries = 0;
    let gap = false;
    let expiredLink: string | undefined;
    const linkOf = async () =>
      (await getSyncState(grant.id as GrantId))?.graph_calendars?.calendars[primary]?.delta_link;
    const announcedCreated = (id: string) => all.some((n) => n.type === 'event.created' && objectOf(n).id === id);
    const upToDate = (id: string, m: Modelled) => (m.gone ? deleted.has(id) : named.has(`${id}\n${m.name}`));
    /** The link is no more (or a 410 made the next round start again): deletions not announced yet are lost. */
    const openGap = async () => {
      if (!gap) expiredLink = await linkOf();
      gap = true;
      for (const [id, m] of events) if (m.gone && !deleted.has(id)) m.excused = true;
    };

    let logged = 0;
    const sync = async (step: number) => {
      const linkBefore = await linkOf();
      const outcome = await run(step < RUNS && random() < 0.08 ? Math.floor(random() * 2) : undefined);
      all.push(...outcome.committed);
      for (const n of outcome.committed)
        if (n.type === 'event.deleted') deleted.add(objectOf(n).id);
        else named.add(`${objectOf(n).id}\n${objectOf(n).title ?? ''}`);
      // A 410 at a delta link (an injected one, whenever the faults before it are spent) started a new round.
      const log = fake.requests();
      if (log.slice(logged).some((r) => r.status === 410 && DELTA.test(r.path))) {
        if (!gap) expiredLink = linkBefore;
        gap = true;
        for (const [id, m] of events) if (m.gone && !deleted.has(id)) m.excused = true;
      }
      logged = log.length;
      // The gap ends when a round after it ends (mid-round, the cursor has no delta link).
      const link = await linkOf();
      if (gap && link !== undefined && link !== expiredLink) gap = false;
      if (outcome.error === undefined) {
        for (const [id, m] of events) {
          if (!m.gone) m.seen = true;
          // Deleted before any run saw it: nothing to announce.
          if (m.gone && !announcedCreated(id) && !m.seen) continue;
          if (!m.excused && !upToDate(id, m)) lost.add(`${id} ${m.gone ? 'deleted' : `'${m.name}'`} (step ${step})`);
        }
        return true;
      }
      failures++;
      if (!explained(outcome.error)) unexplained.push(`step ${step}: ${String(outcome.error)}`);
      return false;
    };

    expect((await run()).committed).toEqual([]);

    for (let i = 0; i < RUNS; i++) {
      for (let c = Math.floor(random() * 4); c > 0; c--) {
        const name = `Step ${i}.${c}`;
        const live = [...events].filter(([, m]) => !m.gone).map(([id]) => id);
        const kind = random();
        if (kind < 0.4 || live.length === 0) {
          const day = new Date(clock.nowMs() + (1 + Math.floor(random() * 300)) * DAY).toISOString().slice(0, 10);
          const { id } = fake.changeOutside(email, {
            kind: 'createEvent',
            event: {
              subject: name,
              start: { dateTime: `${day}T09:00:00`, timeZone: 'UTC' },
              end: { dateTime: `${day}T09:30:00`, timeZone: 'UTC' },
            },
          })!;
          events.set(id, { name, gone: false, seen: false, excused: false });
        } else if (kind < 0.8) {
          const id = pickLive(live);
          fake.changeOutside(email, { kind: 'updateEvent', id, event: { subject: name } });
          events.get(id)!.name = name;
        } else {
          const id = pickLive(live);
          fake.changeOutside(email, { kind: 'deleteEvent', id });
          const m = events.get(id)!;
          m.gone = true;
          m.excused = gap;
        }
      }
      if (random() < 0.02) {
        fake.expireCalendarDelta(email);
        expiries++;
        await openGap();
      }
      for (let f = Math.floor(random() * 3); f > 0; f--) {
        const path = pick(PATHS);
        const kind = random();
        if (kind < 0.9) {
          // A 500 has no Retry-After: the client waits its backoff (200 ms doubling), so fewer of them.
          const status = pick<FaultStatus>([429, 429, 503, 503, 500]);
          const times = status === 500 ? 1 + Math.floor(random() * 2) : 1 + Math.floor(random() * 5);
          fake.inject({ path, method: 'GET', status, times, retryAfter: 0 });
        } else if (path === DELTA) {
          // A 410 at the delta: at a link, the round starts again, as after an expiry.
          fake.inject({ path, method: 'GET', status: 410 });
        }
      }
      await sync(i);
    }

    let done = false;
    for (let catchUp = 0; catchUp < 50 && !done; catchUp++) done = await sync(RUNS + catchUp);
    expect(done, 'the runs never caught up').toBe(true);
    const last = await run();
    expect(last.error).toBeUndefined();
    expect(last.committed, 'a fault-free run after catching up announced something').toEqual([]);

    // The test exercised what it is about.
    expect(failures).toBeGreaterThan(100);
    expect(failures).toBeLessThan(RUNS / 2);
    expect(expiries).toBeGreaterThan(10);
    expect(all.filter((n) => n.type === 'event.created').length).toBeGreaterThan(300);
    expect(all.filter((n) => n.type === 'event.updated').length).toBeGreaterThan(300);
    expect(all.filter((n) => n.type === 'event.deleted').length).toBeGreaterThan(100);

    // 1. Every failure is one the faults explain.
    expect(unexplained, 'a run failed for a reason no fault explains').toEqual([]);
    // 2. Nothing twice.
    const twice = (keys: string[]) => keys.filter((k, at) => keys.indexOf(k) !== at);
    expect(twice(all.map((n) => n.id)), 'a notification ID committed twice').toEqual([]);
    expect(twice(all.map(changeKey)), 'a change announced twice').toEqual([]);
    expect(
      twice(
        all.map((n) =>
          n.type === 'event.deleted' ? `deleted ${objectOf(n).id}` : `${objectOf(n).id} ${objectOf(n).title}`,
        ),
      ),
      'an event version or deletion announced twice',
    ).toEqual([]);
    // 3. Created exactly once, and first, for every event a successful run saw alive.
    const firstSeen = new Map<string, string>();
    for (const n of all) if (!firstSeen.has(objectOf(n).id)) firstSeen.set(objectOf(n).id, n.type);
    const notCreated = [...events]
      .filter(([id, m]) => m.seen && firstSeen.get(id) !== 'event.created')
      .map(([id]) => `${id}: first ${firstSeen.get(id) ?? 'nothing'}`);
    expect(notCreated, 'an event seen alive not announced created first').toEqual([]);
    expect(
      all.filter((n) => n.type === 'event.created' && !events.has(objectOf(n).id)).map((n) => objectOf(n).id),
      'an event announced created that no one made',
    ).toEqual([]);
    // 4. Nothing lost.
    expect([...lost], 'a change not announced by the run that read it').toEqual([]);
    const excused = [...events.values()].filter((m) => m.excused).length;
    expect(excused, 'most deletions are not excused').toBeLessThan(
      [...events.values()].filter((m) => m.gone).length / 4,
    );
    // 5. The calendar list announced nothing.
    expect(all.filter((n) => n.type.startsWith('calendar.')).map((n) => n.type)).toEqual([]);
    expect(fake.violations()).toEqual([]);
    // A bound on a hung run, not on speed: about 90 s alone on 2 cores, longer beside the other files.
  }, 300_000);
});
