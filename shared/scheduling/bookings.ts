import { randomBytes } from 'node:crypto';
import type {
  ConfirmBookingBody,
  CreateBookingBody,
  CreateBookingQuery,
  RescheduleBookingBody,
} from '#schemas/scheduling';
import { zoneProblem, type EngineResult } from '#shared/availability/engine';
import { availabilityOf, checkAvailabilityRequest, type ResolvedParticipant } from '#shared/availability/service';
import { grantNamed } from '#shared/grants/resolve';
import { getGrant, type GrantRecord } from '#shared/db/grants';
import type { OutboxEntry } from '#shared/db/outbox';
import * as db from '#shared/db/scheduling';
import type { BookingRecord, ConfigurationRecord } from '#shared/db/scheduling';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { newId } from '#shared/ids';
import { logger } from '#shared/logger';
import { eventsOf } from '#shared/registries/events';
import { authorityOf, requireBooking } from '#shared/scheduling/access';
import { pendingChange, runBookingEvent, type BookingEventOutcome } from '#shared/scheduling/booking-events';
import { bookingView } from '#shared/scheduling/view';
import { bookingReference, saltMatches, sha256 } from '#shared/scheduling/reference';
import { DEFAULTS } from '#shared/scheduling/configurations';
import {
  bookSeats,
  cancelSeat,
  checkGroupTime,
  groupAvailability,
  isGroup,
  moveSeats,
} from '#shared/scheduling/group-events';
import { clock } from '#shared/time';

/**
 * Bookings (spec "Scheduler: bookings", seven steps). The slot is checked against the
 * configuration's availability, then every change commits ONE transaction: the booking record, the
 * organizer's slot locks (one conditional write of every UTC day the booking touches, so two
 * overlapping bookings can never both commit, whatever configuration they came through; a move
 * releases the days it leaves, a cancel all of them) and a `booking-event` job, with the booking's
 * `event_status: 'pending'`. The job does the provider step (create, move, confirm or cancel the
 * event on the organizer's calendar; the event's iMIP invitation is the guest's confirmation) and
 * commits the booking's event, its `booking.*` notification and mails (shared/scheduling/booking-events.ts).
 *
 * The request runs that step inline right after its transaction, so its answer normally has the
 * event (`event_id`, `event_status: 'synced'`). When the inline run fails transiently the answer is
 * the committed booking (`event_status: 'pending'`; a new booking's `event_id` empty) and the job
 * finishes it; the notification tells when. When the provider refuses for good, a new booking is
 * cancelled and its time freed (the request answers the provider's error), and a change is answered
 * with `event_status: 'failed'` and `event_error`. A booking whose step is pending takes no further
 * change (409) until its job has run.
 *
 * A group configuration's bookings take seats on its group events instead of time
 * (shared/scheduling/group-events.ts): same checks of the guest and fields, then the seats and the
 * notification in one transaction, and no event of their own.
 */

const LOCK_ATTEMPTS = 25;
const lower = (s: string) => s.trim().toLowerCase();

// ---- availability ----------------------------------------------------------------------------

async function organizerOf(config: ConfigurationRecord): Promise<GrantRecord> {
  const grant = await getGrant(config.application_id, config.grant_id);
  if (!grant) throw new NotFoundError(`The organizer of configuration '${config.id}' no longer exists`);
  return grant;
}

/** The participants whose calendars decide availability, each resolved with the authority the configuration was saved with. */
async function availabilityParticipants(
  config: ConfigurationRecord,
  organizer: GrantRecord,
): Promise<ResolvedParticipant[]> {
  const authority = authorityOf(config);
  const deciding = config.participants.filter(
    (p) => p.is_organizer === true || lower(p.email) === lower(organizer.email) || p.availability,
  );
  return Promise.all(
    deciding.map(async (p): Promise<ResolvedParticipant> => {
      const isOrganizer = p.is_organizer === true || lower(p.email) === lower(organizer.email);
      const grant = isOrganizer ? organizer : await grantNamed(authority, p.email, p.grant_id);
      if (!grant)
        throw new ConflictError(
          `Participant ${p.email} of configuration '${config.id}' is no longer a grant of its application`,
        );
      return {
        email: p.email,
        grant,
        calendar_ids: p.availability?.calendar_ids,
        open_hours: p.availability?.open_hours,
      };
    }),
  );
}

/**
 * Slots of a configuration in a window, within its notice and days-in-future rules. `free`: a
 * booking's own time, counted free while it moves; `organizer`: the grant when the caller has it.
 */
export async function configurationAvailability(
  config: ConfigurationRecord,
  start: number,
  end: number,
  options: { free?: { start: number; end: number } | undefined; organizer?: GrantRecord } = {},
): Promise<EngineResult> {
  if (isGroup(config)) return groupAvailability(config, start, end);
  const { free } = options;
  const rules = config.availability.availability_rules ?? {};
  const now = clock.nowSeconds();
  const request = {
    start_time: start,
    end_time: end,
    duration_minutes: config.availability.duration_minutes,
    interval_minutes: config.availability.interval_minutes,
    round_to: config.availability.round_to ?? DEFAULTS.round_to,
    method: rules.availability_method ?? DEFAULTS.method,
    buffer: rules.buffer,
    default_open_hours: rules.default_open_hours,
    round_robin_group_id: rules.round_robin_group_id,
    tentative_as_busy: rules.tentative_as_busy,
  };
  checkAvailabilityRequest({ ...request, participants: [] });
  const from = Math.max(start, now + (config.scheduler.min_booking_notice ?? DEFAULTS.min_booking_notice) * 60);
  const to = Math.min(
    end,
    now + (config.scheduler.available_days_in_future ?? DEFAULTS.available_days_in_future) * 86_400,
  );
  if (to - from < config.availability.duration_minutes * 60) return { time_slots: [], order: [] };
  const participants = await availabilityParticipants(config, options.organizer ?? (await organizerOf(config)));
  return availabilityOf({
    ...request,
    start_time: from,
    end_time: to,
    participants,
    ...(free ? { free: participants.map((p) => ({ email: p.email, ...free })) } : {}),
  });
}

// ---- create ----------------------------------------------------------------------------------

function checkTime(config: ConfigurationRecord, start: number, end: number): void {
  const minutes = config.availability.duration_minutes;
  if (end - start !== minutes * 60)
    throw new InvalidRequestError(
      `'end_time' must be 'start_time' + ${minutes} minutes (the configuration's duration); got ${(end - start) / 60} minutes`,
    );
  checkGroupTime(config, start);
}

async function requireSlot(
  config: ConfigurationRecord,
  organizer: GrantRecord,
  start: number,
  end: number,
  free?: { start: number; end: number },
): Promise<void> {
  const { time_slots } = await configurationAvailability(config, start, end, { free, organizer });
  if (!time_slots.some((s) => s.start_time === start && s.end_time === end)) {
    throw new ConflictError(
      `The slot from ${start} to ${end} is not available (taken, outside open hours, or not on a slot boundary); ask GET /v3/scheduling/availability for the free slots`,
    );
  }
}

/** Commits `record` with its slot locks (moving them from `previous`) and `outbox`; 409 when another booking holds overlapping time. */
async function lockSlot(
  record: BookingRecord,
  outbox: readonly OutboxEntry[],
  previous?: BookingRecord,
): Promise<void> {
  for (let attempt = 0; attempt < LOCK_ATTEMPTS; attempt++) {
    const days = await db.bookedDays(record.grant_id, db.daysOf(record.start, record.end));
    for (const day of days) {
      for (const [id, [s, e]] of Object.entries(day.slots)) {
        if (id !== record.id && s < record.end && record.start < e)
          throw new ConflictError(
            `The slot from ${record.start} to ${record.end} was just booked by someone else; choose another slot`,
          );
      }
    }
    if (await db.writeBookingWithLocks(record, days, outbox, previous)) return;
  }
  throw new ConflictError('Too many bookings for this organizer at once; try again');
}

const timezoneOf = (config: ConfigurationRecord, organizer: GrantRecord, given: string | undefined): string => {
  const organizerEntry = config.participants.find((p) => lower(p.email) === lower(organizer.email));
  const zone = given ?? config.event_booking.timezone ?? organizerEntry?.timezone ?? 'UTC';
  const problem = zoneProblem("'timezone'", zone);
  if (problem) throw new InvalidRequestError(problem);
  return zone;
};

/** Where the booking pages are served (for links in emails); undefined when unknown. */
export type Origin = string | undefined;

/** The booking page link a reference opens (none without a slug or a known origin). */
const pageLink = (config: ConfigurationRecord, origin: Origin, reference: string) =>
  config.slug && origin ? `${origin}/scheduling/${config.slug}/booking/${reference}` : undefined;

export async function createBooking(
  config: ConfigurationRecord,
  query: CreateBookingQuery,
  body: CreateBookingBody,
  origin?: Origin,
) {
  const organizer = await organizerOf(config);
  if (isGroup(config)) checkGroupTime(config, body.start_time);
  else checkTime(config, body.start_time, body.end_time);
  const timezone = timezoneOf(config, organizer, query.timezone ?? body.timezone);
  const known = new Map(config.participants.map((p) => [lower(p.email), p]));
  const unknown = (body.participants ?? []).filter((p) => !known.has(lower(p.email))).map((p) => p.email);
  if (unknown.length)
    throw new InvalidRequestError(
      `'participants' must be participants of the configuration; these are not: ${unknown.join(', ')}`,
    );
  const fields = body.additional_fields ?? {};
  const missing = Object.entries(config.scheduler.additional_fields ?? {})
    .filter(([key, f]) => f.required === true && !String(fields[key] ?? '').trim())
    .map(([key]) => key);
  if (missing.length)
    throw new InvalidRequestError(
      `'additional_fields' must fill the configuration's required fields: ${missing.join(', ')}`,
    );
  const chosen = body.participants?.length
    ? config.participants.filter((p) => body.participants!.some((b) => lower(b.email) === lower(p.email)))
    : config.participants;
  if (!isGroup(config)) await requireSlot(config, organizer, body.start_time, body.end_time);

  const now = clock.nowSeconds();
  const salt = randomBytes(18).toString('base64url');
  const pending = config.event_booking.booking_type === 'organizer-confirmation';
  const confirmSalt = pending ? randomBytes(18).toString('base64url') : undefined;
  const record: BookingRecord = {
    id: newId('booking'),
    application_id: config.application_id,
    configuration_id: config.id,
    grant_id: organizer.id,
    calendar_id:
      config.participants.find((p) => lower(p.email) === lower(organizer.email))?.booking?.calendar_id ?? 'primary',
    event_id: '',
    status: pending ? 'pending' : 'booked',
    start: body.start_time,
    end: body.end_time,
    title: config.event_booking.title,
    ...(config.event_booking.description !== undefined ? { description: config.event_booking.description } : {}),
    ...(config.event_booking.location !== undefined ? { location: config.event_booking.location } : {}),
    organizer: { email: organizer.email, ...(organizer.name ? { name: organizer.name } : {}) },
    guest: { email: lower(body.guest.email), name: body.guest.name },
    additional_guests: (body.additional_guests ?? []).map((g) => ({ ...g, email: lower(g.email) })),
    participants: chosen.map((p) => ({ email: p.email })),
    timezone,
    email_language: body.email_language ?? 'en',
    additional_fields: body.additional_fields ?? {},
    salt_hash: sha256(salt),
    ...(confirmSalt ? { confirm_salt_hash: sha256(confirmSalt) } : {}),
    created_at: now,
    updated_at: now,
    version: 1,
  };
  const reference = bookingReference(config.id, record.id, salt);
  const manage = pageLink(config, origin, reference);
  if (isGroup(config)) return bookingView(await bookSeats(config, record, body.event_id, manage), reference);
  const confirm = confirmSalt
    ? confirmLink(config, origin, bookingReference(config.id, record.id, confirmSalt))
    : undefined;
  const change = pendingChange(record, 'create', {
    links: { ...(manage ? { manage } : {}), ...(confirm ? { confirm } : {}) },
  });
  await lockSlot(change.record, [change.entry]);
  return bookingView(await settle(change, config, organizer), reference);
}

/**
 * The inline run of a committed change's provider step. A transient failure leaves the change to its
 * job: the answer is the booking as committed (`event_status: 'pending'`). A refused create is the
 * request's error (its booking is cancelled, its time free); a refused change is answered as recorded.
 */
async function settle(
  change: ReturnType<typeof pendingChange>,
  config: ConfigurationRecord,
  organizer: GrantRecord,
): Promise<BookingRecord> {
  let outcome: BookingEventOutcome;
  try {
    outcome = await runBookingEvent(change.job, { inline: { booking: change.record, config, organizer } });
  } catch (error) {
    logger.warn('booking event left to its job', {
      booking_id: change.record.id,
      step: change.record.event_step,
      error: error instanceof Error ? error.message : String(error),
    });
    return change.record;
  }
  if (outcome.refused && change.record.event_step === 'create') throw outcome.refused;
  return outcome.booking ?? change.record;
}

/** The organizer's link to confirm or decline: the configuration's own page for it, or ours. */
function confirmLink(config: ConfigurationRecord, origin: Origin, reference: string): string | undefined {
  const own = config.scheduler.organizer_confirmation_url;
  if (own) return `${own}${own.includes('?') ? '&' : '?'}booking_reference=${encodeURIComponent(reference)}`;
  return pageLink(config, origin, reference);
}

/** The booking's event as an iMIP calendar part, through the organizer's provider. */
const icsOf = (organizer: GrantRecord, b: BookingRecord, method: 'REQUEST' | 'CANCEL') =>
  eventsOf(organizer).ics(organizer, b.event_id, b.calendar_id, method);

// ---- read, confirm, reschedule, cancel -------------------------------------------------------

export async function getBooking(config: ConfigurationRecord, id: string) {
  return bookingView(await requireBooking(config, id));
}

function checkCancellable(config: ConfigurationRecord, b: BookingRecord, what: string): void {
  if (b.status === 'cancelled') throw new ConflictError(`Booking '${b.id}' is already cancelled`);
  const notice = config.scheduler.min_cancellation_notice ?? DEFAULTS.min_cancellation_notice;
  if (clock.nowSeconds() > b.start - notice * 60)
    throw new InvalidRequestError(
      `Booking '${b.id}' can no longer be ${what}: it starts in less than ${notice} minutes (min_cancellation_notice)`,
    );
}

/** One provider step at a time: a change waits until the booking's calendar has caught up with the last one. */
function checkSettled(b: BookingRecord): void {
  if (b.event_status === 'pending')
    throw new ConflictError(
      `Booking '${b.id}' is still being written to the organizer's calendar; try again in a moment`,
    );
}

/** Commits a change of a booking (no slot moves) with its job; 409 when another request changed it first. */
async function commit(
  current: BookingRecord,
  change: ReturnType<typeof pendingChange>,
  config: ConfigurationRecord,
  organizer: GrantRecord,
): Promise<BookingRecord> {
  if (!(await db.updateBooking(current, change.record, [change.entry])))
    throw new ConflictError(`Booking '${current.id}' was changed by another request; read it again`);
  return settle(change, config, organizer);
}

export async function cancelBooking(
  config: ConfigurationRecord,
  id: string,
  reason: string | undefined,
  record?: BookingRecord,
) {
  const b = record ?? (await requireBooking(config, id));
  checkCancellable(config, b, 'cancelled');
  checkSettled(b);
  if (isGroup(config)) return bookingView(await cancelSeat(config, b, reason));
  const organizer = await organizerOf(config);
  // The guest's calendar part is read now, while the event exists; a pending booking the guest never had on a calendar
  // is cancelled without one, and so is one whose provider tells the guest itself.
  let cancel: string | undefined;
  if (b.status === 'booked' && b.event_id && !eventsOf(organizer).notifiesParticipants) {
    try {
      cancel = await icsOf(organizer, b, 'CANCEL');
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
    }
  }
  const next: BookingRecord = {
    ...b,
    status: 'cancelled',
    ...(reason !== undefined ? { cancellation_reason: reason } : {}),
    updated_at: clock.nowSeconds(),
    version: b.version + 1,
  };
  // The slot locks are released in this transaction (updateBooking: the booking becomes cancelled).
  return bookingView(
    await commit(b, pendingChange(next, 'cancel', cancel ? { cancel_ics: cancel } : {}), config, organizer),
  );
}

/** PUT: the organizer confirms or declines a pending booking, with the salt of its reference (404 when it does not match). */
export async function confirmBooking(config: ConfigurationRecord, id: string, body: ConfirmBookingBody) {
  const b = await requireBooking(config, id);
  if (!b.confirm_salt_hash || !saltMatches({ salt_hash: b.confirm_salt_hash }, body.salt))
    throw new NotFoundError(`Booking '${id}' not found (the salt does not match its confirmation link)`);
  if (b.status !== 'pending')
    throw new ConflictError(
      `Booking '${id}' is ${b.status}, not pending: only a pending booking can be confirmed or cancelled this way`,
    );
  if (body.status === 'cancelled') return cancelBooking(config, id, body.cancellation_reason, b);
  checkSettled(b);
  const organizer = await organizerOf(config);
  const next: BookingRecord = { ...b, status: 'booked', updated_at: clock.nowSeconds(), version: b.version + 1 };
  return bookingView(await commit(b, pendingChange(next, 'confirm'), config, organizer));
}

/** PATCH: a new time for a booking, checked against availability (its own time counting as free). */
export async function rescheduleBooking(config: ConfigurationRecord, id: string, body: RescheduleBookingBody) {
  const b = await requireBooking(config, id);
  checkCancellable(config, b, 'rescheduled');
  checkSettled(b);
  if (isGroup(config)) return bookingView(await moveSeats(config, b, body.start_time, body.end_time, body.event_id));
  checkTime(config, body.start_time, body.end_time);
  const organizer = await organizerOf(config);
  await requireSlot(config, organizer, body.start_time, body.end_time, { start: b.start, end: b.end });
  const moved: BookingRecord = {
    ...b,
    start: body.start_time,
    end: body.end_time,
    updated_at: clock.nowSeconds(),
    version: b.version + 1,
  };
  // New locks taken, the days it leaves released, and the job, in one transaction.
  const change = pendingChange(moved, 'move');
  await lockSlot(change.record, [change.entry], b);
  return bookingView(await settle(change, config, organizer));
}
