import type { OutboxEntry } from '#shared/db/outbox';
import * as db from '#shared/db/scheduling';
import type { BookingRecord, ConfigurationRecord } from '#shared/db/scheduling';
import { newId, parseId } from '#shared/ids';
import { newNotification } from '#shared/notifications/notification';
import { bookingView } from '#shared/scheduling/view';
import { reminderMail } from '#shared/scheduling/emails';
import { logger } from '#shared/logger';
import type { FromSchema } from 'json-schema-to-ts';
import type { BookingReminderFiring } from '#schemas/queues';

/**
 * Booking reminders (`event_booking.reminders`): one EventBridge Scheduler one-shot `at()` schedule
 * per reminder, named after the booking, set by a `booking-reminders` job committed with each
 * booking change (created, confirmed, moved: set again; cancelled: cleared). A firing comes through
 * the scheduled-send queue and commits the reminder (an email from the organizer's address, or a
 * `booking.reminder` notification for webhook reminders) if the booking still starts when the
 * reminder was set for: a firing for an older time is ignored.
 */
export const MAX_REMINDERS = 10;
export const scheduleName = (bookingId: string, index: number) => `${bookingId}-r${index}`;

/** A reminder's firing, as its schedule sends it to the scheduled-send queue (schemas/queues.ts). */
export type ReminderFiring = FromSchema<typeof BookingReminderFiring>;

/** The job that brings a booking's schedules in line with it (committed with the change). */
export const remindersJob = (b: BookingRecord): OutboxEntry => ({
  job: { kind: 'booking-reminders', booking_id: b.id },
  id: newId('job'),
  applicationId: b.application_id,
});

/** A reminder's firing: commits its email or notification, unless the booking moved or ended since. */
export async function runReminder(firing: ReminderFiring): Promise<'sent' | 'skipped'> {
  const id = parseId('booking', firing.booking_id);
  const booking = id ? await db.getBooking(id) : undefined;
  if (!booking || booking.status !== 'booked' || booking.start !== firing.start) return 'skipped';
  const config = await db.getConfiguration(booking.configuration_id);
  const reminder = config?.event_booking.reminders?.[firing.reminder];
  if (!config || !reminder) return 'skipped';
  const outbox: OutboxEntry[] =
    reminder.type === 'webhook'
      ? [
          {
            notification: newNotification({
              type: 'booking.reminder',
              applicationId: booking.application_id,
              grantId: booking.grant_id,
              object: { ...bookingView(booking), minutes_before_event: reminder.minutes_before_event },
            }),
          },
        ]
      : reminderMail(config as ConfigurationRecord, booking, reminder);
  await db.commitOutbox(outbox);
  logger.info('booking reminder', { booking_id: booking.id, reminder: firing.reminder, type: reminder.type });
  return 'sent';
}
