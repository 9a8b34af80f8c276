import type { EVENT_STATUSES, PARTICIPANT_STATUSES, WHEN_OBJECTS } from '#schemas/event';

/**
 * The time of an event, as the API carries it (spec "Event" → `when`). Times are Unix seconds;
 * dates are `YYYY-MM-DD`; a datespan's `end_date` is the day after its last day (exclusive).
 * Time zones are IANA names. All-day events (`date`, `datespan`) are floating: they are read in
 * their calendar's time zone whenever an instant is needed.
 */
export type When =
  | {
      object: Extract<WhenObject, 'timespan'>;
      start_time: number;
      end_time: number;
      start_timezone?: string;
      end_timezone?: string;
    }
  | { object: Extract<WhenObject, 'datespan'>; start_date: string; end_date: string }
  | { object: Extract<WhenObject, 'date'>; date: string };
type WhenObject = (typeof WHEN_OBJECTS)[number];

export type ParticipantStatus = (typeof PARTICIPANT_STATUSES)[number];
/** `maybe` is a tentative event (iCalendar STATUS:TENTATIVE). */
export type EventStatus = (typeof EVENT_STATUSES)[number];

export interface Person {
  email: string;
  name?: string;
}

export interface Participant extends Person {
  status: ParticipantStatus;
  comment?: string;
  phone_number?: string;
}
