import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { googleFreeBusy } from '#shared/google/free-busy';
import { googleClientOf, type GoogleClient } from '#shared/google/client';
import type { GrantRecord } from '#shared/db/grants';
import { NotFoundError } from '#shared/errors';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { connectFakeGoogleGrant } from '../support/google';

/**
 * Busy time of provider A's calendars, live (shared/google/free-busy.ts), from the local Google fake:
 * Google's freebusy.query when it is enough; the window's events when tentative events are not busy
 * or round-robin marks are counted.
 */
let fake: GoogleFake;
let grant: GrantRecord;
let email: string;
let client: GoogleClient;
const DAY = Date.UTC(2026, 2, 10) / 1000;
const at = (hours: number) => new Date((DAY + hours * 3600) * 1000).toISOString();
const hour = (h: number) => DAY + h * 3600;

const insert = (body: object) =>
  client.call({ api: 'calendar', method: 'POST', path: '/calendar/v3/calendars/primary/events', body });

beforeAll(async () => {
  fake = await startGoogleFake();
  ({ grant, email } = await connectFakeGoogleGrant(fake, 'google free busy'));
  client = await googleClientOf(grant);
  await insert({ summary: 'Busy', start: { dateTime: at(9) }, end: { dateTime: at(10) } });
  await insert({
    summary: 'Free',
    transparency: 'transparent',
    start: { dateTime: at(11) },
    end: { dateTime: at(12) },
  });
  await insert({ summary: 'Maybe', status: 'tentative', start: { dateTime: at(13) }, end: { dateTime: at(14) } });
  await insert({
    summary: 'Round robin',
    start: { dateTime: at(15) },
    end: { dateTime: at(16) },
    extendedProperties: { private: { key5: 'team-a' } },
  });
  const cancelled = (await insert({
    summary: 'Cancelled',
    start: { dateTime: at(17) },
    end: { dateTime: at(18) },
  })) as {
    id: string;
  };
  await client.call({
    api: 'calendar',
    method: 'DELETE',
    path: `/calendar/v3/calendars/primary/events/${cancelled.id}`,
  });
});

afterAll(async () => {
  await fake?.close();
});

const window = { calendar_ids: ['primary'], start: DAY, end: DAY + 86400 };
const sorted = (busy: { start: number; end: number }[]) => [...busy].sort((a, b) => a.start - b.start);

describe("provider A's busy time, live", () => {
  it("takes Google's freebusy answer when tentative is busy and nothing is counted", async () => {
    const times = await googleFreeBusy.busy(grant, { ...window, calendar_ids: [email], tentative_as_busy: true });
    expect(sorted(times.busy)).toEqual([
      { start: hour(9), end: hour(10) },
      { start: hour(13), end: hour(14) },
      { start: hour(15), end: hour(16) },
    ]);
    expect(times.fairness_count).toBe(0);
    await expect(
      googleFreeBusy.busy(grant, { ...window, calendar_ids: ['nobody@example.org'], tentative_as_busy: true }),
    ).rejects.toThrow(NotFoundError);
  });

  it('reads the events when tentative is not busy, and counts the round-robin marks', async () => {
    const times = await googleFreeBusy.busy(grant, { ...window, tentative_as_busy: false, fairness_group: 'team-a' });
    expect(sorted(times.busy)).toEqual([
      { start: hour(9), end: hour(10) },
      { start: hour(15), end: hour(16) },
    ]);
    expect(times.fairness_count).toBe(1);
    expect(
      (await googleFreeBusy.busy(grant, { ...window, tentative_as_busy: true, fairness_group: 'other' }))
        .fairness_count,
    ).toBe(0);
  });

  it('sent nothing Google does not describe, and the fake answered nothing it does not', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});
