import type { ListCalendarsQuery } from '#schemas/calendar';
import type { ListEventsQuery } from '#schemas/event';
import { decodeProviderCursor, encodeProviderCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import {
  calendarFromGoogle,
  eventFromGoogle,
  type GoogleCalendarListEntry,
  type GoogleEvent,
} from '#shared/google/calendar-event';
import { googleClientOf, GoogleNotFoundError, type GoogleClient } from '#shared/google/client';
import { buildCalendar, type IcsEvent } from '#shared/calendar/ical';
import type { When } from '#shared/calendar/types';
import { createGoogleEvent, deleteGoogleEvent, sendGoogleRsvp, updateGoogleEvent } from '#shared/google/event-writes';
import type { Calendar, CalendarEvent, EventsProvider, Page } from '#shared/providers/contract';

/**
 * Provider A's calendars and events, read live from Calendar v3: calendars from the calendar list,
 * events from events.list (or events.instances for `master_event_id`). The filters Google takes are
 * passed to it (`start`/`end` as timeMin/timeMax, `expand_recurring` as singleEvents, `show_cancelled`
 * as showDeleted, `ical_uid`, `updated_after` as updatedMin, `event_type` as eventTypes,
 * `metadata_pair` as privateExtendedProperty); the rest narrow Google's answer here (`title`,
 * `description`, `location` after Google's own `q`; `busy`, `attendees`, `updated_before`), so an
 * answer is never wider than asked, and a page may hold fewer than `limit`. Our page token wraps Google's.
 */

const EVENTS_SCOPE = 'gcal-events';
const CALENDARS_SCOPE = 'gcal-calendars';
const EVENT_TYPES = new Set(['default', 'focusTime', 'outOfOffice', 'workingLocation', 'birthday', 'fromGmail']);

const segment = (id: string, what: string) => {
  if (!id || id.length > 1024 || /[\u0000-\u001f]/.test(id)) throw new NotFoundError(`No ${what} '${id}'`);
  return encodeURIComponent(id);
};

const calendarPath = (calendarId: string) => `/calendar/v3/calendars/${segment(calendarId, 'calendar')}`;

export async function listGoogleCalendars(
  grant: GrantRecord,
  query: ListCalendarsQuery,
  limit: number,
): Promise<Page<Calendar>> {
  if (query.metadata_pair !== undefined)
    throw new InvalidRequestError("'metadata_pair' is not available for google grants' calendars");
  const client = await googleClientOf(grant);
  const page = await client.call<{ items?: GoogleCalendarListEntry[]; nextPageToken?: string }>({
    api: 'calendar',
    path: '/calendar/v3/users/me/calendarList',
    query: {
      maxResults: limit,
      ...(query.page_token ? { pageToken: decodeProviderCursor(query.page_token, CALENDARS_SCOPE) } : {}),
    },
  });
  return {
    items: (page.items ?? []).filter((c) => !c.deleted).map((c) => calendarFromGoogle(grant, c)),
    ...(page.nextPageToken ? { nextCursor: encodeProviderCursor(CALENDARS_SCOPE, page.nextPageToken) } : {}),
  };
}

async function calendarEntry(client: GoogleClient, calendarId: string): Promise<GoogleCalendarListEntry> {
  try {
    return await client.call<GoogleCalendarListEntry>({
      api: 'calendar',
      path: `/calendar/v3/users/me/calendarList/${segment(calendarId, 'calendar')}`,
    });
  } catch (error) {
    if (error instanceof GoogleNotFoundError) throw new NotFoundError(`No calendar '${calendarId}' in this grant`);
    throw error;
  }
}

export async function getGoogleCalendar(grant: GrantRecord, calendarId: string): Promise<Calendar> {
  return calendarFromGoogle(grant, await calendarEntry(await googleClientOf(grant), calendarId));
}

const RFC3339 = (seconds: number) => new Date(seconds * 1000).toISOString();
const contains = (value: string | null | undefined, part: string) =>
  (value ?? '').toLowerCase().includes(part.toLowerCase());

/** What Google cannot filter on, applied to its answer. */
function narrow(query: ListEventsQuery) {
  const attendees = query.attendees
    ?.split(',')
    .map((a) => a.trim().toLowerCase())
    .filter(Boolean);
  return (e: CalendarEvent) =>
    (query.title === undefined || contains(e.title, query.title)) &&
    (query.description === undefined || contains(e.description, query.description)) &&
    (query.location === undefined || contains(e.location, query.location)) &&
    (query.busy === undefined || e.busy === query.busy) &&
    (query.updated_before === undefined || e.updated_at < query.updated_before) &&
    (!attendees?.length || e.participants.some((p) => attendees.includes(p.email.toLowerCase())));
}

export async function listGoogleEvents(
  grant: GrantRecord,
  query: ListEventsQuery,
  limit: number,
): Promise<Page<CalendarEvent>> {
  if (query.event_type !== undefined && !query.event_type.split(',').every((t) => EVENT_TYPES.has(t.trim())))
    throw new InvalidRequestError(`'event_type' takes ${[...EVENT_TYPES].join(', ')} (comma-separated)`);
  let metadata: string | undefined;
  if (query.metadata_pair !== undefined) {
    const at = query.metadata_pair.indexOf(':');
    if (at < 1) throw new InvalidRequestError("'metadata_pair' must be key:value");
    metadata = `${query.metadata_pair.slice(0, at)}=${query.metadata_pair.slice(at + 1)}`;
  }
  const client = await googleClientOf(grant);
  const calendar = await calendarEntry(client, query.calendar_id);
  const expand = query.expand_recurring === true;
  const text = [query.title, query.description, query.location].filter((t): t is string => t !== undefined);
  const params = {
    maxResults: limit,
    ...(query.start !== undefined ? { timeMin: RFC3339(query.start) } : {}),
    ...(query.end !== undefined ? { timeMax: RFC3339(query.end) } : {}),
    ...(query.show_cancelled ? { showDeleted: true } : {}),
    ...(query.page_token ? { pageToken: decodeProviderCursor(query.page_token, EVENTS_SCOPE) } : {}),
  };
  const path =
    query.master_event_id !== undefined
      ? `${calendarPath(calendar.id)}/events/${segment(query.master_event_id, 'event')}/instances`
      : `${calendarPath(calendar.id)}/events`;
  let page: { items?: GoogleEvent[]; nextPageToken?: string };
  try {
    page = await client.call({
      api: 'calendar',
      path,
      query:
        query.master_event_id !== undefined
          ? params
          : {
              ...params,
              ...(expand ? { singleEvents: true, orderBy: 'startTime' } : {}),
              ...(query.ical_uid !== undefined ? { iCalUID: query.ical_uid } : {}),
              ...(query.updated_after !== undefined ? { updatedMin: RFC3339(query.updated_after) } : {}),
              ...(query.event_type !== undefined
                ? { eventTypes: query.event_type.split(',').map((t) => t.trim()) }
                : {}),
              ...(metadata !== undefined ? { privateExtendedProperty: [metadata] } : {}),
              ...(text.length ? { q: text.join(' ') } : {}),
            },
    });
  } catch (error) {
    if (error instanceof GoogleNotFoundError && query.master_event_id !== undefined) return { items: [] };
    throw error;
  }
  const keep = narrow(query);
  return {
    items: (page.items ?? []).map((e) => eventFromGoogle(grant, calendar.id, e, calendar.timeZone)).filter(keep),
    ...(page.nextPageToken ? { nextCursor: encodeProviderCursor(EVENTS_SCOPE, page.nextPageToken) } : {}),
  };
}

export async function getGoogleEvent(grant: GrantRecord, eventId: string, calendarId: string): Promise<CalendarEvent> {
  const client = await googleClientOf(grant);
  const calendar = await calendarEntry(client, calendarId);
  try {
    const event = await client.call<GoogleEvent>({
      api: 'calendar',
      path: `${calendarPath(calendar.id)}/events/${segment(eventId, 'event')}`,
    });
    return eventFromGoogle(grant, calendar.id, event, calendar.timeZone);
  } catch (error) {
    if (error instanceof GoogleNotFoundError)
      throw new NotFoundError(`No event '${eventId}' in calendar '${calendarId}'`);
    throw error;
  }
}

/** An event of ours as an iCalendar VEVENT (the sequence is Google's: it counts the changes attendees must see). */
function icsOfEvent(event: CalendarEvent, sequence: number): IcsEvent {
  const when = event.when as When;
  const url = (event.conferencing as { details?: { url?: unknown } } | undefined)?.details?.url;
  const reminders = (event.reminders as { overrides?: { reminder_minutes: number; reminder_method?: string }[] })
    ?.overrides;
  const original = event.original_start_time;
  return {
    uid: event.ical_uid ?? event.id,
    sequence,
    ...(event.title !== undefined && event.title !== null ? { title: event.title } : {}),
    ...(event.description ? { description: event.description } : {}),
    ...(event.location ? { location: event.location } : {}),
    when,
    ...(event.recurrence?.length ? { recurrence: event.recurrence } : {}),
    ...(event.master_event_id && original !== undefined
      ? {
          recurrence_id:
            when.object === 'timespan'
              ? { time: original, ...(when.start_timezone ? { timezone: when.start_timezone } : {}) }
              : { date: new Date(original * 1000).toISOString().slice(0, 10) },
        }
      : {}),
    status: event.status as IcsEvent['status'],
    busy: event.busy,
    ...(event.visibility === 'public' || event.visibility === 'private' || event.visibility === 'default'
      ? { visibility: event.visibility }
      : {}),
    ...(event.organizer ? { organizer: event.organizer } : {}),
    participants: event.hide_participants ? [] : (event.participants as IcsEvent['participants']),
    ...(event.resources?.length ? { resources: event.resources } : {}),
    ...(typeof url === 'string' ? { conferencing_url: url } : {}),
    created_at: event.created_at,
    updated_at: event.updated_at,
    ...(reminders?.length
      ? {
          reminders: reminders.map((o) => ({
            minutes: o.reminder_minutes,
            method: o.reminder_method === 'email' ? ('email' as const) : ('display' as const),
          })),
        }
      : {}),
  };
}

/**
 * The event as iCalendar (Calendar v3 has no export): the event, and for a series its changed and
 * cancelled occurrences (events.list by its iCalUID, deleted ones included), each with Google's sequence.
 */
export async function googleEventIcs(
  grant: GrantRecord,
  eventId: string,
  calendarId: string,
  method: 'PUBLISH' | 'REQUEST' | 'CANCEL' = 'PUBLISH',
): Promise<string> {
  const client = await googleClientOf(grant);
  const calendar = await calendarEntry(client, calendarId);
  let event: GoogleEvent;
  try {
    event = await client.call<GoogleEvent>({
      api: 'calendar',
      path: `${calendarPath(calendar.id)}/events/${segment(eventId, 'event')}`,
    });
  } catch (error) {
    if (error instanceof GoogleNotFoundError)
      throw new NotFoundError(`No event '${eventId}' in calendar '${calendarId}'`);
    throw error;
  }
  const series: GoogleEvent[] = [event];
  if (event.recurrence?.length && event.iCalUID) {
    let pageToken: string | undefined;
    do {
      const page = await client.call<{ items?: GoogleEvent[]; nextPageToken?: string }>({
        api: 'calendar',
        path: `${calendarPath(calendar.id)}/events`,
        query: { iCalUID: event.iCalUID, showDeleted: true, maxResults: 250, ...(pageToken ? { pageToken } : {}) },
      });
      series.push(...(page.items ?? []).filter((e) => e.id !== event.id && e.recurringEventId === event.id));
      pageToken = page.nextPageToken;
    } while (pageToken);
  }
  const vevents = series.map((e) =>
    icsOfEvent(
      {
        ...eventFromGoogle(grant, calendar.id, e, calendar.timeZone),
        // A cancelled occurrence keeps only its identity at Google: the series' fields fill the rest.
        ...(e.status === 'cancelled' && e !== event ? { status: 'cancelled' } : {}),
      },
      e.sequence ?? 0,
    ),
  );
  return buildCalendar(method, vevents);
}

/** Provider A's events: reads and the iCalendar export here, writes in event-writes.ts. */
export const googleEvents: EventsProvider = {
  list: listGoogleEvents,
  get: getGoogleEvent,
  ics: googleEventIcs,
  create: createGoogleEvent,
  update: updateGoogleEvent,
  delete: deleteGoogleEvent,
  sendRsvp: sendGoogleRsvp,
};
