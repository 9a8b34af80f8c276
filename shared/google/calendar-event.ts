import type { GrantRecord } from '#shared/db/grants';
import type { Calendar, CalendarEvent } from '#shared/providers/contract';

/**
 * Provider A's calendars and events as ours: a calendarList entry as our Calendar, a Calendar v3
 * Event as our CalendarEvent. Names and shapes from calendar-v3.json (CalendarListEntry, Event,
 * EventDateTime, EventAttendee, ConferenceData). All-day events keep Google's exclusive end date,
 * as ours does; `metadata` lives in the event's private extended properties.
 */

export interface GoogleDateTime {
  date?: string;
  dateTime?: string;
  timeZone?: string;
}

interface GooglePerson {
  email?: string;
  displayName?: string;
  self?: boolean;
}

interface GoogleAttendee extends GooglePerson {
  responseStatus?: 'needsAction' | 'declined' | 'tentative' | 'accepted';
  comment?: string;
  resource?: boolean;
  organizer?: boolean;
}

export interface GoogleEvent {
  id: string;
  status?: 'confirmed' | 'tentative' | 'cancelled';
  htmlLink?: string;
  created?: string;
  updated?: string;
  summary?: string;
  description?: string;
  location?: string;
  creator?: GooglePerson;
  organizer?: GooglePerson;
  start?: GoogleDateTime;
  end?: GoogleDateTime;
  recurrence?: string[];
  recurringEventId?: string;
  originalStartTime?: GoogleDateTime;
  transparency?: 'opaque' | 'transparent';
  visibility?: 'default' | 'public' | 'private' | 'confidential';
  iCalUID?: string;
  sequence?: number;
  attendees?: GoogleAttendee[];
  guestsCanSeeOtherGuests?: boolean;
  extendedProperties?: { private?: Record<string, string>; shared?: Record<string, string> };
  conferenceData?: {
    conferenceId?: string;
    conferenceSolution?: { name?: string; key?: { type?: string } };
    entryPoints?: { entryPointType?: string; uri?: string; meetingCode?: string }[];
  };
  reminders?: { useDefault?: boolean; overrides?: { method?: string; minutes?: number }[] };
  eventType?: string;
}

export interface GoogleCalendarListEntry {
  id: string;
  summary?: string;
  summaryOverride?: string;
  description?: string;
  location?: string;
  timeZone?: string;
  backgroundColor?: string;
  foregroundColor?: string;
  primary?: boolean;
  accessRole?: 'freeBusyReader' | 'reader' | 'writer' | 'owner';
  deleted?: boolean;
}

const PARTICIPANT_STATUS = { needsAction: 'noreply', declined: 'no', tentative: 'maybe', accepted: 'yes' } as const;
const EVENT_STATUS = { confirmed: 'confirmed', tentative: 'maybe', cancelled: 'cancelled' } as const;

const seconds = (iso: string | undefined) => (iso ? Math.floor(Date.parse(iso) / 1000) : 0);
const person = (p: GooglePerson | undefined) =>
  p?.email ? { email: p.email, ...(p.displayName ? { name: p.displayName } : {}) } : undefined;

export function calendarFromGoogle(grant: GrantRecord, entry: GoogleCalendarListEntry): Calendar {
  return {
    id: entry.id,
    object: 'calendar',
    grant_id: grant.id,
    name: entry.summaryOverride ?? entry.summary ?? entry.id,
    ...(entry.description !== undefined ? { description: entry.description } : {}),
    ...(entry.location !== undefined ? { location: entry.location } : {}),
    timezone: entry.timeZone ?? 'UTC',
    ...(entry.backgroundColor ? { hex_color: entry.backgroundColor } : {}),
    ...(entry.foregroundColor ? { hex_foreground_color: entry.foregroundColor } : {}),
    is_primary: entry.primary === true,
    read_only: entry.accessRole === 'reader' || entry.accessRole === 'freeBusyReader',
    is_owned_by_user: entry.accessRole === 'owner',
    ...(entry.accessRole === 'owner' && entry.primary ? { owner_email: entry.id } : {}),
    metadata: {},
  };
}

/** An EventDateTime pair as our `when` (all-day: `date` for one day, else a `datespan` ending the day after). */
export function whenFromGoogle(start: GoogleDateTime | undefined, end: GoogleDateTime | undefined, zone: string) {
  if (start?.date) {
    const last = end?.date ?? start.date;
    const next = new Date(`${start.date}T00:00:00Z`);
    next.setUTCDate(next.getUTCDate() + 1);
    return last <= next.toISOString().slice(0, 10)
      ? { object: 'date' as const, date: start.date }
      : { object: 'datespan' as const, start_date: start.date, end_date: last };
  }
  return {
    object: 'timespan' as const,
    start_time: seconds(start?.dateTime),
    end_time: seconds(end?.dateTime ?? start?.dateTime),
    start_timezone: start?.timeZone ?? zone,
    end_timezone: end?.timeZone ?? start?.timeZone ?? zone,
  };
}

export function eventFromGoogle(
  grant: GrantRecord,
  calendarId: string,
  event: GoogleEvent,
  calendarZone = 'UTC',
): CalendarEvent {
  const attendees = event.attendees ?? [];
  const meet = event.conferenceData?.entryPoints?.find((e) => e.entryPointType === 'video');
  const organizer = person(event.organizer);
  const creator = person(event.creator);
  return {
    id: event.id,
    object: 'event',
    grant_id: grant.id,
    calendar_id: calendarId,
    ical_uid: event.iCalUID ?? event.id,
    ...(event.htmlLink ? { html_link: event.htmlLink } : {}),
    ...(event.summary !== undefined ? { title: event.summary } : {}),
    description: event.description ?? null,
    location: event.location ?? null,
    when: whenFromGoogle(event.start, event.end, calendarZone),
    busy: event.transparency !== 'transparent',
    status: EVENT_STATUS[event.status ?? 'confirmed'],
    ...(event.visibility ? { visibility: event.visibility } : {}),
    read_only: event.organizer?.self === false,
    hide_participants: event.guestsCanSeeOtherGuests === false,
    ...(organizer ? { organizer } : {}),
    ...(creator ? { creator } : {}),
    participants: attendees
      .filter((a) => !a.resource && a.email)
      .map((a) => ({
        email: a.email!,
        ...(a.displayName ? { name: a.displayName } : {}),
        status: PARTICIPANT_STATUS[a.responseStatus ?? 'needsAction'],
        ...(a.comment ? { comment: a.comment } : {}),
      })),
    resources: attendees.filter((a) => a.resource && a.email).map((a) => person(a)!),
    ...(meet?.uri
      ? {
          conferencing: {
            provider: event.conferenceData?.conferenceSolution?.name ?? 'Google Meet',
            details: {
              url: meet.uri,
              ...((meet.meetingCode ?? event.conferenceData?.conferenceId)
                ? { meeting_code: meet.meetingCode ?? event.conferenceData?.conferenceId }
                : {}),
            },
          },
        }
      : {}),
    ...(event.reminders
      ? {
          reminders: {
            use_default: event.reminders.useDefault ?? false,
            overrides: (event.reminders.overrides ?? []).map((o) => ({
              reminder_minutes: o.minutes ?? 0,
              reminder_method: o.method ?? 'popup',
            })),
          },
        }
      : {}),
    ...(event.recurrence?.length ? { recurrence: event.recurrence } : {}),
    ...(event.recurringEventId ? { master_event_id: event.recurringEventId } : {}),
    ...(event.originalStartTime
      ? {
          original_start_time: event.originalStartTime.dateTime
            ? seconds(event.originalStartTime.dateTime)
            : seconds(`${event.originalStartTime.date}T00:00:00Z`),
        }
      : {}),
    metadata: { ...(event.extendedProperties?.private ?? {}) },
    created_at: seconds(event.created),
    updated_at: seconds(event.updated ?? event.created),
  };
}
