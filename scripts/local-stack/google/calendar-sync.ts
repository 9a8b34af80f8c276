/**
 * Listing events in the local Google Calendar fake: events.list and events.instances with their time
 * windows, filters, ordering and paging, and incremental sync (changes since a sync token, in the order
 * they were made; 410 for a token Google would no longer take). The page and sync tokens are shared
 * with calendarList.list.
 */

import { notFound } from './errors';
import { bad, emptyRange, fullSyncRequired } from './calendar-resources';
import { HORIZON_MS, instantOf, iso, occurrencesOf } from './recurrence';
import {
  access,
  ok,
  type CalendarAnswer,
  type CalendarCall,
  type CalendarStore,
  type EventFields,
  type StoredEvent,
} from './calendar-state';
import {
  expandedEvents,
  expansionEnd,
  instanceOf,
  isSeries,
  overlaps,
  renderEvent,
  renderOptions,
} from './calendar-events';

// ---------------------------------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------------------------------

export const encodeToken = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

function decodeToken<T extends object>(text: string, valid: (v: Record<string, unknown>) => boolean): T | undefined {
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Record<string, unknown>;
    return value && typeof value === 'object' && valid(value) ? (value as T) : undefined;
  } catch {
    return undefined;
  }
}

interface PageCursor {
  /** Items already given. */
  o: number;
  /** The sync state when the first page was read: the last page's nextSyncToken. */
  s: number;
}

export function pageCursor(call: CalendarCall, currentSeq: number): PageCursor {
  const text = call.query.get('pageToken');
  if (!text) return { o: 0, s: currentSeq };
  const cursor = decodeToken<PageCursor>(text, (v) => typeof v.o === 'number' && typeof v.s === 'number');
  if (!cursor) throw bad('Invalid page token value.');
  return cursor;
}

interface SyncToken {
  c: string;
  s: number;
}

/** A sync token's position, or 410 when it is unknown, from another calendar or older than the floor. */
export function syncPosition(text: string, scope: string, floor: number, current: number): number {
  const token = decodeToken<SyncToken>(text, (v) => typeof v.c === 'string' && typeof v.s === 'number');
  if (!token || token.c !== scope || token.s < floor || token.s > current) throw fullSyncRequired();
  return token.s;
}

export function maxResultsOf(call: CalendarCall, byDefault: number, cap: number): number {
  const n = Number(call.query.get('maxResults') ?? byDefault);
  return Math.min(n > 0 ? n : byDefault, cap);
}

// ---------------------------------------------------------------------------------------------------
// events.list and events.instances
// ---------------------------------------------------------------------------------------------------

/** Parameters that cannot come with a syncToken (the description of syncToken lists them). */
const NOT_WITH_SYNC = [
  'iCalUID',
  'orderBy',
  'privateExtendedProperty',
  'q',
  'sharedExtendedProperty',
  'timeMin',
  'timeMax',
  'updatedMin',
];

function timeParam(call: CalendarCall, name: string): number | undefined {
  const text = call.query.get(name);
  return text === null ? undefined : Date.parse(text);
}

/** timeMin/timeMax of a request; unbounded sides are infinite. */
function windowOf(call: CalendarCall): { from: number; to: number } {
  const from = timeParam(call, 'timeMin');
  const to = timeParam(call, 'timeMax');
  if (from !== undefined && to !== undefined && to <= from) throw emptyRange();
  return { from: from ?? -Infinity, to: to ?? Infinity };
}

/** `name=value` filters of privateExtendedProperty/sharedExtendedProperty. */
function propertyFilters(call: CalendarCall, param: string): [string, string][] {
  return call.query.getAll(param).map((text) => {
    const at = text.indexOf('=');
    if (at <= 0) throw bad(`Invalid ${param} value: ${text}`);
    return [text.slice(0, at), text.slice(at + 1)];
  });
}

function searchText(f: EventFields): string {
  const parts = [f.summary, f.description, f.location, ...(f.attendees ?? []).flatMap((a) => [a.displayName, a.email])];
  return parts.filter(Boolean).join('\n').toLowerCase();
}

interface Filters {
  eventTypes: Set<string>;
  words: string[];
  privateProps: [string, string][];
  sharedProps: [string, string][];
  iCalUID: string | null;
}

function filtersOf(call: CalendarCall): Filters {
  return {
    eventTypes: new Set(call.query.getAll('eventTypes')),
    words: (call.query.get('q') ?? '').toLowerCase().split(/\s+/).filter(Boolean),
    privateProps: propertyFilters(call, 'privateExtendedProperty'),
    sharedProps: propertyFilters(call, 'sharedExtendedProperty'),
    iCalUID: call.query.get('iCalUID'),
  };
}

function passes(e: StoredEvent, f: Filters): boolean {
  const fields = e.fields;
  if (f.eventTypes.size && !f.eventTypes.has(fields.eventType)) return false;
  if (f.iCalUID !== null && fields.iCalUID !== f.iCalUID) return false;
  if (f.words.length) {
    const text = searchText(fields);
    if (!f.words.every((w) => text.includes(w))) return false;
  }
  const has = (props: Record<string, string> | undefined, [k, v]: [string, string]) => props?.[k] === v;
  return (
    f.privateProps.every((p) => has(fields.extendedProperties?.private, p)) &&
    f.sharedProps.every((p) => has(fields.extendedProperties?.shared, p))
  );
}

export function listEvents(call: CalendarCall): CalendarAnswer {
  const { calendar, role, entry } = access(call, call.params.calendarId!, 'read');
  const q = call.query;
  const singleEvents = q.get('singleEvents') === 'true';
  const orderBy = q.get('orderBy');
  if (orderBy === 'startTime' && !singleEvents)
    throw bad('The requested ordering is not available for the particular query.');
  const syncText = q.get('syncToken');
  const filters = filtersOf(call);
  const cursor = pageCursor(call, calendar.seq);
  let items: StoredEvent[];

  if (syncText !== null) {
    const conflicting = NOT_WITH_SYNC.filter((p) => q.has(p));
    if (conflicting.length) throw bad(`The syncToken cannot be used together with ${conflicting.join(', ')}.`);
    if (q.get('showDeleted') === 'false') throw bad('The syncToken cannot be used with showDeleted=false.');
    const since = syncPosition(syncText, calendar.id, calendar.syncFloor, calendar.seq);
    // In the order of the changes, as a client applying them one by one expects.
    const changed = [...calendar.events.values()]
      .filter((e) => e.seq > since && e.seq <= cursor.s)
      .sort((a, b) => a.seq - b.seq);
    items = singleEvents ? changed.flatMap((e) => changedInstances(calendar, e, call.state.now)) : changed;
  } else {
    const { from, to } = windowOf(call);
    const showDeleted = q.get('showDeleted') === 'true';
    const updatedMin = timeParam(call, 'updatedMin');
    const deletedShown = (e: StoredEvent) =>
      showDeleted ||
      updatedMin !== undefined ||
      // Cancelled instances of a live series are listed when neither showDeleted nor singleEvents is set.
      (!singleEvents && !!e.recurringEventId && calendar.events.get(e.recurringEventId)?.status !== 'cancelled');
    const now = call.state.now;
    const candidates = singleEvents
      ? expandedEvents(calendar, from, to, now)
      : [...calendar.events.values()].filter((e) =>
          isSeries(e)
            ? occurrencesOf(e.fields, calendar.timeZone, from, expansionEnd(from, to, now), 1).length > 0
            : overlaps(e, calendar.timeZone, from, to),
        );
    items = candidates.filter(
      (e) =>
        (e.status !== 'cancelled' || (deletedShown(e) && !(singleEvents && isSeries(e)))) &&
        (updatedMin === undefined || e.updated >= updatedMin),
    );
  }
  items = items.filter((e) => passes(e, filters));
  const zone = calendar.timeZone;
  if (orderBy === 'startTime' || (singleEvents && orderBy === null))
    items.sort((a, b) => instantOf(a.fields.start, zone) - instantOf(b.fields.start, zone) || cmp(a.id, b.id));
  else if (orderBy === 'updated') items.sort((a, b) => a.updated - b.updated || cmp(a.id, b.id));

  const max = maxResultsOf(call, 250, 2500);
  const pageItems = items.slice(cursor.o, cursor.o + max);
  const more = items.length > cursor.o + max;
  const render = renderOptions(call, calendar, true);
  return ok({
    kind: 'calendar#events',
    etag: calendar.etag,
    summary: calendar.summary,
    ...(calendar.description ? { description: calendar.description } : {}),
    updated: iso(calendar.updated),
    timeZone: calendar.timeZone,
    accessRole: role,
    defaultReminders: entry?.defaultReminders ?? [],
    ...(more
      ? { nextPageToken: encodeToken({ o: cursor.o + max, s: cursor.s }) }
      : { nextSyncToken: encodeToken({ c: calendar.id, s: cursor.s }) }),
    items: pageItems.map((e) => renderEvent(calendar, e, render)),
  });
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** What a changed event is in an incremental singleEvents sync: a live series as its instances. */
function changedInstances(calendar: CalendarStore, e: StoredEvent, now: number): StoredEvent[] {
  if (!isSeries(e) || e.status === 'cancelled') return [e];
  return occurrencesOf(e.fields, calendar.timeZone, -Infinity, now + HORIZON_MS)
    .filter((o) => !calendar.events.has(`${e.id}_${o.key}`))
    .map((o) => instanceOf(e, o));
}

export function listInstances(call: CalendarCall): CalendarAnswer {
  const { calendar, role, entry } = access(call, call.params.calendarId!, 'read');
  const series = calendar.events.get(call.params.eventId!);
  if (!series) throw notFound();
  if (!isSeries(series)) throw bad('The event is not a recurring event.');
  const { from, to } = windowOf(call);
  const showDeleted = call.query.get('showDeleted') === 'true';
  const originalStart = call.query.get('originalStart');
  const generated =
    series.status === 'cancelled'
      ? []
      : occurrencesOf(series.fields, calendar.timeZone, from, expansionEnd(from, to, call.state.now))
          .filter((o) => !calendar.events.has(`${series.id}_${o.key}`))
          .map((o) => instanceOf(series, o));
  const exceptions = [...calendar.events.values()].filter(
    (e) =>
      e.recurringEventId === series.id &&
      overlaps(e, calendar.timeZone, from, to) &&
      (e.status !== 'cancelled' || showDeleted),
  );
  const zone = calendar.timeZone;
  let items = [...generated, ...exceptions].sort(
    (a, b) => instantOf(a.originalStart!, zone) - instantOf(b.originalStart!, zone),
  );
  if (originalStart !== null) {
    const at = Date.parse(originalStart);
    items = items.filter((e) => instantOf(e.originalStart!, zone) === at);
  }
  const cursor = pageCursor(call, calendar.seq);
  const max = maxResultsOf(call, 250, 2500);
  const render = renderOptions(call, calendar, true);
  return ok({
    kind: 'calendar#events',
    etag: calendar.etag,
    summary: calendar.summary,
    updated: iso(calendar.updated),
    timeZone: calendar.timeZone,
    accessRole: role,
    defaultReminders: entry?.defaultReminders ?? [],
    ...(items.length > cursor.o + max ? { nextPageToken: encodeToken({ o: cursor.o + max, s: cursor.s }) } : {}),
    items: items.slice(cursor.o, cursor.o + max).map((e) => renderEvent(calendar, e, render)),
  });
}
