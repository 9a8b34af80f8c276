import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';

/**
 * The Calendar v3 and People v1 parts of the local Google fake, driven over HTTP with Node's fetch as
 * a client would: calendars and the calendar list, events with recurrence, exceptions and EXDATE,
 * incremental sync and its 410, event types, Meet conferences, free/busy, watch channels; contacts,
 * their etags, sync tokens and groups. Every request and answer goes through the fake's Discovery
 * check; a deliberately wrong answer of each API shows the check failing, and at the end no request
 * meant to be valid and no answer of the fake broke calendar-v3.json or people-v1.json.
 */

const ADA = 'ada@example.test';
const BOB = 'bob@example.test';
const TOKENS: Record<string, string> = { [ADA]: 'ya29.fake-token-ada', [BOB]: 'ya29.fake-token-bob' };
const DAY = 24 * 60 * 60 * 1000;

/** The fake's clock: moves 1 ms at each read, jumps when a test says so. */
let clock = Date.UTC(2026, 0, 15, 12);
let fake: GoogleFake;

interface Reply {
  status: number;
  /** The JSON answer, read field by field as a client would. */
  body: any;
}

/** A call as a client makes it: a path under the fake's URL, a bearer token, a JSON body. */
async function call(path: string, init: { method?: string; body?: unknown; as?: string } = {}): Promise<Reply> {
  const headers: Record<string, string> = { Authorization: `Bearer ${TOKENS[init.as ?? ADA]}` };
  if (init.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${fake.url}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const cal = (path: string, init?: Parameters<typeof call>[1]) => call(`/calendar/v3${path}`, init);
const people = (path: string, init?: Parameters<typeof call>[1]) => call(`/v1${path}`, init);
const events = (calendarId: string) => `/calendars/${encodeURIComponent(calendarId)}/events`;
const ids = (items: { id: string }[]) => items.map((e) => e.id);

/** A timed event body in Berlin time. */
const berlin = (start: string, end: string, extra: Record<string, unknown> = {}) => ({
  start: { dateTime: `${start}+01:00`, timeZone: 'Europe/Berlin' },
  end: { dateTime: `${end}+01:00`, timeZone: 'Europe/Berlin' },
  ...extra,
});

/** A fresh secondary calendar of Ada's, so a test's events are its own. */
async function newCalendar(summary: string): Promise<string> {
  const res = await cal('/calendars', { body: { summary, timeZone: 'Europe/Berlin' } });
  if (res.status !== 200) throw new Error(`calendars.insert: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}

beforeAll(async () => {
  fake = await startGoogleFake({ now: () => (clock += 1) });
  fake.addUser({ email: ADA, accessToken: TOKENS[ADA]!, timeZone: 'Europe/Berlin' });
  fake.addUser({ email: BOB, accessToken: TOKENS[BOB]! });
});

afterAll(async () => {
  await fake?.close();
});

describe('Calendar list and calendars', () => {
  it('lists the primary calendar, adds a secondary one and syncs the list', async () => {
    // Prepare
    const first = await cal('/users/me/calendarList');
    // Act
    const id = await newCalendar('Team');
    const changed = await cal(`/users/me/calendarList?syncToken=${first.body.nextSyncToken}`);
    // Assess
    expect(first.status).toBe(200);
    expect(first.body.items).toEqual([
      expect.objectContaining({
        kind: 'calendar#calendarListEntry',
        id: ADA,
        summary: ADA,
        primary: true,
        accessRole: 'owner',
        timeZone: 'Europe/Berlin',
      }),
    ]);
    expect(id).toMatch(/^[0-9a-v]+@group\.calendar\.google\.com$/);
    expect(ids(changed.body.items)).toEqual([id]);
    expect((await cal('/users/me/calendarList/primary')).body).toMatchObject({ id: ADA, primary: true });
    expect((await cal(`/calendars/${encodeURIComponent(id)}`)).body).toMatchObject({
      kind: 'calendar#calendar',
      summary: 'Team',
      timeZone: 'Europe/Berlin',
      dataOwner: ADA,
    });
  });

  it('changes calendars and list entries, refuses what Google refuses', async () => {
    const id = await newCalendar('Scratch');
    const path = `/calendars/${encodeURIComponent(id)}`;
    const before = (await cal(path)).body.etag;
    const patched = await cal(path, { method: 'PATCH', body: { description: 'Scratch pad' } });
    expect(patched.body).toMatchObject({ summary: 'Scratch', description: 'Scratch pad' });
    expect(patched.body.etag).not.toBe(before);
    const updated = await cal(path, { method: 'PUT', body: { summary: 'Scratch 2', timeZone: 'America/New_York' } });
    expect(updated.body.description).toBeUndefined();
    expect(updated.body.timeZone).toBe('America/New_York');

    const entry = `/users/me/calendarList/${encodeURIComponent(id)}`;
    const colored = await cal(entry, { method: 'PATCH', body: { colorId: '5', summaryOverride: 'Mine' } });
    expect(colored.body).toMatchObject({ colorId: '5', backgroundColor: '#ff7537', summaryOverride: 'Mine' });
    expect((await cal(entry, { method: 'PATCH', body: { backgroundColor: '#123456' } })).status).toBe(400);
    const rgb = await cal(`${entry}?colorRgbFormat=true`, { method: 'PATCH', body: { backgroundColor: '#123456' } });
    expect(rgb.body.backgroundColor).toBe('#123456');

    const token = (await cal('/users/me/calendarList')).body.nextSyncToken;
    expect((await cal(entry, { method: 'DELETE' })).status).toBe(204);
    const sync = await cal(`/users/me/calendarList?syncToken=${token}`);
    expect(sync.body.items).toEqual([expect.objectContaining({ id, deleted: true })]);
    expect((await cal(`/users/me/calendarList?syncToken=${token}&minAccessRole=owner`)).status).toBe(400);

    expect((await cal(path, { method: 'DELETE' })).status).toBe(204);
    expect((await cal(path)).status).toBe(404);
    expect((await cal(`/calendars/${ADA}`, { method: 'DELETE' })).status).toBe(400);
  });

  it('lets a user subscribe to another user’s calendar as a reader', async () => {
    const added = await cal('/users/me/calendarList', { body: { id: BOB } });
    expect(added.body).toMatchObject({ id: BOB, accessRole: 'reader' });
    expect(added.body.primary).toBeUndefined();
    expect((await cal(`${events(BOB)}`)).status).toBe(200);
    const refused = await cal(events(BOB), { body: berlin('2026-02-01T10:00:00', '2026-02-01T11:00:00') });
    expect(refused.status).toBe(403);
    expect(refused.body.error.errors[0].reason).toBe('requiredAccessLevel');
    expect((await cal('/users/me/calendarList', { body: { id: 'nobody@example.test' } })).status).toBe(404);
  });
});

describe('Events', () => {
  it('inserts, gets, patches and deletes an event', async () => {
    // Prepare
    const id = await newCalendar('Single events');
    // Act
    const inserted = await cal(`${events(id)}?sendUpdates=all`, {
      body: berlin('2026-02-03T10:00:00', '2026-02-03T11:00:00', {
        summary: 'Design review',
        location: 'Room 1',
        attendees: [{ email: ADA }, { email: BOB, displayName: 'Bob' }],
        extendedProperties: { private: { app: 'switchboard' } },
      }),
    });
    // Assess
    expect(inserted.status).toBe(200);
    const event = inserted.body;
    expect(event).toMatchObject({
      kind: 'calendar#event',
      status: 'confirmed',
      summary: 'Design review',
      start: { dateTime: '2026-02-03T10:00:00+01:00', timeZone: 'Europe/Berlin' },
      end: { dateTime: '2026-02-03T11:00:00+01:00' },
      organizer: { email: id, displayName: 'Single events', self: true },
      creator: { email: ADA },
      iCalUID: `${event.id}@google.com`,
      sequence: 0,
      eventType: 'default',
      reminders: { useDefault: true },
    });
    expect(event.id).toMatch(/^[0-9a-v]{5,}$/);
    expect(event.etag).toMatch(/^"\d+"$/);
    expect(event.htmlLink).toMatch(/^https:\/\/www\.google\.com\/calendar\/event\?eid=/);
    expect(event.attendees).toEqual([
      { email: ADA, responseStatus: 'needsAction' },
      { email: BOB, displayName: 'Bob', responseStatus: 'needsAction' },
    ]);

    const path = `${events(id)}/${event.id}`;
    expect((await cal(path)).body).toEqual(event);
    const utc = await cal(`${path}?timeZone=UTC&maxAttendees=1`);
    expect(utc.body.start.dateTime).toBe('2026-02-03T09:00:00Z');
    expect(utc.body.attendeesOmitted).toBe(true);
    expect(utc.body.attendees).toBeUndefined();

    const patched = await cal(path, {
      method: 'PATCH',
      body: {
        summary: 'Design review (moved)',
        start: { dateTime: '2026-02-03T12:00:00+01:00' },
        end: { dateTime: '2026-02-03T13:00:00+01:00' },
        extendedProperties: { shared: { ticket: '42' } },
      },
    });
    expect(patched.body).toMatchObject({
      summary: 'Design review (moved)',
      sequence: 1,
      extendedProperties: { private: { app: 'switchboard' }, shared: { ticket: '42' } },
    });
    expect(patched.body.location).toBe('Room 1');
    expect(patched.body.start).toEqual({ dateTime: '2026-02-03T12:00:00+01:00' });
    expect(patched.body.etag).not.toBe(event.etag);

    const invitation = await cal(events('primary'), {
      body: berlin('2026-05-05T10:00:00', '2026-05-05T11:00:00', {
        attendees: [{ email: BOB }, { email: ADA }],
      }),
    });
    expect(invitation.body.attendees).toEqual([
      { email: BOB, responseStatus: 'needsAction' },
      { email: ADA, responseStatus: 'accepted', organizer: true, self: true },
    ]);
    expect(invitation.body.creator).toEqual({ email: ADA, self: true });
    const trimmed = await cal(`${events('primary')}/${invitation.body.id}?maxAttendees=1`);
    expect(trimmed.body).toMatchObject({ attendees: [{ email: ADA, self: true }], attendeesOmitted: true });

    expect((await cal(path, { method: 'DELETE' })).status).toBe(204);
    expect((await cal(path)).body.status).toBe('cancelled');
    expect((await cal(path, { method: 'DELETE' })).status).toBe(410);
    expect((await cal(events(id))).body.items).toEqual([]);
    const shown = await cal(`${events(id)}?showDeleted=true`);
    expect(shown.body.items).toEqual([
      {
        kind: 'calendar#event',
        etag: expect.any(String),
        id: event.id,
        status: 'cancelled',
        updated: expect.any(String),
      },
    ]);
  });

  it('takes all-day events and client ids, and refuses bad times and ids', async () => {
    const id = await newCalendar('All-day');
    const allDay = await cal(events(id), {
      body: { id: 'vacation2026', summary: 'Holiday', start: { date: '2026-02-09' }, end: { date: '2026-02-11' } },
    });
    expect(allDay.body).toMatchObject({
      id: 'vacation2026',
      start: { date: '2026-02-09' },
      end: { date: '2026-02-11' },
    });
    const listed = await cal(`${events(id)}?timeMin=2026-02-10T12:00:00Z&timeMax=2026-02-10T13:00:00Z`);
    expect(ids(listed.body.items)).toEqual(['vacation2026']);
    const duplicate = await cal(events(id), {
      body: { id: 'vacation2026', start: { date: '2026-02-09' }, end: { date: '2026-02-10' } },
    });
    expect(duplicate.status).toBe(409);
    const badId = await cal(events(id), {
      body: { id: 'Not_Valid', start: { date: '2026-02-09' }, end: { date: '2026-02-10' } },
    });
    expect(badId.status).toBe(400);
    const backwards = await cal(events(id), { body: berlin('2026-02-03T11:00:00', '2026-02-03T10:00:00') });
    expect(backwards.status).toBe(400);
    expect(backwards.body.error.errors[0].reason).toBe('timeRangeEmpty');
    const noZone = await cal(events(id), {
      body: {
        start: { dateTime: '2026-02-03T10:00:00+01:00' },
        end: { dateTime: '2026-02-03T11:00:00+01:00' },
        recurrence: ['RRULE:FREQ=DAILY'],
      },
    });
    expect(noZone.status).toBe(400);
    const badRule = await cal(events(id), {
      body: berlin('2026-02-03T10:00:00', '2026-02-03T11:00:00', { recurrence: ['RRULE:FREQ=SOMETIMES'] }),
    });
    expect(badRule.status).toBe(400);
    expect((await cal(`${events(id)}?timeMin=2026-02-03T00:00:00Z&timeMax=2026-02-02T00:00:00Z`)).status).toBe(400);
    expect((await cal(`${events(id)}?orderBy=startTime`)).status).toBe(400);
  });

  it('expands a weekly series with an RDATE, an EXDATE, a moved and a cancelled instance', async () => {
    // Prepare: Mondays 09:00 Berlin from 2 February, 10 times; not 16 February; also Wednesday 18 February.
    const id = await newCalendar('Series');
    const series = (
      await cal(events(id), {
        body: berlin('2026-02-02T09:00:00', '2026-02-02T10:00:00', {
          summary: 'Weekly sync',
          recurrence: [
            'RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=10',
            'EXDATE;TZID=Europe/Berlin:20260216T090000',
            'RDATE;TZID=Europe/Berlin:20260218T090000',
          ],
        }),
      })
    ).body;
    const february = `${events(id)}?singleEvents=true&orderBy=startTime&timeMin=2026-02-01T00:00:00Z&timeMax=2026-03-01T00:00:00Z`;
    const starts = (items: { start: { dateTime: string } }[]) => items.map((e) => e.start.dateTime);

    // Act: move the instance of 9 February to Tuesday 14:00, cancel the one of 23 February.
    const before = await cal(february);
    const moved = await cal(`${events(id)}/${series.id}_20260209T080000Z`, {
      method: 'PATCH',
      body: { start: { dateTime: '2026-02-10T14:00:00+01:00' }, end: { dateTime: '2026-02-10T15:00:00+01:00' } },
    });
    const cancelled = await cal(`${events(id)}/${series.id}_20260223T080000Z`, { method: 'DELETE' });
    const after = await cal(february);

    // Assess
    expect(series.recurrence).toHaveLength(3);
    expect(starts(before.body.items)).toEqual([
      '2026-02-02T09:00:00+01:00',
      '2026-02-09T09:00:00+01:00',
      '2026-02-18T09:00:00+01:00',
      '2026-02-23T09:00:00+01:00',
    ]);
    expect(before.body.items[0]).toMatchObject({
      id: `${series.id}_20260202T080000Z`,
      recurringEventId: series.id,
      originalStartTime: { dateTime: '2026-02-02T09:00:00+01:00', timeZone: 'Europe/Berlin' },
      summary: 'Weekly sync',
      iCalUID: series.iCalUID,
    });
    expect(before.body.items[0].recurrence).toBeUndefined();
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({
      id: `${series.id}_20260209T080000Z`,
      recurringEventId: series.id,
      originalStartTime: { dateTime: '2026-02-09T09:00:00+01:00' },
      start: { dateTime: '2026-02-10T14:00:00+01:00' },
    });
    expect(cancelled.status).toBe(204);
    expect(starts(after.body.items)).toEqual([
      '2026-02-02T09:00:00+01:00',
      '2026-02-10T14:00:00+01:00',
      '2026-02-18T09:00:00+01:00',
    ]);
    const withDeleted = await cal(`${february}&showDeleted=true`);
    expect(withDeleted.body.items).toContainEqual(
      expect.objectContaining({
        id: `${series.id}_20260223T080000Z`,
        status: 'cancelled',
        recurringEventId: series.id,
      }),
    );

    // The moved instance is found at its new time only; the series keeps its wall-clock time across DST.
    const tuesday = await cal(
      `${events(id)}?singleEvents=true&timeMin=2026-02-10T00:00:00Z&timeMax=2026-02-11T00:00:00Z`,
    );
    expect(ids(tuesday.body.items)).toEqual([moved.body.id]);
    const monday = await cal(
      `${events(id)}?singleEvents=true&timeMin=2026-02-09T00:00:00Z&timeMax=2026-02-10T00:00:00Z`,
    );
    expect(monday.body.items).toEqual([]);
    const spring = await cal(
      `${events(id)}?singleEvents=true&timeMin=2026-03-29T00:00:00Z&timeMax=2026-04-01T00:00:00Z`,
    );
    expect(spring.body.items).toEqual([
      expect.objectContaining({
        id: `${series.id}_20260330T070000Z`,
        start: { dateTime: '2026-03-30T09:00:00+02:00', timeZone: 'Europe/Berlin' },
      }),
    ]);

    // Without singleEvents: the series itself and its exceptions.
    const raw = await cal(events(id));
    expect(ids(raw.body.items)).toEqual([series.id, moved.body.id, `${series.id}_20260223T080000Z`]);
    const instances = await cal(`${events(id)}/${series.id}/instances`);
    expect(instances.body.items).toHaveLength(9);
    expect((await cal(`${events(id)}/${series.id}_20260216T080000Z`)).status).toBe(404);
    expect((await cal(`${events(id)}/${series.id}_20260302T080000Z`)).body.start.dateTime).toBe(
      '2026-03-02T09:00:00+01:00',
    );
  });

  it('syncs incrementally: changes since a token, cancelled events included; 410 for a bad or expired token', async () => {
    // Prepare
    const id = await newCalendar('Sync');
    const a = (await cal(events(id), { body: berlin('2026-02-04T10:00:00', '2026-02-04T11:00:00', { summary: 'A' }) }))
      .body;
    const full = await cal(events(id));
    const start = full.body.nextSyncToken as string;
    // Act
    const b = (await cal(events(id), { body: berlin('2026-02-05T10:00:00', '2026-02-05T11:00:00', { summary: 'B' }) }))
      .body;
    await cal(`${events(id)}/${a.id}`, { method: 'PATCH', body: { summary: 'A2' } });
    const c = (await cal(events(id), { body: berlin('2026-02-06T10:00:00', '2026-02-06T11:00:00', { summary: 'C' }) }))
      .body;
    await cal(`${events(id)}/${c.id}`, { method: 'DELETE' });
    const changes = await cal(`${events(id)}?syncToken=${start}`);
    // Assess
    expect(ids(full.body.items)).toEqual([a.id]);
    expect(changes.status).toBe(200);
    expect(changes.body.items).toEqual([
      expect.objectContaining({ id: b.id, summary: 'B', status: 'confirmed' }),
      expect.objectContaining({ id: a.id, summary: 'A2' }),
      expect.objectContaining({ id: c.id, status: 'cancelled' }),
    ]);
    expect(changes.body.nextSyncToken).toEqual(expect.any(String));
    expect(changes.body.nextPageToken).toBeUndefined();
    const quiet = await cal(`${events(id)}?syncToken=${changes.body.nextSyncToken}`);
    expect(quiet.body.items).toEqual([]);

    const outside = fake.calendarChangedOutside(ADA, id, {
      summary: 'From the phone',
      ...berlin('2026-02-07T10:00:00', '2026-02-07T11:00:00'),
    });
    fake.calendarChangedOutside(ADA, id, { id: b.id, summary: 'B from the phone' });
    const seen = await cal(`${events(id)}?syncToken=${quiet.body.nextSyncToken}`);
    expect(seen.body.items).toEqual([
      expect.objectContaining({ id: outside.id, summary: 'From the phone' }),
      expect.objectContaining({ id: b.id, summary: 'B from the phone' }),
    ]);

    const paged = await cal(`${events(id)}?maxResults=1`);
    expect(paged.body.items).toHaveLength(1);
    expect(paged.body.nextSyncToken).toBeUndefined();
    const last = await cal(`${events(id)}?maxResults=5&pageToken=${paged.body.nextPageToken}`);
    expect(last.body.items).toHaveLength(2);
    expect(last.body.nextSyncToken).toEqual(expect.any(String));

    expect((await cal(`${events(id)}?syncToken=${start}&timeMin=2026-01-01T00:00:00Z`)).status).toBe(400);
    const garbage = await cal(`${events(id)}?syncToken=not-a-token`);
    expect(garbage.status).toBe(410);
    expect(garbage.body.error).toMatchObject({ code: 410, errors: [{ domain: 'global', reason: 'fullSyncRequired' }] });
    fake.expireCalendarSync(ADA, id);
    expect((await cal(`${events(id)}?syncToken=${seen.body.nextSyncToken}`)).status).toBe(410);
    const fresh = await cal(events(id));
    expect((await cal(`${events(id)}?syncToken=${fresh.body.nextSyncToken}`)).body.items).toEqual([]);
  });

  it('filters by eventTypes, q and extended properties', async () => {
    // Prepare: the special types live on the primary calendar.
    const made = async (body: Record<string, unknown>) => {
      const res = await cal(events('primary'), { body });
      if (res.status !== 200) throw new Error(`events.insert: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.id as string;
    };
    const focus = await made(
      berlin('2026-03-02T08:00:00', '2026-03-02T10:00:00', {
        summary: 'Focus',
        eventType: 'focusTime',
        focusTimeProperties: { autoDeclineMode: 'declineOnlyNewConflictingInvitations', chatStatus: 'doNotDisturb' },
      }),
    );
    const away = await made(
      berlin('2026-03-03T08:00:00', '2026-03-03T18:00:00', {
        eventType: 'outOfOffice',
        outOfOfficeProperties: { autoDeclineMode: 'declineAllConflictingInvitations', declineMessage: 'Away' },
      }),
    );
    const home = await made({
      start: { date: '2026-03-04' },
      end: { date: '2026-03-05' },
      eventType: 'workingLocation',
      workingLocationProperties: { type: 'homeOffice', homeOffice: {} },
    });
    const birthday = await made({
      summary: 'Ada’s birthday',
      start: { date: '2026-03-05' },
      end: { date: '2026-03-06' },
      recurrence: ['RRULE:FREQ=YEARLY'],
      eventType: 'birthday',
    });
    const standup = await made(
      berlin('2026-03-02T11:00:00', '2026-03-02T11:15:00', {
        summary: 'Daily standup',
        extendedProperties: { private: { source: 'crm' }, shared: { room: 'blue' } },
      }),
    );
    const flight = fake.calendarChangedOutside(ADA, 'primary', {
      summary: 'Flight LH 123',
      eventType: 'fromGmail',
      ...berlin('2026-03-06T07:00:00', '2026-03-06T09:00:00'),
    }).id;
    const march = `${events('primary')}?timeMin=2026-03-01T00:00:00Z&timeMax=2026-03-08T00:00:00Z`;
    // Act
    const list = async (query: string) => ids((await cal(`${march}&${query}`)).body.items);
    // Assess
    expect(await list('eventTypes=focusTime&eventTypes=outOfOffice')).toEqual([focus, away]);
    expect(await list('eventTypes=workingLocation')).toEqual([home]);
    expect(await list('eventTypes=birthday')).toEqual([birthday]);
    expect(await list('eventTypes=fromGmail')).toEqual([flight]);
    expect(await list('eventTypes=default')).toEqual([standup]);
    expect(await list('q=STANDUP')).toEqual([standup]);
    expect(await list('privateExtendedProperty=source%3Dcrm')).toEqual([standup]);
    expect(await list('sharedExtendedProperty=room%3Dblue&privateExtendedProperty=source%3Dcrm')).toEqual([standup]);
    expect(await list('sharedExtendedProperty=room%3Dred')).toEqual([]);
    const home_ = (await cal(`${events('primary')}/${home}`)).body;
    expect(home_).toMatchObject({ transparency: 'transparent', visibility: 'public', eventType: 'workingLocation' });

    const secondary = await newCalendar('No focus here');
    const refused = await cal(events(secondary), {
      body: berlin('2026-03-02T08:00:00', '2026-03-02T10:00:00', { eventType: 'focusTime' }),
    });
    expect(refused.status).toBe(400);
    const fromGmail = await cal(events('primary'), {
      body: berlin('2026-03-02T08:00:00', '2026-03-02T10:00:00', { eventType: 'fromGmail' }),
    });
    expect(fromGmail.status).toBe(400);
    const changeType = await cal(`${events('primary')}/${standup}`, {
      method: 'PATCH',
      body: { eventType: 'focusTime' },
    });
    expect(changeType.status).toBe(400);
  });

  it('creates a Meet conference from a createRequest at conferenceDataVersion=1', async () => {
    const id = await newCalendar('Meetings');
    const body = berlin('2026-02-12T10:00:00', '2026-02-12T11:00:00', {
      summary: 'Call',
      conferenceData: { createRequest: { requestId: 'req-1', conferenceSolutionKey: { type: 'hangoutsMeet' } } },
    });
    const ignored = await cal(events(id), { body });
    expect(ignored.body.conferenceData).toBeUndefined();

    const created = await cal(`${events(id)}?conferenceDataVersion=1&sendUpdates=none`, { body });
    expect(created.status).toBe(200);
    const conference = created.body.conferenceData;
    expect(conference.createRequest).toEqual({
      requestId: 'req-1',
      conferenceSolutionKey: { type: 'hangoutsMeet' },
      status: { statusCode: 'success' },
    });
    expect(conference.conferenceId).toMatch(/^[a-z]{3}-[a-z]{4}-[a-z]{3}$/);
    expect(conference.entryPoints).toEqual([
      {
        entryPointType: 'video',
        uri: `https://meet.google.com/${conference.conferenceId}`,
        label: `meet.google.com/${conference.conferenceId}`,
      },
    ]);
    expect(conference.conferenceSolution).toMatchObject({ key: { type: 'hangoutsMeet' }, name: 'Google Meet' });
    expect(created.body.hangoutLink).toBe(`https://meet.google.com/${conference.conferenceId}`);

    const path = `${events(id)}/${created.body.id}?conferenceDataVersion=1`;
    const kept = await cal(path, { method: 'PATCH', body: { summary: 'Call (renamed)' } });
    expect(kept.body.conferenceData.conferenceId).toBe(conference.conferenceId);
    const other = await cal(`${events(id)}?conferenceDataVersion=1`, {
      body: {
        ...body,
        conferenceData: { createRequest: { requestId: 'r2', conferenceSolutionKey: { type: 'addOn' } } },
      },
    });
    expect(other.status).toBe(400);
  });

  it('moves an event to another calendar', async () => {
    const from = await newCalendar('From');
    const to = await newCalendar('To');
    const event = (await cal(events(from), { body: berlin('2026-02-13T10:00:00', '2026-02-13T11:00:00') })).body;
    const moved = await cal(`${events(from)}/${event.id}/move?destination=${encodeURIComponent(to)}`, {
      method: 'POST',
    });
    expect(moved.body).toMatchObject({ id: event.id, organizer: { email: to } });
    expect((await cal(`${events(from)}/${event.id}`)).body.status).toBe('cancelled');
    expect((await cal(`${events(to)}/${event.id}`)).body.status).toBe('confirmed');
  });

  it('clears what a PATCH gives as null, and refuses null in an insert', async () => {
    // Prepare
    const id = await newCalendar('Cleared');
    const event = (
      await cal(events(id), {
        body: berlin('2026-02-16T10:00:00', '2026-02-16T11:00:00', {
          summary: 'Planning',
          location: 'Room 3',
          description: 'Agenda to follow',
          reminders: { useDefault: false, overrides: [{ method: 'popup', minutes: 5 }] },
          extendedProperties: { private: { app: 'switchboard', ticket: '7' } },
        }),
      })
    ).body;
    const path = `${events(id)}/${event.id}`;
    const calendarPath = `/calendars/${encodeURIComponent(id)}`;
    const entryPath = `/users/me/calendarList/${encodeURIComponent(id)}`;
    await cal(calendarPath, { method: 'PATCH', body: { description: 'Planning board', location: 'Berlin' } });
    await cal(entryPath, { method: 'PATCH', body: { summaryOverride: 'Mine' } });
    // Act
    const patched = await cal(path, {
      method: 'PATCH',
      body: { location: null, description: null, extendedProperties: { private: { ticket: null } } },
    });
    const calendarPatched = await cal(calendarPath, { method: 'PATCH', body: { location: null } });
    const entryPatched = await cal(entryPath, { method: 'PATCH', body: { summaryOverride: null } });
    const refused = await cal(events(id), {
      body: berlin('2026-02-17T10:00:00', '2026-02-17T11:00:00', { location: null }),
    });
    // Assess
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      summary: 'Planning',
      reminders: { useDefault: false, overrides: [{ method: 'popup', minutes: 5 }] },
      extendedProperties: { private: { app: 'switchboard' } },
    });
    expect(patched.body.location).toBeUndefined();
    expect(patched.body.description).toBeUndefined();
    expect((await cal(path)).body).toEqual(patched.body);
    expect(calendarPatched.body).toMatchObject({ summary: 'Cleared', description: 'Planning board' });
    expect(calendarPatched.body.location).toBeUndefined();
    expect(entryPatched.status).toBe(200);
    expect(entryPatched.body.summaryOverride).toBeUndefined();
    expect(refused.status).toBe(400);
    expect(fake.requestViolations).toEqual(['request of calendar.events.insert (Event): /location must be string']);
    fake.clearViolations();
  });

  it('reads a dateTime without offset in the zone its timeZone names, and refuses one with neither', async () => {
    // Prepare: a Berlin calendar; on 10 March 2026 New York is on daylight time (UTC-4), Berlin is not (UTC+1).
    const id = await newCalendar('Local times');
    const ny = (dateTime: string) => ({ dateTime, timeZone: 'America/New_York' });
    // Act
    const inserted = await cal(events(id), {
      body: { summary: 'Call', start: ny('2026-03-10T09:00:00'), end: ny('2026-03-10T09:30:00') },
    });
    const path = `${events(id)}/${inserted.body.id}`;
    const inUtc = await cal(`${path}?timeZone=UTC`);
    const listed = await cal(`${events(id)}?timeMin=2026-03-10T13:00:00Z&timeMax=2026-03-10T13:30:00Z`);
    const patched = await cal(path, {
      method: 'PATCH',
      body: { start: ny('2026-03-10T11:00:00'), end: ny('2026-03-10T12:00:00') },
    });
    // A weekly series keeps 09:00 in New York across its change to daylight time on 8 March.
    const series = await cal(events(id), {
      body: {
        start: ny('2026-03-02T09:00:00'),
        end: ny('2026-03-02T09:30:00'),
        recurrence: ['RRULE:FREQ=WEEKLY;COUNT=2'],
      },
    });
    const instances = await cal(`${events(id)}/${series.body.id}/instances?timeZone=UTC`);
    const refused = await cal(events(id), {
      body: { start: { dateTime: '2026-03-10T09:00:00' }, end: { dateTime: '2026-03-10T09:30:00' } },
    });
    // Assess
    expect(inserted.status).toBe(200);
    expect(inserted.body.start).toEqual({ dateTime: '2026-03-10T14:00:00+01:00', timeZone: 'America/New_York' });
    expect(inserted.body.end).toEqual({ dateTime: '2026-03-10T14:30:00+01:00', timeZone: 'America/New_York' });
    expect(inUtc.body.start.dateTime).toBe('2026-03-10T13:00:00Z');
    expect(ids(listed.body.items)).toEqual([inserted.body.id]);
    expect(patched.body.start).toEqual({ dateTime: '2026-03-10T16:00:00+01:00', timeZone: 'America/New_York' });
    expect(instances.body.items.map((e: { start: { dateTime: string } }) => e.start.dateTime)).toEqual([
      '2026-03-02T14:00:00Z',
      '2026-03-09T13:00:00Z',
    ]);
    expect(refused.status).toBe(400);
    expect(fake.requestViolations).toEqual([
      'request of calendar.events.insert (Event): /end/dateTime must match format "date-time"',
      'request of calendar.events.insert (Event): /start/dateTime must match format "date-time"',
    ]);
    fake.clearViolations();
    // A change past the Discovery check (another client of the fake) is refused as Google refuses it.
    expect(() =>
      fake.calendarChangedOutside(ADA, id, {
        start: { dateTime: '2026-03-10T09:00:00' },
        end: { dateTime: '2026-03-10T09:30:00' },
      }),
    ).toThrow('Missing time zone definition for start time.');
  });
});

describe('Free/busy and channels', () => {
  it('answers freebusy across two calendars and an unknown one', async () => {
    // Prepare: on Ada's primary two overlapping busy events, a free, a deleted and a declined one;
    // on Bob's an event and a daily series.
    const day = (time: string) => `2026-04-07T${time}`;
    const add = async (body: Record<string, unknown>, as = ADA) => (await cal(events('primary'), { body, as })).body;
    await add({ start: { dateTime: `${day('10:00:00')}+02:00` }, end: { dateTime: `${day('11:00:00')}+02:00` } });
    await add({ start: { dateTime: `${day('10:30:00')}+02:00` }, end: { dateTime: `${day('11:30:00')}+02:00` } });
    await add({
      start: { dateTime: `${day('12:00:00')}+02:00` },
      end: { dateTime: `${day('13:00:00')}+02:00` },
      transparency: 'transparent',
    });
    const gone = await add({
      start: { dateTime: `${day('14:00:00')}+02:00` },
      end: { dateTime: `${day('15:00:00')}+02:00` },
    });
    await cal(`${events('primary')}/${gone.id}`, { method: 'DELETE' });
    await add({
      start: { dateTime: `${day('17:00:00')}+02:00` },
      end: { dateTime: `${day('18:00:00')}+02:00` },
      attendees: [{ email: ADA, responseStatus: 'declined' }, { email: BOB }],
    });
    await add({ start: { dateTime: `${day('15:00:00')}Z` }, end: { dateTime: `${day('16:00:00')}Z` } }, BOB);
    const daily = ['RRULE:FREQ=DAILY;COUNT=3'];
    await add(
      {
        start: { dateTime: '2026-04-06T20:00:00Z', timeZone: 'UTC' },
        end: { dateTime: '2026-04-06T20:30:00Z', timeZone: 'UTC' },
        recurrence: daily,
      },
      BOB,
    );
    // Act
    const res = await cal('/freeBusy', {
      body: {
        timeMin: `${day('00:00:00')}Z`,
        timeMax: `${day('23:59:59')}Z`,
        items: [{ id: 'primary' }, { id: BOB }, { id: 'nobody@example.test' }],
      },
    });
    // Assess
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      kind: 'calendar#freeBusy',
      timeMin: '2026-04-07T00:00:00Z',
      timeMax: '2026-04-07T23:59:59Z',
      calendars: {
        primary: { busy: [{ start: '2026-04-07T08:00:00Z', end: '2026-04-07T09:30:00Z' }] },
        [BOB]: {
          busy: [
            { start: '2026-04-07T15:00:00Z', end: '2026-04-07T16:00:00Z' },
            { start: '2026-04-07T20:00:00Z', end: '2026-04-07T20:30:00Z' },
          ],
        },
        'nobody@example.test': { busy: [], errors: [{ domain: 'global', reason: 'notFound' }] },
      },
    });
    const zoned = await cal('/freeBusy', {
      body: {
        timeMin: `${day('00:00:00')}Z`,
        timeMax: `${day('12:00:00')}Z`,
        timeZone: 'Europe/Berlin',
        items: [{ id: ADA }],
      },
    });
    expect(zoned.body.calendars[ADA].busy).toEqual([
      { start: '2026-04-07T10:00:00+02:00', end: '2026-04-07T11:30:00+02:00' },
    ]);
    const empty = await cal('/freeBusy', {
      body: { timeMin: `${day('12:00:00')}Z`, timeMax: `${day('12:00:00')}Z`, items: [] },
    });
    expect(empty.status).toBe(400);
  });

  it('records watch channels and stops them', async () => {
    const res = await cal(`${events('primary')}/watch`, {
      body: { id: 'channel-1', type: 'web_hook', address: 'https://hooks.example.test/google', token: 'secret-1' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      kind: 'api#channel',
      id: 'channel-1',
      resourceId: expect.any(String),
      resourceUri: `https://www.googleapis.com/calendar/v3/calendars/${encodeURIComponent(ADA)}/events?alt=json`,
      token: 'secret-1',
      expiration: String(Number(res.body.expiration)),
    });
    expect(Number(res.body.expiration)).toBeGreaterThan(clock + 6 * DAY);
    expect(fake.channelsOf(ADA)).toEqual([
      expect.objectContaining({
        id: 'channel-1',
        resourceId: res.body.resourceId,
        calendarId: ADA,
        address: 'https://hooks.example.test/google',
        token: 'secret-1',
      }),
    ]);
    expect(fake.channelsOf(BOB)).toEqual([]);
    const local = await cal(`${events('primary')}/watch`, {
      body: { id: 'channel-2', type: 'web_hook', address: 'http://127.0.0.1:9/hook', params: { ttl: '60' } },
    });
    expect(Number(local.body.expiration)).toBeLessThanOrEqual(clock + 61_000);
    const plain = await cal(`${events('primary')}/watch`, {
      body: { id: 'channel-3', type: 'web_hook', address: 'http://hooks.example.test/google' },
    });
    expect(plain.status).toBe(400);
    const again = await cal(`${events('primary')}/watch`, {
      body: { id: 'channel-1', type: 'web_hook', address: 'https://hooks.example.test/google' },
    });
    expect(again.status).toBe(400);

    const stop = { id: 'channel-1', resourceId: res.body.resourceId };
    expect((await cal('/channels/stop', { body: stop })).status).toBe(204);
    expect(fake.channelsOf(ADA).map((c) => c.id)).toEqual(['channel-2']);
    expect((await cal('/channels/stop', { body: stop })).status).toBe(404);
  });

  it('answers the colour palettes and injected Calendar faults', async () => {
    const colors = await cal('/colors');
    expect(colors.body.event['11']).toEqual({ background: '#dc2127', foreground: '#1d1d1d' });
    expect(Object.keys(colors.body.calendar)).toHaveLength(24);
    fake.inject({ method: 'calendar.events.list', status: 503 });
    expect((await cal(events('primary'))).status).toBe(503);
    expect((await cal(events('primary'))).status).toBe(200);
  });
});

describe('People', () => {
  const ada = {
    names: [{ givenName: 'Ada', familyName: 'Lovelace' }],
    emailAddresses: [{ value: 'ada@lovelace.test', type: 'home' }],
    phoneNumbers: [{ value: '+44 20 7946 0000', type: 'mobile' }],
    addresses: [{ streetAddress: '12 St James’s Square', city: 'London', postalCode: 'SW1Y 4JH', country: 'UK' }],
    organizations: [{ name: 'Analytical Engines', title: 'Programmer' }],
    birthdays: [{ date: { year: 1815, month: 12, day: 10 } }],
    biographies: [{ value: 'First programmer' }],
    urls: [{ value: 'https://ada.test', type: 'homePage' }],
  };

  it('creates, lists, gets, updates with its etag and deletes a contact', async () => {
    // Act
    const created = await people('/people:createContact', { body: ada });
    const name = created.body.resourceName as string;
    const list = await people('/people/me/connections?personFields=names,emailAddresses');
    const got = await people(`/${name}?personFields=names,phoneNumbers,addresses,metadata,memberships,biographies`);
    // Assess
    expect(created.status).toBe(200);
    expect(name).toMatch(/^people\/c\d+$/);
    expect(created.body.names).toEqual([
      {
        metadata: { primary: true, source: { type: 'CONTACT', id: expect.stringMatching(/^[0-9a-f]+$/) } },
        givenName: 'Ada',
        familyName: 'Lovelace',
        displayName: 'Ada Lovelace',
        displayNameLastFirst: 'Lovelace, Ada',
        unstructuredName: 'Ada Lovelace',
      },
    ]);
    expect(created.body.emailAddresses[0]).toMatchObject({ value: 'ada@lovelace.test', formattedType: 'Home' });
    expect(list.body.connections).toEqual([
      { resourceName: name, etag: created.body.etag, names: expect.any(Array), emailAddresses: expect.any(Array) },
    ]);
    expect(list.body.totalItems).toBe(1);
    expect(got.body.phoneNumbers[0]).toMatchObject({ canonicalForm: '+442079460000', formattedType: 'Mobile' });
    expect(got.body.addresses[0].formattedValue).toBe('12 St James’s Square\nLondon, SW1Y 4JH\nUK');
    expect(got.body.biographies[0]).toMatchObject({ value: 'First programmer', contentType: 'TEXT_PLAIN' });
    expect(got.body.metadata.sources[0]).toMatchObject({ type: 'CONTACT', etag: expect.any(String) });
    expect(got.body.memberships).toEqual([
      expect.objectContaining({
        contactGroupMembership: { contactGroupId: 'myContacts', contactGroupResourceName: 'contactGroups/myContacts' },
      }),
    ]);
    expect(got.body.emailAddresses).toBeUndefined();

    const update = `/${name}:updateContact?updatePersonFields=emailAddresses,urls&personFields=emailAddresses,urls`;
    const updated = await people(update, {
      method: 'PATCH',
      body: { etag: created.body.etag, emailAddresses: [{ value: 'ada@engines.test', type: 'work' }] },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.emailAddresses).toEqual([expect.objectContaining({ value: 'ada@engines.test' })]);
    expect(updated.body.urls).toBeUndefined();
    expect(updated.body.etag).not.toBe(created.body.etag);
    const stale = await people(update, {
      method: 'PATCH',
      body: { etag: created.body.etag, emailAddresses: [{ value: 'x@example.test' }] },
    });
    expect(stale.status).toBe(400);
    expect(stale.body.error).toMatchObject({
      status: 'FAILED_PRECONDITION',
      errors: [{ reason: 'failedPrecondition' }],
    });
    const bySource = await people(update, {
      method: 'PATCH',
      body: {
        metadata: { sources: [{ type: 'CONTACT', etag: got.body.metadata.sources[0].etag }] },
        emailAddresses: [],
      },
    });
    expect(bySource.status).toBe(400);
    const noMask = await people(`/${name}:updateContact`, { method: 'PATCH', body: { etag: updated.body.etag } });
    expect(noMask.status).toBe(400);
    const twoNames = await people(`/${name}:updateContact?updatePersonFields=names`, {
      method: 'PATCH',
      body: { etag: updated.body.etag, names: [{ givenName: 'A' }, { givenName: 'B' }] },
    });
    expect(twoNames.status).toBe(400);

    expect((await people(`/${name}:deleteContact`, { method: 'DELETE' })).body).toEqual({});
    expect((await people(`/${name}?personFields=names`)).status).toBe(404);
    expect((await people('/people/c123?personFields=names')).status).toBe(404);
    const batch = await people(
      `/people:batchGet?personFields=emailAddresses&resourceNames=people/me&resourceNames=${name}`,
    );
    expect(batch.body.responses).toEqual([
      expect.objectContaining({
        httpStatusCode: 200,
        person: expect.objectContaining({ emailAddresses: [expect.objectContaining({ value: ADA })] }),
      }),
      { requestedResourceName: name, httpStatusCode: 404, status: { code: 5, message: expect.any(String) } },
    ]);
  });

  it('answers 400 when personFields is missing, as Google does', async () => {
    const list = await people('/people/me/connections');
    expect(list.status).toBe(400);
    expect(list.body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
    expect(list.body.error.message).toMatch(/^personFields mask is required/);
    expect((await people('/people/me')).status).toBe(400);
    expect((await people('/people/me/connections?personFields=names,shoeSize')).status).toBe(400);
    const legacy = await people('/people/me?requestMask.includeField=person.emailAddresses');
    expect(legacy.body.emailAddresses[0].value).toBe(ADA);
  });

  it('syncs contacts: changes and deletions since a token; an expired token is a 400 EXPIRED_SYNC_TOKEN', async () => {
    // Prepare
    const make = async (givenName: string) =>
      (await people('/people:createContact', { body: { names: [{ givenName }] } })).body as {
        resourceName: string;
        etag: string;
      };
    const kept = await make('Kept');
    const changed = await make('Changed');
    const removed = await make('Removed');
    const full = await people('/people/me/connections?personFields=names&requestSyncToken=true&pageSize=2');
    const rest = await people(
      `/people/me/connections?personFields=names&requestSyncToken=true&pageSize=2&pageToken=${full.body.nextPageToken}`,
    );
    // Act
    await people(`/${changed.resourceName}:updateContact?updatePersonFields=names`, {
      method: 'PATCH',
      body: { etag: changed.etag, names: [{ givenName: 'Changed', familyName: 'Again' }] },
    });
    await people(`/${removed.resourceName}:deleteContact`, { method: 'DELETE' });
    const added = await make('Added');
    const sync = await people(`/people/me/connections?personFields=names&syncToken=${rest.body.nextSyncToken}`);
    // Assess
    expect(full.body.connections).toHaveLength(2);
    expect(full.body.nextSyncToken).toBeUndefined();
    expect(rest.body.connections).toHaveLength(1);
    expect(
      [...full.body.connections, ...rest.body.connections].map((p: { resourceName: string }) => p.resourceName),
    ).toEqual([kept.resourceName, changed.resourceName, removed.resourceName]);
    expect(sync.status).toBe(200);
    expect(sync.body.connections).toEqual([
      expect.objectContaining({
        resourceName: changed.resourceName,
        names: [expect.objectContaining({ familyName: 'Again' })],
      }),
      {
        resourceName: removed.resourceName,
        etag: expect.any(String),
        metadata: { sources: [{ type: 'CONTACT', id: expect.any(String) }], deleted: true },
      },
      expect.objectContaining({ resourceName: added.resourceName }),
    ]);
    const again = await people(`/people/me/connections?personFields=names&syncToken=${sync.body.nextSyncToken}`);
    expect(again.body.connections).toBeUndefined();
    expect(again.body.nextSyncToken).toEqual(expect.any(String));

    // Sync tokens expire 7 days after the full sync, and when the fake is told to.
    clock += 8 * DAY;
    const expired = await people(`/people/me/connections?personFields=names&syncToken=${again.body.nextSyncToken}`);
    expect(expired.status).toBe(400);
    expect(expired.body.error).toMatchObject({
      code: 400,
      status: 'FAILED_PRECONDITION',
      message: 'Sync token is expired. Clear local cache and retry call without the sync token.',
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'EXPIRED_SYNC_TOKEN' }],
    });
    const renewed = await people('/people/me/connections?personFields=names&requestSyncToken=true');
    expect(
      (await people(`/people/me/connections?personFields=names&syncToken=${renewed.body.nextSyncToken}`)).status,
    ).toBe(200);
    fake.expireContactsSync(ADA);
    expect(
      (await people(`/people/me/connections?personFields=names&syncToken=${renewed.body.nextSyncToken}`)).status,
    ).toBe(400);
  });

  it('manages contact groups and their members', async () => {
    // Prepare
    const contact = (await people('/people:createContact', { body: { names: [{ givenName: 'Grace' }] } })).body;
    const groupsBefore = await people('/contactGroups');
    // Act
    const created = await people('/contactGroups', { body: { contactGroup: { name: 'Climbing' } } });
    const group = created.body.resourceName as string;
    const modified = await people(`/${group}/members:modify`, {
      body: { resourceNamesToAdd: [contact.resourceName, 'people/c1'] },
    });
    const got = await people(`/${group}?maxMembers=10`);
    const member = await people(`/${contact.resourceName}?personFields=memberships`);
    // Assess
    expect(groupsBefore.body.contactGroups.map((g: { resourceName: string }) => g.resourceName)).toEqual(
      expect.arrayContaining(['contactGroups/myContacts', 'contactGroups/starred', 'contactGroups/family']),
    );
    expect(groupsBefore.body.contactGroups[0]).toMatchObject({
      groupType: 'SYSTEM_CONTACT_GROUP',
      name: 'myContacts',
      formattedName: 'My Contacts',
      memberCount: expect.any(Number),
    });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      name: 'Climbing',
      formattedName: 'Climbing',
      groupType: 'USER_CONTACT_GROUP',
    });
    expect(group).toMatch(/^contactGroups\/[0-9a-f]+$/);
    expect(modified.body).toEqual({ notFoundResourceNames: ['people/c1'] });
    expect(got.body).toMatchObject({ memberCount: 1, memberResourceNames: [contact.resourceName] });
    expect(member.body.memberships.map((m: any) => m.contactGroupMembership.contactGroupId)).toEqual([
      'myContacts',
      group.split('/')[1],
    ]);
    expect((await people('/contactGroups', { body: { contactGroup: { name: 'climbing' } } })).status).toBe(409);
    expect(
      (await people('/contactGroups/family/members:modify', { body: { resourceNamesToAdd: [contact.resourceName] } }))
        .status,
    ).toBe(400);

    const renamed = await people(`/${group}`, {
      method: 'PUT',
      body: { contactGroup: { name: 'Bouldering', etag: created.body.etag } },
    });
    expect(renamed.status).toBe(400);
    const current = (await people(`/${group}`)).body;
    const renamedNow = await people(`/${group}`, {
      method: 'PUT',
      body: { contactGroup: { name: 'Bouldering', etag: current.etag } },
    });
    expect(renamedNow.body.name).toBe('Bouldering');

    const sync = (await people('/contactGroups')).body.nextSyncToken;
    const removeLast = await people('/contactGroups/myContacts/members:modify', {
      body: { resourceNamesToRemove: [contact.resourceName] },
    });
    expect(removeLast.body).toEqual({});
    const onlyLeft = await people(`/${group}/members:modify`, {
      body: { resourceNamesToRemove: [contact.resourceName] },
    });
    expect(onlyLeft.body).toEqual({ canNotRemoveLastContactGroupResourceNames: [contact.resourceName] });
    expect((await people(`/${group}?deleteContacts=true`, { method: 'DELETE' })).body).toEqual({});
    expect((await people(`/${group}`)).status).toBe(404);
    expect((await people(`/${contact.resourceName}?personFields=names`)).status).toBe(404);
    const groupChanges = await people(`/contactGroups?syncToken=${sync}`);
    expect(groupChanges.body.contactGroups).toContainEqual({
      resourceName: group,
      etag: expect.any(String),
      metadata: { updateTime: expect.any(String), deleted: true },
    });
    expect((await people('/contactGroups/myContacts', { method: 'DELETE' })).status).toBe(400);
  });
});

describe('Checks of requests and answers', () => {
  it('refuses a Calendar and a People request their documents do not allow', async () => {
    expect((await cal(`${events('primary')}?colour=red`)).status).toBe(400);
    expect((await people('/people:createContact', { body: { names: [{ nickname: 'A' }] } })).status).toBe(400);
    expect(fake.requestViolations).toEqual([
      "calendar.events.list: unknown query parameter 'colour'",
      "request of people.people.createContact (Person): /names/0 has property 'nickname', which the schema does not declare",
    ]);
    fake.clearViolations();
  });

  it('catches a deliberately wrong answer of a Calendar and a People method', async () => {
    // Prepare
    fake.inject({
      method: 'calendar.calendarList.get',
      mangleAnswer: (body) => ({ ...(body as object), colour: 'red' }),
    });
    fake.inject({
      method: 'people.contactGroups.get',
      mangleAnswer: (body) => ({ ...(body as object), memberCount: '1' }),
    });
    // Act
    const entry = await cal('/users/me/calendarList/primary');
    const group = await people('/contactGroups/myContacts');
    // Assess
    expect(entry.status).toBe(500);
    expect(group.status).toBe(500);
    expect(fake.responseViolations).toEqual([
      "response of calendar.calendarList.get (CalendarListEntry): / has property 'colour', which the schema does not declare",
      'response of people.contactGroups.get (ContactGroup): /memberCount must be integer',
    ]);
    fake.clearViolations();
    expect((await cal('/users/me/calendarList/primary')).status).toBe(200);
  });
});

describe('The whole run', () => {
  it('sent no request that broke calendar-v3.json or people-v1.json and got no answer that did', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});
