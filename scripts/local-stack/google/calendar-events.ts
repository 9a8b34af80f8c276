/**
 * Events of one calendar in the local Google Calendar fake: a request body checked and normalized into
 * stored fields (event types, attendees, Meet conferences, Google's patch merge), series with their
 * generated instances and stored exceptions, inserts, changes and cancellations that move the sync
 * state on, and an event rendered as the API answers it.
 */

import { createHash } from 'node:crypto';
import { DateTime } from 'luxon';
import { GoogleApiError, notFound } from './errors';
import {
  bad,
  compact,
  emptyRange,
  EVENT_COLORS,
  required,
  withoutNulls,
  type ConferenceData,
  type EventAttendee,
  type EventDateTime,
  type EventResource,
  type EventStatus,
  type EventType,
  type ExtendedProperties,
} from './calendar-resources';
import {
  checkRecurrence,
  HORIZON_MS,
  instantOf,
  iso,
  occurrencesOf,
  parseWhen,
  renderWhen,
  seriesOf,
  validZone,
  type Occurrence,
} from './recurrence';
import {
  etagOf,
  type CalendarCall,
  type CalendarState,
  type CalendarStore,
  type EventFields,
  type StoredEvent,
} from './calendar-state';

// ---------------------------------------------------------------------------------------------------
// Writing events: a request body becomes EventFields
// ---------------------------------------------------------------------------------------------------

export type EventBody = Record<string, unknown> & {
  id?: string;
  start?: EventDateTime;
  end?: EventDateTime;
  status?: EventStatus;
  eventType?: EventType;
  recurrence?: string[];
  attendees?: Partial<EventAttendee>[];
  transparency?: 'opaque' | 'transparent';
  extendedProperties?: ExtendedProperties;
  conferenceData?: ConferenceData | null;
  sequence?: number;
  iCalUID?: string;
  summary?: string;
  description?: string;
  location?: string;
  colorId?: string;
};

/** Fields an Event body may set that the fake keeps as they are. */
const PASSTHROUGH = [
  'colorId',
  'visibility',
  'reminders',
  'guestsCanInviteOthers',
  'guestsCanModify',
  'guestsCanSeeOtherGuests',
  'anyoneCanAddSelf',
  'source',
  'locked',
  'endTimeUnspecified',
  'focusTimeProperties',
  'outOfOfficeProperties',
  'workingLocationProperties',
  'birthdayProperties',
  'attachments',
] as const;

interface WriteOptions {
  calendar: CalendarStore;
  organizer: string;
  /** conferenceDataVersion: 0 ignores conferenceData in the body, 1 reads it (createRequest included). */
  conferenceVersion: number;
  supportsAttachments: boolean;
  /** Another client of the fake (calendarChangedOutside): may create fromGmail events. */
  outside: boolean;
  /** The event is an instance of a series: no recurrence of its own. */
  instance: boolean;
  newId: () => string;
}

function eventFields(body: EventBody, previous: EventFields | undefined, id: string, o: WriteOptions): EventFields {
  const start = parseWhen(body.start, 'start');
  const end = parseWhen(body.end, 'end');
  if (start.kind !== end.kind) throw bad('Invalid end time.');
  const zone = o.calendar.timeZone;
  const allDayEmpty = start.kind === 'date' && end.kind === 'date' && end.date <= start.date;
  if (instantOf(end, zone) < instantOf(start, zone) || allDayEmpty) throw emptyRange();

  const recurrence = body.recurrence?.length ? [...body.recurrence] : undefined;
  if (recurrence && o.instance) throw bad('An instance of a recurring event cannot have a recurrence.');
  if (recurrence?.some((line) => /^DTSTART|^DTEND/i.test(line))) throw bad('Invalid recurrence rule.');
  if (recurrence && start.kind === 'time' && !start.timeZone)
    throw required('Missing time zone definition for start time.');

  const eventType: EventType = previous?.eventType ?? body.eventType ?? 'default';
  if (previous && body.eventType !== undefined && body.eventType !== previous.eventType)
    throw bad('The event type cannot be changed.', 'eventTypeRestriction');
  let transparency = body.transparency ?? 'opaque';
  const other: Record<string, unknown> = {};
  for (const name of PASSTHROUGH) if (body[name] !== undefined && body[name] !== null) other[name] = body[name];
  if (!o.supportsAttachments) delete other.attachments;
  if (typeof other.colorId === 'string' && !EVENT_COLORS[other.colorId]) throw bad('Invalid color id value.');

  switch (eventType) {
    case 'fromGmail':
      if (!previous && !o.outside) throw bad('Events of type fromGmail cannot be created.', 'eventTypeRestriction');
      break;
    case 'focusTime':
    case 'outOfOffice':
    case 'workingLocation':
      if (!o.calendar.primary)
        throw bad(`A ${eventType} event can only be created on the primary calendar.`, 'eventTypeRestriction');
      if (eventType !== 'workingLocation' && start.kind === 'date')
        throw bad(`A ${eventType} event cannot be an all-day event.`, 'eventTypeRestriction');
      if (eventType === 'workingLocation') {
        if (!other.workingLocationProperties) throw required('Missing working location properties.');
        transparency = 'transparent';
        other.visibility = 'public';
      }
      break;
    case 'birthday': {
      const yearly = recurrence?.length === 1 && /^RRULE:FREQ=YEARLY$/i.test(recurrence[0]!);
      if (start.kind !== 'date' || !yearly)
        throw bad('A birthday event must be an all-day event that repeats every year.', 'eventTypeRestriction');
      other.birthdayProperties ??= { type: 'birthday' };
      transparency = 'transparent';
      other.visibility ??= 'private';
      break;
    }
    case 'default':
      break;
  }

  const fields: EventFields = {
    summary: body.summary,
    description: body.description,
    location: body.location,
    start,
    end,
    recurrence,
    attendees: attendeesOf(body.attendees, o.organizer),
    eventType,
    transparency,
    extendedProperties: body.extendedProperties,
    conferenceData: conferenceOf(body, previous?.conferenceData, o, id),
    sequence: 0,
    iCalUID: previous?.iCalUID ?? body.iCalUID ?? `${id}@google.com`,
    other,
  };
  // Google counts a new sequence when the time or the recurrence changes.
  const previousSequence = previous?.sequence ?? 0;
  const timing = previous && JSON.stringify([start, end, recurrence]) !== JSON.stringify(timingOf(previous));
  fields.sequence = Math.max(body.sequence ?? previousSequence, previousSequence) + (timing ? 1 : 0);
  return fields;
}

const timingOf = (f: EventFields) => [f.start, f.end, f.recurrence];

function attendeesOf(list: Partial<EventAttendee>[] | undefined, organizer: string): EventAttendee[] | undefined {
  if (!list?.length) return undefined;
  const seen = new Set<string>();
  const out: EventAttendee[] = [];
  for (const a of list) {
    if (!a.email) throw required('Missing attendee email.');
    const email = a.email.toLowerCase();
    if (seen.has(email)) continue;
    seen.add(email);
    const { self: _self, organizer: _organizer, ...rest } = a;
    out.push({
      ...rest,
      email: a.email,
      responseStatus: a.responseStatus ?? (email === organizer ? 'accepted' : 'needsAction'),
    });
  }
  return out;
}

/** Meet codes look like `abc-defg-hij`; derived from the request so a retried createRequest gets the same. */
function meetCode(seed: string): string {
  const digest = createHash('sha256').update(seed).digest();
  const letter = (i: number) => String.fromCharCode(97 + (digest[i]! % 26));
  const part = (from: number, n: number) => Array.from({ length: n }, (_, i) => letter(from + i)).join('');
  return `${part(0, 3)}-${part(3, 4)}-${part(7, 3)}`;
}

/**
 * conferenceData as Google keeps it: ignored at conferenceDataVersion=0; at 1, a createRequest for
 * hangoutsMeet makes a Meet conference (answered at once with status success), other data is copied,
 * and null removes the conference.
 */
function conferenceOf(
  body: EventBody,
  previous: ConferenceData | undefined,
  o: WriteOptions,
  id: string,
): ConferenceData | undefined {
  if (o.conferenceVersion < 1 || body.conferenceData === undefined) return previous;
  const data = body.conferenceData;
  if (data === null) return undefined;
  const request = data.createRequest;
  if (!request) return { ...data };
  if (!request.requestId) throw required('Missing conference request id.');
  if (previous?.createRequest?.requestId === request.requestId) return previous;
  const type = request.conferenceSolutionKey?.type;
  if (type !== 'hangoutsMeet') throw bad('Invalid conference type value.');
  const code = meetCode(`${o.calendar.id} ${id} ${request.requestId}`);
  return {
    conferenceId: code,
    conferenceSolution: {
      key: { type: 'hangoutsMeet' },
      name: 'Google Meet',
      iconUri:
        'https://fonts.gstatic.com/s/i/productlogos/meet_2020q4/v6/web-512dp/logo_meet_2020q4_color_2x_web_512dp.png',
    },
    createRequest: {
      requestId: request.requestId,
      conferenceSolutionKey: { type: 'hangoutsMeet' },
      status: { statusCode: 'success' },
    },
    entryPoints: [
      { entryPointType: 'video', uri: `https://meet.google.com/${code}`, label: `meet.google.com/${code}` },
    ],
  };
}

/** The body a stored event would be written with: what a patch is merged into. */
export function bodyOf(fields: EventFields, zone: string): EventBody {
  return compact({
    ...fields.other,
    summary: fields.summary,
    description: fields.description,
    location: fields.location,
    start: renderWhen(fields.start, zone),
    end: renderWhen(fields.end, zone),
    recurrence: fields.recurrence,
    attendees: fields.attendees,
    eventType: fields.eventType,
    transparency: fields.transparency,
    extendedProperties: fields.extendedProperties,
    sequence: fields.sequence,
    iCalUID: fields.iCalUID,
  });
}

/** Keys a patch replaces whole rather than merging into. */
const REPLACED_WHOLE = new Set(['start', 'end', 'conferenceData', 'originalStartTime']);

/**
 * Google's patch: given fields replace, objects merge, arrays replace, null clears (a field at any
 * depth, inside a value given whole too). The Discovery check lets null through in PATCH bodies only.
 */
export function merge(
  base: Record<string, unknown>,
  patch: Record<string, unknown>,
  top = true,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null && !(top && key === 'conferenceData')) delete out[key];
    else if (isPlainObject(value) && isPlainObject(out[key]) && !(top && REPLACED_WHOLE.has(key)))
      out[key] = merge(out[key] as Record<string, unknown>, value, false);
    else out[key] = withoutNulls(value);
  }
  return out;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

// ---------------------------------------------------------------------------------------------------
// Events of one calendar: series, instances, exceptions
// ---------------------------------------------------------------------------------------------------

export const isSeries = (e: StoredEvent) => !!e.fields.recurrence?.length && !e.recurringEventId;

export function instanceOf(series: StoredEvent, occurrence: Occurrence): StoredEvent {
  return {
    ...series,
    id: `${series.id}_${occurrence.key}`,
    fields: { ...series.fields, start: occurrence.start, end: occurrence.end, recurrence: undefined },
    recurringEventId: series.id,
    originalStart: occurrence.start,
  };
}

/** An event by id: stored, or a generated instance of a stored series (`<series>_<key>`). */
export function findEvent(calendar: CalendarStore, id: string): StoredEvent | undefined {
  const stored = calendar.events.get(id);
  if (stored) return stored;
  const m = /^(.+)_(\d{8})(T\d{6}Z)?$/.exec(id);
  const series = m ? calendar.events.get(m[1]!) : undefined;
  if (!m || !series || !isSeries(series)) return undefined;
  const at = m[3]
    ? DateTime.fromFormat(`${m[2]}${m[3]}`, "yyyyMMdd'T'HHmmss'Z'", { zone: 'utc' }).toMillis()
    : DateTime.fromFormat(m[2]!, 'yyyyMMdd', { zone: seriesOf(series.fields, calendar.timeZone).zone }).toMillis();
  if (Number.isNaN(at)) return undefined;
  const occurrence = occurrencesOf(series.fields, calendar.timeZone, at - 1, at + 1).find(
    (o) => o.key === m[2]! + (m[3] ?? ''),
  );
  if (!occurrence) return undefined;
  const instance = instanceOf(series, occurrence);
  return series.status === 'cancelled' ? { ...instance, status: 'cancelled' } : instance;
}

export function requiredEvent(calendar: CalendarStore, id: string): StoredEvent {
  const event = findEvent(calendar, id);
  if (!event) throw notFound();
  return event;
}

/** Stores a changed event, moving the calendar's sync state on. */
export function save(state: CalendarState, calendar: CalendarStore, event: StoredEvent): StoredEvent {
  const now = state.now;
  event.seq = calendar.bump(now);
  event.updated = now;
  event.etag = etagOf(now, event.seq);
  calendar.events.set(event.id, event);
  return event;
}

/** Deletes as Google does: a cancelled tombstone; a series takes its exceptions with it. */
export function cancel(state: CalendarState, calendar: CalendarStore, event: StoredEvent): void {
  if (event.status === 'cancelled') throw new GoogleApiError(410, 'Resource has been deleted', 'deleted');
  save(state, calendar, { ...event, status: 'cancelled' });
  if (isSeries(event))
    for (const e of calendar.events.values())
      if (e.recurringEventId === event.id && e.status !== 'cancelled')
        save(state, calendar, { ...e, status: 'cancelled' });
}

export function writeOptions(
  call: CalendarCall,
  calendar: CalendarStore,
  instance: boolean,
  outside = false,
): WriteOptions {
  return {
    calendar,
    organizer: calendar.id,
    conferenceVersion: Number(call.query.get('conferenceDataVersion') ?? '0'),
    supportsAttachments: call.query.get('supportsAttachments') === 'true',
    outside,
    instance,
    newId: () => call.state.newId(),
  };
}

export function insertEvent(
  state: CalendarState,
  calendar: CalendarStore,
  body: EventBody,
  o: WriteOptions,
  creator: string,
): StoredEvent {
  if (body.status === 'cancelled') throw bad('Invalid value for status: cancelled.');
  let id = body.id;
  if (id !== undefined) {
    if (!/^[a-v0-9]{5,1024}$/.test(id)) throw bad('Invalid resource id value.');
    if (calendar.events.has(id)) throw new GoogleApiError(409, 'The requested identifier already exists.', 'duplicate');
  } else {
    do id = o.newId();
    while (calendar.events.has(id));
  }
  const fields = eventFields(body, undefined, id, o);
  checkRecurrence(fields, calendar.timeZone);
  const now = state.now;
  return save(state, calendar, {
    id,
    fields,
    status: body.status ?? 'confirmed',
    created: now,
    updated: now,
    seq: 0,
    etag: '',
    creator,
  });
}

/** Replaces an event's fields (update) or a merge of them with the body (patch); an instance becomes an exception. */
export function changeEvent(
  state: CalendarState,
  calendar: CalendarStore,
  event: StoredEvent,
  body: EventBody,
  o: WriteOptions,
): StoredEvent {
  if (event.status === 'cancelled' && body.status !== 'confirmed' && body.status !== 'tentative')
    throw new GoogleApiError(410, 'Resource has been deleted', 'deleted');
  if (body.status === 'cancelled') {
    cancel(state, calendar, event);
    return calendar.events.get(event.id)!;
  }
  const fields = eventFields(body, event.fields, event.id, o);
  checkRecurrence(fields, calendar.timeZone);
  return save(state, calendar, { ...event, fields, status: body.status ?? event.status });
}

// ---------------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------------

interface RenderOptions {
  /** The zone dateTimes are written in: the request's timeZone, else the calendar's. */
  zone: string;
  maxAttendees?: number;
  /** Lists show a cancelled event as Google does: its id, status and instance identity only. */
  minimalIfCancelled: boolean;
}

function htmlLink(calendarId: string, eventId: string): string {
  return `https://www.google.com/calendar/event?eid=${Buffer.from(`${eventId} ${calendarId}`).toString('base64url')}`;
}

export function renderEvent(calendar: CalendarStore, e: StoredEvent, o: RenderOptions): EventResource {
  const originalStartTime = e.originalStart ? renderWhen(e.originalStart, o.zone) : undefined;
  if (e.status === 'cancelled' && o.minimalIfCancelled)
    return compact({
      kind: 'calendar#event',
      etag: e.etag,
      id: e.id,
      status: e.status,
      updated: iso(e.updated),
      recurringEventId: e.recurringEventId,
      originalStartTime,
    });
  const f = e.fields;
  // `self` is "the calendar on which this copy of the event appears" (a primary calendar's id is its owner's address).
  const organizer = calendar.id;
  let attendees = f.attendees?.map((a) =>
    compact({
      ...a,
      organizer: a.email.toLowerCase() === organizer || undefined,
      self: a.email.toLowerCase() === calendar.id || undefined,
    }),
  );
  let attendeesOmitted: boolean | undefined;
  if (attendees && o.maxAttendees !== undefined && attendees.length > o.maxAttendees) {
    attendees = attendees.filter((a) => a.self);
    attendeesOmitted = true;
  }
  return compact({
    kind: 'calendar#event',
    etag: e.etag,
    id: e.id,
    status: e.status,
    htmlLink: htmlLink(calendar.id, e.id),
    created: iso(e.created),
    updated: iso(e.updated),
    summary: f.summary,
    description: f.description,
    location: f.location,
    ...f.other,
    creator: compact({ email: e.creator, self: e.creator === calendar.id || undefined }),
    // The fake keeps one copy of an event, on its organizer's calendar.
    organizer: compact({ email: organizer, displayName: calendar.primary ? undefined : calendar.summary, self: true }),
    start: renderWhen(f.start, o.zone),
    end: renderWhen(f.end, o.zone),
    recurrence: e.recurringEventId ? undefined : f.recurrence,
    recurringEventId: e.recurringEventId,
    originalStartTime,
    transparency: f.transparency === 'transparent' ? 'transparent' : undefined,
    iCalUID: f.iCalUID,
    sequence: f.sequence,
    attendees: attendees?.length ? attendees : undefined,
    attendeesOmitted,
    extendedProperties: f.extendedProperties,
    hangoutLink:
      f.conferenceData?.conferenceSolution?.key.type === 'hangoutsMeet'
        ? f.conferenceData.entryPoints?.[0]?.uri
        : undefined,
    conferenceData: f.conferenceData,
    reminders: f.other.reminders ?? { useDefault: true },
    eventType: f.eventType,
  }) as EventResource;
}

export function renderOptions(call: CalendarCall, calendar: CalendarStore, minimalIfCancelled: boolean): RenderOptions {
  const zone = call.query.get('timeZone') ?? calendar.timeZone;
  if (!validZone(zone)) throw bad('Invalid time zone definition.');
  const maxAttendees = call.query.get('maxAttendees');
  return { zone, minimalIfCancelled, ...(maxAttendees ? { maxAttendees: Number(maxAttendees) } : {}) };
}

// ---------------------------------------------------------------------------------------------------
// Events in a time window
// ---------------------------------------------------------------------------------------------------

/** Where expanding a series stops: `to`, or the horizon past the clock (or past `from`) when unbounded. */
export const expansionEnd = (from: number, to: number, now: number) =>
  Number.isFinite(to) ? to : Math.max(now, Number.isFinite(from) ? from : now) + HORIZON_MS;

export const overlaps = (e: StoredEvent, zone: string, from: number, to: number) =>
  instantOf(e.fields.end, zone) > from && instantOf(e.fields.start, zone) < to;

/** Single events, exceptions and generated instances of live series in [from, to). */
export function expandedEvents(calendar: CalendarStore, from: number, to: number, now: number): StoredEvent[] {
  const out: StoredEvent[] = [];
  for (const e of calendar.events.values()) {
    if (isSeries(e)) {
      if (e.status === 'cancelled') continue;
      for (const occurrence of occurrencesOf(e.fields, calendar.timeZone, from, expansionEnd(from, to, now))) {
        // A stored exception stands for its instance (moved, changed or cancelled).
        if (!calendar.events.has(`${e.id}_${occurrence.key}`)) out.push(instanceOf(e, occurrence));
      }
    } else if (overlaps(e, calendar.timeZone, from, to)) out.push(e);
  }
  return out;
}
