import { createHash } from 'node:crypto';
import { DateTime } from 'luxon';
import type { CreateEventBody, ListEventsQuery, SendRsvpBody, UpdateEventBody } from '#schemas/event';
import { buildCalendar, type IcsEvent } from '#shared/calendar/ical';
import { occurrenceByKey } from '#shared/calendar/recurrence';
import type { When } from '#shared/calendar/types';
import { decodeProviderCursor, encodeProviderCursor, invalidPageToken } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { logger } from '#shared/logger';
import { resolveWhen } from '#shared/mailbox/events';
import { calendarPath, readCalendar } from '#shared/microsoft/calendars';
import { graphClientOf, GraphGoneError, GraphNotFoundError, type GraphClient } from '#shared/microsoft/client';
import {
  CALENDAR_ZONE,
  eventFromGraph,
  eventIdOf,
  GRAPH_EVENT_SELECT,
  instantOf,
  isTentative,
  METADATA_EXPAND,
  METADATA_PROPERTY,
  metadataOf,
  occurrenceOfId,
  whenFromGraph,
  zoneOfEvent,
  type GraphEvent,
} from '#shared/microsoft/graph-event';
import { graphRecurrenceOf, rruleOfGraph, samePattern } from '#shared/microsoft/recurrence';
import type { CalendarEvent, EventImportWindow, EventsProvider, Page } from '#shared/providers/contract';

/**
 * Provider B's events, live through Graph: `…/calendars/{id}/events` (the default calendar's at
 * `…/calendar/events` for `primary`), `calendarView` for `expand_recurring`, a series' `instances`
 * for `master_event_id`, create, PATCH and DELETE, `accept` / `decline` / `tentativelyAccept` for
 * an RSVP (`cancel` for a delete that tells the participants). Filters Graph takes go into
 * `$filter` (cancelled, iCalUID, updated times, start and end of unexpanded events, a series by its
 * first occurrence, as Graph's `/events` holds it); the rest narrow its answer here, so a page may
 * hold fewer than `limit`. Page tokens wrap Graph's nextLink, bound to the grant and to event
 * listings of its mailbox.
 *
 * B's own behaviour (the specification's provider differences): `show_cancelled` is false unless
 * asked, and tentative events are busy unless `tentative_as_busy=false`. Graph always emails an
 * organizer's participants about a new, changed or deleted meeting, so `notify_participants=false`
 * for an event with participants is a 400. Conferencing is `autocreate` only (a Teams meeting).
 *
 * Occurrences are named `<series ID>_<key>` (shared/microsoft/graph-event.ts). Provider B's
 * recurrence restrictions, each a 400 saying which before Graph is called, except the second,
 * which is Graph's own doing:
 *   1. an occurrence cannot move to the same day as, or before, the previous occurrence, nor to
 *      the day of the next one or after;
 *   2. changing the pattern of a series removes all its changed and removed occurrences (Graph
 *      does it; a pattern sent unchanged is not sent, so nothing is lost for nothing);
 *   3. a removed occurrence cannot be restored (nor changed);
 *   4. monthly BYDAY rules with several weekday indices are not possible (shared/microsoft/recurrence.ts).
 */

const SCOPE_PREFIX = 'graph-events';
const IDENTIFIER = /^[A-Za-z0-9_=-]{1,512}$/;
const DAY = 86_400;
/** How far an occurrence's neighbours are looked for when it is the first or last of its series. */
const NEIGHBOUR_REACH = 31 * DAY;
/** Instances read per page of a window (Graph's limit for calendarView). */
const WINDOW_PAGE = 1000;
/** How far ahead a series' changed occurrences are looked for in its iCalendar export. */
const EXPORT_REACH = 366 * DAY;
const PREFER_TEXT = { Prefer: 'outlook.body-content-type="text"' };
const READ = { $select: GRAPH_EVENT_SELECT, $expand: METADATA_EXPAND };

const noEvent = (id: string, calendarId: string) => new NotFoundError(`No event '${id}' in calendar '${calendarId}'`);
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
/** A literal for `start/dateTime` and `end/dateTime` filters: UTC, the zone Graph answers in. */
const filterTime = (seconds: number) => iso(seconds).slice(0, 19);
const quote = (value: string) => `'${value.replace(/'/g, "''")}'`;

/** A calendar as the events requests name it: its path, and its Graph ID (answered as `calendar_id`). */
interface Place {
  client: GraphClient;
  path: string;
  id: string;
  /** As the request named it. */
  named: string;
}

async function placeOf(grant: GrantRecord, calendarId: string): Promise<Place> {
  const client = await graphClientOf(grant);
  const path = calendarPath(client, calendarId);
  // `primary` is answered with the default calendar's own ID, as provider A answers it.
  const id = calendarId === 'primary' ? (await readCalendar(client, calendarId)).id : calendarId;
  return { client, path, id, named: calendarId };
}

function checkedId(id: string, place: Place): string {
  if (!IDENTIFIER.test(id)) throw noEvent(id, place.named);
  return encodeURIComponent(id);
}

async function readEvent(place: Place, graphId: string, asked: string): Promise<GraphEvent> {
  try {
    return await place.client.call<GraphEvent>({
      path: `${place.path}/events/${checkedId(graphId, place)}`,
      query: READ,
      headers: PREFER_TEXT,
      batch: true,
    });
  } catch (error) {
    if (error instanceof GraphNotFoundError) throw noEvent(asked, place.named);
    throw error;
  }
}

/** A series' instances (occurrences and changed ones) overlapping [from, to), every page. */
async function instancesOf(place: Place, masterId: string, from: number, to: number): Promise<GraphEvent[]> {
  const found: GraphEvent[] = [];
  for await (const page of place.client.pages<GraphEvent>({
    path: `${place.client.mailbox}/events/${checkedId(masterId, place)}/instances`,
    query: { startDateTime: iso(from), endDateTime: iso(to), $top: WINDOW_PAGE, ...READ },
    headers: PREFER_TEXT,
  }))
    found.push(...page.value);
  return found;
}

interface SeriesInfo {
  allDay: boolean;
  zone: string;
}

/** What an ID of ours names: an event (single or series), an occurrence of a series, or an occurrence removed from it. */
type Located =
  | { kind: 'event'; event: GraphEvent }
  | {
      kind: 'occurrence';
      master: GraphEvent;
      event: GraphEvent;
      series: SeriesInfo;
      /** Starts of the occurrences before and after it, as they are now. */
      previous?: number;
      next?: number;
    }
  | { kind: 'removed'; master: GraphEvent; series: SeriesInfo };

const seriesInfo = (master: GraphEvent): SeriesInfo => ({
  allDay: master.isAllDay === true,
  zone: zoneOfEvent(master),
});

async function locate(place: Place, id: string): Promise<Located> {
  checkedId(id, place);
  const occurrence = occurrenceOfId(id);
  if (!occurrence) return { kind: 'event', event: await readEvent(place, id, id) };
  const master = await readEvent(place, occurrence.seriesId, id);
  if (master.type !== 'seriesMaster' || !master.recurrence?.pattern) throw noEvent(id, place.named);
  const series = seriesInfo(master);
  const found = occurrenceByKey(
    {
      when: whenFromGraph(master),
      zone: series.zone,
      recurrence: [rruleOfGraph(master.recurrence, series.allDay, series.zone)],
    },
    occurrence.key,
  );
  if (!found) throw noEvent(id, place.named);
  // Outlook keeps a moved occurrence between its neighbours, so the window from one to the other holds it.
  const instances = await instancesOf(
    place,
    master.id,
    found.previous?.start ?? found.occurrence.start - NEIGHBOUR_REACH,
    found.next?.end ?? found.occurrence.end + NEIGHBOUR_REACH,
  );
  const byId = new Map(instances.map((e) => [eventIdOf(e, series), e]));
  const event = byId.get(id);
  if (!event) return { kind: 'removed', master, series };
  const startOf = (o: { key: string; start: number } | undefined) => {
    if (!o) return undefined;
    const now = byId.get(`${master.id}_${o.key}`);
    return now ? instantOf(now.start) : o.start;
  };
  const previous = startOf(found.previous);
  const next = startOf(found.next);
  return {
    kind: 'occurrence',
    master,
    event,
    series,
    ...(previous !== undefined ? { previous } : {}),
    ...(next !== undefined ? { next } : {}),
  };
}

const removedOccurrence = () =>
  new InvalidRequestError(
    'This occurrence was removed from its series, and a removed occurrence cannot be restored or changed on microsoft grants (recurrence restriction 3)',
  );

// ---- reads -----------------------------------------------------------------------------------

/** What Graph cannot filter on, applied to its answer. */
function narrow(query: ListEventsQuery, windowed: boolean) {
  const contains = (value: string | null | undefined, part: string | undefined) =>
    part === undefined || (value ?? '').toLowerCase().includes(part.toLowerCase());
  const attendees = query.attendees
    ?.split(',')
    .map((a) => a.trim().toLowerCase())
    .filter(Boolean);
  let metadata: [string, string] | undefined;
  if (query.metadata_pair !== undefined) {
    const at = query.metadata_pair.indexOf(':');
    if (at < 1) throw new InvalidRequestError("'metadata_pair' must be key:value");
    metadata = [query.metadata_pair.slice(0, at), query.metadata_pair.slice(at + 1)];
  }
  const tentativeAsBusy = query.tentative_as_busy ?? true;
  return (graph: GraphEvent, e: CalendarEvent) => {
    const bounds = whenBoundsOf(e.when as When);
    return (
      contains(e.title, query.title) &&
      contains(e.description, query.description) &&
      contains(e.location, query.location) &&
      (query.busy === undefined || (e.busy && (tentativeAsBusy || !isTentative(graph))) === query.busy) &&
      (!attendees?.length || e.participants.some((p) => attendees.includes(p.email.toLowerCase()))) &&
      (metadata === undefined || (e.metadata as Record<string, string>)[metadata[0]] === metadata[1]) &&
      // A window's instances overlap it; ours start in it and end in it.
      (!windowed ||
        ((query.start === undefined || bounds.start >= query.start) &&
          (query.end === undefined || bounds.end <= query.end)))
    );
  };
}

/** A `when`'s instants (all-day ones in UTC, the zone of Graph's calendars). */
function whenBoundsOf(when: When): { start: number; end: number } {
  if (when.object === 'timespan') return { start: when.start_time, end: when.end_time };
  const day = (d: string) => Date.parse(`${d}T00:00:00Z`) / 1000;
  if (when.object === 'date') return { start: day(when.date), end: day(when.date) + DAY };
  return { start: day(when.start_date), end: day(when.end_date) };
}

const invalidToken = invalidPageToken;

/** The Graph link a page token of ours holds, if it continues an event listing of this grant's mailbox. */
function continuation(grant: GrantRecord, client: GraphClient, pageToken: string): string {
  const link = decodeProviderCursor(pageToken, `${SCOPE_PREFIX}:${grant.id}`);
  let path: string;
  try {
    path = new URL(link).pathname;
  } catch {
    throw invalidToken();
  }
  const mailbox = client.mailbox.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const listing = new RegExp(
    `^${mailbox}/((calendar|calendars/[^/]+)/(events|calendarView)|events/[^/]+/instances)$`,
    'i',
  );
  if (!listing.test(path)) throw invalidToken();
  return link;
}

async function list(grant: GrantRecord, query: ListEventsQuery, limit: number): Promise<Page<CalendarEvent>> {
  if (query.event_type !== undefined)
    throw new InvalidRequestError("'event_type' is available for provider A (google) grants only");
  if (query.start !== undefined && query.end !== undefined && query.end < query.start)
    throw new InvalidRequestError(`'end' (${query.end}) is before 'start' (${query.start})`);
  const expand = query.expand_recurring === true;
  const instances = query.master_event_id !== undefined;
  if ((expand || instances) && (query.start === undefined || query.end === undefined))
    throw new InvalidRequestError(
      `'${expand ? 'expand_recurring=true' : 'master_event_id'}' needs both 'start' and 'end' (Unix seconds) on microsoft grants: Graph expands series in a window only`,
    );
  const keep = narrow(query, expand || instances);
  const place = await placeOf(grant, query.calendar_id);
  const { client } = place;
  const filters = [
    ...(query.show_cancelled === true ? [] : ['isCancelled eq false']),
    ...(query.ical_uid !== undefined ? [`iCalUId eq ${quote(query.ical_uid)}`] : []),
    ...(query.updated_after !== undefined ? [`lastModifiedDateTime gt ${iso(query.updated_after)}`] : []),
    ...(query.updated_before !== undefined ? [`lastModifiedDateTime lt ${iso(query.updated_before)}`] : []),
    ...(!expand && !instances && query.start !== undefined
      ? [`start/dateTime ge ${quote(filterTime(query.start))}`]
      : []),
    ...(!expand && !instances && query.end !== undefined ? [`end/dateTime le ${quote(filterTime(query.end))}`] : []),
  ];
  const options = {
    $top: limit,
    ...READ,
    ...(filters.length ? { $filter: filters.join(' and ') } : {}),
  };
  let page;
  try {
    if (query.page_token)
      page = await client.page<GraphEvent>(continuation(grant, client, query.page_token), PREFER_TEXT);
    else if (instances) {
      // The series must be one of this calendar's.
      const master = await readEvent(place, query.master_event_id!, query.master_event_id!).catch((error: unknown) => {
        if (error instanceof NotFoundError) return undefined;
        throw error;
      });
      if (!master || master.type !== 'seriesMaster') return { items: [] };
      page = await client.page<GraphEvent>({
        path: `${client.mailbox}/events/${checkedId(master.id, place)}/instances`,
        query: { startDateTime: iso(query.start!), endDateTime: iso(query.end!), ...options },
        headers: PREFER_TEXT,
      });
    } else
      page = await client.page<GraphEvent>({
        path: `${place.path}/${expand ? 'calendarView' : 'events'}`,
        query: expand ? { startDateTime: iso(query.start!), endDateTime: iso(query.end!), ...options } : options,
        headers: PREFER_TEXT,
      });
  } catch (error) {
    if (error instanceof GraphGoneError && query.page_token) throw invalidToken();
    if (error instanceof GraphNotFoundError && !query.page_token)
      throw new NotFoundError(`No calendar '${query.calendar_id}' in this grant`);
    throw error;
  }
  const items: CalendarEvent[] = [];
  for (const graph of page.value) {
    const event = eventFromGraph(grant, place.id, graph);
    if (keep(graph, event)) items.push(event);
  }
  return {
    items,
    ...(page.nextLink ? { nextCursor: encodeProviderCursor(`${SCOPE_PREFIX}:${grant.id}`, page.nextLink) } : {}),
  };
}

/**
 * The import of a calendar's window (`GET /events/import`): Graph's calendarView of the window, page
 * by page, with each series' occurrences replaced by its master (read once per page, in one batch)
 * and its changed occurrences kept as they are. A master whose occurrences span pages comes again on
 * the next page, as the contract allows. Cancelled single events and series are left out, as a
 * listing leaves them out; Graph drops a removed occurrence from the view (its master's recurrence
 * keeps it).
 */
export async function importGraphEvents(
  grant: GrantRecord,
  window: EventImportWindow,
  limit: number,
): Promise<Page<CalendarEvent>> {
  const place = await placeOf(grant, window.calendar_id);
  const { client } = place;
  let page;
  try {
    page = window.page_token
      ? await client.page<GraphEvent>(continuation(grant, client, window.page_token), PREFER_TEXT)
      : await client.page<GraphEvent>({
          path: `${place.path}/calendarView`,
          query: { startDateTime: iso(window.start), endDateTime: iso(window.end), $top: limit, ...READ },
          headers: PREFER_TEXT,
        });
  } catch (error) {
    if (error instanceof GraphGoneError && window.page_token) throw invalidToken();
    if (error instanceof GraphNotFoundError && !window.page_token)
      throw new NotFoundError(`No calendar '${window.calendar_id}' in this grant`);
    throw error;
  }
  const masterIds = [
    ...new Set(
      page.value.flatMap((e) => (e.type === 'occurrence' || e.type === 'exception' ? [e.seriesMasterId!] : [])),
    ),
  ].filter(Boolean);
  const masters = new Map(
    (await Promise.all(masterIds.map((id) => readEvent(place, id, id)))).map((master) => [master.id, master]),
  );
  const items: CalendarEvent[] = [];
  const given = new Set<string>();
  for (const graph of page.value) {
    const master = graph.seriesMasterId ? masters.get(graph.seriesMasterId) : undefined;
    if (graph.type === 'occurrence' || graph.type === 'exception') {
      if (!master || master.isCancelled) continue;
      if (!given.has(master.id)) {
        given.add(master.id);
        items.push(eventFromGraph(grant, place.id, master));
      }
      if (graph.type === 'exception') items.push(eventFromGraph(grant, place.id, graph, seriesInfo(master)));
    } else if (!graph.isCancelled) items.push(eventFromGraph(grant, place.id, graph));
  }
  return {
    items,
    ...(page.nextLink ? { nextCursor: encodeProviderCursor(`${SCOPE_PREFIX}:${grant.id}`, page.nextLink) } : {}),
  };
}

async function get(grant: GrantRecord, eventId: string, calendarId: string): Promise<CalendarEvent> {
  const place = await placeOf(grant, calendarId);
  const located = await locate(place, eventId);
  if (located.kind === 'removed')
    throw new NotFoundError(`The occurrence '${eventId}' was removed from its series in calendar '${calendarId}'`);
  return eventFromGraph(grant, place.id, located.event, located.kind === 'occurrence' ? located.series : undefined);
}

/** An event of ours as an iCalendar VEVENT (Graph keeps no sequence: changes are told apart by DTSTAMP). */
function icsOf(event: CalendarEvent, master?: CalendarEvent): IcsEvent {
  const when = event.when as When;
  const url = (event.conferencing as { details?: { url?: unknown } } | undefined)?.details?.url;
  const original = event.original_start_time;
  return {
    uid: event.ical_uid ?? master?.ical_uid ?? event.id,
    sequence: 0,
    ...(event.title != null ? { title: event.title } : {}),
    ...(event.description ? { description: event.description } : {}),
    ...(event.location ? { location: event.location } : {}),
    when,
    ...(event.recurrence?.length ? { recurrence: event.recurrence } : {}),
    ...(master && original !== undefined
      ? {
          recurrence_id:
            when.object === 'timespan'
              ? { time: original, ...(when.start_timezone ? { timezone: when.start_timezone } : {}) }
              : { date: new Date(original * 1000).toISOString().slice(0, 10) },
        }
      : {}),
    status: event.status as IcsEvent['status'],
    busy: event.busy,
    ...(event.visibility === 'private' || event.visibility === 'default' ? { visibility: event.visibility } : {}),
    ...(event.organizer ? { organizer: event.organizer } : {}),
    participants: event.hide_participants ? [] : (event.participants as IcsEvent['participants']),
    ...(event.resources?.length ? { resources: event.resources } : {}),
    ...(typeof url === 'string' ? { conferencing_url: url } : {}),
    created_at: event.created_at,
    updated_at: event.updated_at,
  };
}

/**
 * The event as iCalendar: the event, and for a series its changed occurrences of the coming year
 * (Graph lists a series' occurrences by window only).
 */
async function ics(
  grant: GrantRecord,
  eventId: string,
  calendarId: string,
  method: 'PUBLISH' | 'REQUEST' | 'CANCEL' = 'PUBLISH',
): Promise<string> {
  const place = await placeOf(grant, calendarId);
  const located = await locate(place, eventId);
  if (located.kind === 'removed') throw new NotFoundError(`The occurrence '${eventId}' was removed from its series`);
  if (located.kind === 'occurrence') {
    const master = eventFromGraph(grant, place.id, located.master);
    return buildCalendar(method, [icsOf(eventFromGraph(grant, place.id, located.event, located.series), master)]);
  }
  const event = eventFromGraph(grant, place.id, located.event);
  const vevents = [icsOf(event)];
  if (located.event.type === 'seriesMaster') {
    const series = seriesInfo(located.event);
    const from = instantOf(located.event.start);
    for (const e of await instancesOf(place, located.event.id, from, from + EXPORT_REACH))
      if (e.type === 'exception') vevents.push(icsOf(eventFromGraph(grant, place.id, e, series), event));
  }
  return buildCalendar(method, vevents);
}

// ---- writes ----------------------------------------------------------------------------------

const SHOW_AS = { free: 'free', tentative: 'tentative', busy: 'busy' } as const;

/** A `when` as Graph's start, end and isAllDay: local times in the zone given (all-day: midnights). */
function timesOf(input: NonNullable<CreateEventBody['when']>, zone: string) {
  const resolved = resolveWhen(input, zone);
  const w = resolved.when;
  const local = (seconds: number, z: string) =>
    DateTime.fromSeconds(seconds, { zone: z }).toFormat("yyyy-MM-dd'T'HH:mm:ss");
  if (w.object === 'timespan') {
    const startZone = w.start_timezone ?? zone;
    const endZone = w.end_timezone ?? startZone;
    return {
      resolved,
      fields: {
        start: { dateTime: local(w.start_time, startZone), timeZone: startZone },
        end: { dateTime: local(w.end_time, endZone), timeZone: endZone },
        isAllDay: false,
      },
    };
  }
  const [first, end] =
    w.object === 'date'
      ? [w.date, DateTime.fromISO(w.date, { zone: 'UTC' }).plus({ days: 1 }).toISODate()!]
      : [w.start_date, w.end_date];
  return {
    resolved,
    fields: {
      start: { dateTime: `${first}T00:00:00`, timeZone: zone },
      end: { dateTime: `${end}T00:00:00`, timeZone: zone },
      isAllDay: true,
    },
  };
}

interface Write {
  fields: Record<string, unknown>;
  /** The new `when` resolved, when the body gives one. */
  when?: When;
  /** Original starts that the body's EXDATE lines remove. */
  removed: number[];
}

/** The fields a body sets, as Graph's event (only those given: a PATCH changes nothing else); 400 for what Graph cannot hold. */
function graphFields(body: UpdateEventBody, zone: string, previous?: GraphEvent): Write {
  if (body.capacity !== undefined)
    throw new InvalidRequestError("'capacity' is not available for microsoft grants' events");
  if (body.status === 'cancelled')
    throw new InvalidRequestError(
      "A microsoft grant's event cannot be given 'status: cancelled': delete the event (or the occurrence) instead",
    );
  const out: Record<string, unknown> = {};
  let when: When | undefined;
  if (body.title !== undefined) out.subject = body.title;
  if (body.description !== undefined) out.body = { contentType: 'text', content: body.description ?? '' };
  if (body.location !== undefined) out.location = { displayName: body.location ?? '' };
  if (body.when !== undefined) {
    const times = timesOf(body.when, zone);
    Object.assign(out, times.fields);
    when = times.resolved.when;
  }
  if (body.busy !== undefined || body.status !== undefined) {
    const busy = body.busy ?? previous?.showAs !== 'free';
    const maybe = body.status !== undefined ? body.status === 'maybe' : previous?.showAs === 'tentative';
    out.showAs = !busy ? SHOW_AS.free : maybe ? SHOW_AS.tentative : SHOW_AS.busy;
  }
  if (body.visibility !== undefined) out.sensitivity = body.visibility === 'private' ? 'private' : 'normal';
  if (body.hide_participants !== undefined) out.hideAttendees = body.hide_participants;
  if (body.participants !== undefined || body.resources !== undefined) {
    const kept = previous?.attendees ?? [];
    const people =
      body.participants?.map((p) => ({
        emailAddress: { address: p.email, ...(p.name ? { name: p.name } : {}) },
        type: 'required',
      })) ?? kept.filter((a) => a.type !== 'resource');
    const rooms =
      body.resources?.map((r) => ({
        emailAddress: { address: r.email, ...(r.name ? { name: r.name } : {}) },
        type: 'resource',
      })) ?? kept.filter((a) => a.type === 'resource');
    out.attendees = [...people, ...rooms].map((a) => ({ emailAddress: a.emailAddress, type: a.type }));
  }
  if (body.metadata !== undefined)
    out.singleValueExtendedProperties = [{ id: METADATA_PROPERTY, value: JSON.stringify(body.metadata) }];
  if (body.reminders !== undefined) {
    const overrides = body.reminders.overrides ?? [];
    if (overrides.length > 1 || overrides.some((o) => o.reminder_method === 'email'))
      throw new InvalidRequestError(
        "Outlook events have one pop-up reminder: 'reminders.overrides' takes at most one, not by email, for microsoft grants",
      );
    out.isReminderOn = overrides.length > 0 || body.reminders.use_default === true;
    if (overrides.length) out.reminderMinutesBeforeStart = overrides[0]!.reminder_minutes;
  }
  if (body.conferencing !== undefined) {
    if (body.conferencing.autocreate === undefined)
      throw new InvalidRequestError(
        "Microsoft grants' events take conferencing as 'autocreate' only (a Teams meeting): Graph cannot hold another meeting's details",
      );
    out.isOnlineMeeting = true;
    out.onlineMeetingProvider = 'teamsForBusiness';
  }
  return { fields: out, ...(when ? { when } : {}), removed: [] };
}

/** The participants (not the account itself) an event will have after a change. */
function participantsAfter(grant: GrantRecord, fields: Record<string, unknown>, previous?: GraphEvent): string[] {
  const attendees = (fields.attendees as GraphEvent['attendees']) ?? previous?.attendees ?? [];
  return attendees
    .filter((a) => a?.type !== 'resource')
    .map((a) => a?.emailAddress?.address?.toLowerCase() ?? '')
    .filter((a) => a && a !== grant.email.toLowerCase());
}

/** Graph tells an organizer's participants of every new, changed or cancelled meeting itself. */
function refuseSilence(notify: boolean, participants: string[], isOrganizer: boolean): void {
  if (!notify && isOrganizer && participants.length)
    throw new InvalidRequestError(
      "'notify_participants=false' is not possible for microsoft grants' events with participants: Graph emails them every invitation, change and cancellation itself",
    );
}

/** Removes the occurrences of a series starting originally at `starts` (EXDATE lines); those already removed are left. */
async function removeOccurrences(place: Place, master: GraphEvent, starts: number[]): Promise<void> {
  if (!starts.length) return;
  const series = seriesInfo(master);
  const wanted = new Set(
    starts.map((s) =>
      eventIdOf({ ...master, id: '', type: 'occurrence', seriesMasterId: master.id, originalStart: iso(s) }, series),
    ),
  );
  const instances = await instancesOf(place, master.id, Math.min(...starts) - DAY, Math.max(...starts) + 2 * DAY);
  for (const e of instances)
    if (wanted.has(eventIdOf(e, series)))
      await place.client.call({ method: 'DELETE', path: `${place.path}/events/${checkedId(e.id, place)}` });
}

/** An answer to a write, with the metadata the write kept (Graph's answer to a write leaves extended properties out). */
const withMetadata = (event: GraphEvent, metadata: Record<string, string>): GraphEvent => ({
  ...event,
  singleValueExtendedProperties: [{ id: METADATA_PROPERTY, value: JSON.stringify(metadata) }],
});

/** A transaction ID Graph keeps per create, the same for every attempt with one key (Graph does not create twice). */
const transactionIdOf = (grant: GrantRecord, key: string) =>
  createHash('sha256').update(`${grant.id}\n${key}`).digest('base64url').slice(0, 40);

async function create(
  grant: GrantRecord,
  calendarId: string,
  body: CreateEventBody,
  notify: boolean,
  idempotencyKey?: string,
): Promise<CalendarEvent> {
  const write = graphFields(body, CALENDAR_ZONE);
  refuseSilence(notify, participantsAfter(grant, write.fields), true);
  if (body.recurrence?.length) {
    const series = graphRecurrenceOf(body.recurrence, write.when!, zoneOf(write.when!, CALENDAR_ZONE));
    write.fields.recurrence = series.recurrence;
    write.removed = series.removed;
  }
  const place = await placeOf(grant, calendarId);
  const created = await place.client.call<GraphEvent>({
    method: 'POST',
    path: `${place.path}/events`,
    headers: PREFER_TEXT,
    body: {
      ...write.fields,
      ...(idempotencyKey !== undefined ? { transactionId: transactionIdOf(grant, idempotencyKey) } : {}),
    },
  });
  await removeOccurrences(place, created, write.removed);
  return eventFromGraph(grant, place.id, withMetadata(created, body.metadata ?? metadataOf(created)));
}

/** The zone of a resolved `when`: its start's, or the calendar's for all-day events. */
const zoneOf = (when: When, fallback: string) =>
  when.object === 'timespan' ? (when.start_timezone ?? fallback) : fallback;

/** Restriction 1: an occurrence stays strictly between the days of its neighbours. */
function refuseMove(located: Extract<Located, { kind: 'occurrence' }>, when: When): void {
  const zone = located.series.zone;
  const start = whenBoundsOf(when).start;
  const day = (s: number) => DateTime.fromSeconds(s, { zone }).toISODate()!;
  const startDay = when.object === 'timespan' ? day(start) : when.object === 'date' ? when.date : when.start_date;
  if (located.previous !== undefined && startDay <= day(located.previous))
    throw new InvalidRequestError(
      `An occurrence cannot move to the same day as, or before, the previous occurrence (${day(located.previous)}) on microsoft grants (recurrence restriction 1)`,
    );
  if (located.next !== undefined && startDay >= day(located.next))
    throw new InvalidRequestError(
      `An occurrence cannot move to the day of the next occurrence (${day(located.next)}) or after it on microsoft grants (recurrence restriction 1)`,
    );
}

async function update(
  grant: GrantRecord,
  eventId: string,
  calendarId: string,
  body: UpdateEventBody,
  notify: boolean,
): Promise<CalendarEvent> {
  const place = await placeOf(grant, calendarId);
  const located = await locate(place, eventId);
  if (located.kind === 'removed') throw removedOccurrence();
  const previous = located.event;
  const zone = zoneOfEvent(located.kind === 'occurrence' ? located.master : previous);
  const write = graphFields(body, zone, previous);
  if (located.kind === 'occurrence') {
    if (body.recurrence !== undefined)
      throw new InvalidRequestError(
        `An occurrence has no recurrence of its own; change the series '${located.master.id}' instead`,
      );
    if (write.when) refuseMove(located, write.when);
  } else if (previous.type === 'seriesMaster' && previous.recurrence?.pattern) {
    if (body.recurrence !== undefined && !body.recurrence.length)
      throw new InvalidRequestError(
        'A series of a microsoft grant cannot become a single event: delete it and create the event again',
      );
    const info = seriesInfo(previous);
    const when = write.when ?? whenFromGraph(previous);
    const lines =
      body.recurrence ?? (write.when ? [rruleOfGraph(previous.recurrence, info.allDay, info.zone)] : undefined);
    if (lines) {
      const series = graphRecurrenceOf(lines, when, zoneOf(when, info.zone));
      write.removed = series.removed;
      // The same pattern is not sent again: sending it would remove the series' changed occurrences for nothing.
      if (!samePattern(series.recurrence, previous.recurrence, info.allDay, info.zone) || write.when) {
        write.fields.recurrence = series.recurrence;
        // Restriction 2: Graph removes the series' changed and removed occurrences with the old pattern.
        logger.info('provider B: series pattern changed, its changed and removed occurrences are gone', {
          grant_id: grant.id,
        });
      }
    }
  } else if (body.recurrence?.length) {
    const when = write.when ?? whenFromGraph(previous);
    const series = graphRecurrenceOf(body.recurrence, when, zoneOf(when, zone));
    write.fields.recurrence = series.recurrence;
    write.removed = series.removed;
  }
  refuseSilence(notify, participantsAfter(grant, write.fields, previous), previous.isOrganizer !== false);
  let changed = previous;
  if (Object.keys(write.fields).length)
    changed = await place.client.call<GraphEvent>({
      method: 'PATCH',
      path: `${place.path}/events/${checkedId(previous.id, place)}`,
      headers: PREFER_TEXT,
      body: write.fields,
    });
  await removeOccurrences(place, changed, write.removed);
  return eventFromGraph(
    grant,
    place.id,
    withMetadata(changed, body.metadata ?? metadataOf(previous)),
    located.kind === 'occurrence' ? located.series : undefined,
  );
}

async function remove(grant: GrantRecord, eventId: string, calendarId: string, notify: boolean): Promise<void> {
  const place = await placeOf(grant, calendarId);
  const located = await locate(place, eventId);
  if (located.kind === 'removed')
    throw new NotFoundError(`The occurrence '${eventId}' was removed from its series already`);
  const event = located.event;
  const organizer = event.isOrganizer !== false;
  const participants = participantsAfter(grant, {}, event);
  refuseSilence(notify, participants, organizer);
  const path = `${place.client.mailbox}/events/${checkedId(event.id, place)}`;
  try {
    if (organizer && participants.length) await place.client.call({ method: 'POST', path: `${path}/cancel`, body: {} });
    else await place.client.call({ method: 'DELETE', path: `${place.path}/events/${checkedId(event.id, place)}` });
  } catch (error) {
    if (error instanceof GraphNotFoundError) throw noEvent(eventId, calendarId);
    throw error;
  }
}

const RSVP_ACTIONS = { yes: 'accept', no: 'decline', maybe: 'tentativelyAccept' } as const;

/** The account's answer to an invitation, sent to the organizer by Graph. */
async function sendRsvp(grant: GrantRecord, eventId: string, calendarId: string, body: SendRsvpBody): Promise<object> {
  const place = await placeOf(grant, calendarId);
  const located = await locate(place, eventId);
  if (located.kind === 'removed') throw new NotFoundError(`The occurrence '${eventId}' was removed from its series`);
  if (located.event.isOrganizer !== false)
    throw new InvalidRequestError(`'${grant.email}' organizes event '${eventId}': there is no invitation to answer`);
  await place.client.call({
    method: 'POST',
    path: `${place.client.mailbox}/events/${checkedId(located.event.id, place)}/${RSVP_ACTIONS[body.status]}`,
    body: { sendResponse: true, ...(body.comment !== undefined ? { comment: body.comment } : {}) },
  });
  return {};
}

/** Provider B's events: reads, the iCalendar export and writes. */
export const graphEvents: EventsProvider = {
  // Graph emails an organizer's participants about every create, change and delete (refuseSilence).
  notifiesParticipants: true,
  list,
  get,
  ics,
  create,
  update,
  delete: remove,
  sendRsvp,
};
