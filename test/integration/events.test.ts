import { DateTime } from 'luxon';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeAgentGrant } from '../support/factories';
import { useApi } from '../support/harness';
import { createTestQueue, drainQueue } from '../support/queues';

/** Events of Agent Account calendars over HTTP: CRUD, every list filter, recurrence, errors, iCalendar export. */
let fanout: string;
beforeAll(async () => {
  fanout = await createTestQueue('events-fanout');
  process.env.FANOUT_QUEUE_URL = fanout;
});
const { api, otherApi } = useApi();

const at = (iso: string, zone = 'UTC') => Math.floor(DateTime.fromISO(iso, { zone }).toSeconds());
const ids = (response: { body: { data: { id: string }[] } }) => response.body.data.map((e) => e.id);

async function event(grantId: string, body: object, calendar = 'primary') {
  const response = await api.post(
    `/v3/grants/${grantId}/events?calendar_id=${calendar}&notify_participants=false`,
    body,
  );
  expect(response.status, response.text).toBe(201);
  return response.body.data;
}

describe('events', () => {
  it('creates, reads, updates and deletes an event, with event.* notifications and a JSON body on DELETE', async () => {
    const agent = await makeAgentGrant(api);
    await drainQueue(fanout, 10, 300);
    const when = {
      start_time: at('2026-12-01T10:00', 'Europe/Berlin'),
      end_time: at('2026-12-01T11:00', 'Europe/Berlin'),
      start_timezone: 'europe/berlin',
    };
    const created = await event(agent.id, {
      title: 'Planning',
      description: 'Quarterly plan',
      location: 'Room 4',
      when,
      participants: [{ email: 'Ann@Example.com', name: 'Ann' }],
      conferencing: { provider: 'Zoom Meeting', details: { url: 'https://zoom.example/j/1', meeting_code: '1' } },
      reminders: { use_default: false, overrides: [{ reminder_minutes: 10, reminder_method: 'email' }] },
      metadata: { key1: 'plan' },
    });
    expect(created).toMatchObject({
      object: 'event',
      grant_id: agent.id,
      title: 'Planning',
      description: 'Quarterly plan',
      location: 'Room 4',
      busy: true,
      status: 'confirmed',
      read_only: false,
      when: {
        object: 'timespan',
        start_time: when.start_time,
        end_time: when.end_time,
        start_timezone: 'Europe/Berlin',
        end_timezone: 'Europe/Berlin',
      },
      participants: [{ email: 'ann@example.com', name: 'Ann', status: 'noreply' }],
      organizer: { email: agent.email },
      conferencing: { provider: 'Zoom Meeting', details: { url: 'https://zoom.example/j/1' } },
      reminders: { use_default: false, overrides: [{ reminder_minutes: 10, reminder_method: 'email' }] },
      metadata: { key1: 'plan' },
    });
    expect(created.id).toMatch(/^evt_/);
    expect(created.ical_uid).toContain(created.id);
    const calendar = (await api.get(`/v3/grants/${agent.id}/calendars/primary`)).body.data;
    expect(created.calendar_id).toBe(calendar.id);

    const fetched = await api.get(`/v3/grants/${agent.id}/events/${created.id}?calendar_id=primary`);
    expect(fetched.body.data).toEqual(created);
    const updated = await api.put(
      `/v3/grants/${agent.id}/events/${created.id}?calendar_id=${calendar.id}&notify_participants=false`,
      { title: 'Planning 2', location: null },
    );
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body.data).toMatchObject({ title: 'Planning 2', location: null, description: 'Quarterly plan' });
    const removed = await api.delete(
      `/v3/grants/${agent.id}/events/${created.id}?calendar_id=primary&notify_participants=false`,
    );
    expect(removed.status).toBe(200);
    expect(removed.body.request_id).toBeTruthy();
    expect(removed.headers.get('x-request-id')).toBe(removed.body.request_id);
    expect((await api.get(`/v3/grants/${agent.id}/events/${created.id}?calendar_id=primary`)).status).toBe(404);
    const notes = await drainQueue(fanout, 3, 10_000);
    expect(notes.map((n) => [n.body.type, n.body.data.object.id])).toEqual([
      ['event.created', created.id],
      ['event.updated', created.id],
      ['event.deleted', created.id],
    ]);
  });

  it('stores all-day events as datespan (end exclusive) and date, read in the calendar zone', async () => {
    const agent = await makeAgentGrant(api);
    const cal = (await api.post(`/v3/grants/${agent.id}/calendars`, { name: 'NY', timezone: 'America/New_York' })).body
      .data;
    const span = await event(
      agent.id,
      { title: 'Offsite', when: { start_date: '2026-12-07', end_date: '2026-12-09' } },
      cal.id,
    );
    expect(span.when).toEqual({ object: 'datespan', start_date: '2026-12-07', end_date: '2026-12-09' });
    const day = await event(agent.id, { title: 'Holiday', when: { object: 'date', date: '2026-12-25' } }, cal.id);
    expect(day.when).toEqual({ object: 'date', date: '2026-12-25' });
    // Dec 7 00:00 to Dec 9 00:00 in New York is contained in [Dec 7 05:00Z, Dec 9 05:00Z].
    const window = await api.get(
      `/v3/grants/${agent.id}/events?calendar_id=${cal.id}&start=${at('2026-12-07T00:00', 'America/New_York')}&end=${at('2026-12-09T00:00', 'America/New_York')}`,
    );
    expect(ids(window)).toEqual([span.id]);
    const shifted = await api.get(
      `/v3/grants/${agent.id}/events?calendar_id=${cal.id}&start=${at('2026-12-07T00:00')}&end=${at('2026-12-09T00:00')}`,
    );
    expect(ids(shifted)).toEqual([]);
  });

  it.each([
    [{ when: { start_time: 100, end_time: 200, start_timezone: 'Mars/Olympus' } }, 'IANA time zone'],
    [{ when: { start_time: 200, end_time: 100 } }, "'when.end_time' (100) is before 'when.start_time' (200)"],
    [{ when: { object: 'timeframe', start_time: 1, end_time: 2 } }, 'when.object'],
    [{ when: { object: 'datespan', start_date: '2026-12-09', end_date: '2026-12-09' } }, 'day after the last day'],
    [{ when: { object: 'date', date: '2026-02-30' } }, 'not a calendar date'],
    [{ when: { object: 'date', date: '2026-02-03', start_time: 5 } }, "remove 'when.start_time'"],
    [{ when: { start_time: 100, end_time: 200 }, recurrence: ['RRULE:FREQ=FORTNIGHTLY'] }, 'RRULE'],
    [
      { when: { start_time: 100, end_time: 200 }, recurrence: ['RRULE:FREQ=MONTHLY;BYDAY=1MO,3WE'] },
      'several weekday indices',
    ],
    [{ when: { start_time: 100, end_time: 200 }, recurrence: ['EXRULE:FREQ=DAILY'] }, 'EXRULE'],
    [
      { when: { start_time: 100, end_time: 200 }, conferencing: { provider: 'Zoom Meeting', autocreate: {} } },
      'no conferencing provider is configured',
    ],
    [
      {
        when: { start_time: 100, end_time: 200 },
        metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])),
      },
      'metadata',
    ],
    [{ title: 'no when' }, 'when'],
  ])('refuses %j with 400 naming the problem', async (body, fragment) => {
    const agent = await makeAgentGrant(api);
    const response = await api.post(`/v3/grants/${agent.id}/events?calendar_id=primary`, body);
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.message).toContain(fragment);
  });

  it('filters lists by every parameter, and pages through them', async () => {
    const agent = await makeAgentGrant(api);
    const base = at('2026-12-14T09:00');
    const a = await event(agent.id, {
      title: 'Budget Review',
      description: 'Numbers for Q1',
      location: 'Berlin HQ',
      when: { start_time: base, end_time: base + 3600 },
      participants: [{ email: 'cfo@example.com' }],
      metadata: { key2: 'fin' },
    });
    const b = await event(agent.id, {
      title: 'Lunch',
      when: { start_time: base + 7200, end_time: base + 9000 },
      busy: false,
      participants: [{ email: 'bob@example.com' }],
    });
    const c = await event(agent.id, {
      title: 'Maybe standup',
      status: 'maybe',
      when: { start_time: base + 86400, end_time: base + 88200 },
    });
    const d = await event(agent.id, {
      title: 'Dropped',
      status: 'cancelled',
      when: { start_time: base + 3600, end_time: base + 7200 },
    });
    const list = (q: string) => api.get(`/v3/grants/${agent.id}/events?calendar_id=primary&${q}`);

    expect(ids(await list('title=budget'))).toEqual([a.id]);
    expect(ids(await list('description=NUMBERS'))).toEqual([a.id]);
    expect(ids(await list('location=berlin'))).toEqual([a.id]);
    expect(ids(await list(`ical_uid=${encodeURIComponent(b.ical_uid)}`))).toEqual([b.id]);
    expect(ids(await list('attendees=bob@example.com,nobody@example.com'))).toEqual([b.id]);
    expect(ids(await list('busy=false'))).toEqual([b.id]);
    expect(ids(await list('busy=true'))).toEqual([a.id, c.id]);
    expect(ids(await list('busy=true&tentative_as_busy=false'))).toEqual([a.id]);
    expect(ids(await list('show_cancelled=true'))).toEqual([a.id, b.id, c.id, d.id]);
    expect(ids(await list(''))).toEqual([a.id, b.id, c.id]);
    expect(ids(await list('metadata_pair=key2:fin'))).toEqual([a.id]);
    expect(ids(await list(`start=${base}&end=${base + 9000}`))).toEqual([a.id, b.id]);
    expect(ids(await list(`start=${base + 1}&end=${base + 90000}`))).toEqual([b.id, c.id]);
    expect(ids(await list(`start=${base + 7200}`))).toEqual([b.id, c.id]);
    expect(ids(await list(`end=${base + 3600}`))).toEqual([a.id]);
    expect(ids(await list(`updated_after=${a.updated_at - 1}&updated_before=${a.updated_at + 3600}`))).toEqual([
      a.id,
      b.id,
      c.id,
    ]);
    expect(ids(await list(`updated_before=${a.updated_at}`))).toEqual([]);
    expect((await list('select=id,title')).body.data[0]).toEqual({ id: a.id, title: 'Budget Review' });

    const first = await list('limit=2');
    expect(ids(first)).toEqual([a.id, b.id]);
    expect(ids(await list(`limit=2&page_token=${first.body.next_cursor}`))).toEqual([c.id]);
    const w1 = await list(`limit=1&start=${base}&end=${base + 90000}`);
    expect(ids(w1)).toEqual([a.id]);
    expect(ids(await list(`limit=1&start=${base}&end=${base + 90000}&page_token=${w1.body.next_cursor}`))).toEqual([
      b.id,
    ]);

    for (const [q, fragment] of [
      ['metadata_pair=key2:fin&title=x', 'cannot be combined'],
      ['event_type=default', 'provider A'],
      [`start=${base + 10}&end=${base}`, 'before'],
      ['expand_recurring=true', "needs both 'start' and 'end'"],
      ['page_token=forged', 'page_token'],
    ]) {
      const response = await list(q!);
      expect(response.status, q).toBe(400);
      expect(response.body.error.message).toContain(fragment);
    }
    expect((await api.get(`/v3/grants/${agent.id}/events`)).status).toBe(400);
  });

  it('expands a weekly series across the DST change in its zone, with stable occurrence IDs', async () => {
    const agent = await makeAgentGrant(api);
    const start = at('2026-10-26T09:00', 'America/New_York');
    const series = await event(agent.id, {
      title: 'Standup',
      when: { start_time: start, end_time: start + 1800, start_timezone: 'America/New_York' },
      recurrence: ['RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=4', 'EXDATE;TZID=America/New_York:20261109T090000'],
    });
    expect(series.recurrence).toEqual([
      'RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=4',
      'EXDATE;TZID=America/New_York:20261109T090000',
    ]);
    const window = `start=${at('2026-10-01T00:00')}&end=${at('2026-12-31T00:00')}`;
    const expanded = await api.get(`/v3/grants/${agent.id}/events?calendar_id=primary&expand_recurring=true&${window}`);
    expect(expanded.status, expanded.text).toBe(200);
    const instances = expanded.body.data as {
      id: string;
      master_event_id: string;
      when: { start_time: number };
      title: string;
    }[];
    // Oct 26 (EDT, 13:00Z), Nov 2 (EST, 14:00Z), Nov 9 excluded, Nov 16.
    expect(instances.map((i) => i.when.start_time)).toEqual([
      at('2026-10-26T09:00', 'America/New_York'),
      at('2026-11-02T09:00', 'America/New_York'),
      at('2026-11-16T09:00', 'America/New_York'),
    ]);
    expect(instances.map((i) => new Date(i.when.start_time * 1000).getUTCHours())).toEqual([13, 14, 14]);
    expect(instances.every((i) => i.master_event_id === series.id && i.title === 'Standup')).toBe(true);
    expect(instances[1]!.id).toBe(`${series.id}_20261102T140000Z`);
    // Unexpanded: the series once, as its master.
    expect(ids(await api.get(`/v3/grants/${agent.id}/events?calendar_id=primary&${window}`))).toEqual([series.id]);
    const again = await api.get(`/v3/grants/${agent.id}/events?calendar_id=primary&expand_recurring=true&${window}`);
    expect(ids(again)).toEqual(instances.map((i) => i.id));
    const one = await api.get(`/v3/grants/${agent.id}/events/${instances[1]!.id}?calendar_id=primary`);
    expect(one.body.data).toMatchObject({
      id: instances[1]!.id,
      master_event_id: series.id,
      original_start_time: instances[1]!.when.start_time,
    });
    expect(
      (await api.get(`/v3/grants/${agent.id}/events/${series.id}_20261109T140000Z?calendar_id=primary`)).status,
    ).toBe(404);
    expect(
      (await api.get(`/v3/grants/${agent.id}/events/${series.id}_20261103T140000Z?calendar_id=primary`)).status,
    ).toBe(404);
  });

  it('overrides one occurrence, cancels another for good, and drops overrides when the pattern changes', async () => {
    const agent = await makeAgentGrant(api);
    const start = at('2026-12-07T15:00');
    const series = await event(agent.id, {
      title: 'Weekly',
      when: { start_time: start, end_time: start + 3600 },
      recurrence: ['RRULE:FREQ=WEEKLY;COUNT=5'],
    });
    const window = `start=${start - 86400}&end=${start + 40 * 86400}`;
    const expand = async (extra = '') =>
      (await api.get(`/v3/grants/${agent.id}/events?calendar_id=primary&expand_recurring=true&${window}${extra}`)).body
        .data as {
        id: string;
        title: string;
        status: string;
        when: { start_time: number };
      }[];
    const occurrences = await expand();
    expect(occurrences).toHaveLength(5);
    const [, second, third, fourth] = occurrences;

    const moved = await api.put(
      `/v3/grants/${agent.id}/events/${second!.id}?calendar_id=primary&notify_participants=false`,
      {
        title: 'Moved',
        when: { start_time: second!.when.start_time + 86400, end_time: second!.when.start_time + 86400 + 3600 },
      },
    );
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.data).toMatchObject({
      id: second!.id,
      title: 'Moved',
      master_event_id: series.id,
      original_start_time: second!.when.start_time,
    });
    // An occurrence cannot move to the day of the previous one (spec, recurrence restriction 1).
    const tooEarly = await api.put(`/v3/grants/${agent.id}/events/${third!.id}?calendar_id=primary`, {
      when: { start_time: second!.when.start_time, end_time: second!.when.start_time + 60 },
    });
    expect(tooEarly.status).toBe(400);
    expect(tooEarly.body.error.message).toContain('previous occurrence');
    expect(
      (await api.delete(`/v3/grants/${agent.id}/events/${fourth!.id}?calendar_id=primary&notify_participants=false`))
        .status,
    ).toBe(200);

    const after = await expand();
    expect(after.map((o) => o.title)).toEqual(['Weekly', 'Moved', 'Weekly', 'Weekly']);
    expect(after[1]!.when.start_time).toBe(second!.when.start_time + 86400);
    expect((await expand('&show_cancelled=true')).find((o) => o.id === fourth!.id)?.status).toBe('cancelled');
    const restore = await api.put(`/v3/grants/${agent.id}/events/${fourth!.id}?calendar_id=primary`, {
      status: 'confirmed',
    });
    expect(restore.status).toBe(400);
    expect(restore.body.error.message).toContain('cannot be restored');
    expect(
      ids(
        await api.get(
          `/v3/grants/${agent.id}/events?calendar_id=primary&expand_recurring=true&${window}&master_event_id=${series.id}`,
        ),
      ),
    ).toHaveLength(4);
    expect(
      ids(
        await api.get(
          `/v3/grants/${agent.id}/events?calendar_id=primary&master_event_id=${series.id}&show_cancelled=true`,
        ),
      ),
    ).toEqual([second!.id, fourth!.id]);

    // A new pattern: the overrides of the old one are gone (spec, recurrence restriction 2).
    const repatterned = await api.put(
      `/v3/grants/${agent.id}/events/${series.id}?calendar_id=primary&notify_participants=false`,
      { recurrence: ['RRULE:FREQ=WEEKLY;COUNT=3'] },
    );
    expect(repatterned.status, repatterned.text).toBe(200);
    const fresh = await expand('&show_cancelled=true');
    expect(fresh.map((o) => [o.title, o.status])).toEqual([
      ['Weekly', 'confirmed'],
      ['Weekly', 'confirmed'],
      ['Weekly', 'confirmed'],
    ]);
    expect(
      ids(await api.get(`/v3/grants/${agent.id}/events?calendar_id=primary&master_event_id=${series.id}`)),
    ).toEqual([]);
    // Deleting the series removes it whole.
    expect((await api.delete(`/v3/grants/${agent.id}/events/${series.id}?calendar_id=primary`)).status).toBe(200);
    expect(await expand('&show_cancelled=true')).toEqual([]);
  });

  it('exports an event and a series as iCalendar', async () => {
    const agent = await makeAgentGrant(api);
    const start = at('2026-12-07T09:00', 'Europe/Berlin');
    const series = await event(agent.id, {
      title: 'Review; with, punctuation',
      when: { start_time: start, end_time: start + 3600, start_timezone: 'Europe/Berlin' },
      recurrence: ['RRULE:FREQ=DAILY;COUNT=3'],
    });
    const ics = await api.get(`/v3/grants/${agent.id}/events/${series.id}?calendar_id=primary&format=ics`);
    expect(ics.status).toBe(200);
    expect(ics.headers.get('content-type')).toContain('text/calendar');
    expect(ics.text).toContain('BEGIN:VCALENDAR');
    expect(ics.text).toContain('METHOD:PUBLISH');
    expect(ics.text).toContain(`UID:${series.ical_uid}`);
    expect(ics.text).toContain('RRULE:FREQ=DAILY;COUNT=3');
    expect(ics.text).toContain('TZID=Europe/Berlin');
    expect(ics.text).toContain('BEGIN:VTIMEZONE');
  });

  it("answers 404 for another grant's or application's event", async () => {
    const [a, b] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api)]);
    const created = await event(a.id, { title: 'Mine', when: { start_time: 1000, end_time: 2000 } });
    expect((await api.get(`/v3/grants/${b.id}/events/${created.id}?calendar_id=primary`)).status).toBe(404);
    expect((await api.get(`/v3/grants/${b.id}/events/${created.id}?calendar_id=${created.calendar_id}`)).status).toBe(
      404,
    );
    const other = await otherApi();
    expect((await other.get(`/v3/grants/${a.id}/events/${created.id}?calendar_id=primary`)).status).toBe(404);
    expect((await api.put(`/v3/grants/${b.id}/events/${created.id}?calendar_id=primary`, { title: 'x' })).status).toBe(
      404,
    );
    expect((await api.delete(`/v3/grants/${b.id}/events/${created.id}?calendar_id=primary`)).status).toBe(404);
    expect((await api.get(`/v3/grants/${a.id}/events/evt_nope?calendar_id=primary`)).status).toBe(404);
  });
});
