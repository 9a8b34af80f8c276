import { createOneShotSchedule, deleteOneShotSchedule } from '#shared/aws/scheduler';
import * as db from '#shared/db/scheduling';
import { parseId } from '#shared/ids';
import { MAX_REMINDERS, scheduleName, type ReminderFiring } from '#shared/scheduling/reminders';
import { clock } from '#shared/time';

/** The schedules side of reminders (the jobs worker's): EventBridge Scheduler one-shot schedules per booking. */
/** The `booking-reminders` job: clears every schedule of the booking, then sets those still ahead. */
export async function syncReminders(bookingId: string): Promise<void> {
  const id = parseId('booking', bookingId);
  const booking = id ? await db.getBooking(id) : undefined;
  await Promise.all(Array.from({ length: MAX_REMINDERS }, (_, i) => deleteOneShotSchedule(scheduleName(bookingId, i))));
  if (!booking || booking.status !== 'booked') return;
  const config = await db.getConfiguration(booking.configuration_id);
  const now = clock.nowSeconds();
  for (const [i, reminder] of (config?.event_booking.reminders ?? []).entries()) {
    const fireAt = booking.start - reminder.minutes_before_event * 60;
    // A reminder whose time has passed when the booking is made is not sent late.
    if (fireAt <= now + 30) continue;
    const firing: ReminderFiring = {
      kind: 'booking-reminder',
      booking_id: booking.id,
      reminder: i,
      start: booking.start,
    };
    await createOneShotSchedule(scheduleName(booking.id, i), fireAt, firing);
  }
}
