import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';

/**
 * The local Microsoft Graph fake's calendars over HTTP: calendars, events (recurrence, exceptions,
 * cancelled occurrences, time zones), calendarView and its delta, meeting answers, getSchedule, and the
 * checks against Graph's descriptions. After each test no request meant to be valid broke the
 * descriptions and no answer of the fake did either.
 */

const ADA = 'ada@contoso.test';
const ADA_TOKEN = 'eyJ0eXAi.fake-token-ada';
const BOB = 'bob@contoso.test';
const BOB_TOKEN = 'eyJ0eXAi.fake-token-bob';
const T0 = Date.parse('2026-03-02T09:00:00Z');
/** Graph's extended-property ID form (a string property in a custom property set). */
const META = 'String {8e5c2b1a-4f3d-4c2e-9a7b-1d2e3f405162} Name switchboard';

let fake: GraphFake;
let clock = T0;

interface Reply {
  status: number;
  headers: Headers;
  /** The JSON answer, read field by field as a client would. */
  body: any;
  text: string;
}

/** A Graph call as a client makes it: a path under /v1.0 (or a link), bearer token, JSON body. */
async function graph(
  path: string,
  init: { method?: string; body?: unknown; token?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...init.headers, Authorization: `Bearer ${init.token ?? ADA_TOKEN}` };
  if (init.body !== undefined) headers['Content-Type'] = 'application/json';
  const url = path.startsWith('http') ? path : `${fake.url}/v1.0${path}`;
  const res = await fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  const json = /json/.test(res.headers.get('content-type') ?? '') && text ? JSON.parse(text) : undefined;
  return { status: res.status, headers: res.headers, body: json, text };
}

/** An event body as a client sends it; times are wall-clock in `timeZone`. */
function makeEvent(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    subject: 'Planning',
    body: { contentType: 'HTML', content: '<p>Agenda</p>' },
    start: { dateTime: '2026-03-03T10:00:00', timeZone: 'UTC' },
    end: { dateTime: '2026-03-03T11:00:00', timeZone: 'UTC' },
    ...overrides,
  };
}

const window = (from: string, to: string) =>
  `startDateTime=${encodeURIComponent(from)}&endDateTime=${encodeURIComponent(to)}`;
const startsOf = (events: { start: { dateTime: string } }[]) => events.map((e) => e.start.dateTime.slice(0, 16));

beforeAll(async () => {
  fake = await startGraphFake({ now: () => clock });
});

beforeEach(() => {
  fake.reset();
  clock = T0;
  fake.addUser({ email: ADA, accessToken: ADA_TOKEN, displayName: 'Ada', timeZone: 'W. Europe Standard Time' });
  fake.addUser({ email: BOB, accessToken: BOB_TOKEN, displayName: 'Bob' });
});

afterEach(() => {
  expect(fake.violations()).toEqual([]);
});

afterAll(async () => {
  await fake?.close();
});

describe('Calendars', () => {
  it('gives each user a default calendar, and creates, pages, renames and deletes others', async () => {
    // Act
    const initial = await graph('/me/calendar');
    const created = await graph('/me/calendars', { body: { name: 'Projects', color: 'lightGreen' } });
    const again = await graph('/me/calendars', { body: { name: 'projects' } });
    await graph(`/users/${ADA}/calendars`, { body: { name: 'Travel' } });
    const first = await graph('/me/calendars?$top=2');
    const second = await graph(first.body['@odata.nextLink']);
    const renamed = await graph(`/me/calendars/${created.body.id}`, {
      method: 'PATCH',
      body: { name: 'Work', color: 'lightRed' },
    });
    const refused = await graph(`/me/calendars/${initial.body.id}`, { method: 'DELETE' });
    const deleted = await graph(`/me/calendars/${created.body.id}`, { method: 'DELETE' });
    const gone = await graph(`/me/calendars/${created.body.id}`);
    // Assess
    expect(initial.body).toMatchObject({
      id: fake.calendarId(ADA),
      name: 'Calendar',
      isDefaultCalendar: true,
      canEdit: true,
      isRemovable: false,
      owner: { name: 'Ada', address: ADA },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Projects', color: 'lightGreen', isDefaultCalendar: false });
    expect(again.status).toBe(409);
    expect(first.body.value.map((c: { name: string }) => c.name)).toEqual(['Calendar', 'Projects']);
    expect(second.body.value.map((c: { name: string }) => c.name)).toEqual(['Travel']);
    expect(second.body['@odata.nextLink']).toBeUndefined();
    expect(renamed.body).toMatchObject({ name: 'Work', color: 'lightRed' });
    expect(renamed.body.changeKey).not.toBe(created.body.changeKey);
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('ErrorDeleteDistinguishedFolder');
    expect(deleted.status).toBe(204);
    expect(gone.status).toBe(404);
  });
});

describe('Events', () => {
  it('creates an online meeting with attendees, location and an extended property, and reads it back', async () => {
    // Act
    const created = await graph('/me/events', {
      body: makeEvent({
        start: { dateTime: '2026-03-03T09:00:00', timeZone: 'Pacific Standard Time' },
        end: { dateTime: '2026-03-03T09:30:00', timeZone: 'Pacific Standard Time' },
        location: { displayName: 'Room 1' },
        attendees: [{ emailAddress: { address: BOB, name: 'Bob' }, type: 'required' }],
        isOnlineMeeting: true,
        onlineMeetingProvider: 'teamsForBusiness',
        showAs: 'busy',
        sensitivity: 'private',
        singleValueExtendedProperties: [{ id: META, value: 'evt_01' }],
      }),
    });
    const plain = await graph(`/me/events/${created.body.id}`);
    const expanded = await graph(
      `/me/events/${created.body.id}?$select=subject&$expand=${encodeURIComponent(`singleValueExtendedProperties($filter=id eq '${META}')`)}`,
    );
    const local = await graph(`/me/events/${created.body.id}?$select=start,end`, {
      headers: { Prefer: 'outlook.timezone="Europe/Berlin"' },
    });
    // Assess
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      subject: 'Planning',
      type: 'singleInstance',
      isOrganizer: true,
      originalStartTimeZone: 'Pacific Standard Time',
      start: { dateTime: '2026-03-03T17:00:00.0000000', timeZone: 'UTC' },
      end: { dateTime: '2026-03-03T17:30:00.0000000', timeZone: 'UTC' },
      location: { displayName: 'Room 1' },
      attendees: [{ type: 'required', emailAddress: { address: BOB }, status: { response: 'none' } }],
      organizer: { emailAddress: { address: ADA, name: 'Ada' } },
      isOnlineMeeting: true,
      onlineMeetingProvider: 'teamsForBusiness',
      onlineMeeting: { joinUrl: expect.stringMatching(/^https:\/\/teams\.microsoft\.com\/l\/meetup-join\//) },
      showAs: 'busy',
      sensitivity: 'private',
    });
    expect(plain.body.singleValueExtendedProperties).toBeUndefined();
    expect(expanded.body).toEqual({
      '@odata.context': expect.any(String),
      '@odata.etag': expect.any(String),
      id: created.body.id,
      subject: 'Planning',
      singleValueExtendedProperties: [{ id: META, value: 'evt_01' }],
    });
    expect(local.body.start).toEqual({ dateTime: '2026-03-03T18:00:00.0000000', timeZone: 'Europe/Berlin' });
  });

  it('lists with $top, $select, $filter on start and end, and $orderby; per calendar too', async () => {
    // Prepare
    const projects = await graph('/me/calendars', { body: { name: 'Projects' } });
    for (const [day, subject] of [
      ['05', 'Thu'],
      ['03', 'Tue'],
      ['04', 'Wed'],
    ])
      await graph('/me/events', {
        body: makeEvent({
          subject,
          start: { dateTime: `2026-03-${day}T10:00:00`, timeZone: 'UTC' },
          end: { dateTime: `2026-03-${day}T11:00:00`, timeZone: 'UTC' },
        }),
      });
    await graph(`/me/calendars/${projects.body.id}/events`, { body: makeEvent({ subject: 'Elsewhere' }) });
    const filter = encodeURIComponent("start/dateTime ge '2026-03-04T00:00' and end/dateTime le '2026-03-05T10:30'");
    // Act
    const first = await graph('/me/events?$top=2&$select=subject&$orderby=start/dateTime desc');
    const second = await graph(first.body['@odata.nextLink']);
    const filtered = await graph(`/me/events?$filter=${filter}&$select=subject`);
    const unquoted = await graph(`/me/events?$filter=${encodeURIComponent('start/dateTime ge 2026-03-04T00:00:00Z')}`);
    const inProjects = await graph(`/me/calendars/${projects.body.id}/events?$select=subject`);
    // Assess
    expect(first.body.value).toEqual([
      { '@odata.etag': expect.any(String), id: expect.any(String), subject: 'Thu' },
      expect.objectContaining({ subject: 'Wed' }),
    ]);
    expect(second.body.value.map((e: { subject: string }) => e.subject)).toEqual(['Tue']);
    expect(filtered.body.value.map((e: { subject: string }) => e.subject)).toEqual(['Wed']);
    expect(unquoted.status).toBe(400);
    expect(inProjects.body.value.map((e: { subject: string }) => e.subject)).toEqual(['Elsewhere']);
  });

  it('updates and deletes an event; refuses an end before the start and an unknown time zone', async () => {
    // Prepare
    const { body: event } = await graph('/me/events', { body: makeEvent() });
    // Act
    const patched = await graph(`/me/events/${event.id}`, {
      method: 'PATCH',
      body: { subject: 'Planning (moved)', end: { dateTime: '2026-03-03T12:00:00', timeZone: 'UTC' } },
    });
    const backwards = await graph(`/me/events/${event.id}`, {
      method: 'PATCH',
      body: { end: { dateTime: '2026-03-03T08:00:00', timeZone: 'UTC' } },
    });
    const zone = await graph('/me/events', {
      body: makeEvent({ start: { dateTime: '2026-03-03T10:00:00', timeZone: 'Mars Standard Time' } }),
    });
    const deleted = await graph(`/me/calendar/events/${event.id}`, { method: 'DELETE' });
    const gone = await graph(`/me/events/${event.id}`);
    // Assess
    expect(patched.body).toMatchObject({
      subject: 'Planning (moved)',
      end: { dateTime: '2026-03-03T12:00:00.0000000' },
    });
    expect(patched.body.changeKey).not.toBe(event.changeKey);
    expect(backwards.status).toBe(400);
    expect(zone.status).toBe(400);
    expect(zone.body.error.code).toBe('TimeZoneNotSupportedException');
    expect(deleted.status).toBe(204);
    expect(gone.status).toBe(404);
  });
});

describe('Recurrence', () => {
  it('expands a weekly series in calendarView across a DST change, with an exception and a cancelled occurrence', async () => {
    // Prepare: Mondays and Wednesdays at 09:00 Berlin time; Europe moves to summer time on 2026-03-29.
    const { body: series } = await graph('/me/events', {
      body: makeEvent({
        subject: 'Standup',
        start: { dateTime: '2026-03-23T09:00:00', timeZone: 'W. Europe Standard Time' },
        end: { dateTime: '2026-03-23T09:30:00', timeZone: 'W. Europe Standard Time' },
        recurrence: {
          pattern: { type: 'weekly', interval: 1, daysOfWeek: ['monday', 'wednesday'], firstDayOfWeek: 'monday' },
          range: { type: 'numbered', startDate: '2026-03-23', numberOfOccurrences: 6 },
        },
      }),
    });
    const all = await graph(
      `/me/events/${series.id}/instances?${window('2026-03-01T00:00:00Z', '2026-05-01T00:00:00Z')}`,
    );
    const [first, wednesday, monday] = all.body.value;
    // Act
    const exception = await graph(`/me/events/${wednesday.id}`, {
      method: 'PATCH',
      body: {
        subject: 'Standup (moved)',
        start: { dateTime: '2026-03-25T14:00:00', timeZone: 'W. Europe Standard Time' },
        end: { dateTime: '2026-03-25T14:30:00', timeZone: 'W. Europe Standard Time' },
      },
    });
    const cancelled = await graph(`/me/events/${monday.id}`, { method: 'DELETE' });
    const view = await graph(`/me/calendarView?${window('2026-03-23T00:00:00Z', '2026-04-07T00:00:00Z')}`);
    const cancelledAgain = await graph(`/me/events/${monday.id}`);
    const master = await graph(`/me/events/${series.id}`);
    // Assess
    expect(series.type).toBe('seriesMaster');
    expect(startsOf(all.body.value)).toEqual([
      '2026-03-23T08:00',
      '2026-03-25T08:00',
      '2026-03-30T07:00',
      '2026-04-01T07:00',
      '2026-04-06T07:00',
      '2026-04-08T07:00',
    ]);
    expect(first).toMatchObject({ type: 'occurrence', seriesMasterId: series.id, subject: 'Standup' });
    expect(exception.body).toMatchObject({ id: wednesday.id, type: 'exception', subject: 'Standup (moved)' });
    expect(cancelled.status).toBe(204);
    expect(view.body.value.map((e: { subject: string; type: string }) => [e.type, e.subject])).toEqual([
      ['occurrence', 'Standup'],
      ['exception', 'Standup (moved)'],
      ['occurrence', 'Standup'],
      ['occurrence', 'Standup'],
    ]);
    expect(startsOf(view.body.value)).toEqual([
      '2026-03-23T08:00',
      '2026-03-25T13:00',
      '2026-04-01T07:00',
      '2026-04-06T07:00',
    ]);
    expect(cancelledAgain.status).toBe(404);
    expect(master.body.recurrence).toEqual({
      pattern: {
        type: 'weekly',
        interval: 1,
        daysOfWeek: ['monday', 'wednesday'],
        dayOfMonth: 0,
        month: 0,
        index: 'first',
        firstDayOfWeek: 'monday',
      },
      range: {
        type: 'numbered',
        startDate: '2026-03-23',
        endDate: '0001-01-01',
        recurrenceTimeZone: null,
        numberOfOccurrences: 6,
      },
    });
  });

  it('expands daily, monthly and yearly patterns, absolute and relative, with endDate, noEnd and numbered ranges', async () => {
    // Prepare
    const cases: [Record<string, unknown>, Record<string, unknown>, string[]][] = [
      [
        { type: 'daily', interval: 2 },
        { type: 'endDate', startDate: '2026-03-02', endDate: '2026-03-07' },
        ['03-02', '03-04', '03-06'],
      ],
      [
        { type: 'absoluteMonthly', interval: 1, dayOfMonth: 31 },
        { type: 'numbered', startDate: '2026-01-31', numberOfOccurrences: 4 },
        ['01-31', '02-28', '03-31', '04-30'],
      ],
      [
        { type: 'relativeMonthly', interval: 1, daysOfWeek: ['tuesday'], index: 'second' },
        { type: 'noEnd', startDate: '2026-01-01' },
        ['01-13', '02-10', '03-10', '04-14'],
      ],
      [
        { type: 'relativeMonthly', interval: 2, daysOfWeek: ['friday'], index: 'last' },
        { type: 'noEnd', startDate: '2026-01-01' },
        ['01-30', '03-27'],
      ],
      [
        { type: 'absoluteYearly', interval: 1, dayOfMonth: 14, month: 2 },
        { type: 'noEnd', startDate: '2026-01-01' },
        ['02-14'],
      ],
      [
        { type: 'relativeYearly', interval: 1, daysOfWeek: ['monday'], index: 'first', month: 4 },
        { type: 'noEnd', startDate: '2026-01-01' },
        ['04-06'],
      ],
    ];
    for (const [pattern, range, expected] of cases) {
      // Act
      const { body: series } = await graph('/me/events', {
        body: makeEvent({
          start: { dateTime: `${range.startDate}T12:00:00`, timeZone: 'UTC' },
          end: { dateTime: `${range.startDate}T13:00:00`, timeZone: 'UTC' },
          recurrence: { pattern, range },
        }),
      });
      const instances = await graph(
        `/me/events/${series.id}/instances?${window('2026-01-01T00:00:00Z', '2026-04-30T23:00:00Z')}`,
      );
      // Assess
      expect([pattern.type, startsOf(instances.body.value).map((s) => s.slice(5, 10))]).toEqual([
        pattern.type,
        expected,
      ]);
    }
  });
});

describe('calendarView/delta', () => {
  it('pages a first round, then reports what other clients changed, @removed included, and refuses an expired token', async () => {
    // Prepare
    const ids: string[] = [];
    for (const day of ['03', '04', '05'])
      ids.push(
        (
          await graph('/me/events', {
            body: makeEvent({
              subject: `Day ${day}`,
              start: { dateTime: `2026-03-${day}T10:00:00`, timeZone: 'UTC' },
              end: { dateTime: `2026-03-${day}T11:00:00`, timeZone: 'UTC' },
            }),
          })
        ).body.id,
      );
    const prefer = { Prefer: 'odata.maxpagesize=2' };
    // Act
    const page1 = await graph(`/me/calendarView/delta?${window('2026-03-01T00:00:00Z', '2026-03-31T00:00:00Z')}`, {
      headers: prefer,
    });
    const page2 = await graph(page1.body['@odata.nextLink'], { headers: prefer });
    fake.changeOutside(ADA, { kind: 'updateEvent', id: ids[0]!, event: { subject: 'Day 03 (renamed)' } });
    fake.changeOutside(ADA, { kind: 'deleteEvent', id: ids[1]! });
    const added = fake.changeOutside(ADA, {
      kind: 'createEvent',
      event: makeEvent({
        subject: 'Added',
        start: { dateTime: '2026-03-10T10:00:00', timeZone: 'UTC' },
        end: { dateTime: '2026-03-10T11:00:00', timeZone: 'UTC' },
      }),
    });
    fake.changeOutside(ADA, {
      kind: 'createEvent',
      event: makeEvent({
        subject: 'Outside the window',
        start: { dateTime: '2026-04-10T10:00:00', timeZone: 'UTC' },
        end: { dateTime: '2026-04-10T11:00:00', timeZone: 'UTC' },
      }),
    });
    const round2 = await graph(page2.body['@odata.deltaLink'], { headers: prefer });
    const round2b = await graph(round2.body['@odata.nextLink'], { headers: prefer });
    const quiet = await graph(round2b.body['@odata.deltaLink']);
    fake.expireCalendarDelta(ADA);
    const expired = await graph(quiet.body['@odata.deltaLink']);
    // Assess
    expect(page1.headers.get('preference-applied')).toBe('odata.maxpagesize=2');
    expect(page1.body.value).toEqual([
      expect.objectContaining({ '@odata.type': '#microsoft.graph.event', id: ids[0], subject: 'Day 03' }),
      expect.objectContaining({ id: ids[1], subject: 'Day 04' }),
    ]);
    expect(page1.body['@odata.nextLink']).toMatch(/\/me\/calendarView\/delta\?\$skiptoken=/);
    expect(page2.body.value.map((e: { id: string }) => e.id)).toEqual([ids[2]]);
    expect(page2.body['@odata.deltaLink']).toMatch(/\$deltatoken=/);
    const changes = [...round2.body.value, ...round2b.body.value];
    expect(changes).toEqual(
      expect.arrayContaining([
        { '@odata.type': '#microsoft.graph.event', id: ids[1], '@removed': { reason: 'deleted' } },
        expect.objectContaining({ id: ids[0], subject: 'Day 03 (renamed)' }),
        expect.objectContaining({ id: added!.id, subject: 'Added' }),
      ]),
    );
    expect(changes).toHaveLength(3);
    expect(quiet.body.value).toEqual([]);
    expect(expired.status).toBe(410);
    expect(expired.body.error.code).toBe('syncStateNotFound');
  });

  it('reports a series as its instances, and a cancelled occurrence as removed', async () => {
    // Prepare
    const { body: series } = await graph('/me/events', {
      body: makeEvent({
        subject: 'Daily',
        recurrence: {
          pattern: { type: 'daily', interval: 1 },
          range: { type: 'numbered', startDate: '2026-03-03', numberOfOccurrences: 3 },
        },
      }),
    });
    const first = await graph(`/me/calendarView/delta?${window('2026-03-01T00:00:00Z', '2026-03-31T00:00:00Z')}`);
    const [, second] = first.body.value;
    // Act
    fake.changeOutside(ADA, { kind: 'deleteEvent', id: second.id });
    const next = await graph(first.body['@odata.deltaLink']);
    // Assess
    expect(first.body.value.map((e: { type: string; seriesMasterId: string }) => [e.type, e.seriesMasterId])).toEqual([
      ['occurrence', series.id],
      ['occurrence', series.id],
      ['occurrence', series.id],
    ]);
    expect(next.body.value).toEqual(
      expect.arrayContaining([
        { '@odata.type': '#microsoft.graph.event', id: second.id, '@removed': { reason: 'deleted' } },
      ]),
    );
  });
});

describe('Meetings', () => {
  it('copies a meeting to a hosted attendee, whose answers reach the organizer; cancel marks the copy cancelled', async () => {
    // Prepare
    const { body: meeting } = await graph('/me/events', {
      body: makeEvent({ subject: 'Review', attendees: [{ emailAddress: { address: BOB }, type: 'required' }] }),
    });
    const bobView = await graph(`/me/calendarView?${window('2026-03-03T00:00:00Z', '2026-03-04T00:00:00Z')}`, {
      token: BOB_TOKEN,
    });
    const copy = bobView.body.value[0];
    // Act
    const tentative = await graph(`/me/events/${copy.id}/tentativelyAccept`, {
      body: { comment: 'Maybe', sendResponse: false },
      token: BOB_TOKEN,
    });
    const afterTentative = await graph(`/me/events/${meeting.id}`);
    const accepted = await graph(`/me/events/${copy.id}/accept`, {
      body: { comment: 'See you', sendResponse: true },
      token: BOB_TOKEN,
    });
    const afterAccept = await graph(`/me/events/${meeting.id}`);
    const ownAnswer = await graph(`/me/events/${meeting.id}/accept`, { body: { sendResponse: true } });
    const attendeeCancel = await graph(`/me/events/${copy.id}/cancel`, { body: { comment: 'No' }, token: BOB_TOKEN });
    const cancelled = await graph(`/me/events/${meeting.id}/cancel`, { body: { comment: 'Called off' } });
    const bobCopy = await graph(`/me/events/${copy.id}`, { token: BOB_TOKEN });
    const organizerCopy = await graph(`/me/events/${meeting.id}`);
    // Assess
    expect(copy).toMatchObject({
      subject: 'Review',
      isOrganizer: false,
      responseStatus: { response: 'notResponded' },
      organizer: { emailAddress: { address: ADA } },
      iCalUId: meeting.iCalUId,
    });
    expect(tentative.status).toBe(202);
    expect(afterTentative.body.attendees[0].status.response).toBe('none');
    expect(accepted.status).toBe(202);
    expect(afterAccept.body.attendees[0].status).toEqual({
      response: 'accepted',
      time: '2026-03-02T09:00:00.0000000Z',
    });
    expect(ownAnswer.status).toBe(400);
    expect(attendeeCancel.status).toBe(400);
    expect(cancelled.status).toBe(202);
    expect(bobCopy.body).toMatchObject({ isCancelled: true, subject: 'Canceled: Review' });
    expect(organizerCopy.status).toBe(404);
  });

  it('carries the organizer’s changes to the attendee’s copy, and invites an attendee added later', async () => {
    // Prepare
    fake.addUser({ email: 'cy@contoso.test', accessToken: 'eyJ0eXAi.fake-token-cy', displayName: 'Cy' });
    const { body: meeting } = await graph(`/users/${ADA}/events`, {
      body: makeEvent({ attendees: [{ emailAddress: { address: BOB } }] }),
    });
    // Act
    const patched = await graph(`/users/${ADA}/events/${meeting.id}`, {
      method: 'PATCH',
      body: {
        subject: 'Planning (room change)',
        location: { displayName: 'Room 2' },
        attendees: [{ emailAddress: { address: BOB } }, { emailAddress: { address: 'cy@contoso.test' } }],
      },
    });
    const bob = await graph('/me/events', { token: BOB_TOKEN });
    const cy = await graph('/me/events', { token: 'eyJ0eXAi.fake-token-cy' });
    // Assess
    expect(patched.body.attendees).toHaveLength(2);
    expect(bob.body.value).toEqual([
      expect.objectContaining({
        subject: 'Planning (room change)',
        location: expect.objectContaining({ displayName: 'Room 2' }),
      }),
    ]);
    expect(cy.body.value).toEqual([
      expect.objectContaining({ subject: 'Planning (room change)', iCalUId: meeting.iCalUId, isOrganizer: false }),
    ]);
  });

  it('removes a declined meeting from the attendee’s calendar', async () => {
    // Prepare
    await graph('/me/events', { body: makeEvent({ attendees: [{ emailAddress: { address: BOB } }] }) });
    const { body: events } = await graph('/me/events', { token: BOB_TOKEN });
    // Act
    const declined = await graph(`/me/events/${events.value[0].id}/decline`, {
      body: { comment: 'Away', sendResponse: true },
      token: BOB_TOKEN,
    });
    const after = await graph('/me/events', { token: BOB_TOKEN });
    const organizer = await graph('/me/events');
    // Assess
    expect(declined.status).toBe(202);
    expect(after.body.value).toEqual([]);
    expect(organizer.body.value[0].attendees[0].status.response).toBe('declined');
  });
});

describe('getSchedule', () => {
  it('answers busy blocks and the availability view of hosted users, and an error item for an unknown one', async () => {
    // Prepare
    await graph('/me/events', { body: makeEvent({ subject: 'Focus', sensitivity: 'private' }) });
    await graph('/me/events', {
      body: makeEvent({
        subject: 'Lunch',
        showAs: 'tentative',
        start: { dateTime: '2026-03-03T11:30:00', timeZone: 'UTC' },
        end: { dateTime: '2026-03-03T12:00:00', timeZone: 'UTC' },
      }),
    });
    await graph('/me/events', { body: makeEvent({ subject: 'Free time', showAs: 'free' }) });
    // Act
    const res = await graph('/me/calendar/getSchedule', {
      token: BOB_TOKEN,
      body: {
        schedules: [ADA, 'nobody@contoso.test'],
        startTime: { dateTime: '2026-03-03T09:00:00', timeZone: 'UTC' },
        endTime: { dateTime: '2026-03-03T13:00:00', timeZone: 'UTC' },
        availabilityViewInterval: 30,
      },
    });
    // Assess
    expect(res.status).toBe(200);
    const [ada, nobody] = res.body.value;
    expect(ada.availabilityView).toBe('00220100');
    expect(ada.scheduleItems).toEqual([
      {
        isPrivate: true,
        status: 'busy',
        start: { dateTime: '2026-03-03T10:00:00.0000000', timeZone: 'UTC' },
        end: { dateTime: '2026-03-03T11:00:00.0000000', timeZone: 'UTC' },
      },
      expect.objectContaining({ isPrivate: false, status: 'tentative', subject: 'Lunch' }),
    ]);
    expect(ada.workingHours.timeZone).toEqual({ name: 'W. Europe Standard Time' });
    expect(nobody).toMatchObject({
      scheduleId: 'nobody@contoso.test',
      error: { responseCode: 'ErrorMailRecipientNotFound' },
    });
  });
});

describe('Faults and checks', () => {
  it('answers an injected fault alone and inside $batch', async () => {
    // Prepare
    fake.inject({ path: /\/calendarView$/, status: 503, times: 2 });
    const query = window('2026-03-01T00:00:00Z', '2026-03-02T00:00:00Z');
    // Act
    const alone = await graph(`/me/calendarView?${query}`);
    const batch = await graph('/$batch', {
      body: {
        requests: [
          { id: '1', method: 'GET', url: `/me/calendarView?${query}` },
          { id: '2', method: 'GET', url: '/me/calendars' },
        ],
      },
    });
    const served = await graph(`/me/calendarView?${query}`);
    // Assess
    expect(alone.status).toBe(503);
    expect(alone.headers.get('retry-after')).toBe('1');
    const byId = Object.fromEntries(batch.body.responses.map((r: { id: string }) => [r.id, r]));
    expect(byId['1']).toMatchObject({ status: 503, body: { error: { code: 'serviceNotAvailable' } } });
    expect(byId['2']).toMatchObject({ status: 200, body: { value: [expect.objectContaining({ name: 'Calendar' })] } });
    expect(served.status).toBe(200);
  });

  it('records requests the descriptions forbid: a calendarView without its window, an event with an unknown showAs', async () => {
    // Act
    const noWindow = await graph('/me/calendarView?startDateTime=2026-03-01T00:00:00Z');
    const badEnum = await graph('/me/events', { body: makeEvent({ showAs: 'away' }) });
    const events = await graph('/me/events');
    // Assess
    expect(noWindow.status).toBe(400);
    expect(badEnum.status).toBe(400);
    expect(events.body.value).toEqual([]);
    expect(fake.violations()).toEqual([
      { kind: 'request', message: "user_ListCalendarView: the query option 'endDateTime' is required" },
      { kind: 'request', message: expect.stringMatching(/^request of user_CreateEvent: \/showAs must match pattern/) },
    ]);
    fake.clearViolations();
  });

  it('turns an answer mangled against the description into a 500 and a response violation', async () => {
    // Prepare
    await graph('/me/events', { body: makeEvent() });
    fake.inject({
      path: /\/me\/events$/,
      method: 'GET',
      mangleAnswer: (body) => {
        const page = body as { value: Record<string, unknown>[] };
        return { ...page, value: page.value.map((e) => ({ ...e, showAs: 'away' })) };
      },
    });
    // Act
    const res = await graph('/me/events');
    // Assess
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe('generalException');
    expect(fake.violations()).toEqual([
      {
        kind: 'response',
        message: expect.stringMatching(/^response of user_ListEvent: \/value\/0\/showAs must be one of/),
      },
    ]);
    fake.clearViolations();
  });
});
