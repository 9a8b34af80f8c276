import type {
  CreateGroupEventBody,
  ImportGroupEventsBody,
  UpdateGroupEventBody,
  ValidateTimeslotBody,
} from '#schemas/scheduling';
import { zoneProblem } from '#shared/availability/engine';
import { buildCalendar } from '#shared/calendar/ical';
import { getGrant, type GrantRecord } from '#shared/db/grants';
import * as db from '#shared/db/group-events';
import type { GroupEventRecord } from '#shared/db/group-events';
import type { BookingRecord, ConfigurationRecord } from '#shared/db/scheduling';
import { getBooking, getConfiguration } from '#shared/db/scheduling';
import type { OutboxEntry } from '#shared/db/outbox';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { newId, parseId } from '#shared/ids';
import { booksOnPrimaryOnly } from '#shared/providers/organizer-calendars';
import { eventsOf } from '#shared/registries/events';
import { bookingEventUid, bookingNotification } from '#shared/scheduling/booking-events';
import { DEFAULTS } from '#shared/scheduling/configurations';
import { guestMail } from '#shared/scheduling/emails';
import { remindersJob } from '#shared/scheduling/reminders';
import { clock } from '#shared/time';
import { decodeOffsetCursor, encodeOffsetCursor } from '#shared/cursor';
import { pageSize } from '#shared/answer-limits';

/**
 * Group events: a configuration of `type: "group"` offers fixed slots, each an event on the
 * organizer's calendar (made, changed and deleted through the provider contract) with a capacity.
 * Guests book seats on a slot: a booking takes one seat, plus one per additional guest, in the
 * booking's own transaction, conditional on the seats still free (shared/db/group-events.ts), so
 * concurrent bookings never overbook. A group booking has no event of its own: its `event_id` is the
 * group event's, and its changes commit their `booking.*` notification, mails and reminders job
 * with it. Moving a group event moves its bookings (`booking.rescheduled` each); deleting one
 * cancels its bookings first (`booking.cancelled` each, the guests told), then the event.
 */

export const DEFAULT_CAPACITY = 10;
const SEAT_ATTEMPTS = 25;
const lower = (s: string) => s.trim().toLowerCase();

export const isGroup = (config: ConfigurationRecord) => config.type === 'group';
/** The seats a booking holds: its guest and each additional guest. */
export const seatsOf = (b: Pick<BookingRecord, 'additional_guests'>) => 1 + b.additional_guests.length;

export function requireGroup(config: ConfigurationRecord): void {
  if (!isGroup(config))
    throw new InvalidRequestError(
      `Configuration '${config.id}' is not a group configuration: group events need a configuration created with "type": "group"`,
    );
}

async function organizerOf(config: ConfigurationRecord): Promise<GrantRecord> {
  const grant = await getGrant(config.application_id, config.grant_id);
  if (!grant) throw new NotFoundError(`The organizer of configuration '${config.id}' no longer exists`);
  return grant;
}

export function groupEventView(r: GroupEventRecord) {
  return {
    id: r.event_id,
    object: 'group_event' as const,
    configuration_id: r.configuration_id,
    calendar_id: r.calendar_id,
    capacity: r.capacity,
    seats_booked: r.seats,
    seats_left: Math.max(0, r.capacity - r.seats),
    title: r.title,
    ...(r.description !== undefined ? { description: r.description } : {}),
    ...(r.location !== undefined ? { location: r.location } : {}),
    when: {
      start_time: r.start,
      end_time: r.end,
      ...(r.start_timezone ? { start_timezone: r.start_timezone } : {}),
      ...(r.end_timezone ? { end_timezone: r.end_timezone } : {}),
    },
    participants: r.participants,
    ...(r.conferencing ? { conferencing: r.conferencing } : {}),
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/** A live group event of the configuration; 404 for any other (or one being deleted). */
async function requireGroupEvent(config: ConfigurationRecord, eventId: string): Promise<GroupEventRecord> {
  const record = await db.getGroupEvent(config.id, eventId);
  if (!record || record.status !== 'active')
    throw new NotFoundError(`Group event '${eventId}' of configuration '${config.id}' not found`);
  return record;
}

/** The problems of a group event's calendar, time and zones (an Agent Account writes its primary calendar only). */
function problemsOf(
  organizer: GrantRecord,
  fields: { calendar_id: string; start: number; end: number; start_timezone?: string; end_timezone?: string },
): string[] {
  const problems: string[] = [];
  if (booksOnPrimaryOnly(organizer) && fields.calendar_id !== 'primary')
    problems.push(
      `an Agent Account organizer's group events are on its primary calendar: 'calendar_id' must be "primary"`,
    );
  if (fields.end <= fields.start) problems.push("'when.end_time' must be after 'when.start_time'");
  if (fields.start <= clock.nowSeconds()) problems.push("'when.start_time' must be in the future");
  for (const key of ['start_timezone', 'end_timezone'] as const) {
    const zone = fields[key];
    const problem = zone === undefined ? undefined : zoneProblem(`'when.${key}'`, zone);
    if (problem) problems.push(problem);
  }
  return problems;
}

const organizerParticipant = (organizer: GrantRecord) => ({
  email: organizer.email,
  ...(organizer.name ? { name: organizer.name } : {}),
  is_organizer: true,
});

/** The participants the provider event invites: everyone but the organizer. */
const invitees = (record: Pick<GroupEventRecord, 'participants'>, organizer: GrantRecord) =>
  record.participants
    .filter((p) => lower(p.email) !== lower(organizer.email))
    .map((p) => ({ email: p.email, ...(p.name ? { name: p.name } : {}) }));

const providerWhen = (r: Pick<GroupEventRecord, 'start' | 'end' | 'start_timezone' | 'end_timezone'>) => ({
  start_time: r.start,
  end_time: r.end,
  ...(r.start_timezone ? { start_timezone: r.start_timezone } : {}),
  ...(r.end_timezone ? { end_timezone: r.end_timezone } : {}),
});

// ---- create, list, update, delete ------------------------------------------------------------

export async function createGroupEvent(
  config: ConfigurationRecord,
  organizer: GrantRecord,
  body: CreateGroupEventBody,
) {
  requireGroup(config);
  const fields = {
    calendar_id: body.calendar_id,
    start: body.when.start_time,
    end: body.when.end_time,
    ...(body.when.start_timezone ? { start_timezone: body.when.start_timezone } : {}),
    ...(body.when.end_timezone ? { end_timezone: body.when.end_timezone } : {}),
  };
  const problems = problemsOf(organizer, fields);
  if (problems.length) throw new InvalidRequestError(problems.join('; '));
  const participants = body.participants?.length ? body.participants : [organizerParticipant(organizer)];
  const capacity = body.capacity ?? DEFAULT_CAPACITY;
  const event = await eventsOf(organizer).create(
    organizer,
    body.calendar_id,
    {
      title: body.title,
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.location !== undefined ? { location: body.location } : {}),
      when: providerWhen(fields),
      participants: invitees({ participants }, organizer),
      busy: true,
      capacity,
      ...(body.conferencing ? { conferencing: body.conferencing } : {}),
    },
    true,
  );
  const now = clock.nowSeconds();
  const record: GroupEventRecord = {
    application_id: config.application_id,
    configuration_id: config.id,
    grant_id: organizer.id,
    event_id: event.id,
    capacity,
    seats: 0,
    bookings: {},
    ...fields,
    title: body.title,
    ...(body.description !== undefined ? { description: body.description } : {}),
    ...(body.location !== undefined ? { location: body.location } : {}),
    participants,
    ...(body.conferencing ? { conferencing: body.conferencing as Record<string, unknown> } : {}),
    status: 'active',
    created_at: now,
    updated_at: now,
    version: 1,
  };
  await db.insertGroupEvent(record);
  return groupEventView(record);
}

/** A page of the configuration's group events by start time, optionally within `[start_time, end_time]`. */
export async function listGroupEvents(
  config: ConfigurationRecord,
  query: { calendar_id?: string; start_time?: number; end_time?: number; limit?: number; page_token?: string },
) {
  requireGroup(config);
  const offset = query.page_token ? decodeOffsetCursor(query.page_token, 'group-events') : 0;
  const limit = pageSize(query.limit);
  const all = (await db.listGroupEvents(config.id)).filter(
    (r) =>
      r.status === 'active' &&
      (query.calendar_id === undefined || r.calendar_id === query.calendar_id) &&
      (query.start_time === undefined || r.end > query.start_time) &&
      (query.end_time === undefined || r.start < query.end_time),
  );
  return {
    items: all.slice(offset, offset + limit).map(groupEventView),
    nextCursor: offset + limit < all.length ? encodeOffsetCursor('group-events', offset + limit) : undefined,
  };
}

export async function updateGroupEvent(
  config: ConfigurationRecord,
  organizer: GrantRecord,
  eventId: string,
  body: UpdateGroupEventBody,
) {
  requireGroup(config);
  const current = await requireGroupEvent(config, eventId);
  if (body.calendar_id !== undefined && body.calendar_id !== current.calendar_id)
    throw new InvalidRequestError(
      `A group event stays on its calendar ('${current.calendar_id}'): create a new group event on '${body.calendar_id}' instead`,
    );
  const next: GroupEventRecord = {
    ...current,
    ...(body.capacity !== undefined ? { capacity: body.capacity } : {}),
    ...(body.title !== undefined ? { title: body.title } : {}),
    ...(body.description !== undefined ? { description: body.description } : {}),
    ...(body.location !== undefined ? { location: body.location } : {}),
    ...(body.participants?.length ? { participants: body.participants } : {}),
    ...(body.conferencing ? { conferencing: body.conferencing as Record<string, unknown> } : {}),
    ...(body.when
      ? {
          start: body.when.start_time,
          end: body.when.end_time,
          start_timezone: body.when.start_timezone ?? current.start_timezone,
          end_timezone: body.when.end_timezone ?? current.end_timezone,
        }
      : {}),
    updated_at: clock.nowSeconds(),
    version: current.version + 1,
  };
  const problems = body.when ? problemsOf(organizer, next) : [];
  if (next.capacity < current.seats)
    problems.push(`'capacity' ${next.capacity} is below the ${current.seats} seats already booked`);
  if (problems.length) throw new InvalidRequestError(problems.join('; '));
  await eventsOf(organizer).update(
    organizer,
    current.event_id,
    current.calendar_id,
    {
      ...(body.title !== undefined ? { title: body.title } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.location !== undefined ? { location: body.location } : {}),
      ...(body.when ? { when: providerWhen(next) } : {}),
      ...(body.participants?.length ? { participants: invitees(next, organizer) } : {}),
      ...(body.conferencing ? { conferencing: body.conferencing } : {}),
      ...(body.capacity !== undefined ? { capacity: body.capacity } : {}),
    },
    true,
  );
  if (!(await db.updateGroupEvent(current, next)))
    throw new ConflictError(
      `Group event '${eventId}' was changed by another request, or more seats were booked meanwhile than 'capacity' allows; read it again`,
    );
  if (next.start !== current.start || next.end !== current.end) await moveBookings(config, next);
  return groupEventView((await db.getGroupEvent(config.id, eventId)) ?? next);
}

/**
 * Brings every booking of a group event to its time, each in its own transaction with its
 * `booking.rescheduled`, the guest's mail and its reminders: a booking already there is left alone,
 * so a repeated PUT finishes what a crash left.
 */
async function moveBookings(config: ConfigurationRecord, event: GroupEventRecord): Promise<void> {
  const latest = (await db.getGroupEvent(config.id, event.event_id)) ?? event;
  for (const id of Object.keys(latest.bookings)) {
    for (let attempt = 0; attempt < SEAT_ATTEMPTS; attempt++) {
      const parsed = parseId('booking', id);
      const b = parsed ? await getBooking(parsed) : undefined;
      if (!b || b.status === 'cancelled' || (b.start === latest.start && b.end === latest.end)) break;
      const moved: BookingRecord = {
        ...b,
        start: latest.start,
        end: latest.end,
        updated_at: clock.nowSeconds(),
        version: b.version + 1,
      };
      const outbox = rescheduledOutbox(config, moved);
      if ((await db.updateSeatBooking(b, moved, seatsOf(b), outbox)) === 'ok') break;
    }
  }
}

/** Cancels a group booking and gives its seats back, with its `booking.cancelled`, the guest's mail and its reminders cleared. */
export async function cancelSeat(
  config: ConfigurationRecord,
  b: BookingRecord,
  reason: string | undefined,
): Promise<BookingRecord> {
  const next: BookingRecord = {
    ...b,
    status: 'cancelled',
    event_status: 'synced',
    ...(reason !== undefined ? { cancellation_reason: reason } : {}),
    updated_at: clock.nowSeconds(),
    version: b.version + 1,
  };
  const outbox = [
    bookingNotification(next, 'booking.cancelled'),
    ...guestMail(config, next, 'cancelled', { ics: seatInvitation(next, 'CANCEL') }),
    remindersJob(next),
  ];
  let result = await db.updateSeatBooking(b, next, seatsOf(b), outbox, { release: true });
  // The group event no longer lists the booking (it was taken off it): the booking alone is cancelled.
  if (result === 'seats') result = await db.updateSeatBooking(b, next, seatsOf(b), outbox);
  if (result !== 'ok') throw new ConflictError(`Booking '${b.id}' was changed by another request; read it again`);
  return next;
}

/**
 * Deletes a group event. It takes no more bookings from this request on, and the job committed with
 * that change (`group-event-delete`, runGroupEventDelete) cancels its bookings, deletes its event,
 * then the record: a full group event's bookings and their mails are more than a request has time
 * for, and a crash part way leaves the job to finish. A repeated DELETE commits the job again.
 */
export async function deleteGroupEvent(config: ConfigurationRecord, eventId: string) {
  requireGroup(config);
  const record = await db.getGroupEvent(config.id, eventId);
  if (!record) throw new NotFoundError(`Group event '${eventId}' of configuration '${config.id}' not found`);
  const closing: GroupEventRecord = {
    ...record,
    status: 'deleting',
    updated_at: clock.nowSeconds(),
    version: record.version + 1,
  };
  const job: OutboxEntry = {
    job: { kind: 'group-event-delete', configuration_id: config.id, event_id: eventId },
    id: newId('job'),
    applicationId: config.application_id,
  };
  if (!(await db.updateGroupEvent(record, closing, [job])))
    throw new ConflictError(`Group event '${eventId}' was changed by another request; try again`);
}

/**
 * The `group-event-delete` job: cancels the bookings the group event still holds (each guest told,
 * `booking.cancelled` each), deletes its event from the organizer's calendar (gone already is fine,
 * as is an organizer grant deleted since), then the record. `more` when time ran short first: the
 * caller queues the job again, and it goes on from what is left.
 */
export async function runGroupEventDelete(
  job: { configuration_id: string; event_id: string },
  outOfTime: () => boolean,
): Promise<'done' | 'more'> {
  const configId = parseId('configuration', job.configuration_id);
  const config = configId && (await getConfiguration(configId));
  const record = configId && (await db.getGroupEvent(configId, job.event_id));
  if (!config || !record || record.status !== 'deleting') return 'done';
  for (const id of Object.keys(record.bookings)) {
    if (outOfTime()) return 'more';
    const parsed = parseId('booking', id);
    const b = parsed ? await getBooking(parsed) : undefined;
    if (b && b.status !== 'cancelled') await cancelSeat(config, b, 'The organizer cancelled this group event');
  }
  const organizer = await getGrant(config.application_id, record.grant_id);
  if (organizer) {
    try {
      await eventsOf(organizer).delete(organizer, record.event_id, record.calendar_id, true);
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
    }
  }
  const last = await db.getGroupEvent(config.id, job.event_id);
  // Seats still held: a booking that raced the cancels; the job's retry cancels it.
  if (last && !(await db.deleteGroupEvent(last)))
    throw new Error(`group event ${job.event_id} still holds seats after its bookings were cancelled`);
  return 'done';
}

// ---- seats -----------------------------------------------------------------------------------

const pause = (attempt: number) =>
  new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * Math.min(attempt + 1, 5)));

/** The live group event a booking asks for: by `event_id`, or the one at its time with room (409 when none). */
async function eventFor(
  config: ConfigurationRecord,
  start: number,
  end: number,
  seats: number,
  eventId: string | undefined,
): Promise<GroupEventRecord> {
  const candidates = eventId
    ? [await db.getGroupEvent(config.id, eventId)].filter((r): r is GroupEventRecord => r !== undefined)
    : await db.listGroupEvents(config.id);
  const atTime = candidates.filter((r) => r.status === 'active' && r.start === start && r.end === end);
  if (!atTime.length)
    throw new ConflictError(
      `No group event of configuration '${config.id}'${eventId ? ` with ID '${eventId}'` : ''} runs from ${start} to ${end}; ask GET /v3/scheduling/availability for the group events open to booking`,
    );
  const open = atTime.find((r) => r.capacity - r.seats >= seats);
  if (!open) {
    const best = atTime[0]!;
    const left = Math.max(0, best.capacity - best.seats);
    throw new ConflictError(
      left === 0
        ? `The group event '${best.event_id}' is full: all ${best.capacity} seats are booked`
        : `The group event '${best.event_id}' has ${left} seat${left === 1 ? '' : 's'} left; this booking needs ${seats} (the guest and each additional guest)`,
    );
  }
  return open;
}

/**
 * A seat booking's own invitation (iMIP REQUEST, or CANCEL), carried by its guest's mails: the slot
 * under the booking's UID, with the booking's guests as its attendees (accepted: they booked it). The
 * group event on the organizer's calendar does not list its guests (they would see each other), so
 * its own iCalendar would not do. SEQUENCE is the booking's version: each change supersedes the last.
 */
export function seatInvitation(b: BookingRecord, method: 'REQUEST' | 'CANCEL'): string {
  return buildCalendar(method, [
    {
      uid: bookingEventUid(b),
      sequence: b.version,
      title: b.title,
      ...(b.description !== undefined ? { description: b.description } : {}),
      ...(b.location !== undefined ? { location: b.location } : {}),
      when: {
        object: 'timespan',
        start_time: b.start,
        end_time: b.end,
        start_timezone: b.timezone,
        end_timezone: b.timezone,
      },
      status: method === 'CANCEL' ? 'cancelled' : 'confirmed',
      busy: true,
      organizer: b.organizer,
      participants: [b.guest, ...b.additional_guests].map((g) => ({
        email: g.email,
        ...(g.name ? { name: g.name } : {}),
        status: 'yes' as const,
      })),
      created_at: b.created_at,
      updated_at: b.updated_at,
    },
  ]);
}

/** What a seat booking moved to another time commits with it: its notification, the guest's mail, its reminders moved. */
const rescheduledOutbox = (config: ConfigurationRecord, moved: BookingRecord) => [
  bookingNotification(moved, 'booking.rescheduled'),
  ...guestMail(config, moved, 'rescheduled', { ics: seatInvitation(moved, 'REQUEST') }),
  remindersJob(moved),
];

/** Checks a booking's start against the configuration's notice and days-ahead rules (group bookings and, after their length, bookings of free time). */
export function checkGroupTime(config: ConfigurationRecord, start: number): void {
  const now = clock.nowSeconds();
  const notice = config.scheduler.min_booking_notice ?? DEFAULTS.min_booking_notice;
  if (start < now + notice * 60)
    throw new InvalidRequestError(`Bookings must start at least ${notice} minutes from now (min_booking_notice)`);
  const days = config.scheduler.available_days_in_future ?? DEFAULTS.available_days_in_future;
  if (start > now + days * 86_400)
    throw new InvalidRequestError(`Bookings can be made at most ${days} days ahead (available_days_in_future)`);
}

/**
 * Books seats on the group event at the booking's time: commits the booking with its seats, its
 * `booking.created`, the guest's mail and its reminders job, in one transaction. 409 when the
 * event is full (or gone); retried while other bookings of the same event commit first.
 */
export async function bookSeats(
  config: ConfigurationRecord,
  draft: BookingRecord,
  eventId: string | undefined,
  manage: string | undefined,
): Promise<BookingRecord> {
  const seats = seatsOf(draft);
  for (let attempt = 0; attempt < SEAT_ATTEMPTS; attempt++) {
    const event = await eventFor(config, draft.start, draft.end, seats, eventId);
    const record: BookingRecord = {
      ...draft,
      event_id: event.event_id,
      calendar_id: event.calendar_id,
      title: event.title,
      ...(event.description !== undefined ? { description: event.description } : {}),
      ...(event.location !== undefined ? { location: event.location } : {}),
      event_status: 'synced',
    };
    const outbox = [
      bookingNotification(record, 'booking.created'),
      ...guestMail(config, record, 'confirmed', {
        ics: seatInvitation(record, 'REQUEST'),
        links: manage ? { manage } : undefined,
      }),
      remindersJob(record),
    ];
    const result = await db.writeSeatBooking(record, event, seats, outbox);
    if (result === 'ok') return record;
    if (result === 'busy') await pause(attempt);
  }
  throw new ConflictError('Too many bookings of this group event at once; try again');
}

/** Moves a group booking to another group event (seats taken there, given back here), with `booking.rescheduled`. */
export async function moveSeats(
  config: ConfigurationRecord,
  b: BookingRecord,
  start: number,
  end: number,
  eventId: string | undefined,
): Promise<BookingRecord> {
  checkGroupTime(config, start);
  const seats = seatsOf(b);
  for (let attempt = 0; attempt < SEAT_ATTEMPTS; attempt++) {
    const target = await eventFor(config, start, end, seats, eventId);
    if (target.event_id === b.event_id)
      throw new ConflictError(`Booking '${b.id}' is already on group event '${b.event_id}'`);
    const moved: BookingRecord = {
      ...b,
      event_id: target.event_id,
      calendar_id: target.calendar_id,
      title: target.title,
      start: target.start,
      end: target.end,
      updated_at: clock.nowSeconds(),
      version: b.version + 1,
    };
    const outbox = rescheduledOutbox(config, moved);
    const result = await db.updateSeatBooking(b, moved, seats, outbox, { release: true, to: target });
    if (result === 'ok') return moved;
    if (result === 'booking')
      throw new ConflictError(`Booking '${b.id}' was changed by another request; read it again`);
    if (result === 'busy') await pause(attempt);
  }
  throw new ConflictError('Too many bookings of this group event at once; try again');
}

/** Availability of a group configuration: its group events in the window with seats left, within its notice and days-ahead rules. */
export async function groupAvailability(config: ConfigurationRecord, start: number, end: number) {
  const now = clock.nowSeconds();
  const from = Math.max(start, now + (config.scheduler.min_booking_notice ?? DEFAULTS.min_booking_notice) * 60);
  const to = Math.min(
    end,
    now + (config.scheduler.available_days_in_future ?? DEFAULTS.available_days_in_future) * 86_400,
  );
  const organizer = config.participants.find((p) => p.is_organizer === true) ?? config.participants[0];
  const events = (await db.listGroupEvents(config.id)).filter(
    (r) => r.status === 'active' && r.start >= from && r.start < to && r.end <= end && r.capacity > r.seats,
  );
  return {
    time_slots: events.map((r) => ({
      emails: organizer ? [organizer.email] : [],
      start_time: r.start,
      end_time: r.end,
      event_id: r.event_id,
      calendar_id: r.calendar_id,
      capacity: r.capacity,
      seats_left: r.capacity - r.seats,
    })),
    order: [] as string[],
  };
}

// ---- validate-timeslot and import ------------------------------------------------------------

/** Whether a group event slot can still be booked as the client last saw it: 404 when gone, 409 naming what changed. */
export async function validateTimeslot(config: ConfigurationRecord, body: ValidateTimeslotBody) {
  requireGroup(config);
  const event = await requireGroupEvent(config, body.event_id);
  const changes: string[] = [];
  if (event.calendar_id !== body.calendar_id) changes.push(`it is on calendar '${event.calendar_id}'`);
  if (event.start !== body.start_time || event.end !== body.end_time)
    changes.push(`it now runs from ${event.start} to ${event.end}`);
  if (body.capacity !== undefined && body.capacity !== event.capacity)
    changes.push(`its capacity is now ${event.capacity}`);
  if (changes.length) throw new ConflictError(`Group event '${event.event_id}' changed: ${changes.join('; ')}`);
  const notice = config.scheduler.min_booking_notice ?? DEFAULTS.min_booking_notice;
  if (event.start < clock.nowSeconds() + notice * 60)
    throw new ConflictError(
      `Group event '${event.event_id}' can no longer be booked: it starts in less than ${notice} minutes (min_booking_notice)`,
    );
  if (event.seats >= event.capacity)
    throw new ConflictError(`The group event '${event.event_id}' is full: all ${event.capacity} seats are booked`);
  return {
    event_id: event.event_id,
    start_time: event.start,
    end_time: event.end,
    capacity: event.capacity,
    seats_left: event.capacity - event.seats,
  };
}

/**
 * Offers existing events of the organizer's calendar as group events (up to 20 a request). Each
 * event is read through the provider; one that is missing, recurring, all-day, cancelled, already
 * started or already imported is listed in `import_failed` with the reason, and the others imported.
 */
export async function importGroupEvents(config: ConfigurationRecord, body: ImportGroupEventsBody) {
  requireGroup(config);
  const organizer = await organizerOf(config);
  const imported: { event_id: string }[] = [];
  const failed: { event_id: string; reason: string }[] = [];
  for (const item of body) {
    const reason = await importOne(config, organizer, item);
    if (reason) failed.push({ event_id: item.event_id, reason });
    else imported.push({ event_id: item.event_id });
  }
  return { imported_events: imported, import_failed: failed };
}

async function importOne(
  config: ConfigurationRecord,
  organizer: GrantRecord,
  item: ImportGroupEventsBody[number],
): Promise<string | undefined> {
  if (booksOnPrimaryOnly(organizer) && item.calendar_id !== 'primary')
    return `An Agent Account organizer's group events are on its primary calendar: 'calendar_id' must be "primary"`;
  let event;
  try {
    event = await eventsOf(organizer).get(organizer, item.event_id, item.calendar_id);
  } catch (error) {
    if (error instanceof NotFoundError) return `No event '${item.event_id}' on calendar '${item.calendar_id}'`;
    throw error;
  }
  if (event.recurrence?.length) return 'Recurring events cannot be group events: import single events';
  if (event.status === 'cancelled') return 'The event is cancelled';
  const when = event.when as { start_time?: number; end_time?: number; start_timezone?: string; end_timezone?: string };
  if (when.start_time === undefined || when.end_time === undefined)
    return 'Only events with a start and end time can be group events (not all-day events)';
  if (when.start_time <= clock.nowSeconds()) return 'The event has already started';
  const now = clock.nowSeconds();
  const record: GroupEventRecord = {
    application_id: config.application_id,
    configuration_id: config.id,
    grant_id: organizer.id,
    event_id: event.id,
    calendar_id: item.calendar_id,
    capacity: item.capacity ?? DEFAULT_CAPACITY,
    seats: 0,
    bookings: {},
    start: when.start_time,
    end: when.end_time,
    ...(when.start_timezone ? { start_timezone: when.start_timezone } : {}),
    ...(when.end_timezone ? { end_timezone: when.end_timezone } : {}),
    title: event.title ?? config.event_booking.title,
    ...(event.description ? { description: event.description } : {}),
    ...(event.location ? { location: event.location } : {}),
    participants: item.participants?.length ? item.participants : [organizerParticipant(organizer)],
    status: 'active',
    created_at: now,
    updated_at: now,
    version: 1,
  };
  if (!(await db.insertGroupEvent(record))) return 'Event already imported';
  return undefined;
}
