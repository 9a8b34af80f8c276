import { DateTime } from 'luxon';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeAgentGrant } from '../support/factories';
import { useApi } from '../support/harness';
import { createTestQueue } from '../support/queues';

/** Free/busy and availability over HTTP, reading events written through the events API a moment before. */
beforeAll(async () => {
  process.env.FANOUT_QUEUE_URL = await createTestQueue('availability-fanout');
});
const { api, otherApi } = useApi();

const at = (iso: string, zone = 'UTC') => Math.round(DateTime.fromISO(iso, { zone }).toSeconds());
const utc = (t: number) => DateTime.fromSeconds(t, { zone: 'UTC' }).toFormat("yyyy-MM-dd'T'HH:mm");

async function event(grantId: string, body: object) {
  const response = await api.post(`/v3/grants/${grantId}/events?calendar_id=primary&notify_participants=false`, body);
  expect(response.status, response.text).toBe(201);
  return response.body.data;
}
const span = (from: string, to: string) => ({ start_time: at(from), end_time: at(to) });

describe('free/busy', () => {
  it('answers one entry per address: merged busy time (series expanded, free, cancelled and tentative handled) or an error entry', async () => {
    const ann = await makeAgentGrant(api);
    const bob = await makeAgentGrant(api);
    const stranger = await makeAgentGrant(await otherApi('fb-other'));
    await event(ann.id, {
      title: 'Standup',
      when: span('2026-12-07T09:00', '2026-12-07T09:30'),
      recurrence: ['RRULE:FREQ=DAILY;COUNT=5'],
    });
    await event(ann.id, { title: 'Review', when: span('2026-12-08T09:15', '2026-12-08T10:00') });
    await event(ann.id, { title: 'Focus (free)', when: span('2026-12-08T13:00', '2026-12-08T14:00'), busy: false });
    await event(ann.id, { title: 'Maybe', when: span('2026-12-08T15:00', '2026-12-08T16:00'), status: 'maybe' });
    const cancelled = await event(ann.id, { title: 'Dropped', when: span('2026-12-08T17:00', '2026-12-08T18:00') });
    expect(
      (await api.delete(`/v3/grants/${ann.id}/events/${cancelled.id}?calendar_id=primary&notify_participants=false`))
        .status,
    ).toBe(200);
    // Starts before the window: clipped to it.
    await event(ann.id, { title: 'Night', when: span('2026-12-07T22:00', '2026-12-08T01:00') });

    const window = { start_time: at('2026-12-08T00:00'), end_time: at('2026-12-09T00:00') };
    const response = await api.post(`/v3/grants/${ann.id}/calendars/free-busy`, {
      ...window,
      emails: [ann.email, bob.email.toUpperCase(), 'nobody@example.com', stranger.email, ann.email],
    });
    expect(response.status, response.text).toBe(200);
    expect(response.headers.get('x-request-id')).toBe(response.body.request_id);
    const [a, b, nobody, other, ...rest] = response.body.data;
    expect(rest).toEqual([]);
    expect(a.object).toBe('free_busy');
    expect(a.email).toBe(ann.email);
    expect(
      a.time_slots.map((s: { start_time: number; end_time: number }) => `${utc(s.start_time)}–${utc(s.end_time)}`),
    ).toEqual([
      '2026-12-08T00:00–2026-12-08T01:00',
      '2026-12-08T09:00–2026-12-08T10:00',
      '2026-12-08T15:00–2026-12-08T16:00',
    ]);
    expect(a.time_slots[0]).toEqual({
      start_time: window.start_time,
      end_time: at('2026-12-08T01:00'),
      status: 'busy',
      object: 'time_slot',
    });
    expect(b).toEqual({ email: bob.email.toUpperCase(), object: 'free_busy', time_slots: [] });
    expect(nobody).toMatchObject({ email: 'nobody@example.com', object: 'error' });
    expect(nobody.error).toMatch(/not the address of a grant of this application/);
    expect(other.object).toBe('error');

    const firm = await api.post(`/v3/grants/${ann.id}/calendars/free-busy`, {
      ...window,
      emails: [ann.email],
      tentative_as_busy: false,
    });
    expect(firm.body.data[0].time_slots).toHaveLength(2);
  });

  it('refuses bad windows and bodies with a clear 400, and another application’s grant with 404', async () => {
    const ann = await makeAgentGrant(api);
    const post = (body: object) => api.post(`/v3/grants/${ann.id}/calendars/free-busy`, body);
    const cases: [object, RegExp][] = [
      [
        { start_time: 2000, end_time: 1000, emails: [ann.email] },
        /'end_time' \(1000\) must be after 'start_time' \(2000\)/,
      ],
      [{ start_time: 0, end_time: 367 * 86_400, emails: [ann.email] }, /more than 366 days/],
      [{ start_time: 0, end_time: 10, emails: [] }, /'emails' must have at least 1 items/],
      [{ start_time: 0, end_time: 10 }, /'emails' is required/],
      [{ start_time: 1.5, end_time: 10, emails: [ann.email] }, /'start_time' must be of type integer/],
    ];
    for (const [body, message] of cases) {
      const response = await post(body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error.type).toBe('invalid_request_error');
      expect(response.body.error.message).toMatch(message);
    }
    const other = await otherApi('fb-404');
    expect(
      (
        await other.post(`/v3/grants/${ann.id}/calendars/free-busy`, {
          start_time: 0,
          end_time: 10,
          emails: [ann.email],
        })
      ).status,
    ).toBe(404);
  });
});

describe('availability', () => {
  const weekday = { days: [1, 2, 3, 4, 5], start: '9:00', end: '12:00' };

  it('collective: open hours in each zone, recurring and just-created events, buffers and round_to', async () => {
    const ann = await makeAgentGrant(api);
    const raj = await makeAgentGrant(api);
    // Tue 2026-12-08. Ann: Berlin 9:00–12:00 = 08:00–11:00 UTC. Raj: Kolkata 13:30–17:30 = 08:00–12:00 UTC.
    await event(ann.id, {
      title: 'Daily',
      when: span('2026-12-07T08:00', '2026-12-07T08:30'),
      recurrence: ['RRULE:FREQ=DAILY'],
    });
    await event(raj.id, { title: 'Lunch', when: span('2026-12-08T09:40', '2026-12-08T10:00') });
    const body = {
      start_time: at('2026-12-08T00:00'),
      end_time: at('2026-12-09T00:00'),
      duration_minutes: 30,
      interval_minutes: 30,
      round_to: 15,
      participants: [
        { email: ann.email, open_hours: [{ ...weekday, timezone: 'Europe/Berlin' }] },
        {
          email: raj.email,
          calendar_ids: ['primary'],
          open_hours: [{ ...weekday, start: '13:30', end: '17:30', timezone: 'Asia/Kolkata' }],
        },
      ],
      availability_rules: { availability_method: 'collective' },
    };
    const first = await api.post('/v3/calendars/availability', body);
    expect(first.status, first.text).toBe(200);
    expect(first.body.data.order).toEqual([]);
    expect(first.body.data.time_slots.map((s: { start_time: number }) => utc(s.start_time).slice(11))).toEqual([
      '08:30',
      '09:00',
      '10:00',
      '10:30',
    ]);
    expect(first.body.data.time_slots[0]).toEqual({
      emails: [ann.email, raj.email].sort(),
      start_time: at('2026-12-08T08:30'),
      end_time: at('2026-12-08T09:00'),
    });

    // An event created a moment ago takes its slot away.
    await event(ann.id, { title: 'Call', when: span('2026-12-08T10:00', '2026-12-08T10:30') });
    const second = await api.post('/v3/calendars/availability', body);
    expect(second.body.data.time_slots.map((s: { start_time: number }) => utc(s.start_time).slice(11))).toEqual([
      '08:30',
      '09:00',
      '10:30',
    ]);

    // A 10-minute buffer after busy time: Ann's daily ends 08:30 → 08:40, rounded up to 08:45; Raj's lunch
    // ends 10:10 and Ann's call 10:40, which leaves 20 minutes before her open hours end at 11:00.
    const buffered = await api.post('/v3/calendars/availability', {
      ...body,
      availability_rules: { availability_method: 'collective', buffer: { after: 10 } },
    });
    expect(buffered.body.data.time_slots.map((s: { start_time: number }) => utc(s.start_time).slice(11))).toEqual([
      '08:45',
    ]);
  });

  it('max-availability and max-fairness: who is free per slot, ordered by events marked with key5', async () => {
    const ann = await makeAgentGrant(api);
    const bob = await makeAgentGrant(api);
    const cat = await makeAgentGrant(api);
    // Ann has had two round-robin meetings this week, Bob one, Cat none (and Cat's other-group one does not count).
    await event(ann.id, {
      title: 'RR 1',
      when: span('2026-12-07T09:00', '2026-12-07T10:00'),
      metadata: { key5: 'sales' },
    });
    await event(ann.id, {
      title: 'RR 2',
      when: span('2026-12-08T10:00', '2026-12-08T11:00'),
      metadata: { key5: 'sales' },
    });
    await event(bob.id, {
      title: 'RR 3',
      when: span('2026-12-08T11:00', '2026-12-08T12:00'),
      metadata: { key5: 'sales' },
    });
    await event(cat.id, {
      title: 'Support',
      when: span('2026-12-08T09:00', '2026-12-08T12:00'),
      metadata: { key5: 'support' },
    });
    const body = (method: string) => ({
      start_time: at('2026-12-07T00:00'),
      end_time: at('2026-12-09T00:00'),
      duration_minutes: 60,
      participants: [{ email: ann.email }, { email: bob.email }, { email: cat.email }],
      availability_rules: {
        availability_method: method,
        round_robin_group_id: 'sales',
        default_open_hours: [{ days: [2], timezone: 'UTC', start: '9:00', end: '12:00' }],
      },
    });
    const most = await api.post('/v3/calendars/availability', body('max-availability'));
    expect(most.status, most.text).toBe(200);
    expect(most.body.data.order).toEqual([cat.email, bob.email, ann.email]);
    expect(
      most.body.data.time_slots.map((s: { start_time: number; emails: string[] }) => [
        utc(s.start_time).slice(11),
        s.emails,
      ]),
    ).toEqual([
      ['09:00', [bob.email, ann.email]],
      ['10:00', [bob.email]],
      ['11:00', [ann.email]],
    ]);
    const fair = await api.post('/v3/calendars/availability', body('max-fairness'));
    expect(fair.body.data.order).toEqual([cat.email, bob.email, ann.email]);
    expect(
      fair.body.data.time_slots.map((s: { start_time: number; emails: string[] }) => [
        utc(s.start_time).slice(11),
        s.emails,
      ]),
    ).toEqual([
      ['09:00', [bob.email]],
      ['10:00', [bob.email]],
    ]);
  });

  it('refuses every bad input with a 400 naming the field or limit', async () => {
    const ann = await makeAgentGrant(api);
    const stranger = await makeAgentGrant(await otherApi('av-other'));
    const ok = {
      start_time: at('2026-12-08T00:00'),
      end_time: at('2026-12-09T00:00'),
      duration_minutes: 30,
      participants: [{ email: ann.email }],
    };
    const hours = (over: object) => ({
      ...ok,
      participants: [
        { email: ann.email, open_hours: [{ days: [1], timezone: 'UTC', start: '9:00', end: '17:00', ...over }] },
      ],
    });
    const cases: [object, RegExp][] = [
      [{ ...ok, start_time: ok.end_time, end_time: ok.start_time }, /'end_time' \(\d+\) must be after 'start_time'/],
      [{ ...ok, end_time: ok.start_time + 61 * 86_400 }, /more than 60 days \(the limit\)/],
      [{ ...ok, participants: [] }, /'participants' must have at least 1 items/],
      [
        { ...ok, participants: Array.from({ length: 51 }, (_, i) => ({ email: `p${i}@example.com` })) },
        /'participants' must have at most 50 items/,
      ],
      [
        { ...ok, participants: [{ email: ann.email }, { email: 'nobody@example.com' }, { email: stranger.email }] },
        new RegExp(`these are not: nobody@example.com, ${stranger.email.replace(/[.+]/g, '\\$&')}`),
      ],
      [hours({ timezone: 'Mars/Base' }), /participants\[0\]\.open_hours\[0\]\.timezone must be an IANA time zone/],
      [hours({ days: [1, 7] }), /days must be days of the week 0 \(Sunday\) to 6 \(Saturday\); 7 is not/],
      [hours({ start: '18:00', end: '9:00' }), /open_hours\[0\]\.start \(18:00\) must be before its end \(9:00\)/],
      [hours({ start: 'nine' }), /open_hours\[0\]\.start must be a time of day/],
      [{ ...ok, start_time: 1.5 }, /'start_time' must be of type integer/],
      [{ ...ok, duration_minutes: 4 }, /'duration_minutes' must be >= 5/],
      [{ ...ok, duration_minutes: 1445 }, /'duration_minutes' must be <= 1440/],
      [{ ...ok, duration_minutes: 32 }, /'duration_minutes' must be a multiple of 5 minutes/],
      [{ ...ok, interval_minutes: 3 }, /'interval_minutes' must be >= 5/],
      [{ ...ok, round_to: 7 }, /'round_to' must be a multiple of 5/],
      [
        { ...ok, participants: [{ email: ann.email }, { email: ann.email.toUpperCase() }] },
        /participants\[1\] repeats/,
      ],
      [
        { ...ok, participants: [{ email: ann.email, calendar_ids: ['cal_unknown'] }] },
        /participants\[0\] \(.*\): Calendar 'cal_unknown' not found/,
      ],
      [
        { ...ok, availability_rules: { availability_method: 'random' } },
        /'availability_rules.availability_method' must be one of: collective, max-availability, max-fairness/,
      ],
    ];
    for (const [body, message] of cases) {
      const response = await api.post('/v3/calendars/availability', body);
      expect(response.status, `${JSON.stringify(body).slice(0, 200)} → ${response.text}`).toBe(400);
      expect(response.body.error.type).toBe('invalid_request_error');
      expect(response.body.error.message).toMatch(message);
    }
  });
});
