import { randomBytes } from 'node:crypto';
import { simpleParser } from 'mailparser';
import { beforeAll, describe, expect, it } from 'vitest';
import { getGroupEvent, updateGroupEvent } from '#shared/db/group-events';
import type { ConfigurationId } from '#shared/ids';
import { runGroupEventDelete } from '#shared/scheduling/group-events';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { makeAgentGrant } from '../support/factories';
import { useApi } from '../support/harness';
import { sunkRaw, waitForSunk } from '../support/mail';
import { jobsDone } from '../support/outbox-relay';
import { createTestQueue, drainQueue } from '../support/queues';
import { checkResponse, routeOf } from '../support/response-check';

/**
 * Group events of the scheduler: a configuration of `type: "group"` offers fixed slots (events on
 * the organizer's calendar) with a capacity; guests book seats up to it, never more, however many
 * book at once; availability and the booking page show the seats left; a cancel frees its seats;
 * moving a group event moves its bookings and deleting it cancels them, each with its notification.
 */
let fanout: string;
beforeAll(async () => {
  fanout = await createTestQueue('group-events-fanout');
  process.env.FANOUT_QUEUE_URL = fanout;
});
const { api, gateway, otherApi } = useApi();
const guestApi = (): ApiClient => apiClient(gateway().url);

const HOUR = 3600;
const DAY = 86_400;
/** Midnight UTC, `days` from today. */
const midnight = (days: number) => (Math.floor(Date.now() / 1000 / DAY) + days) * DAY;

async function groupConfiguration(over: Record<string, unknown> = {}) {
  const organizer = await makeAgentGrant(api);
  const response = await api.post(`/v3/grants/${organizer.id}/scheduling/configurations`, {
    type: 'group',
    name: 'Yoga class',
    slug: `yoga-${organizer.id.slice(-10).toLowerCase()}`,
    participants: [
      {
        email: organizer.email,
        name: 'Ida',
        is_organizer: true,
        availability: { calendar_ids: ['primary'] },
        booking: { calendar_id: 'primary' },
      },
    ],
    availability: { duration_minutes: 60 },
    event_booking: { title: 'Yoga class' },
    scheduler: { min_booking_notice: 0, available_days_in_future: 30 },
    ...over,
  });
  expect(response.status, response.text).toBe(201);
  expect(response.body.data.type).toBe('group');
  const base = `/v3/grants/${organizer.id}/scheduling/configurations/${response.body.data.id}/group-events`;
  return { organizer, config: response.body.data as { id: string; slug: string }, base };
}

interface GroupEvent {
  id: string;
  capacity: number;
  seats_booked: number;
  seats_left: number;
  title: string;
  when: { start_time: number; end_time: number };
}

async function groupEvent(base: string, start: number, capacity: number, title = 'Morning flow') {
  const response = await api.post(base, {
    calendar_id: 'primary',
    title,
    capacity,
    location: 'Studio 2',
    when: { start_time: start, end_time: start + HOUR, start_timezone: 'UTC', end_timezone: 'UTC' },
  });
  expect(response.status, response.text).toBe(200);
  return response.body.data as GroupEvent;
}

const book = (configId: string, start: number, guest: string, extra: Record<string, unknown> = {}) =>
  guestApi().post(`/v3/scheduling/bookings?configuration_id=${configId}`, {
    start_time: start,
    end_time: start + HOUR,
    guest: { name: guest, email: `${guest.toLowerCase()}@guest.example.com` },
    ...extra,
  });

const slotsOf = async (configId: string, from: number, to: number) => {
  const response = await guestApi().get(
    `/v3/scheduling/availability?configuration_id=${configId}&start_time=${from}&end_time=${to}`,
  );
  expect(response.status, response.text).toBe(200);
  return response.body.data.time_slots as { start_time: number; event_id: string; seats_left: number }[];
};

const eventsBetween = async (grantId: string, from: number, to: number) =>
  (await api.get(`/v3/grants/${grantId}/events?calendar_id=primary&start=${from}&end=${to}`)).body.data as {
    id: string;
    title: string;
    capacity?: number;
    when: { start_time: number };
  }[];

/** `want` more `booking.*` notifications of a configuration's bookings, in the order published: type and booking ID. */
const published: { type: string; configuration_id: string; booking_id: string }[] = [];
async function bookingNotifications(configId: string, want: number): Promise<[string, string][]> {
  const mine = () => published.filter((n) => n.configuration_id === configId);
  for (let i = 0; i < 30 && mine().length < want; i++)
    for (const n of await drainQueue(fanout, 10, 1_000))
      if (String(n.body.type).startsWith('booking.'))
        published.push({
          type: n.body.type,
          ...(n.body.data.object as { configuration_id: string; booking_id: string }),
        });
  const taken = mine().slice(0, want);
  for (const n of taken) published.splice(published.indexOf(n), 1);
  return taken.map((n) => [n.type, n.booking_id]);
}

describe('group events', () => {
  it('are created on the organizer calendar, listed by time, changed and deleted; each answer conforms', async () => {
    const { organizer, config, base } = await groupConfiguration();
    const day = midnight(2);
    const later = await groupEvent(base, day + 15 * HOUR, 5, 'Evening flow');
    const first = await groupEvent(base, day + 9 * HOUR, 8);
    expect(first).toMatchObject({ capacity: 8, seats_booked: 0, seats_left: 8, title: 'Morning flow' });
    const onCalendar = await eventsBetween(organizer.id, day, day + DAY);
    expect(onCalendar.map((e) => [e.id, e.title, e.when.start_time]).sort()).toEqual(
      [
        [first.id, 'Morning flow', day + 9 * HOUR],
        [later.id, 'Evening flow', day + 15 * HOUR],
      ].sort(),
    );

    const listed = await api.get(`${base}?start_time=${day}&end_time=${day + DAY}`);
    expect(listed.body.data.map((e: GroupEvent) => e.id)).toEqual([first.id, later.id]);
    expect((await api.get(`${base}?start_time=${day + 12 * HOUR}&end_time=${day + DAY}`)).body.data).toHaveLength(1);

    const changed = await api.put(`${base}/${first.id}`, { title: 'Slow flow', capacity: 12 });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.data).toMatchObject({ id: first.id, title: 'Slow flow', capacity: 12, seats_left: 12 });
    expect((await eventsBetween(organizer.id, day, day + 12 * HOUR)).map((e) => e.title)).toEqual(['Slow flow']);

    const deleted = await api.delete(`${base}/${later.id}`);
    expect(deleted.status, deleted.text).toBe(200);
    // Gone from the listing at once; its job removes its event, then the record.
    expect((await api.get(base)).body.data.map((e: GroupEvent) => e.id)).toEqual([first.id]);
    await jobsDone();
    // The configuration goes only once its group events have.
    const configPath = `/v3/grants/${organizer.id}/scheduling/configurations/${config.id}`;
    const early = await api.delete(configPath);
    expect(early.status).toBe(409);
    expect(early.body.error.message).toMatch(/still offers group events/);
    expect((await eventsBetween(organizer.id, day + 12 * HOUR, day + DAY)).map((e) => e.id)).not.toContain(later.id);
    expect((await api.delete(`${base}/${later.id}`)).status).toBe(404);

    // Conformance: every answer matches its response schema, and the check can fail.
    const answers: [string, string, ApiResponse][] = [
      ['GET', base, listed],
      ['PUT', `${base}/${first.id}`, changed],
      ['DELETE', `${base}/${later.id}`, deleted],
    ];
    for (const [method, path, response] of answers) {
      expect(routeOf(method, path)?.path).toMatch(/group-events/);
      expect(checkResponse(method, path, new URLSearchParams(), 200, response.body)).toEqual([]);
    }
    expect(
      checkResponse('PUT', `${base}/${first.id}`, new URLSearchParams(), 200, {
        request_id: 'req_x',
        data: { id: first.id, title: 'x' },
      }),
    ).not.toEqual([]);
    expect((await api.delete(`${base}/${first.id}`)).status).toBe(200);
    await jobsDone();
    expect((await api.delete(configPath)).status).toBe(200);
  });

  it('refuses what a group event cannot be, naming the rule; nothing is stored', async () => {
    const { organizer, base } = await groupConfiguration();
    const day = midnight(3);
    const when = { start_time: day + 10 * HOUR, end_time: day + 11 * HOUR };
    const refusals: [Record<string, unknown>, RegExp][] = [
      [{ calendar_id: 'work', title: 'x', when }, /primary calendar/],
      [{ calendar_id: 'primary', title: 'x', when: { start_time: when.end_time, end_time: when.start_time } }, /after/],
      [{ calendar_id: 'primary', title: 'x', when: { start_time: 1_000, end_time: 2_000 } }, /future/],
      [{ calendar_id: 'primary', title: 'x', when, capacity: 501 }, /capacity/],
      [{ calendar_id: 'primary', title: 'x', when, recurrence: ['RRULE:FREQ=WEEKLY'] }, /recurrence/],
    ];
    for (const [body, message] of refusals) {
      const response = await api.post(base, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error.message).toMatch(message);
    }
    expect((await api.get(base)).body.data).toEqual([]);
    expect(await eventsBetween(organizer.id, day, day + DAY)).toEqual([]);

    // A standard configuration has no group events; a group one takes no organizer confirmation, and keeps its type.
    const standard = await api.post(`/v3/grants/${organizer.id}/scheduling/configurations`, {
      participants: [{ email: organizer.email, is_organizer: true }],
      availability: { duration_minutes: 30 },
      event_booking: { title: 'Call' },
    });
    const standardBase = `/v3/grants/${organizer.id}/scheduling/configurations/${standard.body.data.id}/group-events`;
    const notGroup = await api.post(standardBase, { calendar_id: 'primary', title: 'x', when });
    expect(notGroup.status).toBe(400);
    expect(notGroup.body.error.message).toMatch(/not a group configuration/);
    const confirmation = await api.post(`/v3/grants/${organizer.id}/scheduling/configurations`, {
      type: 'group',
      participants: [{ email: organizer.email, is_organizer: true }],
      availability: { duration_minutes: 30 },
      event_booking: { title: 'Class', booking_type: 'organizer-confirmation' },
    });
    expect(confirmation.status).toBe(400);
    expect(confirmation.body.error.message).toMatch(/booking_type/);
    const retype = await api.put(`/v3/scheduling/configurations/${standard.body.data.id}`, { type: 'group' });
    expect(retype.status).toBe(400);
    expect(retype.body.error.message).toMatch(/cannot change/);

    // Another application reaches none of it.
    const other = await otherApi();
    expect((await other.get(base)).status).toBe(404);
  });
});

describe('seats', () => {
  it('are booked up to capacity: availability and the page show seats left, a full slot is 409, a cancel frees seats', async () => {
    const { config, base } = await groupConfiguration();
    const day = midnight(4);
    const start = day + 10 * HOUR;
    const event = await groupEvent(base, start, 3);

    expect(await slotsOf(config.id, day, day + DAY)).toEqual([
      expect.objectContaining({ start_time: start, event_id: event.id, seats_left: 3 }),
    ]);
    const ann = await book(config.id, start, 'Ann');
    expect(ann.status, ann.text).toBe(201);
    expect(ann.body.data).toMatchObject({ status: 'booked', event_id: event.id, title: 'Morning flow' });
    // A guest with one additional guest takes two seats: the last two.
    const bo = await book(config.id, start, 'Bo', { additional_guests: [{ email: 'bo2@guest.example.com' }] });
    expect(bo.status, bo.text).toBe(201);
    expect((await api.get(base)).body.data[0]).toMatchObject({ seats_booked: 3, seats_left: 0 });
    expect(await slotsOf(config.id, day, day + DAY)).toEqual([]);

    const full = await book(config.id, start, 'Cy');
    expect(full.status).toBe(409);
    expect(full.body.error.message).toMatch(/full: all 3 seats are booked/);

    const page = await guestApi().get(`/scheduling/${config.slug}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Group event');
    expect(page.text).toContain('seats left');

    const cancelled = await guestApi().request(
      'DELETE',
      `/v3/scheduling/bookings/${bo.body.data.booking_id}?configuration_id=${config.id}`,
      { body: { cancellation_reason: 'Cannot come' } },
    );
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.data.status).toBe('cancelled');
    expect(await slotsOf(config.id, day, day + DAY)).toEqual([expect.objectContaining({ seats_left: 2 })]);
    expect((await book(config.id, start, 'Cy')).status).toBe(201);

    // The organizer cannot lower the capacity under the seats booked.
    const lower = await api.put(`${base}/${event.id}`, { capacity: 1 });
    expect(lower.status).toBe(400);
    expect(lower.body.error.message).toMatch(/below the 2 seats/);

    expect((await bookingNotifications(config.id, 4)).map(([type]) => type).sort()).toEqual([
      'booking.cancelled',
      'booking.created',
      'booking.created',
      'booking.created',
    ]);
  });

  it('never overbooks: 20 concurrent bookings of the last 2 seats give exactly 2 bookings and 18 × 409', async () => {
    const { config, base } = await groupConfiguration();
    const start = midnight(5) + 11 * HOUR;
    const event = await groupEvent(base, start, 3);
    expect((await book(config.id, start, 'First')).status).toBe(201);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => book(config.id, start, `Racer${i}`)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(2);
    expect(statuses.filter((s) => s === 409)).toHaveLength(18);
    expect((await api.get(base)).body.data[0]).toMatchObject({ id: event.id, seats_booked: 3, seats_left: 0 });
  });

  it('moves with a group event, moves to another one, and is cancelled (booking.cancelled) when the event is deleted', async () => {
    const { organizer, config, base } = await groupConfiguration();
    const day = midnight(6);
    const event = await groupEvent(base, day + 9 * HOUR, 4);
    const other = await groupEvent(base, day + 17 * HOUR, 4, 'Evening flow');
    const ann = (await book(config.id, day + 9 * HOUR, 'Ann')).body.data;
    const bo = (await book(config.id, day + 9 * HOUR, 'Bo')).body.data;
    expect((await bookingNotifications(config.id, 2)).map(([type]) => type)).toEqual([
      'booking.created',
      'booking.created',
    ]);

    const moved = await api.put(`${base}/${event.id}`, {
      when: { start_time: day + 10 * HOUR, end_time: day + 11 * HOUR },
    });
    expect(moved.status, moved.text).toBe(200);
    for (const b of [ann, bo]) {
      const read = await guestApi().get(`/v3/scheduling/bookings/${b.booking_id}?configuration_id=${config.id}`);
      expect(read.body.data).toMatchObject({
        start_time: day + 10 * HOUR,
        end_time: day + 11 * HOUR,
        status: 'booked',
      });
    }
    expect((await bookingNotifications(config.id, 2)).map(([type]) => type)).toEqual([
      'booking.rescheduled',
      'booking.rescheduled',
    ]);

    // Ann moves to the evening group event: a seat there, one given back here.
    const switched = await guestApi().patch(`/v3/scheduling/bookings/${ann.booking_id}?configuration_id=${config.id}`, {
      start_time: day + 17 * HOUR,
      end_time: day + 18 * HOUR,
      event_id: other.id,
      calendar_id: 'primary',
    });
    expect(switched.status, switched.text).toBe(200);
    expect(switched.body.data).toMatchObject({ event_id: other.id, title: 'Evening flow' });
    const seats = Object.fromEntries((await api.get(base)).body.data.map((e: GroupEvent) => [e.id, e.seats_booked]));
    expect(seats).toEqual({ [event.id]: 1, [other.id]: 1 });
    expect(await bookingNotifications(config.id, 1)).toEqual([['booking.rescheduled', ann.booking_id]]);

    expect((await api.delete(`${base}/${event.id}`)).status).toBe(200);
    await jobsDone();
    const gone = await guestApi().get(`/v3/scheduling/bookings/${bo.booking_id}?configuration_id=${config.id}`);
    expect(gone.body.data).toMatchObject({ status: 'cancelled' });
    expect(await bookingNotifications(config.id, 1)).toEqual([['booking.cancelled', bo.booking_id]]);
    expect((await eventsBetween(organizer.id, day, day + DAY)).map((e) => e.id)).toEqual([other.id]);
    expect((await book(config.id, day + 10 * HOUR, 'Cy')).status).toBe(409);
  });
});

describe('deleting a group event', () => {
  it('is finished by its job, which goes on in a job of its own when time runs short, and is done once gone', async () => {
    // Prepare: a group event with three bookings, marked for deletion without its job (as a DELETE
    // leaves it when its job has yet to run).
    const { organizer, config, base } = await groupConfiguration();
    const day = midnight(8);
    const event = await groupEvent(base, day + 9 * HOUR, 5);
    const booked: { booking_id: string }[] = [];
    for (const guest of ['Ann', 'Bo', 'Cy']) booked.push((await book(config.id, day + 9 * HOUR, guest)).body.data);
    const record = (await getGroupEvent(config.id as ConfigurationId, event.id))!;
    expect(record.seats).toBe(3);
    const closing = { ...record, status: 'deleting' as const, version: record.version + 1 };
    expect(await updateGroupEvent(record, closing)).toBe(true);
    const job = { configuration_id: config.id, event_id: event.id };
    const statuses = async () =>
      Promise.all(
        booked.map(
          async (b) =>
            (await guestApi().get(`/v3/scheduling/bookings/${b.booking_id}?configuration_id=${config.id}`)).body.data
              .status,
        ),
      );

    // Act: a run with time for one booking, then one to the end, then one more.
    let checks = 0;
    const first = await runGroupEventDelete(job, () => checks++ >= 1);
    const afterFirst = await statuses();
    const second = await runGroupEventDelete(job, () => false);
    const third = await runGroupEventDelete(job, () => false);

    // Assess
    expect(first).toBe('more');
    expect(afterFirst.filter((s) => s === 'cancelled')).toHaveLength(1);
    expect([second, third]).toEqual(['done', 'done']);
    expect(await statuses()).toEqual(['cancelled', 'cancelled', 'cancelled']);
    expect(await getGroupEvent(config.id as ConfigurationId, event.id)).toBeUndefined();
    expect((await eventsBetween(organizer.id, day, day + DAY)).map((e) => e.id)).not.toContain(event.id);
    await jobsDone();
  });
});

describe("a seat's mails", () => {
  it('carry an invitation of the booking, its guests its attendees: REQUEST when booked and moved, CANCEL when the event goes', async () => {
    // Arrange
    const { organizer, base, config } = await groupConfiguration();
    const day = midnight(7);
    const event = await groupEvent(base, day + 9 * HOUR, 5);
    const name = `Dana${randomBytes(4).toString('hex')}`;
    const guest = `${name.toLowerCase()}@guest.example.com`;
    const invitations = async (count: number) => {
      await jobsDone();
      const sunk = await waitForSunk(guest);
      expect(sunk).toHaveLength(count);
      const parsed = await simpleParser(await sunkRaw(sunk[count - 1]!.id));
      const part = parsed.attachments.find((a) => a.contentType === 'text/calendar');
      expect(part, `${parsed.subject}: no calendar part`).toBeDefined();
      return { subject: parsed.subject, ics: part!.content.toString('utf8').replace(/\r\n[ \t]/g, '') };
    };

    // Act, assess: booked
    const booked = await book(config.id, day + 9 * HOUR, name, {
      additional_guests: [{ email: 'plus.one@guest.example.com' }],
    });
    expect(booked.status, booked.text).toBe(201);
    const uid = `UID:${booked.body.data.booking_id}@${organizer.email.split('@')[1]}`;
    const first = await invitations(1);
    expect(first.ics).toContain('METHOD:REQUEST');
    expect(first.ics).toContain(uid);
    expect(first.ics).toContain('SUMMARY:Morning flow');
    expect(first.ics).toContain('LOCATION:Studio 2');
    expect(first.ics).toMatch(new RegExp(`ATTENDEE;[^\\n]*PARTSTAT=ACCEPTED[^\\n]*:mailto:${guest}`, 'i'));
    expect(first.ics).toMatch(/ATTENDEE;[^\n]*:mailto:plus\.one@guest\.example\.com/i);
    expect(first.ics).toMatch(new RegExp(`ORGANIZER[^\\n]*:mailto:${organizer.email}`, 'i'));
    const sequence = (ics: string) => Number(/SEQUENCE:(\d+)/.exec(ics)![1]);

    // Moved with its group event
    expect(
      (await api.put(`${base}/${event.id}`, { when: { start_time: day + 10 * HOUR, end_time: day + 11 * HOUR } }))
        .status,
    ).toBe(200);
    const moved = await invitations(2);
    expect(moved.ics).toContain('METHOD:REQUEST');
    expect(moved.ics).toContain(uid);
    expect(moved.ics).toMatch(
      new RegExp(
        `DTSTART[^\\n]*:${new Date((day + 10 * HOUR) * 1000).toISOString().slice(0, 10).replace(/-/g, '')}T100000`,
      ),
    );
    expect(sequence(moved.ics)).toBeGreaterThan(sequence(first.ics));

    // Cancelled with it
    expect((await api.delete(`${base}/${event.id}`)).status).toBe(200);
    const cancelled = await invitations(3);
    expect(cancelled.ics).toContain('METHOD:CANCEL');
    expect(cancelled.ics).toContain(uid);
    expect(cancelled.ics).toContain('STATUS:CANCELLED');
    expect(sequence(cancelled.ics)).toBeGreaterThan(sequence(moved.ics));
  });
});

describe('validate-timeslot', () => {
  it('answers whether a group event can still be booked as last seen: 404 gone, 409 moved, resized or full', async () => {
    const { config, base } = await groupConfiguration();
    const start = midnight(7) + 10 * HOUR;
    const event = await groupEvent(base, start, 1);
    const path = `/v3/scheduling/configurations/${config.id}/group-events/validate-timeslot`;
    const seen = { calendar_id: 'primary', event_id: event.id, start_time: start, end_time: start + HOUR };

    const ok = await guestApi().post(path, seen);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data).toMatchObject({ event_id: event.id, capacity: 1, seats_left: 1 });
    expect(checkResponse('POST', path, new URLSearchParams(), 200, ok.body)).toEqual([]);

    const moved = await guestApi().post(path, { ...seen, start_time: start - HOUR, end_time: start });
    expect(moved.status).toBe(409);
    expect(moved.body.error.message).toMatch(/now runs from/);
    const resized = await guestApi().post(path, { ...seen, capacity: 5 });
    expect(resized.status).toBe(409);
    expect(resized.body.error.message).toMatch(/capacity is now 1/);
    expect((await book(config.id, start, 'Ann')).status).toBe(201);
    const full = await guestApi().post(path, seen);
    expect(full.status).toBe(409);
    expect(full.body.error.message).toMatch(/full/);
    const unknown = await guestApi().post(path, { ...seen, event_id: 'nope' });
    expect(unknown.status).toBe(404);
  });
});

describe('import-group-events', () => {
  it("offers existing events of the organizer's calendar as group events, and says why each other one is not", async () => {
    const { organizer, config } = await groupConfiguration();
    const day = midnight(8);
    const create = async (body: Record<string, unknown>) => {
      const response = await api.post(`/v3/grants/${organizer.id}/events?calendar_id=primary`, body);
      expect(response.status, response.text).toBe(201);
      return response.body.data.id as string;
    };
    const single = await create({
      title: 'Workshop',
      when: { start_time: day + 13 * HOUR, end_time: day + 15 * HOUR },
    });
    const weekly = await create({
      title: 'Weekly',
      when: { start_time: day + 16 * HOUR, end_time: day + 17 * HOUR },
      recurrence: ['RRULE:FREQ=WEEKLY;COUNT=3'],
    });
    const allDay = await create({
      title: 'Retreat',
      when: { date: new Date((day + DAY) * 1000).toISOString().slice(0, 10) },
    });

    const path = `/v3/scheduling/configurations/${config.id}/import-group-events`;
    const response = await api.post(path, [
      { calendar_id: 'primary', event_id: single, capacity: 2 },
      { calendar_id: 'primary', event_id: weekly },
      { calendar_id: 'primary', event_id: allDay },
      { calendar_id: 'primary', event_id: 'missing-event' },
      { calendar_id: 'primary', event_id: single },
    ]);
    expect(response.status, response.text).toBe(200);
    expect(checkResponse('POST', path, new URLSearchParams(), 200, response.body)).toEqual([]);
    expect(response.body.data.imported_events).toEqual([{ event_id: single }]);
    expect(response.body.data.import_failed).toEqual([
      { event_id: weekly, reason: expect.stringMatching(/Recurring/) },
      { event_id: allDay, reason: expect.stringMatching(/all-day/) },
      { event_id: 'missing-event', reason: expect.stringMatching(/No event/) },
      { event_id: single, reason: 'Event already imported' },
    ]);
    expect(await slotsOf(config.id, day, day + 2 * DAY)).toEqual([
      expect.objectContaining({ event_id: single, start_time: day + 13 * HOUR, seats_left: 2 }),
    ]);
    const booked = await guestApi().post(`/v3/scheduling/bookings?configuration_id=${config.id}`, {
      start_time: day + 13 * HOUR,
      end_time: day + 15 * HOUR,
      guest: { name: 'Dee', email: 'dee@guest.example.com' },
    });
    expect(booked.status, booked.text).toBe(201);
    expect(booked.body.data).toMatchObject({ event_id: single, title: 'Workshop' });
    expect(
      (
        await api.post(
          path,
          Array.from({ length: 21 }, () => ({ calendar_id: 'primary', event_id: single })),
        )
      ).status,
    ).toBe(400);
  });
});
