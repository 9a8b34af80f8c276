import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GoogleFake } from '../../scripts/local-stack/google/server';
import type { GraphFake } from '../../scripts/local-stack/microsoft/server';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { liveFakes } from '../support/live-fakes';
import { connectFakeGoogleGrant } from '../support/google';
import { connectFakeMicrosoftGrant } from '../support/microsoft';
import { checkResponse } from '../support/response-check';

/**
 * `GET /v3/grants/{id}/events/import` over HTTP, for an Agent Account and for live google and
 * microsoft grants (against the local Google and Graph fakes, which check every request and answer
 * against the providers' descriptions): a window's single events, each series once as its master,
 * and its changed occurrence, never its other occurrences nor what lies outside the window; pages
 * that keep their window; the window's defaults and refusals. Every answer conforms to the contract.
 */
let gateway: Gateway;
let google: GoogleFake;
let graph: GraphFake;
const fakes = liveFakes();
let api: ApiClient;
const grants: Record<'agent' | 'google' | 'microsoft', string> = { agent: '', google: '', microsoft: '' };

/** Monday 4 January 2027, 00:00 UTC. */
const T0 = Date.UTC(2027, 0, 4) / 1000;
const HOUR = 3600;
const DAY = 86_400;
const at = (day: number, hours: number) => T0 + day * DAY + hours * HOUR;
const WINDOW = `start=${at(0, 0)}&end=${at(7, 0)}`;

interface Event {
  id: string;
  title?: string;
  master_event_id?: string;
  recurrence?: string[];
  status: string;
  when: { start_time?: number };
}

/** A GET whose answer is checked against the contract's response schema. */
async function get(path: string): Promise<ApiResponse> {
  const response = await api.get(path);
  const url = new URL(path, 'http://x');
  expect(checkResponse('GET', url.pathname, url.searchParams, response.status, response.body)).toEqual([]);
  return response;
}

async function create(grant: string, body: Record<string, unknown>): Promise<Event> {
  const response = await api.post(`/v3/grants/${grant}/events?calendar_id=primary`, body);
  expect(response.status, response.text).toBe(201);
  return response.body.data as Event;
}

/** Every page of an import, followed with its next_cursor (the query sent again, as SDKs page). */
async function importAll(grant: string, query: string): Promise<Event[]> {
  const events: Event[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 20; pages++) {
    const response = await get(
      `/v3/grants/${grant}/events/import?calendar_id=primary&${query}${cursor ? `&page_token=${encodeURIComponent(cursor)}` : ''}`,
    );
    expect(response.status, response.text).toBe(200);
    events.push(...(response.body.data as Event[]));
    cursor = response.body.next_cursor as string | undefined;
    if (!cursor) return events;
  }
  throw new Error('the import did not end within 20 pages');
}

/**
 * In the grant's primary calendar: a single event in the window, one after it, and a daily series
 * begun before it with one occurrence changed in it. Answers their IDs.
 */
async function seed(grant: string) {
  const single = await create(grant, { title: 'Single', when: { start_time: at(2, 10), end_time: at(2, 11) } });
  const later = await create(grant, { title: 'Later', when: { start_time: at(40, 10), end_time: at(40, 11) } });
  const series = await create(grant, {
    title: 'Standup',
    when: { start_time: at(-2, 9), end_time: at(-2, 9.5) },
    recurrence: ['RRULE:FREQ=DAILY;COUNT=10'],
  });
  const occurrences = await get(
    `/v3/grants/${grant}/events?calendar_id=primary&expand_recurring=true&master_event_id=${series.id}&${WINDOW}`,
  );
  expect(occurrences.status, occurrences.text).toBe(200);
  const third = (occurrences.body.data as Event[]).find((e) => e.when.start_time === at(3, 9));
  expect(third).toBeDefined();
  const moved = await api.put(`/v3/grants/${grant}/events/${third!.id}?calendar_id=primary`, {
    title: 'Standup (moved)',
    when: { start_time: at(3, 14), end_time: at(3, 14.5) },
  });
  expect(moved.status, moved.text).toBe(200);
  return { single: single.id, later: later.id, series: series.id, exception: (moved.body.data as Event).id };
}

beforeAll(async () => {
  [gateway, { google, graph }] = await Promise.all([startGateway(), fakes.start()]);
  const app = await makeApplication('event import');
  api = apiClient(gateway.url, app.apiKey);
  grants.agent = (await makeAgentGrant(api)).id;
  grants.google = (await connectFakeGoogleGrant(google, 'event import', { applicationId: app.applicationId })).grant.id;
  grants.microsoft = (
    await connectFakeMicrosoftGrant(graph, 'event import', { applicationId: app.applicationId })
  ).grant.id;
});

afterAll(async () => {
  await gateway?.close();
});

describe.each(['agent', 'google', 'microsoft'] as const)('Event import (%s)', (provider) => {
  let seeded: Awaited<ReturnType<typeof seed>>;

  beforeAll(async () => {
    seeded = await seed(grants[provider]);
  });

  it("gives the window's single events, each series once as its master, and its changed occurrence", async () => {
    // Act
    const events = await importAll(grants[provider], WINDOW);

    // Assess
    const ids = new Set(events.map((e) => e.id));
    expect(ids).toEqual(new Set([seeded.single, seeded.series, seeded.exception]));
    expect(events.filter((e) => e.id === seeded.series)).toHaveLength(1);
    expect(events.find((e) => e.id === seeded.series)).toMatchObject({ title: 'Standup' });
    expect(events.find((e) => e.id === seeded.series)!.recurrence?.[0]).toMatch(/^RRULE:FREQ=DAILY;/);
    expect(events.find((e) => e.id === seeded.exception)).toMatchObject({
      title: 'Standup (moved)',
      master_event_id: seeded.series,
      when: { start_time: at(3, 14) },
    });
  });

  it('pages one event at a time through the same events, the window kept in the page token', async () => {
    // Act
    const events = await importAll(grants[provider], `${WINDOW}&limit=1`);

    // Assess: a live provider's pages may give a master again (its occurrences span pages), nothing else.
    expect(new Set(events.map((e) => e.id))).toEqual(new Set([seeded.single, seeded.series, seeded.exception]));
    expect(events.filter((e) => e.id !== seeded.series)).toHaveLength(2);
  });

  it('refuses a page token sent with another window, and a forged one', async () => {
    // Prepare
    const first = await get(`/v3/grants/${grants[provider]}/events/import?calendar_id=primary&${WINDOW}&limit=1`);
    const cursor = encodeURIComponent(first.body.next_cursor as string);

    // Act
    const shifted = await get(
      `/v3/grants/${grants[provider]}/events/import?calendar_id=primary&start=${at(1, 0)}&end=${at(7, 0)}&page_token=${cursor}`,
    );
    const forged = await get(
      `/v3/grants/${grants[provider]}/events/import?calendar_id=primary&page_token=${Buffer.from('{"p":"x","s":"y"}').toString('base64url')}`,
    );

    // Assess
    for (const response of [shifted, forged]) {
      expect(response.status, response.text).toBe(400);
      expect(response.body.error.message).toContain('page_token');
    }
  });
});

describe('Event import: the window', () => {
  it('defaults to 30 days from now', async () => {
    // Prepare
    const now = Math.floor(Date.now() / 1000);
    const grant = (await makeAgentGrant(api)).id;
    const soon = await create(grant, { title: 'Soon', when: { start_time: now + DAY, end_time: now + DAY + HOUR } });
    await create(grant, { title: 'After', when: { start_time: now + 31 * DAY, end_time: now + 31 * DAY + HOUR } });
    await create(grant, { title: 'Before', when: { start_time: now - 2 * DAY, end_time: now - 2 * DAY + HOUR } });

    // Act
    const events = await importAll(grant, '');

    // Assess
    expect(events.map((e) => e.id)).toEqual([soon.id]);
  });

  it("keeps an Agent Account's cancelled occurrence, as a changed one, and leaves out a series that ended before", async () => {
    // Prepare
    const grant = (await makeAgentGrant(api)).id;
    const series = await create(grant, {
      title: 'Weekly',
      when: { start_time: at(1, 8), end_time: at(1, 9) },
      recurrence: ['RRULE:FREQ=WEEKLY;COUNT=3'],
    });
    await create(grant, {
      title: 'Ended',
      when: { start_time: at(-30, 8), end_time: at(-30, 9) },
      recurrence: ['RRULE:FREQ=DAILY;COUNT=3'],
    });
    const removed = await api.delete(`/v3/grants/${grant}/events/${series.id}_20270112T080000Z?calendar_id=primary`);
    expect(removed.status, removed.text).toBe(200);

    // Act
    const events = await importAll(grant, `start=${at(0, 0)}&end=${at(14, 0)}`);

    // Assess
    expect(events.map((e) => [e.id, e.status])).toEqual([
      [series.id, 'confirmed'],
      [`${series.id}_20270112T080000Z`, 'cancelled'],
    ]);
  });

  it('refuses an end before its start, a window over 366 days, no calendar_id, and an unknown calendar', async () => {
    // Act
    const path = `/v3/grants/${grants.agent}/events/import`;
    const backwards = await get(`${path}?calendar_id=primary&start=${at(2, 0)}&end=${at(1, 0)}`);
    const tooLong = await get(`${path}?calendar_id=primary&start=${at(0, 0)}&end=${at(367, 0)}`);
    const noCalendar = await get(`${path}?${WINDOW}`);
    const unknown = await get(`${path}?calendar_id=cal_01jzzzzzzzzzzzzzzzzzzzzzzz&${WINDOW}`);

    // Assess
    expect([backwards.status, tooLong.status, noCalendar.status, unknown.status]).toEqual([400, 400, 400, 404]);
    expect(backwards.body.error.message).toContain("'end'");
    expect(tooLong.body.error.message).toContain('366 days');
    expect(noCalendar.body.error.message).toContain('calendar_id');
  });
});
