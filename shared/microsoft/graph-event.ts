import { DateTime } from 'luxon';
import { windowsZoneToIana } from '#shared/calendar/windows-zones';
import type { When } from '#shared/calendar/types';
import type { GrantRecord } from '#shared/db/grants';
import { rruleOfGraph, type GraphRecurrence } from '#shared/microsoft/recurrence';
import type { Calendar, CalendarEvent } from '#shared/providers/contract';

/**
 * Provider B's calendars and events as ours: a Graph calendar as our Calendar, a Graph event as our
 * CalendarEvent. Names and shapes from Calendar.yml (microsoft.graph.calendar, event, attendee,
 * dateTimeTimeZone, patternedRecurrence). Outlook calendars keep no time zone, description or
 * location: a calendar's zone is UTC. `busy` and `status` come from `showAs` (free is not busy,
 * tentative is `maybe`), `visibility` from `sensitivity`; our `metadata` lives in one string
 * extended property of the event (JSON), read with `$expand`.
 *
 * An occurrence or changed occurrence of a series is named as provider A names them: its series'
 * ID and its original start (`<series ID>_<YYYYMMDDTHHMMSSZ>`, `_<YYYYMMDD>` all-day), whatever
 * Graph's own ID of it, so a removed occurrence can still be told from an unknown ID (Graph answers
 * 404 for both), and its neighbours found from the series' pattern.
 */

export interface GraphDateTime {
  dateTime?: string | null;
  timeZone?: string | null;
}

interface GraphEmail {
  name?: string | null;
  address?: string | null;
}

interface GraphAttendee {
  emailAddress?: GraphEmail | null;
  type?: 'required' | 'optional' | 'resource' | null;
  status?: { response?: string | null } | null;
}

export interface GraphEvent {
  id: string;
  type?: 'singleInstance' | 'occurrence' | 'exception' | 'seriesMaster' | null;
  iCalUId?: string | null;
  subject?: string | null;
  body?: { contentType?: string | null; content?: string | null } | null;
  start?: GraphDateTime | null;
  end?: GraphDateTime | null;
  originalStartTimeZone?: string | null;
  originalEndTimeZone?: string | null;
  originalStart?: string | null;
  isAllDay?: boolean | null;
  isCancelled?: boolean | null;
  isOrganizer?: boolean | null;
  hideAttendees?: boolean | null;
  location?: { displayName?: string | null } | null;
  attendees?: GraphAttendee[] | null;
  organizer?: { emailAddress?: GraphEmail | null } | null;
  responseStatus?: { response?: string | null } | null;
  recurrence?: GraphRecurrence | null;
  seriesMasterId?: string | null;
  showAs?: string | null;
  sensitivity?: string | null;
  isReminderOn?: boolean | null;
  reminderMinutesBeforeStart?: number | null;
  isOnlineMeeting?: boolean | null;
  onlineMeetingProvider?: string | null;
  onlineMeeting?: { joinUrl?: string | null; conferenceId?: string | null } | null;
  webLink?: string | null;
  createdDateTime?: string | null;
  lastModifiedDateTime?: string | null;
  transactionId?: string | null;
  singleValueExtendedProperties?: { id?: string; value?: string | null }[] | null;
}

export interface GraphCalendar {
  id: string;
  name?: string | null;
  hexColor?: string | null;
  isDefaultCalendar?: boolean | null;
  canEdit?: boolean | null;
  owner?: GraphEmail | null;
}

/** The extended property holding an event's metadata (a string property in a property set of ours). */
export const METADATA_PROPERTY = 'String {8e5c2b1a-4f3d-4c2e-9a7b-1d2e3f405162} Name switchboard.metadata';
/** `$expand` reading only that property. */
export const METADATA_EXPAND = `singleValueExtendedProperties($filter=id eq '${METADATA_PROPERTY}')`;

/** What an event is read with (`$select`): what eventFromGraph maps. */
export const GRAPH_EVENT_SELECT = [
  'id',
  'type',
  'iCalUId',
  'subject',
  'body',
  'start',
  'end',
  'originalStartTimeZone',
  'originalEndTimeZone',
  'originalStart',
  'isAllDay',
  'isCancelled',
  'isOrganizer',
  'hideAttendees',
  'location',
  'attendees',
  'organizer',
  'responseStatus',
  'recurrence',
  'seriesMasterId',
  'showAs',
  'sensitivity',
  'isReminderOn',
  'reminderMinutesBeforeStart',
  'isOnlineMeeting',
  'onlineMeetingProvider',
  'onlineMeeting',
  'webLink',
  'createdDateTime',
  'lastModifiedDateTime',
] as const;

export const GRAPH_CALENDAR_SELECT = ['id', 'name', 'hexColor', 'isDefaultCalendar', 'canEdit', 'owner'] as const;

/** Graph's calendars keep no zone of their own. */
export const CALENDAR_ZONE = 'UTC';

const PARTICIPANT_STATUS: Record<string, 'yes' | 'no' | 'maybe' | 'noreply'> = {
  accepted: 'yes',
  organizer: 'yes',
  declined: 'no',
  tentativelyAccepted: 'maybe',
};
const CONFERENCING_PROVIDER: Record<string, string> = {
  teamsForBusiness: 'Microsoft Teams',
  skypeForBusiness: 'Skype for Business',
  skypeForConsumer: 'Skype for Consumer',
};

const seconds = (iso: string | null | undefined) => (iso ? Math.floor(Date.parse(iso) / 1000) : 0);

/** An IANA zone for a zone Graph names (Windows names, IANA names, UTC); `fallback` for one it cannot place. */
export function ianaOf(zone: string | null | undefined, fallback = CALENDAR_ZONE): string {
  if (!zone) return fallback;
  const windows = windowsZoneToIana(zone);
  if (windows) return windows;
  return DateTime.local().setZone(zone).isValid ? zone : fallback;
}

/** The instant of a dateTimeTimeZone Graph answers (local time in its zone, or UTC). */
export function instantOf(value: GraphDateTime | null | undefined): number {
  if (!value?.dateTime) return 0;
  if (/(Z|[+-]\d{2}:\d{2})$/.test(value.dateTime)) return seconds(value.dateTime);
  return Math.floor(
    DateTime.fromISO(value.dateTime.replace(/(\.\d{3})\d*$/, '$1'), { zone: ianaOf(value.timeZone) }).toSeconds(),
  );
}

/**
 * The date of an all-day event's boundary: Graph answers midnight in the zone it answers in; an
 * event stored at midnight of another zone is read in the zone it was made in.
 */
function allDayDate(value: GraphDateTime | null | undefined, madeIn: string | null | undefined): string {
  const raw = value?.dateTime ?? '';
  if (/T00:00:00(\.0*)?$/.test(raw)) return raw.slice(0, 10);
  return DateTime.fromSeconds(instantOf(value), { zone: ianaOf(madeIn) }).toISODate()!;
}

/** The zone a series or event lives in (its recurrence's, else the one its start was given in). */
export function zoneOfEvent(event: GraphEvent): string {
  return ianaOf(event.recurrence?.range?.recurrenceTimeZone || event.originalStartTimeZone);
}

/** A Graph event's start and end as our `when`. */
export function whenFromGraph(event: GraphEvent): When {
  if (event.isAllDay) {
    const start = allDayDate(event.start, event.originalStartTimeZone);
    const end = allDayDate(event.end, event.originalEndTimeZone ?? event.originalStartTimeZone);
    const next = DateTime.fromISO(start, { zone: 'UTC' }).plus({ days: 1 }).toISODate()!;
    return end <= next ? { object: 'date', date: start } : { object: 'datespan', start_date: start, end_date: end };
  }
  const zone = ianaOf(event.originalStartTimeZone);
  return {
    object: 'timespan',
    start_time: instantOf(event.start),
    end_time: instantOf(event.end),
    start_timezone: zone,
    end_timezone: ianaOf(event.originalEndTimeZone, zone),
  };
}

/** The key of an occurrence by its original start: UTC date-time, or the date for all-day series. */
export function occurrenceKey(originalStart: number, allDay: boolean, zone: string): string {
  if (allDay) return DateTime.fromSeconds(originalStart, { zone }).toFormat('yyyyMMdd');
  return DateTime.fromSeconds(originalStart, { zone: 'UTC' }).toFormat("yyyyMMdd'T'HHmmss'Z'");
}

/** Our ID of a Graph event: an occurrence's is its series' ID and its key. */
export function eventIdOf(event: GraphEvent, series?: { allDay: boolean; zone: string }): string {
  if ((event.type !== 'occurrence' && event.type !== 'exception') || !event.seriesMasterId || !event.originalStart)
    return event.id;
  const allDay = series?.allDay ?? event.isAllDay === true;
  const zone = series?.zone ?? ianaOf(event.originalStartTimeZone);
  return `${event.seriesMasterId}_${occurrenceKey(seconds(event.originalStart), allDay, zone)}`;
}

/** The series and occurrence key an ID of ours names, when it names an occurrence. */
export function occurrenceOfId(id: string): { seriesId: string; key: string } | undefined {
  const m = /^(.+)_(\d{8}(?:T\d{6}Z)?)$/.exec(id);
  return m ? { seriesId: m[1]!, key: m[2]! } : undefined;
}

/** Our metadata of an event (its extended property, JSON); `{}` when it has none or it is not ours. */
export function metadataOf(event: GraphEvent): Record<string, string> {
  const value = event.singleValueExtendedProperties?.find(
    (p) => p.id?.toLowerCase() === METADATA_PROPERTY.toLowerCase(),
  )?.value;
  if (!value) return {};
  try {
    const parsed = JSON.parse(value) as unknown;
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
    return Object.fromEntries(
      Object.entries(parsed as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string'),
    );
  } catch {
    return {};
  }
}

/** Whether the account answered the event `maybe`, or it shows as tentative. */
export function isTentative(event: GraphEvent): boolean {
  return event.showAs === 'tentative' || event.responseStatus?.response === 'tentativelyAccepted';
}

const person = (e: GraphEmail | null | undefined) =>
  e?.address ? { email: e.address, ...(e.name ? { name: e.name } : {}) } : undefined;

export function calendarFromGraph(grant: GrantRecord, c: GraphCalendar): Calendar {
  const owner = c.owner?.address ?? undefined;
  return {
    id: c.id,
    object: 'calendar',
    grant_id: grant.id,
    name: c.name ?? c.id,
    timezone: CALENDAR_ZONE,
    ...(c.hexColor && /^#[0-9A-Fa-f]{6}$/.test(c.hexColor) ? { hex_color: c.hexColor } : {}),
    is_primary: c.isDefaultCalendar === true,
    read_only: c.canEdit === false,
    is_owned_by_user: owner === undefined || owner.toLowerCase() === grant.email.toLowerCase(),
    ...(owner ? { owner_email: owner } : {}),
    metadata: {},
  };
}

export function eventFromGraph(
  grant: GrantRecord,
  calendarId: string,
  event: GraphEvent,
  series?: { allDay: boolean; zone: string },
): CalendarEvent {
  const attendees = event.attendees ?? [];
  const organizer = person(event.organizer?.emailAddress);
  const joinUrl = event.isOnlineMeeting ? event.onlineMeeting?.joinUrl : undefined;
  const allDay = series?.allDay ?? event.isAllDay === true;
  const zone = series?.zone ?? zoneOfEvent(event);
  const sensitivity = event.sensitivity ?? 'normal';
  return {
    id: eventIdOf(event, series),
    object: 'event',
    grant_id: grant.id,
    calendar_id: calendarId,
    ical_uid: event.iCalUId ?? event.id,
    ...(event.webLink ? { html_link: event.webLink } : {}),
    ...(event.subject != null ? { title: event.subject } : {}),
    description: event.body?.content ? event.body.content : null,
    location: event.location?.displayName ? event.location.displayName : null,
    when: whenFromGraph(event),
    busy: event.showAs !== 'free',
    status: event.isCancelled ? 'cancelled' : event.showAs === 'tentative' ? 'maybe' : 'confirmed',
    visibility: sensitivity === 'normal' ? 'default' : sensitivity === 'confidential' ? 'confidential' : 'private',
    read_only: event.isOrganizer === false,
    hide_participants: event.hideAttendees === true,
    ...(organizer ? { organizer } : {}),
    participants: attendees
      .filter((a) => a.type !== 'resource' && a.emailAddress?.address)
      .map((a) => ({
        email: a.emailAddress!.address!,
        ...(a.emailAddress!.name ? { name: a.emailAddress!.name } : {}),
        status: PARTICIPANT_STATUS[a.status?.response ?? ''] ?? 'noreply',
      })),
    resources: attendees
      .filter((a) => a.type === 'resource' && a.emailAddress?.address)
      .map((a) => person(a.emailAddress)!),
    ...(joinUrl
      ? {
          conferencing: {
            provider: CONFERENCING_PROVIDER[event.onlineMeetingProvider ?? ''] ?? 'unknown',
            details: {
              url: joinUrl,
              ...(event.onlineMeeting?.conferenceId ? { meeting_code: event.onlineMeeting.conferenceId } : {}),
            },
          },
        }
      : {}),
    reminders: {
      use_default: false,
      overrides: event.isReminderOn
        ? [{ reminder_minutes: event.reminderMinutesBeforeStart ?? 0, reminder_method: 'popup' }]
        : [],
    },
    ...(event.recurrence?.pattern ? { recurrence: [rruleOfGraph(event.recurrence, allDay, zone)] } : {}),
    ...(event.seriesMasterId && event.type !== 'seriesMaster' ? { master_event_id: event.seriesMasterId } : {}),
    ...(event.originalStart ? { original_start_time: seconds(event.originalStart) } : {}),
    metadata: metadataOf(event),
    created_at: seconds(event.createdDateTime),
    updated_at: seconds(event.lastModifiedDateTime ?? event.createdDateTime),
  };
}
