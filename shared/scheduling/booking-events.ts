import type { CreateEventBody } from '#schemas/event';
import type { NotificationType } from '#schemas/notifications';
import { getGrant, type GrantRecord } from '#shared/db/grants';
import type { OutboxEntry } from '#shared/db/outbox';
import * as db from '#shared/db/scheduling';
import type { BookingRecord, ConfigurationRecord, EventStep } from '#shared/db/scheduling';
import { ApiError, NotFoundError } from '#shared/errors';
import { newId, parseId } from '#shared/ids';
import type { Job } from '#shared/jobs/job';
import { logger } from '#shared/logger';
import { newNotification } from '#shared/notifications/notification';
import { eventsOf } from '#shared/registries/events';
import { guestMail, organizerRequestMail } from '#shared/scheduling/emails';
import { remindersJob } from '#shared/scheduling/reminders';
import { bookingView } from '#shared/scheduling/view';
import { clock } from '#shared/time';

/**
 * The provider half of a booking change. A change commits the booking (and its slot locks) with
 * `event_status: 'pending'`, its `event_step` and a `booking-event` job in one transaction; this
 * runner then does the step on the organizer's calendar through the provider contract and commits
 * the booking's update (event ID, `event_status: 'synced'`, the `booking.*` notification, the mails,
 * the reminders job) conditional on the version the change committed. The request runs it inline
 * right after its transaction; the job (at least once, maybe concurrently) runs it again, and it
 * does nothing once the booking has left that version or that state. Creating the event is
 * idempotent by the booking's iCalendar UID (the contract's idempotency key), moving and confirming
 * set the same fields again, deleting a deleted event is done: a crash anywhere leaves one event
 * and, once committed, one notification.
 *
 * A provider refusal for good (4xx other than 409/429: calendar or event gone, organizer grant or
 * configuration gone, a request the provider rejects) is recorded: `event_status: 'failed'` with
 * `event_error`; a refused create also cancels the booking, which releases its slot locks in the
 * same transaction. Anything else throws, and SQS delivers the job again (three receives, then the
 * DLQ: the booking stays `event_status: 'pending'`, holding its time, until the job is redriven).
 */

export type BookingEventJob = Extract<Job, { kind: 'booking-event' }>;

const lower = (s: string) => s.trim().toLowerCase();

export const bookingNotification = (
  b: BookingRecord,
  type: Extract<NotificationType, `booking.${string}`>,
): OutboxEntry => ({
  notification: newNotification({ type, applicationId: b.application_id, grantId: b.grant_id, object: bookingView(b) }),
});

/** A change waiting for its provider step: `next` as committed, with the job to commit alongside. */
export function pendingChange(
  next: BookingRecord,
  step: EventStep,
  extra: Pick<BookingEventJob, 'links' | 'cancel_ics'> = {},
): { record: BookingRecord; job: BookingEventJob; entry: OutboxEntry } {
  const { event_error: _cleared, ...rest } = next;
  const record: BookingRecord = { ...rest, event_status: 'pending', event_step: step };
  const job: BookingEventJob = { kind: 'booking-event', booking_id: record.id, version: record.version, ...extra };
  return { record, job, entry: { job, id: newId('job'), applicationId: record.application_id } };
}

/** The idempotency key of a booking's event: its iCalendar UID, from the booking ID (one event per booking, ever). */
export const bookingEventUid = (b: BookingRecord) =>
  `${b.id}@${b.organizer.email.slice(b.organizer.email.indexOf('@') + 1).toLowerCase()}`;

export function eventBody(config: ConfigurationRecord, b: BookingRecord): CreateEventBody {
  const chosen = config.participants.filter((p) => b.participants.some((q) => lower(q.email) === lower(p.email)));
  const others = chosen
    .filter((p) => lower(p.email) !== lower(b.organizer.email))
    .map((p) => ({ email: p.email, ...(p.name ? { name: p.name } : {}) }));
  const eb = config.event_booking;
  return {
    title: b.title,
    ...(b.description !== undefined ? { description: b.description } : {}),
    ...(b.location !== undefined ? { location: b.location } : {}),
    when: { start_time: b.start, end_time: b.end, start_timezone: b.timezone, end_timezone: b.timezone },
    participants: [{ email: b.guest.email, name: b.guest.name }, ...b.additional_guests, ...others],
    busy: true,
    status: b.status === 'pending' ? 'maybe' : 'confirmed',
    ...(eb.conferencing?.details
      ? {
          conferencing: {
            ...(eb.conferencing.provider ? { provider: eb.conferencing.provider } : {}),
            details: eb.conferencing.details,
          },
        }
      : {}),
    ...(eb.hide_participants !== undefined ? { hide_participants: eb.hide_participants } : {}),
  };
}

/** Whether a provider error is final: a 4xx that asking again will not change (not a conflict, not a rate limit). */
const isFinal = (error: unknown): error is ApiError =>
  error instanceof ApiError && error.status < 500 && error.status !== 409 && error.status !== 429;

/** The provider step, then the update to commit for it. */
async function doStep(
  b: BookingRecord,
  job: BookingEventJob,
  known?: Known,
): Promise<{ next: BookingRecord; outbox: OutboxEntry[] }> {
  const config = known?.config ?? (await db.getConfiguration(b.configuration_id));
  if (!config)
    throw new NotFoundError(`The configuration '${b.configuration_id}' of booking '${b.id}' no longer exists`);
  const organizer = known?.organizer ?? (await getGrant(b.application_id, b.grant_id));
  if (!organizer) throw new NotFoundError(`The organizer grant '${b.grant_id}' of booking '${b.id}' no longer exists`);
  const events = eventsOf(organizer);
  // Where the provider invites the guest itself, the guest's mails carry no invitation of ours (one invitation, not two).
  const providerInvites = events.notifiesParticipants === true;
  const synced = (fields: Partial<BookingRecord> = {}): BookingRecord => ({
    ...b,
    ...fields,
    event_status: 'synced',
    updated_at: clock.nowSeconds(),
    version: b.version + 1,
  });
  const request = async (next: BookingRecord) =>
    providerInvites ? undefined : events.ics(organizer, next.event_id, next.calendar_id, 'REQUEST');
  switch (b.event_step) {
    case 'create': {
      const event = await events.create(
        organizer,
        b.calendar_id,
        eventBody(config, b),
        providerInvites,
        bookingEventUid(b),
      );
      const next = synced({ event_id: event.id, calendar_id: event.calendar_id });
      const manage = job.links?.manage ? { manage: job.links.manage } : undefined;
      if (b.status === 'pending') {
        return {
          next,
          outbox: [
            bookingNotification(next, 'booking.pending'),
            ...guestMail(config, next, 'pending', { links: manage }),
            ...organizerRequestMail(config, next, job.links?.confirm),
          ],
        };
      }
      return {
        next,
        outbox: [
          bookingNotification(next, 'booking.created'),
          ...guestMail(config, next, 'confirmed', { ics: await request(next), links: manage }),
          remindersJob(next),
        ],
      };
    }
    case 'move': {
      await events.update(
        organizer,
        b.event_id,
        b.calendar_id,
        { when: { start_time: b.start, end_time: b.end, start_timezone: b.timezone, end_timezone: b.timezone } },
        providerInvites,
      );
      const next = synced();
      // A pending booking's guest has no invitation to move yet.
      const mails = b.status === 'booked' ? guestMail(config, next, 'rescheduled', { ics: await request(next) }) : [];
      return { next, outbox: [bookingNotification(next, 'booking.rescheduled'), ...mails, remindersJob(next)] };
    }
    case 'confirm': {
      await events.update(organizer, b.event_id, b.calendar_id, { status: 'confirmed' }, providerInvites);
      const next = synced();
      return {
        next,
        outbox: [
          bookingNotification(next, 'booking.created'),
          ...guestMail(config, next, 'confirmed', { ics: await request(next) }),
          remindersJob(next),
        ],
      };
    }
    case 'cancel': {
      try {
        if (b.event_id) await events.delete(organizer, b.event_id, b.calendar_id, providerInvites);
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
      }
      const next = synced();
      const { cancel_ics: _theirs, ...withoutIcs } = job;
      return { next, outbox: cancelled(config, next, providerInvites ? withoutIcs : job) };
    }
    default:
      throw new Error(`Booking '${b.id}' has no event step to do`);
  }
}

const cancelled = (
  config: ConfigurationRecord | undefined,
  next: BookingRecord,
  job: BookingEventJob,
): OutboxEntry[] => [
  bookingNotification(next, 'booking.cancelled'),
  ...(config ? guestMail(config, next, 'cancelled', { ics: job.cancel_ics }) : []),
  remindersJob(next),
];

/**
 * The update recording a final refusal. A refused create cancels the booking (its locks go in the
 * same transaction); announced by `booking.cancelled` only from the job, since a request running it
 * inline answers the refusal itself. A refused cancel is still a cancellation: it is announced.
 */
async function failure(
  b: BookingRecord,
  job: BookingEventJob,
  error: ApiError,
  inline: boolean,
): Promise<{ next: BookingRecord; outbox: OutboxEntry[] }> {
  const next: BookingRecord = {
    ...b,
    event_status: 'failed',
    event_error: error.message,
    updated_at: clock.nowSeconds(),
    version: b.version + 1,
  };
  if (b.event_step === 'create') {
    const gone: BookingRecord = { ...next, status: 'cancelled' };
    return { next: gone, outbox: inline ? [] : [bookingNotification(gone, 'booking.cancelled')] };
  }
  if (b.event_step === 'cancel')
    return { next, outbox: cancelled(await db.getConfiguration(b.configuration_id), next, job) };
  return { next, outbox: [] };
}

/** What the request that committed a change already read: the booking as committed, its configuration and organizer. */
export interface Known {
  booking: BookingRecord;
  config: ConfigurationRecord;
  organizer: GrantRecord;
}

export interface BookingEventOutcome {
  /** The booking as it stands after the run (undefined when it no longer exists). */
  booking: BookingRecord | undefined;
  /** The provider's final refusal, when this run recorded one. */
  refused?: ApiError;
}

/**
 * Runs a booking's pending provider step once (see above). Throws on transient failures; a final
 * refusal is recorded and returned in `refused`. `inline`: run by the request that committed the change, with what it read.
 */
export async function runBookingEvent(
  job: BookingEventJob,
  options: { inline?: Known } = {},
): Promise<BookingEventOutcome> {
  const id = parseId('booking', job.booking_id);
  if (!id) return { booking: undefined };
  // A lost commit means another run (or change) moved the booking on: the second read sees it and stops.
  for (let attempt = 0; attempt < 2; attempt++) {
    // The request that has just committed the change knows the booking as committed (its first attempt reads nothing again).
    const b = attempt === 0 && options.inline ? options.inline.booking : await db.getBooking(id);
    if (!b || b.event_status !== 'pending' || b.version !== job.version) return { booking: b };
    let update: { next: BookingRecord; outbox: OutboxEntry[] };
    let refused: ApiError | undefined;
    try {
      update = await doStep(b, job, attempt === 0 ? options.inline : undefined);
    } catch (error) {
      if (!isFinal(error)) throw error;
      refused = error;
      update = await failure(b, job, error, options.inline !== undefined);
      logger.warn('booking event refused', {
        booking_id: b.id,
        step: b.event_step,
        status: error.status,
        message: error.message,
      });
    }
    if (await db.updateBooking(b, update.next, update.outbox))
      return { booking: update.next, ...(refused ? { refused } : {}) };
  }
  return { booking: await db.getBooking(id) };
}

/** The jobs worker's entry: the same run, from the queue. */
export async function runBookingEventJob(job: BookingEventJob): Promise<void> {
  const { booking, refused } = await runBookingEvent(job);
  logger.info('booking-event', {
    booking_id: job.booking_id,
    version: job.version,
    event_status: booking?.event_status,
    ...(refused ? { refused: refused.status } : {}),
  });
}
