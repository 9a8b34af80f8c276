import type { BookingRecord } from '#shared/db/scheduling';

/**
 * A booking as the API answers it (the reference only in the answer to its creation).
 * `event_status` says whether the organizer's calendar reflects the booking's last change yet
 * (`pending`: its job is still on it; `failed`: the provider refused, `event_error` says why).
 */
export function bookingView(b: BookingRecord, reference?: string) {
  return {
    booking_id: b.id,
    event_id: b.event_id,
    calendar_id: b.calendar_id,
    configuration_id: b.configuration_id,
    title: b.title,
    ...(b.description !== undefined ? { description: b.description } : {}),
    ...(b.location !== undefined ? { location: b.location } : {}),
    organizer: b.organizer,
    guest: b.guest,
    additional_guests: b.additional_guests,
    participants: b.participants,
    status: b.status,
    start_time: b.start,
    end_time: b.end,
    timezone: b.timezone,
    email_language: b.email_language,
    additional_fields: b.additional_fields,
    ...(b.cancellation_reason !== undefined ? { cancellation_reason: b.cancellation_reason } : {}),
    event_status: b.event_status ?? 'synced',
    ...(b.event_error !== undefined ? { event_error: b.event_error } : {}),
    ...(reference !== undefined ? { booking_reference: reference } : {}),
    created_at: b.created_at,
    updated_at: b.updated_at,
  };
}
