import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getGoogleCalendar, getGoogleEvent, listGoogleCalendars, listGoogleEvents } from '#shared/google/events';
import { googleClientOf, type GoogleClient } from '#shared/google/client';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { connectFakeGoogleGrant } from '../support/google';

/**
 * Provider A's calendars and events, read live (shared/google/events.ts, calendar-event.ts) from the
 * local Google fake's Calendar v3: the calendar list, events with Google's own filters and ours
 * narrowing its answer, series and their instances, all-day events, attendees, Meet, metadata.
 */
let fake: GoogleFake;
let grant: GrantRecord;
let email: string;
let client: GoogleClient;
const ids: Record<string, string> = {};
const DAY = Date.UTC(2026, 2, 10) / 1000; // Tuesday 10 March 2026, 00:00 UTC

const at = (hours: number, day = 0) => new Date((DAY + day * 86400 + hours * 3600) * 1000).toISOString();

async function insert(body: object, query: Record<string, string> = {}) {
  return client.call<{ id: string }>({
    api: 'calendar',
    method: 'POST',
    path: '/calendar/v3/calendars/primary/events',
    query,
    body,
  });
}

beforeAll(async () => {
  fake = await startGoogleFake();
  ({ grant, email } = await connectFakeGoogleGrant(fake, 'google live events'));
  client = await googleClientOf(grant);
  ids.planning = (
    await insert(
      {
        summary: 'Quarterly planning',
        description: 'Numbers first',
        location: 'Room 4',
        start: { dateTime: at(9), timeZone: 'Europe/Berlin' },
        end: { dateTime: at(10), timeZone: 'Europe/Berlin' },
        attendees: [
          { email: 'ann@example.org', displayName: 'Ann', responseStatus: 'accepted' },
          { email: 'bob@example.org', responseStatus: 'tentative' },
        ],
        extendedProperties: { private: { key1: 'project-x' } },
        conferenceData: { createRequest: { requestId: 'req-1', conferenceSolutionKey: { type: 'hangoutsMeet' } } },
      },
      { conferenceDataVersion: '1' },
    )
  ).id;
  ids.free = (
    await insert({
      summary: 'Focus reading',
      transparency: 'transparent',
      start: { dateTime: at(13) },
      end: { dateTime: at(14) },
    })
  ).id;
  ids.holiday = (await insert({ summary: 'Holiday', start: { date: '2026-03-11' }, end: { date: '2026-03-12' } })).id;
  ids.trip = (await insert({ summary: 'Trip', start: { date: '2026-03-12' }, end: { date: '2026-03-15' } })).id;
  ids.standup = (
    await insert({
      summary: 'Standup',
      start: { dateTime: at(8), timeZone: 'UTC' },
      end: { dateTime: at(8.25), timeZone: 'UTC' },
      recurrence: ['RRULE:FREQ=DAILY;COUNT=3'],
    })
  ).id;
});

afterAll(async () => {
  await fake?.close();
});

const week = { calendar_id: 'primary', start: DAY, end: DAY + 7 * 86400 };
const titles = (page: { items: { title?: string }[] }) => page.items.map((e) => e.title).sort();

describe("provider A's calendars and events, live", () => {
  it('lists the calendar list, the primary calendar first among them', async () => {
    const page = await listGoogleCalendars(grant, {}, 50);
    expect(page.items).toContainEqual(
      expect.objectContaining({
        id: email,
        object: 'calendar',
        is_primary: true,
        is_owned_by_user: true,
        read_only: false,
      }),
    );
    expect(await getGoogleCalendar(grant, email)).toMatchObject({ id: email, timezone: 'UTC' });
    await expect(getGoogleCalendar(grant, 'nobody@example.org')).rejects.toThrow(NotFoundError);
  });

  it('maps an event: its time and zone, attendees, Meet link and metadata', async () => {
    const event = await getGoogleEvent(grant, ids.planning!, 'primary');
    expect(event).toMatchObject({
      id: ids.planning,
      object: 'event',
      calendar_id: email,
      title: 'Quarterly planning',
      description: 'Numbers first',
      location: 'Room 4',
      when: {
        object: 'timespan',
        start_time: DAY + 9 * 3600,
        end_time: DAY + 10 * 3600,
        start_timezone: 'Europe/Berlin',
      },
      busy: true,
      status: 'confirmed',
      participants: [
        { email: 'ann@example.org', name: 'Ann', status: 'yes' },
        { email: 'bob@example.org', status: 'maybe' },
      ],
      metadata: { key1: 'project-x' },
    });
    expect((event.conferencing as { details: { url: string } }).details.url).toMatch(/^https:\/\/meet\.google\.com\//);
    expect((await getGoogleEvent(grant, ids.holiday!, 'primary')).when).toEqual({ object: 'date', date: '2026-03-11' });
    expect((await getGoogleEvent(grant, ids.trip!, 'primary')).when).toEqual({
      object: 'datespan',
      start_date: '2026-03-12',
      end_date: '2026-03-15',
    });
    await expect(getGoogleEvent(grant, 'nothere', 'primary')).rejects.toThrow(NotFoundError);
  });

  it('lists a window with series as masters, or expanded into instances', async () => {
    const masters = await listGoogleEvents(grant, week, 50);
    expect(titles(masters)).toEqual(['Focus reading', 'Holiday', 'Quarterly planning', 'Standup', 'Trip']);
    expect(masters.items.find((e) => e.title === 'Standup')?.recurrence).toEqual(['RRULE:FREQ=DAILY;COUNT=3']);
    const expanded = await listGoogleEvents(grant, { ...week, expand_recurring: true }, 50);
    const standups = expanded.items.filter((e) => e.title === 'Standup');
    expect(standups).toHaveLength(3);
    expect(standups.every((e) => e.master_event_id === ids.standup)).toBe(true);
    const instances = await listGoogleEvents(grant, { ...week, master_event_id: ids.standup! }, 50);
    expect(instances.items).toHaveLength(3);
  });

  it("passes Google's filters to it and narrows its answer by ours", async () => {
    expect(titles(await listGoogleEvents(grant, { ...week, title: 'planning' }, 50))).toEqual(['Quarterly planning']);
    expect(titles(await listGoogleEvents(grant, { ...week, busy: false }, 50))).toEqual(['Focus reading']);
    expect(titles(await listGoogleEvents(grant, { ...week, attendees: 'BOB@example.org' }, 50))).toEqual([
      'Quarterly planning',
    ]);
    expect(titles(await listGoogleEvents(grant, { ...week, metadata_pair: 'key1:project-x' }, 50))).toEqual([
      'Quarterly planning',
    ]);
    expect(titles(await listGoogleEvents(grant, { ...week, event_type: 'default' }, 50))).toHaveLength(5);
    await expect(listGoogleEvents(grant, { ...week, event_type: 'party' }, 50)).rejects.toThrow(InvalidRequestError);
    const first = await listGoogleEvents(grant, week, 2);
    expect(first.nextCursor).toBeDefined();
    const second = await listGoogleEvents(grant, { ...week, page_token: first.nextCursor! }, 2);
    expect(second.items.map((e) => e.id)).not.toContain(first.items[0]!.id);
  });

  it('sent nothing Google does not describe, and the fake answered nothing it does not', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});

describe("provider A's calendars, changed live", () => {
  it('creates, recolours, renames and deletes a calendar; the primary one stays', async () => {
    const { googleCalendars } = await import('#shared/google/calendars');
    const made = await googleCalendars.create(grant, { name: 'Team', timezone: 'Europe/Rome', hex_color: '#16A765' });
    expect(made).toMatchObject({ name: 'Team', timezone: 'Europe/Rome', is_primary: false, hex_color: '#16a765' });
    const renamed = await googleCalendars.update(grant, made.id, { name: 'Team Rome', description: 'Shared' });
    expect(renamed).toMatchObject({ name: 'Team Rome', description: 'Shared', hex_color: '#16a765' });
    await expect(googleCalendars.update(grant, made.id, { metadata: { key1: 'x' } })).rejects.toThrow(
      InvalidRequestError,
    );
    await expect(googleCalendars.delete(grant, 'primary')).rejects.toThrow(/primary/);
    await googleCalendars.delete(grant, made.id);
    await expect(googleCalendars.get(grant, made.id)).rejects.toThrow(NotFoundError);
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});
