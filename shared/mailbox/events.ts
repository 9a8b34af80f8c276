import { requireCalendar } from '#shared/mailbox/calendars';
import { eventsOfCalendar } from '#shared/db/keys';
import { checkedTimeZone } from '#shared/mailbox/calendars';
import { metadataPair } from '#shared/mailbox/metadata';
import { instancesIn, isSeries, seriesOf, tentativeFor } from '#shared/mailbox/event-windows';
import { itipOutbox, type ItipChange } from '#shared/calendar/imip';
import {
  normalizeRecurrence,
  occurrenceByKey,
  occurrencesBetween,
  seriesBounds,
  whenBounds,
  type Occurrence,
} from '#shared/calendar/recurrence';
import type { Participant, Person, When } from '#shared/calendar/types';
import type { CalendarRecord } from '#shared/db/calendars';
import * as db from '#shared/db/events';
import type { EventRecord } from '#shared/db/events';
import type { GrantRecord } from '#shared/db/grants';
import type { EventServer } from '#shared/providers/contract';
import type { OutboxEntry } from '#shared/db/outbox';
import { decodeCursor, decodeOffsetCursor, encodeCursor, encodeOffsetCursor } from '#shared/cursor';
import { ConflictError, ForbiddenError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { newId, parseId } from '#shared/ids';
import { newNotification } from '#shared/notifications/notification';
import type { NotificationType } from '#schemas/notifications';
import { clock } from '#shared/time';
import type { CreateEventBody, ListEventsQuery, SendRsvpBody, UpdateEventBody } from '#schemas/event';

/**
 * Events of Agent Account calendars: single events, recurring series (a master with RRULE/EXDATE/
 * RDATE lines), and overrides of single occurrences. An occurrence's ID is `<master ID>_<key>`, the
 * key being its original start in UTC (`20261130T150000Z`) or date (`20261130`), so an occurrence
 * has the same ID whether it was ever changed or not. Changing or cancelling one occurrence stores an
 * override under that ID and records the key on the master; changing the series' pattern or time
 * drops every override (spec, recurrence restriction 2). Every change is committed with its
 * `event.*` notification and, when participants are to be told, the iTIP email job. What a window
 * holds and its busy time: shared/mailbox/event-windows.ts.
 */
export type EventView = ReturnType<typeof eventView>;

const INSTANCE = /^(evt_[0-9a-hjkmnp-tv-z]{26})_(\d{8}(?:T\d{6}Z)?)$/;
const MAX_WINDOW_SECONDS = 366 * 86_400;
const OVERRIDES_IN_TRANSACTION = 40;

const lower = (s: string) => s.toLowerCase();

/** Commits a change: on the grant's calendar server first, when it has one. */
async function commitEvents(
  grant: GrantRecord,
  calendar: CalendarRecord,
  change: db.EventChange,
  outbox: readonly OutboxEntry[],
  options: { uniqueUid?: boolean },
  server?: EventServer,
) {
  return db.writeEvents(server ? await server.write(grant, calendar, change) : change, outbox, options);
}

export function eventView(grant: GrantRecord, r: EventRecord) {
  return {
    id: r.id,
    object: 'event' as const,
    grant_id: r.grant_id,
    calendar_id: r.calendar_id,
    ical_uid: r.ical_uid,
    html_link: htmlLink(r),
    ...(r.title !== undefined ? { title: r.title } : {}),
    description: r.description ?? null,
    location: r.location ?? null,
    when: r.when,
    busy: r.busy,
    status: r.status,
    visibility: r.visibility ?? 'default',
    read_only: r.origin === 'invitation',
    hide_participants: r.hide_participants,
    ...(r.capacity !== undefined ? { capacity: r.capacity } : {}),
    organizer: r.organizer,
    creator: r.creator,
    participants: r.participants,
    resources: r.resources,
    ...(r.conferencing ? { conferencing: r.conferencing } : {}),
    reminders: r.reminders ?? { use_default: true, overrides: null },
    ...(r.recurrence?.length ? { recurrence: r.recurrence } : {}),
    ...(r.master_event_id ? { master_event_id: r.master_event_id, original_start_time: r.original_start_time } : {}),
    metadata: r.metadata,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/** The event as iCalendar, through the API (the link needs the same API key). */
const htmlLink = (r: EventRecord) => `/v3/grants/${r.grant_id}/events/${r.id}?calendar_id=${r.calendar_id}&format=ics`;

/** An occurrence of a series as its own record: the master's fields at the occurrence's time. */
export function instanceOf(master: EventRecord, occurrence: Occurrence): EventRecord {
  const { recurrence: _r, exceptions: _e, pattern_revision: _p, last_end: _l, href: _h, etag: _t, ...fields } = master;
  return {
    ...fields,
    id: `${master.id}_${occurrence.key}`,
    when: occurrence.when,
    start: occurrence.start,
    end: occurrence.end,
    master_event_id: master.id,
    occurrence_key: occurrence.key,
    original_start_time: occurrence.original_start,
    series_revision: master.pattern_revision ?? 0,
  };
}

/** The key of a timed occurrence: its original start in UTC, `20261130T150000Z`. */
export const occurrenceKeyOf = (instant: number) =>
  new Date(instant * 1000)
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:]/g, '');

// ---- time ------------------------------------------------------------------------------------

function validDate(field: string, value: string): string {
  const [y, m, d] = value.split('-').map(Number);
  const date = new Date(Date.UTC(y!, m! - 1, d!));
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== m! - 1 || date.getUTCDate() !== d)
    throw new InvalidRequestError(`'${field}' is not a calendar date: '${value}'`);
  return value;
}

/** Reads a request's `when` into the stored form, its zone and instants (400 says what is wrong). */
export function resolveWhen(
  input: NonNullable<CreateEventBody['when']>,
  calendarZone: string,
): { when: When; zone: string; start: number; end: number } {
  const object =
    input.object ??
    (input.start_time !== undefined || input.end_time !== undefined
      ? 'timespan'
      : input.date !== undefined
        ? 'date'
        : 'datespan');
  const allowed: Record<string, string[]> = {
    timespan: ['start_time', 'end_time', 'start_timezone', 'end_timezone'],
    datespan: ['start_date', 'end_date'],
    date: ['date'],
  };
  const extra = Object.keys(input).filter((k) => k !== 'object' && !allowed[object]!.includes(k));
  if (extra.length)
    throw new InvalidRequestError(
      `'when' of object '${object}' takes ${allowed[object]!.join(', ')}; remove ${extra.map((k) => `'when.${k}'`).join(', ')}`,
    );
  let when: When;
  let zone = calendarZone;
  if (object === 'timespan') {
    if (input.start_time === undefined || input.end_time === undefined)
      throw new InvalidRequestError("'when' of object 'timespan' needs 'start_time' and 'end_time' (Unix seconds)");
    if (input.end_time < input.start_time)
      throw new InvalidRequestError(
        `'when.end_time' (${input.end_time}) is before 'when.start_time' (${input.start_time})`,
      );
    const startZone =
      input.start_timezone !== undefined ? checkedTimeZone('when.start_timezone', input.start_timezone) : undefined;
    const endZone =
      input.end_timezone !== undefined ? checkedTimeZone('when.end_timezone', input.end_timezone) : startZone;
    zone = startZone ?? calendarZone;
    when = {
      object,
      start_time: input.start_time,
      end_time: input.end_time,
      ...(startZone ? { start_timezone: startZone } : {}),
      ...(endZone ? { end_timezone: endZone } : {}),
    };
  } else if (object === 'datespan') {
    if (input.start_date === undefined || input.end_date === undefined)
      throw new InvalidRequestError(
        "'when' of object 'datespan' needs 'start_date' and 'end_date' (YYYY-MM-DD; end_date is the day after the last day)",
      );
    validDate('when.start_date', input.start_date);
    validDate('when.end_date', input.end_date);
    if (input.end_date <= input.start_date)
      throw new InvalidRequestError(
        `'when.end_date' (${input.end_date}) must be after 'when.start_date' (${input.start_date}): it is the day after the last day`,
      );
    when = { object, start_date: input.start_date, end_date: input.end_date };
  } else {
    if (input.date === undefined) throw new InvalidRequestError("'when' of object 'date' needs 'date' (YYYY-MM-DD)");
    when = { object: 'date', date: validDate('when.date', input.date) };
  }
  return { when, zone, ...whenBounds(when, zone) };
}

// ---- people ----------------------------------------------------------------------------------

function participantsOf(
  input: NonNullable<CreateEventBody['participants']>,
  previous: Participant[] = [],
): Participant[] {
  const seen = new Map<string, Participant>();
  for (const p of input) {
    const email = lower(p.email);
    const before = previous.find((q) => q.email === email);
    seen.set(email, {
      email,
      ...(p.name !== undefined ? { name: p.name } : before?.name !== undefined ? { name: before.name } : {}),
      status: p.status ?? before?.status ?? 'noreply',
      ...(p.comment !== undefined ? { comment: p.comment } : {}),
      ...(p.phone_number !== undefined ? { phone_number: p.phone_number } : {}),
    });
  }
  return [...seen.values()];
}

const resourcesOf = (input: NonNullable<CreateEventBody['resources']>): Person[] =>
  input.map((r) => ({ email: lower(r.email), ...(r.name !== undefined ? { name: r.name } : {}) }));
const self = (grant: GrantRecord): Person => ({ email: lower(grant.email) });

function conferencingOf(input: CreateEventBody['conferencing']): EventRecord['conferencing'] | undefined {
  if (!input) return undefined;
  if (input.autocreate !== undefined) {
    throw new InvalidRequestError(
      "'conferencing.autocreate' needs a conferencing provider, and no conferencing provider is configured for this deployment; pass 'conferencing.provider' and 'conferencing.details' (url, meeting_code, password, pin, phone) of a meeting you created",
    );
  }
  if (!input.details)
    throw new InvalidRequestError("'conferencing' needs 'details' (url, meeting_code, password, pin, phone)");
  return { provider: input.provider ?? 'unknown', details: input.details };
}

const remindersOf = (input: CreateEventBody['reminders']): EventRecord['reminders'] | undefined =>
  input
    ? {
        use_default: input.use_default ?? !input.overrides?.length,
        overrides: input.overrides
          ? input.overrides.map((o) => ({
              reminder_minutes: o.reminder_minutes,
              reminder_method: o.reminder_method ?? 'popup',
            }))
          : null,
      }
    : undefined;

// ---- lookups ---------------------------------------------------------------------------------

/** A stored event or occurrence of a grant's calendar; an occurrence never changed is built from its series. */
interface Located {
  calendar: CalendarRecord;
  /** The stored item, when there is one (a single event, a master, or an override). */
  stored?: EventRecord;
  /** The series, when the ID names an occurrence. */
  master?: EventRecord;
  /** What the ID stands for now. */
  record: EventRecord;
  /** An occurrence's neighbours (the spec's rule about moving one). */
  previous?: Occurrence;
}

async function locate(grant: GrantRecord, calendarId: string, eventId: string): Promise<Located> {
  const calendar = await requireCalendar(grant, calendarId);
  const notFound = () => new NotFoundError(`Event '${eventId}' not found in calendar '${calendarId}'`);
  const instance = INSTANCE.exec(eventId);
  if (!instance) {
    if (!parseId('event', eventId)) throw notFound();
    const stored = await db.getEvent(grant.id, calendar.id, eventId);
    if (!stored) throw notFound();
    return { calendar, stored, record: stored };
  }
  const [masterId, key] = [instance[1]!, instance[2]!];
  const [master, override] = await Promise.all([
    db.getEvent(grant.id, calendar.id, masterId),
    db.getEvent(grant.id, calendar.id, eventId),
  ]);
  if (!master || !isSeries(master)) throw notFound();
  const found = occurrenceByKey(seriesOf(master), key);
  const current = override && override.series_revision === (master.pattern_revision ?? 0) ? override : undefined;
  if (!found && !current) throw notFound();
  return {
    calendar,
    master,
    ...(override ? { stored: override } : {}),
    record: current ?? instanceOf(master, found!.occurrence),
    ...(found?.previous ? { previous: found.previous } : {}),
  };
}

// ---- notifications ---------------------------------------------------------------------------

export function eventNotification(
  grant: GrantRecord,
  type: Extract<NotificationType, `event.${string}`>,
  record: EventRecord,
): OutboxEntry {
  return {
    notification: newNotification({
      type,
      applicationId: grant.application_id,
      grantId: grant.id,
      object: eventView(grant, record),
    }),
  };
}

// ---- list ------------------------------------------------------------------------------------

const PAGING = new Set(['limit', 'page_token', 'select', 'calendar_id']);

interface ListFilter {
  (record: EventRecord): boolean;
}

function listFilter(grant: GrantRecord, query: ListEventsQuery): ListFilter {
  if (query.metadata_pair !== undefined) {
    const others = Object.keys(query).filter((k) => k !== 'metadata_pair' && !PAGING.has(k));
    if (others.length)
      throw new InvalidRequestError(
        `'metadata_pair' cannot be combined with other filters but 'calendar_id' (remove ${others.join(', ')})`,
      );
    const { key, value } = metadataPair(query.metadata_pair);
    return (r) => r.status !== 'cancelled' && r.metadata[key] === value;
  }
  const text = (field: 'title' | 'description' | 'location') => {
    const needle = query[field] !== undefined ? lower(query[field]!) : undefined;
    return needle === undefined ? () => true : (r: EventRecord) => (r[field] ?? '').toLowerCase().includes(needle);
  };
  const [title, description, location] = [text('title'), text('description'), text('location')];
  const attendees =
    query.attendees !== undefined
      ? new Set(
          query.attendees
            .split(',')
            .map((e) => lower(e.trim()))
            .filter(Boolean),
        )
      : undefined;
  const tentativeAsBusy = query.tentative_as_busy ?? true;
  const tentative = tentativeFor(grant);
  return (r) =>
    (query.show_cancelled === true || r.status !== 'cancelled') &&
    title(r) &&
    description(r) &&
    location(r) &&
    (query.ical_uid === undefined || r.ical_uid === query.ical_uid) &&
    (query.busy === undefined || (r.busy && (tentativeAsBusy || !tentative(r))) === query.busy) &&
    (query.updated_before === undefined || r.updated_at < query.updated_before) &&
    (query.updated_after === undefined || r.updated_at > query.updated_after) &&
    (attendees === undefined || r.participants.some((p) => attendees.has(p.email)) || attendees.has(r.organizer.email));
}

/** Instances of the records found in a window: series expanded, stale or orphaned overrides left out. */
async function expandWindow(
  grant: GrantRecord,
  calendar: CalendarRecord,
  records: EventRecord[],
  from: number,
  to: number,
): Promise<EventRecord[]> {
  return (await instancesIn(grant, calendar, records, from, to)).map(({ record, occurrence }) =>
    occurrence ? instanceOf(record, occurrence) : record,
  );
}

/** Whether an event lies in the list's `start`/`end`: it starts at or after `start` and ends at or before `end`. */
const within = (r: { start: number; end: number }, start?: number, end?: number) =>
  (start === undefined || r.start >= start) && (end === undefined || r.end <= end);

export async function listEvents(grant: GrantRecord, query: ListEventsQuery, limit: number) {
  if (query.event_type !== undefined)
    throw new InvalidRequestError(
      "'event_type' is supported only for provider A (Google) calendars; Agent Account calendars have no event types",
    );
  if (query.start !== undefined && query.end !== undefined && query.end < query.start)
    throw new InvalidRequestError(`'end' (${query.end}) is before 'start' (${query.start})`);
  const calendar = await requireCalendar(grant, query.calendar_id);
  const keep = listFilter(grant, query);
  const windowed = query.start !== undefined && query.end !== undefined;
  if (query.expand_recurring === true && !windowed) {
    throw new InvalidRequestError(
      `'expand_recurring=true' needs both 'start' and 'end' (Unix seconds), at most ${MAX_WINDOW_SECONDS / 86_400} days apart`,
    );
  }
  if (windowed) {
    const [from, to] = [query.start!, query.end!];
    if (query.expand_recurring === true && to - from > MAX_WINDOW_SECONDS)
      throw new InvalidRequestError(
        `'start' to 'end' spans more than ${MAX_WINDOW_SECONDS / 86_400} days; ask for a shorter window`,
      );
    const found = await db.eventsInWindow(grant.id, calendar.id, from, Math.max(to, from + 1));
    let items: EventRecord[];
    if (query.expand_recurring === true) {
      items = (await expandWindow(grant, calendar, found, from, Math.max(to, from + 1))).filter((r) =>
        within(r, from, to),
      );
      if (query.master_event_id !== undefined) items = items.filter((r) => r.master_event_id === query.master_event_id);
    } else {
      items = found.filter((r) => {
        if (r.master_event_id) return query.master_event_id === r.master_event_id && within(r, from, to);
        if (query.master_event_id !== undefined) return false;
        if (isSeries(r))
          return occurrencesBetween(seriesOf(r), from, Math.max(to, from + 1)).some((o) => within(o, from, to));
        return within(r, from, to);
      });
    }
    const sorted = items.filter(keep).sort((a, b) => a.start - b.start || (a.id < b.id ? -1 : 1));
    const offset = query.page_token ? decodeOffsetCursor(query.page_token, 'events') : 0;
    const page = sorted.slice(offset, offset + limit);
    return {
      items: page.map((r) => eventView(grant, r)),
      nextCursor: offset + limit < sorted.length ? encodeOffsetCursor('events', offset + limit) : undefined,
    };
  }
  // No window: the calendar's events in creation order; series as their masters, overrides only
  // when their series is asked for.
  const prefix = query.master_event_id !== undefined ? `${query.master_event_id}_` : undefined;
  const after = query.page_token
    ? decodeCursor(query.page_token, { pk: eventsOfCalendar(grant.id, calendar.id) })
    : undefined;
  const page = await db.scanEvents(grant.id, calendar.id, {
    limit,
    ...(after ? { after } : {}),
    ...(prefix !== undefined ? { prefix } : {}),
    keep: (r) =>
      (prefix !== undefined || !r.master_event_id) &&
      keep(r) &&
      within(isSeries(r) ? { start: r.start, end: r.last_end ?? Number.MAX_SAFE_INTEGER } : r, query.start, query.end),
  });
  return {
    items: page.items.map((r) => eventView(grant, r)),
    nextCursor: page.last ? encodeCursor(page.last) : undefined,
  };
}

// ---- one event -------------------------------------------------------------------------------

export async function getEvent(grant: GrantRecord, eventId: string, calendarId: string) {
  return eventView(grant, (await locate(grant, calendarId, eventId)).record);
}

/** The event as an iCalendar object (a series with its overrides). */
export async function eventRecords(
  grant: GrantRecord,
  eventId: string,
  calendarId: string,
): Promise<{ record: EventRecord; overrides: EventRecord[] }> {
  const found = await locate(grant, calendarId, eventId);
  const overrides = isSeries(found.record)
    ? (await db.overridesOf(found.record)).filter((o) => o.series_revision === (found.record.pattern_revision ?? 0))
    : [];
  return { record: found.record, overrides };
}

// ---- create ----------------------------------------------------------------------------------

/** The event of the account whose iCalendar UID is `uid`, if any (a master or single event). */
async function eventWithUid(grant: GrantRecord, uid: string) {
  const at = await db.eventByUid(grant.id, uid);
  const record = at ? await db.getEvent(grant.id, at.calendar_id, at.event_id) : undefined;
  return record ? eventView(grant, record) : undefined;
}

/**
 * Creates an event. With `uid` (the contract's idempotency key) the event takes it as its iCalendar
 * UID, claimed in the grant's UID index in the event's own transaction: when the account already
 * holds an event with that UID the claim fails, nothing is written, and that event is the answer
 * (no read before the write: a first attempt, the usual case, costs nothing more).
 */
export async function createEvent(
  grant: GrantRecord,
  calendarId: string,
  body: CreateEventBody,
  notify = true,
  uid?: string,
  server?: EventServer,
) {
  const calendar = await requireCalendar(grant, calendarId);
  const timing = resolveWhen(body.when, calendar.timezone);
  const recurrence = body.recurrence?.length
    ? normalizeRecurrence(body.recurrence, timing.when, timing.zone)
    : undefined;
  const now = clock.nowSeconds();
  const id = server ? server.newEventId(calendar, uid) : newId('event');
  const conferencing = conferencingOf(body.conferencing);
  const reminders = remindersOf(body.reminders);
  const record: EventRecord = {
    id,
    grant_id: grant.id,
    calendar_id: calendar.id,
    ical_uid: uid ?? `${id}@${grant.email.slice(grant.email.indexOf('@') + 1).toLowerCase()}`,
    sequence: 0,
    ...(body.title !== undefined ? { title: body.title } : {}),
    ...(typeof body.description === 'string' ? { description: body.description } : {}),
    ...(typeof body.location === 'string' ? { location: body.location } : {}),
    ...timing,
    ...(recurrence
      ? {
          recurrence,
          last_end: seriesBounds({ when: timing.when, zone: timing.zone, recurrence }).last_end,
          exceptions: [],
          pattern_revision: 0,
        }
      : {}),
    status: body.status ?? 'confirmed',
    busy: body.busy ?? true,
    ...(body.visibility !== undefined ? { visibility: body.visibility } : {}),
    hide_participants: body.hide_participants ?? false,
    ...(body.capacity !== undefined ? { capacity: body.capacity } : {}),
    organizer: self(grant),
    creator: self(grant),
    participants: participantsOf(body.participants ?? []),
    resources: resourcesOf(body.resources ?? []),
    ...(conferencing ? { conferencing } : {}),
    ...(reminders ? { reminders } : {}),
    metadata: body.metadata ?? {},
    created_at: now,
    updated_at: now,
    version: 1,
  };
  const itip: ItipChange = {
    grant,
    method: 'REQUEST',
    events: [record],
    recipients: notify ? record.participants : [],
  };
  try {
    await commitEvents(
      grant,
      calendar,
      { put: [{ next: record }] },
      [eventNotification(grant, 'event.created', record), ...itipOutbox(itip)],
      { uniqueUid: uid !== undefined },
      server,
    );
  } catch (error) {
    if (!(error instanceof db.UidTakenError)) throw error;
    // An earlier or concurrent create with the same key came first: its event is the answer.
    const existing = await eventWithUid(grant, uid!);
    if (!existing) throw new ConflictError(`An event with iCalendar UID '${uid}' is being changed; try again`);
    return existing;
  }
  return eventView(grant, record);
}

// ---- update ----------------------------------------------------------------------------------

const sameLines = (a: readonly string[] | undefined, b: readonly string[] | undefined) =>
  (a ?? []).join('\n') === (b ?? []).join('\n');
const LOCAL_FIELDS = new Set(['metadata', 'reminders', 'busy', 'visibility']);

/** The record after a request's changes (fields of the request replace the stored ones). */
function applyChanges(record: EventRecord, body: UpdateEventBody, calendar: CalendarRecord): EventRecord {
  const timing = body.when !== undefined ? resolveWhen(body.when, calendar.timezone) : undefined;
  const conferencing = body.conferencing !== undefined ? conferencingOf(body.conferencing) : record.conferencing;
  const reminders = body.reminders !== undefined ? remindersOf(body.reminders) : record.reminders;
  const next: EventRecord = {
    ...record,
    ...(body.title !== undefined ? { title: body.title } : {}),
    ...(timing ?? {}),
    ...(body.busy !== undefined ? { busy: body.busy } : {}),
    ...(body.visibility !== undefined ? { visibility: body.visibility } : {}),
    ...(body.hide_participants !== undefined ? { hide_participants: body.hide_participants } : {}),
    ...(body.capacity !== undefined ? { capacity: body.capacity } : {}),
    ...(body.participants !== undefined
      ? { participants: participantsOf(body.participants, record.participants) }
      : {}),
    ...(body.resources !== undefined ? { resources: resourcesOf(body.resources) } : {}),
    ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
    ...(body.status !== undefined ? { status: body.status } : {}),
    updated_at: clock.nowSeconds(),
    version: record.version + 1,
  };
  if (body.description !== undefined) {
    if (body.description === null) delete next.description;
    else next.description = body.description;
  }
  if (body.location !== undefined) {
    if (body.location === null) delete next.location;
    else next.location = body.location;
  }
  if (conferencing) next.conferencing = conferencing;
  if (reminders) next.reminders = reminders;
  return next;
}

const dayIn = (instant: number, zone: string) =>
  new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(
    instant * 1000,
  );

export async function updateEvent(
  grant: GrantRecord,
  eventId: string,
  calendarId: string,
  body: UpdateEventBody,
  notify = true,
  server?: EventServer,
) {
  const found = await locate(grant, calendarId, eventId);
  const { record, calendar } = found;
  if (record.origin === 'invitation') {
    const organizerOnly = Object.keys(body).filter((k) => !LOCAL_FIELDS.has(k));
    if (organizerOnly.length)
      throw new ForbiddenError(
        `This event is ${record.organizer.email}'s invitation: only its organizer changes ${organizerOnly.join(', ')}; answer it with POST .../events/${eventId}/send-rsvp`,
      );
  }
  if (found.master) return updateOccurrence(grant, found, body, notify, server);
  let next = applyChanges(record, body, calendar);
  const recurrenceLines = body.recurrence !== undefined ? body.recurrence : record.recurrence;
  const patternChanged =
    isSeries(record) && (!sameLines(recurrenceLines, record.recurrence) || body.when !== undefined);
  if (recurrenceLines?.length) {
    const recurrence = normalizeRecurrence(recurrenceLines, next.when, next.zone);
    next = { ...next, recurrence, last_end: seriesBounds({ when: next.when, zone: next.zone, recurrence }).last_end };
    if (!isSeries(record)) next = { ...next, exceptions: [], pattern_revision: 0 };
  } else if (isSeries(record)) {
    const { recurrence: _r, last_end: _l, exceptions: _e, ...single } = next;
    next = { ...single, pattern_revision: (record.pattern_revision ?? 0) + 1 };
  }
  const overrides = patternChanged ? await db.overridesOf(record) : [];
  if (patternChanged && next.recurrence)
    next = { ...next, exceptions: [], pattern_revision: (record.pattern_revision ?? 0) + 1 };
  const participantsChanged =
    JSON.stringify(next.participants.map((p) => p.email)) !== JSON.stringify(record.participants.map((p) => p.email));
  const told =
    record.origin !== 'invitation' &&
    notify &&
    (participantsChanged || Object.keys(body).some((k) => !LOCAL_FIELDS.has(k)));
  if (told) next.sequence = record.sequence + 1;
  const removed = told ? record.participants.filter((p) => !next.participants.some((q) => q.email === p.email)) : [];
  const [inTransaction, later] = [
    overrides.slice(0, OVERRIDES_IN_TRANSACTION),
    overrides.slice(OVERRIDES_IN_TRANSACTION),
  ];
  const outbox = [
    eventNotification(grant, 'event.updated', next),
    ...(told
      ? itipOutbox({
          grant,
          method: next.status === 'cancelled' ? 'CANCEL' : 'REQUEST',
          events: [next],
          recipients: next.participants,
        })
      : []),
    ...(removed.length
      ? itipOutbox({ grant, method: 'CANCEL', events: [{ ...next, status: 'cancelled' }], recipients: removed })
      : []),
  ];
  if (
    !(await commitEvents(
      grant,
      calendar,
      { put: [{ next, current: record }], remove: inTransaction },
      outbox,
      {},
      server,
    ))
  )
    throw changedMeanwhile();
  // Overrides of the old pattern beyond one transaction: already ignored (stale revision); removed now.
  if (later.length) await db.purgeEvents(later);
  return eventView(grant, next);
}

const changedMeanwhile = () => new ConflictError('The event was changed by another request; fetch it again and retry');

/** Changes one occurrence: its override is stored (or replaced) and the series records the exception. */
async function updateOccurrence(
  grant: GrantRecord,
  found: Located,
  body: UpdateEventBody,
  notify: boolean,
  server?: EventServer,
) {
  const { record, calendar } = found;
  const master = found.master!;
  if (body.recurrence !== undefined)
    throw new InvalidRequestError(
      `An occurrence has no recurrence of its own; change the series '${master.id}' instead`,
    );
  if (record.status === 'cancelled')
    throw new InvalidRequestError(
      'This occurrence was removed from its series, and a removed occurrence cannot be restored',
    );
  const next: EventRecord = { ...applyChanges(record, body, calendar), version: (found.stored?.version ?? 0) + 1 };
  if (
    body.when !== undefined &&
    found.previous &&
    dayIn(next.start, next.zone) <= dayIn(found.previous.start, next.zone)
  ) {
    throw new InvalidRequestError(
      `An occurrence cannot move to the same day as, or before, the previous occurrence (${dayIn(found.previous.start, next.zone)})`,
    );
  }
  const told = record.origin !== 'invitation' && notify && Object.keys(body).some((k) => !LOCAL_FIELDS.has(k));
  if (told) next.sequence = Math.max(record.sequence, master.sequence) + 1;
  const cancelled = next.status === 'cancelled';
  const key = next.occurrence_key!;
  const nextMaster: EventRecord = {
    ...master,
    exceptions: [...new Set([...(master.exceptions ?? []), key])],
    ...(told ? { sequence: next.sequence } : {}),
    version: master.version + 1,
  };
  const outbox = [
    eventNotification(grant, cancelled ? 'event.deleted' : 'event.updated', next),
    ...(told
      ? itipOutbox({
          grant,
          method: cancelled ? 'CANCEL' : 'REQUEST',
          events: [next],
          recipients: next.participants,
          master,
        })
      : []),
  ];
  const current = found.stored ? found.stored : undefined;
  if (
    !(await commitEvents(
      grant,
      calendar,
      {
        put: [
          { next, ...(current ? { current } : {}) },
          { next: nextMaster, current: master },
        ],
      },
      outbox,
      {},
      server,
    ))
  )
    throw changedMeanwhile();
  return eventView(grant, next);
}

// ---- delete ----------------------------------------------------------------------------------

export async function deleteEvent(
  grant: GrantRecord,
  eventId: string,
  calendarId: string,
  notify = true,
  server?: EventServer,
): Promise<void> {
  const found = await locate(grant, calendarId, eventId);
  if (found.master) {
    if (found.record.status === 'cancelled') throw new NotFoundError(`Occurrence '${eventId}' was already cancelled`);
    await updateOccurrence(grant, found, { status: 'cancelled' }, notify, server);
    return;
  }
  const record = found.record;
  const overrides = isSeries(record) ? await db.overridesOf(record) : [];
  const told = notify && record.origin !== 'invitation' && record.status !== 'cancelled';
  const cancelled: EventRecord = { ...record, status: 'cancelled', sequence: record.sequence + 1 };
  const outbox = [
    eventNotification(grant, 'event.deleted', { ...record, status: 'cancelled' }),
    ...(told ? itipOutbox({ grant, method: 'CANCEL', events: [cancelled], recipients: record.participants }) : []),
  ];
  if (
    !(await commitEvents(
      grant,
      found.calendar,
      { remove: [record, ...overrides.slice(0, OVERRIDES_IN_TRANSACTION)] },
      outbox,
      {},
      server,
    ))
  )
    throw changedMeanwhile();
  if (overrides.length > OVERRIDES_IN_TRANSACTION) await db.purgeEvents(overrides.slice(OVERRIDES_IN_TRANSACTION));
}

// ---- RSVP ------------------------------------------------------------------------------------

/** The agent answers an invitation: its own status is stored and a REPLY goes to the organizer. */
export async function sendRsvp(
  grant: GrantRecord,
  eventId: string,
  calendarId: string,
  body: SendRsvpBody,
  server?: EventServer,
) {
  const found = await locate(grant, calendarId, eventId);
  const record = found.record;
  const me = lower(grant.email);
  if (record.organizer.email === me)
    throw new InvalidRequestError('This event is organized by this account: RSVPs answer invitations from others');
  if (record.status === 'cancelled')
    throw new InvalidRequestError('This event was cancelled by its organizer; there is nothing to answer');
  const mine = record.participants.find((p) => p.email === me);
  const participants = mine
    ? record.participants.map((p) =>
        p.email === me
          ? { ...p, status: body.status, ...(body.comment !== undefined ? { comment: body.comment } : {}) }
          : p,
      )
    : [
        ...record.participants,
        { email: me, status: body.status, ...(body.comment !== undefined ? { comment: body.comment } : {}) },
      ];
  const next: EventRecord = {
    ...record,
    participants,
    updated_at: clock.nowSeconds(),
    version: (found.stored?.version ?? 0) + 1,
  };
  const reply = itipOutbox({
    grant,
    method: 'REPLY',
    events: [next],
    recipients: [record.organizer],
    ...(found.master ? { master: found.master } : {}),
    replier: next.participants.find((p) => p.email === me)!,
  });
  const puts: db.EventChange['put'] = [{ next, ...(found.stored ? { current: found.stored } : {}) }];
  if (found.master)
    puts.push({
      next: {
        ...found.master,
        exceptions: [...new Set([...(found.master.exceptions ?? []), next.occurrence_key!])],
        version: found.master.version + 1,
      },
      current: found.master,
    });
  if (
    !(await commitEvents(
      grant,
      found.calendar,
      { put: puts },
      [eventNotification(grant, 'event.updated', next), ...reply],
      {},
      server,
    ))
  )
    throw changedMeanwhile();
  return {};
}
