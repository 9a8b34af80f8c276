import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { GrantRecord } from '#shared/db/grants';
import { NotFoundError } from '#shared/errors';
import { graphFreeBusy } from '#shared/microsoft/free-busy';
import { graphEvents } from '#shared/microsoft/events';
import { graphCalendars } from '#shared/microsoft/calendars';
import { availabilityOf } from '#shared/availability/service';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';
import { connectFakeMicrosoftGrant } from '../support/microsoft';

/**
 * Provider B's busy time, live (shared/microsoft/free-busy.ts), against the local Graph fake: the
 * default calendar through getSchedule (tentative busy by default, B's rule, or not when asked;
 * free and cancelled events left out; series expanded; windows over 62 days asked in parts),
 * other calendars and round-robin counting through calendarView, and availability across two
 * microsoft participants. Every request and answer is checked against Graph's descriptions.
 */
let fake: GraphFake;
let ada: GrantRecord;
let bob: GrantRecord;
let adaEmail: string;
let bobEmail: string;
let side = '';
/** Monday 9 March 2026, 00:00 UTC. */
const T0 = Date.UTC(2026, 2, 9) / 1000;
const HOUR = 3600;
const DAY = 86_400;
const at = (day: number, hours: number) => T0 + day * DAY + hours * HOUR;
const span = (day: number, from: number, to: number) => ({ start: at(day, from), end: at(day, to) });
const sorted = (busy: { start: number; end: number }[]) => [...busy].sort((a, b) => a.start - b.start);

beforeAll(async () => {
  fake = await startGraphFake();
  const first = await connectFakeMicrosoftGrant(fake, 'microsoft live free/busy', { displayName: 'Ada' });
  ({ grant: ada, email: adaEmail } = first);
  ({ grant: bob, email: bobEmail } = await connectFakeMicrosoftGrant(fake, 'microsoft live free/busy', {
    applicationId: first.applicationId,
    displayName: 'Bob',
  }));
  const make = (grant: GrantRecord, title: string, day: number, from: number, to: number, extra: object = {}) =>
    graphEvents.create(
      grant,
      'primary',
      { title, when: { start_time: at(day, from), end_time: at(day, to) }, ...extra },
      true,
    );
  await make(ada, 'Busy', 0, 9, 10);
  await make(ada, 'Free', 0, 11, 12, { busy: false });
  await make(ada, 'Daily', 1, 15, 16, { recurrence: ['RRULE:FREQ=DAILY;COUNT=3'], metadata: { key5: 'g1' } });
  // Bob's invitation waits for Ada's answer (tentative); his cancelled meeting leaves Ada a cancelled copy.
  await make(bob, 'Invitation', 0, 13, 14, { participants: [{ email: adaEmail }] });
  const dropped = await make(bob, 'Dropped', 0, 17, 18, { participants: [{ email: adaEmail }] });
  await graphEvents.delete(bob, dropped.id, 'primary', true);
  side = (await graphCalendars.create(ada, { name: 'Side' })).id;
  await graphEvents.create(
    ada,
    side,
    { title: 'Side job', when: { start_time: at(0, 7), end_time: at(0, 8) }, metadata: { key5: 'g1' } },
    true,
  );
});

afterEach(() => {
  expect(fake.violations()).toEqual([]);
});

afterAll(async () => {
  await fake?.close();
});

describe("Provider B's busy time, live", () => {
  it('reads the default calendar with getSchedule: tentative busy by default, free and cancelled left out', async () => {
    // Prepare
    const before = fake.requests().length;

    // Act
    const times = await graphFreeBusy.busy(ada, {
      calendar_ids: ['primary'],
      start: at(0, 0),
      end: at(7, 0),
      tentative_as_busy: true,
    });
    const made = fake.requests().slice(before);

    // Assess
    expect(sorted(times.busy)).toEqual([
      span(0, 9, 10),
      span(0, 13, 14),
      span(1, 15, 16),
      span(2, 15, 16),
      span(3, 15, 16),
    ]);
    expect(times.fairness_count).toBe(0);
    expect(made.map((r) => `${r.method} ${r.path}`)).toEqual([`POST /v1.0/me/calendar/getSchedule`]);
  });

  it('leaves tentative events out when they are not busy', async () => {
    // Act
    const times = await graphFreeBusy.busy(ada, {
      calendar_ids: ['primary'],
      start: at(0, 0),
      end: at(1, 0),
      tentative_as_busy: false,
    });

    // Assess
    expect(times.busy).toEqual([span(0, 9, 10)]);
  });

  it('reads other calendars and round-robin marks from calendarView', async () => {
    // Prepare
    const before = fake.requests().length;

    // Act
    const times = await graphFreeBusy.busy(ada, {
      calendar_ids: ['primary', side],
      start: at(0, 0),
      end: at(2, 0),
      tentative_as_busy: true,
      fairness_group: 'g1',
    });
    const anyGroup = await graphFreeBusy.busy(ada, {
      calendar_ids: [side],
      start: at(0, 0),
      end: at(2, 0),
      tentative_as_busy: true,
      fairness_group: null,
    });
    const unknown = await graphFreeBusy
      .busy(ada, { calendar_ids: ['AAMkADnone'], start: at(0, 0), end: at(1, 0), tentative_as_busy: true })
      .catch((error: unknown) => error);

    // Assess
    expect(sorted(times.busy)).toEqual([span(0, 7, 8), span(0, 9, 10), span(0, 13, 14), span(1, 15, 16)]);
    expect(times.fairness_count).toBe(2);
    expect(anyGroup.fairness_count).toBe(1);
    expect(
      fake
        .requests()
        .slice(before)
        .some((r) => /getSchedule/.test(r.path)),
    ).toBe(false);
    expect(unknown).toBeInstanceOf(NotFoundError);
  });

  it('asks getSchedule in windows of at most 62 days, and retries its 429', async () => {
    // Prepare
    fake.inject({ path: /getSchedule$/, status: 429, retryAfter: 1 });
    const before = fake.requests().length;

    // Act
    const times = await graphFreeBusy.busy(ada, {
      calendar_ids: ['primary'],
      start: at(-60, 0),
      end: at(30, 0),
      tentative_as_busy: true,
    });

    // Assess
    expect(times.busy).toHaveLength(5);
    expect(
      fake
        .requests()
        .slice(before)
        .map((r) => r.status),
    ).toEqual([429, 200, 200]);
  });

  it('gives availability across two microsoft participants', async () => {
    // Act
    const result = await availabilityOf({
      start_time: at(0, 8),
      end_time: at(0, 16),
      duration_minutes: 60,
      method: 'collective',
      participants: [
        { email: adaEmail, grant: ada },
        { email: bobEmail, grant: bob },
      ],
      default_open_hours: [{ days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', start: '8:00', end: '16:00', exdates: [] }],
    });

    // Assess: Ada is busy 9–10 and 13–14 (Bob's invitation, which Bob is at too).
    expect(result.time_slots.map((s) => [s.start_time, s.end_time])).toEqual([
      [at(0, 8), at(0, 9)],
      [at(0, 10), at(0, 11)],
      [at(0, 11), at(0, 12)],
      [at(0, 12), at(0, 13)],
      [at(0, 14), at(0, 15)],
      [at(0, 15), at(0, 16)],
    ]);
  });
});
