import { GetScheduleCommand, SchedulerClient } from '@aws-sdk/client-scheduler';
import { beforeAll, describe, expect, it } from 'vitest';
import { runReminder } from '#shared/scheduling/reminders';
import { clock } from '#shared/time';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant } from '../support/factories';
import { useApi } from '../support/harness';
import { jobsDone } from '../support/outbox-relay';
import { createTestQueue, drainQueue } from '../support/queues';

/** The scheduler over HTTP: configurations, sessions, availability, bookings (both types), no double booking. */
let fanout: string;
beforeAll(async () => {
  fanout = await createTestQueue('scheduling-fanout');
  process.env.FANOUT_QUEUE_URL = fanout;
});
const { api, gateway, applicationId, otherApi } = useApi();
const guestApi = (): ApiClient => apiClient(gateway().url);

const DAY = 86_400;
/** Midnight UTC, `days` from today. */
const midnight = (days: number) => (Math.floor(Date.now() / 1000 / DAY) + days) * DAY;
const allDay = [{ days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', start: '9:00', end: '17:00' }];

async function configuration(over: Record<string, unknown> = {}) {
  const organizer = await makeAgentGrant(api);
  const body = {
    name: 'Intro call',
    participants: [
      {
        email: organizer.email,
        name: 'Bo',
        is_organizer: true,
        availability: { calendar_ids: ['primary'], open_hours: allDay },
        booking: { calendar_id: 'primary' },
      },
    ],
    availability: { duration_minutes: 30, interval_minutes: 30 },
    event_booking: { title: 'Intro call', description: 'Twenty minutes and questions', location: 'Video' },
    scheduler: { min_booking_notice: 0, available_days_in_future: 30 },
    ...over,
  };
  const response = await api.post(`/v3/grants/${organizer.id}/scheduling/configurations`, body);
  expect(response.status, response.text).toBe(201);
  return { organizer, config: response.body.data };
}

const slotsOf = async (
  configId: string,
  from: number,
  to: number,
  client = guestApi(),
  headers: Record<string, string> = {},
) => {
  const response = await client.get(
    `/v3/scheduling/availability?configuration_id=${configId}&start_time=${from}&end_time=${to}`,
    headers,
  );
  expect(response.status, response.text).toBe(200);
  return response.body.data.time_slots as { start_time: number; end_time: number; emails: string[] }[];
};
const guest = { name: 'Ann Guest', email: 'ann@guest.example.com' };
const book = (configId: string, start: number, extra: Record<string, unknown> = {}) =>
  guestApi().post(`/v3/scheduling/bookings?configuration_id=${configId}`, {
    start_time: start,
    end_time: start + 1800,
    guest,
    ...extra,
  });
/** Subjects in a grant's inbox, once the jobs committed so far (mails of bookings) have run. */
const inbox = async (grantId: string) => {
  await jobsDone();
  return (await api.get(`/v3/grants/${grantId}/messages?in=inbox`)).body.data as { subject: string; body: string }[];
};
const eventsBetween = async (grantId: string, from: number, to: number) =>
  (await api.get(`/v3/grants/${grantId}/events?calendar_id=primary&start=${from}&end=${to}`)).body.data as {
    id: string;
    title: string;
    status: string;
    participants: { email: string }[];
    when: { start_time: number };
  }[];

describe('configurations', () => {
  it('creates, reads, lists, changes and deletes a configuration, in both path forms', async () => {
    const { organizer, config } = await configuration({ slug: `intro-${Date.now()}` });
    expect(config).toMatchObject({
      object: 'scheduling_configuration',
      grant_id: organizer.id,
      requires_session_auth: false,
      availability: { duration_minutes: 30 },
      event_booking: { title: 'Intro call' },
    });
    expect(config.id).toMatch(/^cfg_/);
    expect((await api.get(`/v3/grants/${organizer.id}/scheduling/configurations/${config.id}`)).body.data).toEqual(
      config,
    );
    expect((await api.get(`/v3/scheduling/configurations/${config.id}`)).body.data).toEqual(config);
    expect(
      (await api.get(`/v3/grants/${organizer.id}/scheduling/configurations`)).body.data.map(
        (c: { id: string }) => c.id,
      ),
    ).toEqual([config.id]);
    expect(
      (await api.get(`/v3/scheduling/configurations?grant_id=${organizer.id}`)).body.data.map(
        (c: { id: string }) => c.id,
      ),
    ).toEqual([config.id]);

    const renamed = await api.put(`/v3/scheduling/configurations/${config.id}`, {
      name: 'Longer intro',
      availability: { duration_minutes: 45 },
    });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.data).toMatchObject({
      name: 'Longer intro',
      availability: { duration_minutes: 45 },
      slug: config.slug,
    });

    const second = await api.post('/v3/scheduling/configurations', {
      grant_id: organizer.email,
      slug: config.slug,
      participants: config.participants,
      availability: { duration_minutes: 15 },
      event_booking: { title: 'Quick' },
    });
    expect(second.status).toBe(409);
    expect(second.body.error.message).toMatch(/slug .* already used/);

    const other = await otherApi('sched-other');
    expect((await other.get(`/v3/scheduling/configurations/${config.id}`)).status).toBe(404);
    const removed = await api.delete(`/v3/grants/${organizer.id}/scheduling/configurations/${config.id}`);
    expect(removed.status).toBe(200);
    expect(removed.body.request_id).toBeTruthy();
    expect((await api.get(`/v3/scheduling/configurations/${config.id}`)).status).toBe(404);
  });

  it('holds Agent Account organizers to their primary calendar and refuses round-robin for them', async () => {
    const organizer = await makeAgentGrant(api);
    const base = { availability: { duration_minutes: 30 }, event_booking: { title: 'x' } };
    const participant = (over: object) => [
      {
        email: organizer.email,
        is_organizer: true,
        availability: { calendar_ids: ['primary'] },
        booking: { calendar_id: 'primary' },
        ...over,
      },
    ];
    const cases: [object, RegExp][] = [
      [
        { ...base, participants: participant({ availability: { calendar_ids: ['cal_other'] } }) },
        /'availability.calendar_ids' must be \["primary"\]/,
      ],
      [
        { ...base, participants: participant({ booking: { calendar_id: 'cal_other' } }) },
        /'booking.calendar_id' must be "primary"/,
      ],
      [
        {
          ...base,
          participants: participant({}),
          availability: { duration_minutes: 30, availability_rules: { availability_method: 'max-fairness' } },
        },
        /round-robin availability \('max-fairness'\) is not supported for Agent Account organizers/,
      ],
      [
        { ...base, participants: [{ email: 'someone@example.com', is_organizer: true }] },
        /must be the configuration's grant/,
      ],
      [{ ...base, participants: participant({}), availability: { duration_minutes: 32 } }, /multiple of 5/],
      [
        {
          ...base,
          participants: participant({
            availability: {
              calendar_ids: ['primary'],
              open_hours: [{ days: [9], timezone: 'Mars/Base', start: '9:00', end: '8:00' }],
            },
          }),
        },
        /timezone must be an IANA time zone/,
      ],
      [
        {
          ...base,
          participants: participant({}),
          event_booking: { title: 'x', conferencing: { provider: 'Zoom Meeting', autocreate: {} } },
        },
        /no.* conferencing provider|needs a conferencing provider/,
      ],
    ];
    for (const [body, message] of cases) {
      const response = await api.post(`/v3/grants/${organizer.id}/scheduling/configurations`, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error.message).toMatch(message);
    }
  });
});

describe('sessions and availability', () => {
  it('serves a public configuration by ID or slug, a private one only with a live session', async () => {
    const slug = `open-${Date.now()}`;
    const { organizer, config } = await configuration({ slug });
    const [from, to] = [midnight(2), midnight(3)];
    const slots = await slotsOf(config.id, from, to);
    expect(slots).toHaveLength(16);
    expect(slots[0]).toEqual({
      emails: [organizer.email],
      start_time: from + 9 * 3600,
      end_time: from + 9 * 3600 + 1800,
    });
    const bySlug = await guestApi().get(
      `/v3/scheduling/availability?slug=${slug}&client_id=${applicationId()}&start_time=${from}&end_time=${to}`,
    );
    expect(bySlug.status, bySlug.text).toBe(200);
    expect(bySlug.body.data.time_slots).toEqual(slots);
    expect(
      (await guestApi().get(`/v3/scheduling/availability?slug=${slug}&start_time=${from}&end_time=${to}`)).status,
    ).toBe(400);

    // An event created on the organizer's calendar takes its slot away.
    await api.post(`/v3/grants/${organizer.id}/events?calendar_id=primary&notify_participants=false`, {
      title: 'Busy',
      when: { start_time: from + 10 * 3600, end_time: from + 11 * 3600 },
    });
    expect(await slotsOf(config.id, from, to)).toHaveLength(14);

    // Private: 401 without a session, 200 with one, 401 once it is deleted or expired.
    expect((await api.put(`/v3/scheduling/configurations/${config.id}`, { requires_session_auth: true })).status).toBe(
      200,
    );
    const anonymous = await guestApi().get(
      `/v3/scheduling/availability?configuration_id=${config.id}&start_time=${from}&end_time=${to}`,
    );
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.message).toMatch(/private/);
    const session = await api.post('/v3/scheduling/sessions', { configuration_id: config.id, time_to_live: 10 });
    expect(session.status, session.text).toBe(201);
    const token = session.body.data.session_id as string;
    const auth = { authorization: `Bearer ${token}` };
    const viaSession = await guestApi().get(`/v3/scheduling/availability?start_time=${from}&end_time=${to}`, auth);
    expect(viaSession.status, viaSession.text).toBe(200);
    expect(viaSession.body.data.time_slots).toHaveLength(14);
    const restore = clock.set(() => Date.now() + 11 * 60_000);
    try {
      expect((await guestApi().get(`/v3/scheduling/availability?start_time=${from}&end_time=${to}`, auth)).status).toBe(
        401,
      );
    } finally {
      restore();
    }
    expect((await api.delete(`/v3/scheduling/sessions/${token}`)).status).toBe(200);
    const gone = await guestApi().get(`/v3/scheduling/availability?start_time=${from}&end_time=${to}`, auth);
    expect(gone.status).toBe(401);
    expect(gone.body.error.message).toMatch(/unknown or has expired/);
  });
});

describe('bookings', () => {
  it('books a slot: the event on the organizer calendar, the slot gone, then reschedule and cancel through the API', async () => {
    const { organizer, config } = await configuration();
    const visitor = await makeAgentGrant(api);
    const day = midnight(3);
    const start = day + 10 * 3600;
    await drainQueue(fanout, 10, 300);
    const created = await book(config.id, start, {
      guest: { name: 'Gus', email: visitor.email },
      additional_fields: { company: 'Acme' },
      email_language: 'de',
      timezone: 'Europe/Berlin',
    });
    expect(created.status, created.text).toBe(201);
    const booking = created.body.data;
    expect(booking).toMatchObject({
      status: 'booked',
      start_time: start,
      end_time: start + 1800,
      title: 'Intro call',
      guest: { email: visitor.email },
      organizer: { email: organizer.email },
      email_language: 'de',
      additional_fields: { company: 'Acme' },
    });
    expect(booking.booking_id).toMatch(/^bkg_/);
    expect(typeof booking.booking_reference).toBe('string');
    const events = await eventsBetween(organizer.id, day, day + DAY);
    expect(events.map((e) => [e.id, e.title, e.when.start_time])).toEqual([[booking.event_id, 'Intro call', start]]);
    expect(events[0]!.participants.map((p) => p.email)).toContain(visitor.email);
    expect((await slotsOf(config.id, day, day + DAY)).map((s) => s.start_time)).not.toContain(start);
    // The guest's confirmation, in German, from the organizer's address, with the time in Berlin.
    await expect
      .poll(async () => (await inbox(visitor.id)).map((m) => m.subject), { timeout: 30_000 })
      .toEqual(['Buchung bestätigt: Intro call']);
    expect((await inbox(visitor.id))[0]!.body).toContain('(Europe/Berlin)');

    const again = await book(config.id, start);
    expect(again.status).toBe(409);
    expect(
      (await guestApi().get(`/v3/scheduling/bookings/${booking.booking_id}?configuration_id=${config.id}`)).body.data,
    ).toMatchObject({ booking_id: booking.booking_id, status: 'booked' });

    const moved = await guestApi().patch(
      `/v3/scheduling/bookings/${booking.booking_id}?configuration_id=${config.id}`,
      { start_time: start + 1800, end_time: start + 3600 },
    );
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.data).toMatchObject({ start_time: start + 1800, end_time: start + 3600, status: 'booked' });
    expect((await eventsBetween(organizer.id, day, day + DAY)).map((e) => e.when.start_time)).toEqual([start + 1800]);
    // The old time is free again, the new one taken.
    const free = (await slotsOf(config.id, day, day + DAY)).map((s) => s.start_time);
    expect(free).toContain(start);
    expect(free).not.toContain(start + 1800);

    const cancelled = await guestApi().request(
      'DELETE',
      `/v3/scheduling/bookings/${booking.booking_id}?configuration_id=${config.id}`,
      { body: { cancellation_reason: 'Plans changed' } },
    );
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.data).toMatchObject({ status: 'cancelled', cancellation_reason: 'Plans changed' });
    expect(await eventsBetween(organizer.id, day, day + DAY)).toEqual([]);
    expect(
      (
        await guestApi().request(
          'DELETE',
          `/v3/scheduling/bookings/${booking.booking_id}?configuration_id=${config.id}`,
        )
      ).status,
    ).toBe(409);
    // Released: the same time can be booked again.
    expect((await book(config.id, start + 1800)).status).toBe(201);
    await expect
      .poll(async () => (await inbox(visitor.id)).map((m) => m.subject).sort(), { timeout: 30_000 })
      .toEqual(['Buchung bestätigt: Intro call', 'Buchung storniert: Intro call', 'Buchung verschoben: Intro call']);

    const types: string[] = [];
    for (let i = 0; i < 30 && types.filter((t) => t.startsWith('booking.')).length < 4; i++)
      types.push(...(await drainQueue(fanout, 10, 1_000)).map((n) => n.body.type as string));
    expect(types.filter((t) => t.startsWith('booking.')).sort()).toEqual([
      'booking.cancelled',
      'booking.created',
      'booking.created',
      'booking.rescheduled',
    ]);
  });

  it('organizer confirmation: a pending booking and a tentative event until the organizer confirms with the salt', async () => {
    const { organizer, config } = await configuration({
      event_booking: { title: 'Review', booking_type: 'organizer-confirmation' },
      scheduler: { min_booking_notice: 0, organizer_confirmation_url: 'https://app.example.com/confirm' },
    });
    const day = midnight(4);
    const created = await book(config.id, day + 9 * 3600);
    expect(created.status, created.text).toBe(201);
    const booking = created.body.data;
    expect(booking.status).toBe('pending');
    expect((await eventsBetween(organizer.id, day, day + DAY))[0]).toMatchObject({
      id: booking.event_id,
      status: 'maybe',
    });
    // The organizer is asked, by mail to its own address, with the link to its confirmation page.
    await expect
      .poll(async () => (await inbox(organizer.id)).map((m) => m.subject), { timeout: 30_000 })
      .toEqual([`Confirm booking: Review with ${guest.name}`]);
    const link = /https:\/\/app\.example\.com\/confirm\?booking_reference=([A-Za-z0-9_-]+)/.exec(
      (await inbox(organizer.id))[0]!.body,
    )![1]!;
    const salt = Buffer.from(link, 'base64url').toString('utf8').split(':')[2];
    const guestSalt = Buffer.from(booking.booking_reference, 'base64url').toString('utf8').split(':')[2];
    const path = `/v3/scheduling/bookings/${booking.booking_id}?configuration_id=${config.id}`;
    expect((await guestApi().put(path, { salt: 'wrong', status: 'confirmed' })).status).toBe(404);
    // The guest's own reference cannot confirm.
    expect((await guestApi().put(path, { salt: guestSalt, status: 'confirmed' })).status).toBe(404);
    const confirmed = await guestApi().put(path, { salt, status: 'confirmed' });
    expect(confirmed.status, confirmed.text).toBe(200);
    expect(confirmed.body.data.status).toBe('booked');
    expect((await eventsBetween(organizer.id, day, day + DAY))[0]).toMatchObject({ status: 'confirmed' });
    const twice = await guestApi().put(path, { salt, status: 'confirmed' });
    expect(twice.status).toBe(409);
    expect(twice.body.error.message).toMatch(/not pending/);
  });

  it('refuses bad bookings with the rule they break', async () => {
    const { config } = await configuration();
    const start = midnight(5) + 9 * 3600;
    const cases: [object, number, RegExp][] = [
      [{ start_time: start, end_time: start + 3600, guest }, 400, /'end_time' must be 'start_time' \+ 30 minutes/],
      [{ start_time: start, end_time: start + 1800, guest: { name: 'No mail' } }, 400, /'guest.email' is required/],
      [
        { start_time: start, end_time: start + 1800, guest, email_language: 'it' },
        400,
        /'email_language' must be one of: en, fr, de, es, nl, sv, ja, zh/,
      ],
      [
        { start_time: midnight(40) + 9 * 3600, end_time: midnight(40) + 9 * 3600 + 1800, guest },
        400,
        /at most 30 days ahead \(available_days_in_future\)/,
      ],
      [{ start_time: start + 3 * 3600 + 600, end_time: start + 3 * 3600 + 2400, guest }, 409, /not available/],
      [{ start_time: midnight(5) + 20 * 3600, end_time: midnight(5) + 20 * 3600 + 1800, guest }, 409, /not available/],
      [
        { start_time: start, end_time: start + 1800, guest, participants: [{ email: 'stranger@example.com' }] },
        400,
        /must be participants of the configuration/,
      ],
    ];
    for (const [body, status, message] of cases) {
      const response = await guestApi().post(`/v3/scheduling/bookings?configuration_id=${config.id}`, body);
      expect(response.status, `${JSON.stringify(body)} → ${response.text}`).toBe(status);
      expect(response.body.error.message).toMatch(message);
    }
    const form = await configuration({
      scheduler: {
        min_booking_notice: 0,
        additional_fields: { company: { label: 'Company', type: 'text', required: true } },
      },
    });
    const unfilled = await guestApi().post(`/v3/scheduling/bookings?configuration_id=${form.config.id}`, {
      start_time: start,
      end_time: start + 1800,
      guest,
    });
    expect(unfilled.status).toBe(400);
    expect(unfilled.body.error.message).toMatch(/required fields: company/);
    const notice = await configuration({ scheduler: { min_booking_notice: 3 * 24 * 60 } });
    const early = await guestApi().post(`/v3/scheduling/bookings?configuration_id=${notice.config.id}`, {
      start_time: midnight(1) + 9 * 3600,
      end_time: midnight(1) + 9 * 3600 + 1800,
      guest,
    });
    expect(early.status).toBe(400);
    expect(early.body.error.message).toMatch(/min_booking_notice/);
    expect(
      (
        await guestApi().post('/v3/scheduling/bookings?configuration_id=cfg_01jd6abcdefghjkmnpqrstvwxy', {
          start_time: start,
          end_time: start + 1800,
          guest,
        })
      ).status,
    ).toBe(404);
  });

  it('never double-books: 50 concurrent requests for one slot give one booking, 49 × 409 and one event', async () => {
    const { organizer, config } = await configuration();
    const day = midnight(6);
    const start = day + 13 * 3600;
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        book(config.id, start, { guest: { name: `Guest ${i}`, email: `g${i}@guest.example.com` } }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(49);
    const events = await eventsBetween(organizer.id, day, day + DAY);
    expect(events).toHaveLength(1);
    expect(events[0]!.id).toBe(results.find((r) => r.status === 201)!.body.data.event_id);
  });

  it('reminders: a one-shot schedule per reminder, moved with the booking, deleted with it; a firing mails or notifies', async () => {
    const { organizer, config } = await configuration({
      event_booking: {
        title: 'Coaching',
        reminders: [
          { type: 'email', minutes_before_event: 60, recipient: 'all' },
          { type: 'webhook', minutes_before_event: 30 },
        ],
      },
    });
    const visitor = await makeAgentGrant(api);
    const day = midnight(7);
    const start = day + 11 * 3600;
    const created = await book(config.id, start, { guest: { name: 'Vi', email: visitor.email }, email_language: 'fr' });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.booking_id as string;
    await jobsDone();
    const client = new SchedulerClient({});
    const schedule = (name: string) =>
      client.send(new GetScheduleCommand({ Name: name, GroupName: process.env.SCHEDULE_GROUP })).then(
        (s) => s,
        (error: Error) => error.name,
      );
    const at = (t: number) => `at(${new Date(t * 1000).toISOString().slice(0, 19)})`;
    try {
      const first = await schedule(`${id}-r0`);
      expect(first).toMatchObject({ ScheduleExpression: at(start - 3600), ActionAfterCompletion: 'DELETE' });
      expect(JSON.parse((first as { Target: { Input: string } }).Target.Input)).toEqual({
        kind: 'booking-reminder',
        booking_id: id,
        reminder: 0,
        start,
      });
      expect(await schedule(`${id}-r1`)).toMatchObject({ ScheduleExpression: at(start - 1800) });

      // The email reminder as its schedule would fire it: to the guest (in French) and to the organizer.
      expect(await runReminder({ kind: 'booking-reminder', booking_id: id, reminder: 0, start })).toBe('sent');
      await expect
        .poll(async () => (await inbox(visitor.id)).map((m) => m.subject).sort(), { timeout: 30_000 })
        .toEqual(['Rappel: Coaching', 'Réservation confirmée: Coaching']);
      await expect
        .poll(async () => (await inbox(organizer.id)).map((m) => m.subject), { timeout: 30_000 })
        .toEqual(['Reminder: Coaching with Vi']);

      // The webhook reminder publishes booking.reminder.
      await drainQueue(fanout, 50, 500);
      expect(await runReminder({ kind: 'booking-reminder', booking_id: id, reminder: 1, start })).toBe('sent');
      const reminders: {
        body: { type: string; data: { object: { booking_id: string; minutes_before_event: number } } };
      }[] = [];
      for (let i = 0; i < 20 && !reminders.length; i++)
        reminders.push(...(await drainQueue(fanout, 10, 500)).filter((n) => n.body.type === 'booking.reminder'));
      expect(reminders[0]?.body.data.object).toMatchObject({ booking_id: id, minutes_before_event: 30 });

      // Moved: the schedules follow; a firing set for the old time does nothing.
      const moved = await guestApi().patch(`/v3/scheduling/bookings/${id}?configuration_id=${config.id}`, {
        start_time: start + 3600,
        end_time: start + 5400,
      });
      expect(moved.status, moved.text).toBe(200);
      await jobsDone();
      expect(await schedule(`${id}-r0`)).toMatchObject({ ScheduleExpression: at(start) });
      expect(await runReminder({ kind: 'booking-reminder', booking_id: id, reminder: 0, start })).toBe('skipped');

      // Cancelled: no schedule is left.
      expect(
        (await guestApi().request('DELETE', `/v3/scheduling/bookings/${id}?configuration_id=${config.id}`)).status,
      ).toBe(200);
      await jobsDone();
      expect(await schedule(`${id}-r0`)).toBe('ResourceNotFoundException');
      expect(await schedule(`${id}-r1`)).toBe('ResourceNotFoundException');
    } finally {
      client.destroy();
    }
  });

  it('a booking reference opens its own booking only, through the API and the pages; private pages need their session', async () => {
    const slug = `ref-${Date.now()}`;
    const { config } = await configuration({ slug });
    const day = midnight(8);
    const [one, two] = [await book(config.id, day + 9 * 3600), await book(config.id, day + 10 * 3600)];
    expect([one.status, two.status]).toEqual([201, 201]);
    const reference = one.body.data.booking_reference as string;
    const byRef = (id: string) => `/v3/scheduling/bookings/${id}?booking_reference=${reference}`;
    expect((await guestApi().get(byRef(one.body.data.booking_id))).body.data).toMatchObject({
      booking_id: one.body.data.booking_id,
      status: 'booked',
    });
    expect((await guestApi().get(byRef(two.body.data.booking_id))).status).toBe(404);
    expect((await guestApi().request('DELETE', byRef(two.body.data.booking_id))).status).toBe(404);
    // Availability for moving it counts its own time as free.
    const freeFor = async (query: string) =>
      (
        await guestApi().get(`/v3/scheduling/availability?${query}&start_time=${day}&end_time=${day + DAY}`)
      ).body.data.time_slots.map((t: { start_time: number }) => t.start_time);
    expect(await freeFor(`booking_reference=${reference}`)).not.toContain(day + 9 * 3600);
    expect(await freeFor(`booking_reference=${reference}&booking_id=${one.body.data.booking_id}`)).toContain(
      day + 9 * 3600,
    );
    expect(
      (
        await guestApi().get(
          `/v3/scheduling/availability?booking_reference=${reference}&booking_id=${two.body.data.booking_id}&start_time=${day}&end_time=${day + DAY}`,
        )
      ).status,
    ).toBe(404);
    const moved = await guestApi().patch(byRef(one.body.data.booking_id), {
      start_time: day + 11 * 3600,
      end_time: day + 11 * 3600 + 1800,
    });
    expect(moved.status, moved.text).toBe(200);
    const forged = Buffer.from(`${config.id}:${one.body.data.booking_id}:not-the-salt`).toString('base64url');
    expect(
      (await guestApi().get(`/v3/scheduling/bookings/${one.body.data.booking_id}?booking_reference=${forged}`)).status,
    ).toBe(404);

    // The manage page opens with the reference; the booking page of a private configuration needs its session.
    const manage = await guestApi().get(`/scheduling/${slug}/booking/${reference}`);
    expect(manage.status).toBe(200);
    expect(manage.headers.get('content-type')).toMatch(/^text\/html/);
    expect(manage.text).toContain('Your booking');
    expect((await guestApi().get(`/scheduling/${slug}/booking/${forged}`)).status).toBe(404);
    expect((await api.put(`/v3/scheduling/configurations/${config.id}`, { requires_session_auth: true })).status).toBe(
      200,
    );
    expect((await guestApi().get(`/scheduling/${slug}`)).status).toBe(401);
    const session = (await api.post('/v3/scheduling/sessions', { slug })).body.data.session_id as string;
    const page = await guestApi().get(`/scheduling/${slug}?session=${encodeURIComponent(session)}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(session);
    expect(
      (
        await guestApi().get(
          `/v3/scheduling/availability?slug=${slug}&client_id=app_01jd6abcdefghjkmnpqrstvwxy&start_time=${day}&end_time=${day + DAY}`,
        )
      ).status,
    ).toBe(404);
  });
});
