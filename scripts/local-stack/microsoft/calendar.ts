import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { badRequest, GraphError, invalidRequest, itemNotFound, UnsupportedByFakeError } from './errors';
import { maxPageSize, page, type EmailAddress, type GraphAnswer, type GraphCall, type GraphUser } from './mail';
import { topLevelItems } from './openapi';
import { compileFilter, compileOrderBy, type Fields } from './query';
import { exchangeId } from './ids';

/**
 * The state and the handlers of the local Graph fake's calendars: each user's calendars (a default one
 * made with the user), events (single instances and series masters stored; occurrences derived from the
 * master's patternedRecurrence, exceptions and cancellations kept on the master), meeting copies in the
 * calendars of attendees the fake hosts, the snapshots calendarView/delta compares against, and each
 * operation's handler keyed by the description's operationId. As for mail, the server checks every request
 * and answer against the descriptions; a handler here only has to be right about behaviour.
 *
 * Times are stored as instants (epoch ms) with the zone the client gave; answers give them in UTC, or in
 * the zone of `Prefer: outlook.timezone="…"`, as Graph does. Series expand in the zone of the master's
 * start (or `range.recurrenceTimeZone`), so an occurrence keeps its wall-clock time across a DST change.
 */

// ---------------------------------------------------------------------------------------------------
// Stored resources
// ---------------------------------------------------------------------------------------------------

export type ShowAs = 'unknown' | 'free' | 'tentative' | 'busy' | 'oof' | 'workingElsewhere';
type Sensitivity = 'normal' | 'personal' | 'private' | 'confidential';
type Importance = 'low' | 'normal' | 'high';
type ResponseType = 'none' | 'organizer' | 'tentativelyAccepted' | 'accepted' | 'declined' | 'notResponded';
type EventType = 'singleInstance' | 'occurrence' | 'exception' | 'seriesMaster';
type DayOfWeek = 'sunday' | 'monday' | 'tuesday' | 'wednesday' | 'thursday' | 'friday' | 'saturday';
const DAYS: DayOfWeek[] = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const WEEK_INDEX = ['first', 'second', 'third', 'fourth', 'last'] as const;

interface ResponseStatus {
  response: ResponseType;
  /** Epoch ms; undefined is Graph's `0001-01-01T00:00:00Z`, never answered. */
  time?: number;
}

interface Attendee {
  emailAddress: EmailAddress;
  type: 'required' | 'optional' | 'resource';
  status: ResponseStatus;
}

interface Recurrence {
  pattern: {
    type: 'daily' | 'weekly' | 'absoluteMonthly' | 'relativeMonthly' | 'absoluteYearly' | 'relativeYearly';
    interval: number;
    daysOfWeek: DayOfWeek[];
    dayOfMonth: number;
    month: number;
    index: (typeof WEEK_INDEX)[number];
    firstDayOfWeek: DayOfWeek;
  };
  range: {
    type: 'endDate' | 'noEnd' | 'numbered';
    startDate: string;
    endDate?: string;
    numberOfOccurrences: number;
    recurrenceTimeZone?: string;
  };
}

export interface StoredCalendar {
  id: string;
  name: string;
  color: string;
  hexColor: string;
  isDefault: boolean;
  changeKey: string;
}

export interface StoredEvent {
  id: string;
  calendarId: string;
  type: EventType;
  iCalUId: string;
  subject: string;
  body: { contentType: 'text' | 'html'; content: string };
  start: number;
  end: number;
  /** The zones the client gave start and end in (`originalStartTimeZone`). */
  startZone: string;
  endZone: string;
  isAllDay: boolean;
  location?: Record<string, unknown>;
  attendees: Attendee[];
  organizer: EmailAddress;
  isOrganizer: boolean;
  responseStatus: ResponseStatus;
  responseRequested: boolean;
  recurrence?: Recurrence;
  isOnlineMeeting: boolean;
  onlineMeetingProvider: 'unknown' | 'teamsForBusiness';
  joinUrl?: string;
  showAs: ShowAs;
  sensitivity: Sensitivity;
  importance: Importance;
  categories: string[];
  isReminderOn: boolean;
  reminderMinutesBeforeStart: number;
  isCancelled: boolean;
  hideAttendees: boolean;
  /** The client's `transactionId` of the create: a second create with the same one answers the first event. */
  transactionId?: string;
  /** singleValueExtendedProperties, by id as the client wrote it. */
  extended: Map<string, string>;
  created: number;
  modified: number;
  changeKey: string;
  /** A series master's changed occurrences (by original start) and removed ones. */
  exceptions: Map<number, StoredEvent>;
  cancelled: Set<number>;
  /** An occurrence or exception: its master and original start. */
  seriesMasterId?: string;
  originalStart?: number;
}

/** What calendarView/delta compares a round with: each instance in the window and its version. */
type Snapshot = Map<string, string>;

type DeltaCursor =
  | { kind: 'page'; scope: string; removed: string[]; ids: string[]; snapshot: Snapshot; from: number; to: number }
  | { kind: 'delta'; scope: string; snapshot: Snapshot; from: number; to: number };

const newChangeKey = () => randomBytes(12).toString('base64');
const OCCURRENCE = /^(.+=)OCC([0-9a-z]+)=$/;

/** An occurrence's ID: its master's and its original start, so the same occurrence keeps one ID. */
const occurrenceId = (masterId: string, originalStart: number) => `${masterId}OCC${originalStart.toString(36)}=`;

export interface CalendarEnvironment {
  now: () => number;
}

/** One user's calendars and events. */
export class UserCalendars {
  readonly calendars = new Map<string, StoredCalendar>();
  /** Single instances and series masters; occurrences and exceptions live on their master. */
  readonly events = new Map<string, StoredEvent>();
  cursors = new Map<string, DeltaCursor>();
  readonly defaultId: string;

  constructor(
    readonly user: GraphUser,
    readonly timeZone: string,
    private readonly env: CalendarEnvironment,
  ) {
    this.defaultId = exchangeId('AAEGAAA=');
    this.calendars.set(this.defaultId, {
      id: this.defaultId,
      name: 'Calendar',
      color: 'auto',
      hexColor: '',
      isDefault: true,
      changeKey: newChangeKey(),
    });
  }

  get now(): number {
    return this.env.now();
  }

  get address(): EmailAddress {
    return { name: this.user.displayName, address: this.user.mail };
  }

  calendar(id?: string): StoredCalendar {
    const calendar = this.calendars.get(id ?? this.defaultId);
    if (!calendar) throw itemNotFound();
    return calendar;
  }

  /** An event by ID: a stored one, or an occurrence or exception of a stored master (not a cancelled one). */
  event(id: string): StoredEvent {
    const stored = this.events.get(id);
    if (stored) return stored;
    const m = OCCURRENCE.exec(id);
    const master = m ? this.events.get(m[1]!) : undefined;
    if (!m || !master?.recurrence) throw itemNotFound();
    const originalStart = parseInt(m[2]!, 36);
    if (master.cancelled.has(originalStart)) throw itemNotFound();
    const exception = master.exceptions.get(originalStart);
    if (exception) return exception;
    if (!occurrenceStarts(master, originalStart, originalStart + 1).includes(originalStart)) throw itemNotFound();
    return occurrenceOf(master, originalStart);
  }

  masterOf(event: StoredEvent): StoredEvent | undefined {
    return event.seriesMasterId ? this.events.get(event.seriesMasterId) : undefined;
  }

  touch(event: StoredEvent): void {
    event.modified = this.now;
    event.changeKey = newChangeKey();
  }

  /** Every instance (single, occurrence, exception) of a calendar overlapping [from, to), by start. */
  view(calendarId: string, from: number, to: number): StoredEvent[] {
    const instances: StoredEvent[] = [];
    for (const event of this.events.values()) {
      if (event.calendarId !== calendarId) continue;
      if (event.type === 'seriesMaster') instances.push(...instancesOf(event, from, to));
      else if (overlaps(event, from, to)) instances.push(event);
    }
    return instances.sort((a, b) => a.start - b.start || (a.id < b.id ? -1 : 1));
  }

  newCursor(cursor: DeltaCursor): string {
    const token = `R0usm${randomBytes(18).toString('base64url')}`;
    this.cursors.set(token, cursor);
    return token;
  }

  expireDelta(): void {
    this.cursors.clear();
  }
}

const overlaps = (e: { start: number; end: number }, from: number, to: number) =>
  e.start < to && (e.end > from || (e.end === e.start && e.start >= from));

/** An occurrence as Graph answers it: the master's fields at another time, under its own ID. */
function occurrenceOf(master: StoredEvent, originalStart: number): StoredEvent {
  const { recurrence: _recurrence, ...fields } = master;
  return {
    ...fields,
    id: occurrenceId(master.id, originalStart),
    type: 'occurrence',
    start: originalStart,
    end: originalStart + (master.end - master.start),
    seriesMasterId: master.id,
    originalStart,
    exceptions: new Map(),
    cancelled: new Set(),
  };
}

/** A master's occurrences and exceptions overlapping [from, to); cancelled ones left out. */
function instancesOf(master: StoredEvent, from: number, to: number): StoredEvent[] {
  const duration = master.end - master.start;
  const out: StoredEvent[] = [];
  for (const start of occurrenceStarts(master, from - duration, to)) {
    if (master.cancelled.has(start) || master.exceptions.has(start)) continue;
    const occurrence = occurrenceOf(master, start);
    if (overlaps(occurrence, from, to)) out.push(occurrence);
  }
  for (const exception of master.exceptions.values()) if (overlaps(exception, from, to)) out.push(exception);
  return out.sort((a, b) => a.start - b.start);
}

// ---------------------------------------------------------------------------------------------------
// Time zones and recurrence
// ---------------------------------------------------------------------------------------------------

/**
 * Windows time zone names Graph takes, as CLDR's windowsZones maps them (territory 001); IANA names are
 * taken as they are. A zone the fake cannot place is refused as Graph refuses an unknown one.
 */
const WINDOWS_ZONES: Record<string, string> = {
  UTC: 'UTC',
  'Coordinated Universal Time': 'UTC',
  'Pacific Standard Time': 'America/Los_Angeles',
  'Mountain Standard Time': 'America/Denver',
  'Central Standard Time': 'America/Chicago',
  'Eastern Standard Time': 'America/New_York',
  'GMT Standard Time': 'Europe/London',
  'Greenwich Standard Time': 'Atlantic/Reykjavik',
  'W. Europe Standard Time': 'Europe/Berlin',
  'Romance Standard Time': 'Europe/Paris',
  'Central Europe Standard Time': 'Europe/Budapest',
  'Central European Standard Time': 'Europe/Warsaw',
  'FLE Standard Time': 'Europe/Kiev',
  'India Standard Time': 'Asia/Calcutta',
  'China Standard Time': 'Asia/Shanghai',
  'Tokyo Standard Time': 'Asia/Tokyo',
  'AUS Eastern Standard Time': 'Australia/Sydney',
};

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The IANA zone for a zone name Graph takes; 400 for one it does not. */
function ianaZone(name: string): string {
  const zone = WINDOWS_ZONES[name] ?? name;
  if (!formatters.has(zone)) {
    try {
      formatters.set(
        zone,
        new Intl.DateTimeFormat('en-US', {
          timeZone: zone,
          hourCycle: 'h23',
          year: 'numeric',
          month: '2-digit',
          day: '2-digit',
          hour: '2-digit',
          minute: '2-digit',
          second: '2-digit',
        }),
      );
    } catch {
      throw new GraphError(
        400,
        'TimeZoneNotSupportedException',
        `A valid TimeZone value must be specified. The following TimeZone value is not supported: '${name}'.`,
      );
    }
  }
  return zone;
}

interface Wall {
  y: number;
  mo: number;
  d: number;
  h: number;
  mi: number;
  s: number;
  ms: number;
}

function wallOf(instant: number, zoneName: string): Wall {
  const parts = Object.fromEntries(
    formatters
      .get(ianaZone(zoneName))!
      .formatToParts(new Date(instant))
      .map((p) => [p.type, Number(p.value)]),
  );
  return {
    y: parts.year!,
    mo: parts.month!,
    d: parts.day!,
    h: parts.hour!,
    mi: parts.minute!,
    s: parts.second!,
    ms: instant % 1000,
  };
}

const wallAsUtc = (w: Wall) => Date.UTC(w.y, w.mo - 1, w.d, w.h, w.mi, w.s, w.ms);

/** The instant a wall-clock time in a zone names (the later one across a DST gap, as Exchange does). */
function instantOf(w: Wall, zoneName: string): number {
  const target = wallAsUtc(w);
  let guess = target;
  for (let i = 0; i < 3; i++) guess += target - wallAsUtc(wallOf(guess, zoneName));
  return guess;
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,7}))?)?$/;

/** A dateTimeTimeZone from a client: local time in its zone, or an instant when it carries an offset. */
function instantFrom(value: { dateTime?: string; timeZone?: string | null } | undefined, what: string): number {
  if (!value?.dateTime) throw invalidRequest(`The ${what} of an event needs a dateTime.`);
  const zone = value.timeZone || 'UTC';
  ianaZone(zone);
  const m = DATE_TIME.exec(value.dateTime);
  if (!m) {
    const instant = Date.parse(value.dateTime);
    if (Number.isNaN(instant)) throw badRequest(`'${value.dateTime}' is not a valid dateTime.`);
    return instant;
  }
  const [y, mo, d, h, mi, s, frac] = m
    .slice(1)
    .map((x, i) => (i === 6 ? Number((x ?? '0').padEnd(3, '0').slice(0, 3)) : Number(x ?? 0)));
  return instantOf({ y: y!, mo: mo!, d: d!, h: h!, mi: mi!, s: s!, ms: frac! }, zone);
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** Graph's dateTimeTimeZone answer: seven fractional digits, no offset. */
function dateTimeIn(instant: number, zone: string): { dateTime: string; timeZone: string } {
  const w = wallOf(instant, zone);
  return {
    dateTime: `${w.y}-${pad(w.mo)}-${pad(w.d)}T${pad(w.h)}:${pad(w.mi)}:${pad(w.s)}.${pad(w.ms, 3)}0000`,
    timeZone: zone,
  };
}

const isoZ = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$10000Z');

/** A query-string time (`startDateTime`): with an offset, or UTC without one. */
function windowTime(value: string | null, name: string): number {
  if (value === null)
    throw new GraphError(
      400,
      'ErrorInvalidParameter',
      'This request requires a time window specified by the query string parameters StartDateTime and EndDateTime.',
    );
  const instant = Date.parse(/(Z|[+-]\d{2}:\d{2})$/i.test(value) ? value : `${value}Z`);
  if (Number.isNaN(instant))
    throw new GraphError(400, 'ErrorInvalidParameter', `The value of parameter '${name}' is invalid.`);
  return instant;
}

/** Days since the epoch of a `YYYY-MM-DD` date, and back. */
const dayNumber = (date: string) => Date.parse(`${date}T00:00:00Z`) / 86_400_000;
const dateOf = (day: number) => new Date(day * 86_400_000).toISOString().slice(0, 10);
const daysInMonth = (y: number, mo: number) => new Date(Date.UTC(y, mo, 0)).getUTCDate();
const dayOfWeek = (day: number) => DAYS[(((day + 4) % 7) + 7) % 7]!;

/** The day, in its month, that a relative pattern (`second tuesday`) names; undefined when there is none. */
function relativeDay(
  y: number,
  mo: number,
  days: DayOfWeek[],
  index: Recurrence['pattern']['index'],
): number | undefined {
  const first = Date.UTC(y, mo - 1, 1) / 86_400_000;
  const matching: number[] = [];
  for (let d = 0; d < daysInMonth(y, mo); d++) if (days.includes(dayOfWeek(first + d))) matching.push(first + d);
  return index === 'last' ? matching.at(-1) : matching[WEEK_INDEX.indexOf(index)];
}

/** The dates (day numbers) a pattern gives from its range's start on, in order, up to `lastDay`. */
function* patternDays(r: Recurrence, lastDay: number): Generator<number> {
  const { pattern } = r;
  const startDay = dayNumber(r.range.startDate);
  const interval = Math.max(1, pattern.interval);
  const [sy, smo] = r.range.startDate.split('-').map(Number) as [number, number];
  switch (pattern.type) {
    case 'daily':
      for (let d = startDay; d <= lastDay; d += interval) yield d;
      return;
    case 'weekly': {
      const firstDow = DAYS.indexOf(pattern.firstDayOfWeek);
      const weekStart = startDay - ((DAYS.indexOf(dayOfWeek(startDay)) - firstDow + 7) % 7);
      const offsets = pattern.daysOfWeek.map((d) => (DAYS.indexOf(d) - firstDow + 7) % 7).sort((a, b) => a - b);
      for (let w = weekStart; w <= lastDay; w += 7 * interval)
        for (const o of offsets) if (w + o >= startDay && w + o <= lastDay) yield w + o;
      return;
    }
    case 'absoluteMonthly':
    case 'relativeMonthly':
    case 'absoluteYearly':
    case 'relativeYearly': {
      const yearly = pattern.type.endsWith('Yearly');
      for (let k = 0; ; k++) {
        const months = yearly ? pattern.month - 1 + 12 * (sy + k * interval) : smo - 1 + 12 * sy + k * interval;
        const [y, mo] = [Math.floor(months / 12), (months % 12) + 1];
        if (Date.UTC(y, mo - 1, 1) / 86_400_000 > lastDay) return;
        // Outlook puts a day past the month's end (the 31st) on its last day.
        const day = pattern.type.startsWith('absolute')
          ? Date.UTC(y, mo - 1, Math.min(pattern.dayOfMonth, daysInMonth(y, mo))) / 86_400_000
          : relativeDay(y, mo, pattern.daysOfWeek, pattern.index);
        if (day !== undefined && day >= startDay && day <= lastDay) yield day;
      }
    }
  }
}

/** The original starts of a series' occurrences (cancelled ones included) that begin in [from, to). */
function occurrenceStarts(master: StoredEvent, from: number, to: number): number[] {
  const r = master.recurrence!;
  const zone = r.range.recurrenceTimeZone || master.startZone;
  const time = wallOf(master.start, zone);
  const endDay = r.range.type === 'endDate' && r.range.endDate ? dayNumber(r.range.endDate) : Infinity;
  // No occurrence of a window can fall on a day after the window's end plus a day of zone offset.
  const lastDay = Math.min(endDay, Math.floor(to / 86_400_000) + 1);
  const starts: number[] = [];
  let count = 0;
  for (const day of patternDays(r, lastDay)) {
    if (r.range.type === 'numbered' && count >= r.range.numberOfOccurrences) break;
    count++;
    const [y, mo, d] = dateOf(day).split('-').map(Number) as [number, number, number];
    const start = instantOf({ ...time, y, mo, d }, zone);
    if (start >= to) break;
    if (start >= from) starts.push(start);
  }
  return starts;
}

// ---------------------------------------------------------------------------------------------------
// The state of all calendars
// ---------------------------------------------------------------------------------------------------

/** Another client's change to a user's events, so that calendarView/delta has something to report. */
export type EventOutsideChange =
  | { kind: 'createEvent'; event: EventBody; calendar?: string }
  | { kind: 'updateEvent'; id: string; event: EventBody }
  | { kind: 'deleteEvent'; id: string };

export class CalendarState {
  readonly users = new Map<string, UserCalendars>();

  constructor(private readonly env: CalendarEnvironment) {}

  addUser(user: GraphUser, timeZone = 'UTC'): UserCalendars {
    ianaZone(timeZone);
    const calendars = new UserCalendars(user, timeZone, this.env);
    this.users.set(user.id, calendars);
    return calendars;
  }

  of(user: GraphUser): UserCalendars {
    const calendars = this.users.get(user.id);
    if (!calendars) throw new Error(`the Graph fake has no calendars for ${user.mail}`);
    return calendars;
  }

  /** A user of the fake by address (any case). */
  byAddress(address: string): UserCalendars | undefined {
    const key = address.toLowerCase();
    for (const c of this.users.values())
      if (c.user.mail.toLowerCase() === key || c.user.userPrincipalName.toLowerCase() === key) return c;
    return undefined;
  }

  required(email: string): UserCalendars {
    const calendars = this.byAddress(email);
    if (!calendars) throw new Error(`the Graph fake has no user ${email}`);
    return calendars;
  }

  changeOutside(email: string, change: EventOutsideChange): { id: string } | undefined {
    const owner = this.required(email);
    switch (change.kind) {
      case 'createEvent':
        return { id: createEvent(this, owner, owner.calendar(change.calendar), change.event).id };
      case 'updateEvent':
        return { id: updateEvent(this, owner, owner.event(change.id), change.event).id };
      case 'deleteEvent':
        deleteEvent(this, owner, owner.event(change.id));
        return undefined;
    }
  }

  reset(): void {
    this.users.clear();
  }
}

// ---------------------------------------------------------------------------------------------------
// Bodies clients send, and the changes they make
// ---------------------------------------------------------------------------------------------------

type DateTimeTimeZone = { dateTime?: string; timeZone?: string | null };

export type EventBody = Partial<{
  subject: string | null;
  body: { contentType?: string; content?: string | null } | null;
  start: DateTimeTimeZone;
  end: DateTimeTimeZone;
  isAllDay: boolean | null;
  location: Record<string, unknown> | null;
  attendees: { emailAddress?: EmailAddress; type?: string }[];
  recurrence: Partial<{ pattern: Partial<Recurrence['pattern']>; range: Partial<Recurrence['range']> }> | null;
  isOnlineMeeting: boolean | null;
  onlineMeetingProvider: string;
  showAs: string;
  sensitivity: string;
  importance: string;
  categories: string[];
  isReminderOn: boolean | null;
  reminderMinutesBeforeStart: number | null;
  responseRequested: boolean | null;
  singleValueExtendedProperties: { id?: string; value?: string | null }[];
}> &
  Record<string, unknown>;

/** Enum members as described, whatever case the request used (Graph reads them without regard to case). */
function member<T extends string>(value: string | undefined | null, members: readonly T[]): T | undefined {
  if (value === undefined || value === null) return undefined;
  return members.find((m) => m.toLowerCase() === value.toLowerCase());
}

function recurrenceFrom(body: NonNullable<EventBody['recurrence']>, start: number, zone: string): Recurrence {
  const p = body.pattern ?? {};
  const r = body.range ?? {};
  const type = member(p.type, [
    'daily',
    'weekly',
    'absoluteMonthly',
    'relativeMonthly',
    'absoluteYearly',
    'relativeYearly',
  ] as const);
  if (!type) throw invalidRequest('A recurrence needs a pattern type.');
  const interval = p.interval ?? 1;
  if (interval < 1) throw invalidRequest('The interval of a recurrence pattern must be at least 1.');
  const daysOfWeek = (p.daysOfWeek ?? []).map((d) => member(d, DAYS)!);
  if (['weekly', 'relativeMonthly', 'relativeYearly'].includes(type) && !daysOfWeek.length)
    throw invalidRequest(`A ${type} recurrence pattern needs daysOfWeek.`);
  if (type.startsWith('absolute') && !(p.dayOfMonth! >= 1 && p.dayOfMonth! <= 31))
    throw invalidRequest(`A ${type} recurrence pattern needs a dayOfMonth from 1 to 31.`);
  if (type.endsWith('Yearly') && !(p.month! >= 1 && p.month! <= 12))
    throw invalidRequest(`A ${type} recurrence pattern needs a month from 1 to 12.`);
  const rangeType = member(r.type, ['endDate', 'noEnd', 'numbered'] as const);
  if (!rangeType) throw invalidRequest('A recurrence needs a range type.');
  const startDate = r.startDate ?? dateTimeIn(start, zone).dateTime.slice(0, 10);
  if (rangeType === 'endDate' && (!r.endDate || r.endDate < startDate))
    throw invalidRequest('A recurrence range of type endDate needs an endDate on or after its startDate.');
  if (rangeType === 'numbered' && !(r.numberOfOccurrences! >= 1))
    throw invalidRequest('A numbered recurrence range needs numberOfOccurrences of at least 1.');
  return {
    pattern: {
      type,
      interval,
      daysOfWeek,
      dayOfMonth: p.dayOfMonth ?? 0,
      month: p.month ?? 0,
      index: member(p.index, WEEK_INDEX) ?? 'first',
      firstDayOfWeek: member(p.firstDayOfWeek, DAYS) ?? 'sunday',
    },
    range: {
      type: rangeType,
      startDate,
      ...(rangeType === 'endDate' ? { endDate: r.endDate! } : {}),
      numberOfOccurrences: rangeType === 'numbered' ? r.numberOfOccurrences! : 0,
      ...(r.recurrenceTimeZone ? { recurrenceTimeZone: (ianaZone(r.recurrenceTimeZone), r.recurrenceTimeZone) } : {}),
    },
  };
}

const SHOW_AS = ['unknown', 'free', 'tentative', 'busy', 'oof', 'workingElsewhere'] as const;
const SENSITIVITY = ['normal', 'personal', 'private', 'confidential'] as const;
const IMPORTANCE = ['low', 'normal', 'high'] as const;
const ATTENDEE_TYPES = ['required', 'optional', 'resource'] as const;
const NO_RESPONSE: ResponseStatus = { response: 'none' };

/** A Teams join URL of the shape Graph gives `onlineMeeting.joinUrl`. */
const joinUrl = () =>
  `https://teams.microsoft.com/l/meetup-join/19%3ameeting_${randomBytes(24).toString('base64url')}%40thread.v2/0`;

/** Applies the fields a create or a PATCH may set; returns whether the time or recurrence changed. */
function applyBody(event: StoredEvent, body: EventBody): boolean {
  let timing = false;
  if (body.subject !== undefined) event.subject = body.subject ?? '';
  if (body.body !== undefined)
    event.body = {
      contentType: body.body?.contentType?.toLowerCase() === 'text' ? 'text' : 'html',
      content: body.body?.content ?? '',
    };
  if (body.start !== undefined) {
    event.start = instantFrom(body.start, 'start');
    event.startZone = body.start.timeZone || 'UTC';
    timing = true;
  }
  if (body.end !== undefined) {
    event.end = instantFrom(body.end, 'end');
    event.endZone = body.end.timeZone || 'UTC';
    timing = true;
  }
  if (body.isAllDay !== undefined) event.isAllDay = body.isAllDay ?? false;
  if (body.location !== undefined)
    event.location = body.location
      ? { displayName: '', locationType: 'default', uniqueIdType: 'unknown', ...body.location }
      : undefined;
  if (body.attendees !== undefined)
    event.attendees = body.attendees.map((a) => {
      if (!a.emailAddress?.address) throw invalidRequest('An attendee needs an emailAddress with an address.');
      const known = event.attendees.find(
        (k) => k.emailAddress.address.toLowerCase() === a.emailAddress!.address.toLowerCase(),
      );
      return {
        emailAddress: { ...a.emailAddress },
        type: member(a.type, ATTENDEE_TYPES) ?? 'required',
        status: known?.status ?? NO_RESPONSE,
      };
    });
  if (body.recurrence !== undefined) {
    if (event.type === 'occurrence' || event.type === 'exception')
      throw invalidRequest('The recurrence of an occurrence cannot be set: change its series master.');
    event.recurrence = body.recurrence ? recurrenceFrom(body.recurrence, event.start, event.startZone) : undefined;
    event.type = event.recurrence ? 'seriesMaster' : 'singleInstance';
    timing = true;
  }
  if (body.isOnlineMeeting !== undefined) event.isOnlineMeeting = body.isOnlineMeeting ?? false;
  if (body.onlineMeetingProvider !== undefined) {
    const provider = member(body.onlineMeetingProvider, ['unknown', 'teamsForBusiness'] as const);
    if (!provider) throw new UnsupportedByFakeError(`the online meeting provider '${body.onlineMeetingProvider}'`);
    event.onlineMeetingProvider = provider;
  }
  if (event.isOnlineMeeting) {
    if (event.onlineMeetingProvider === 'unknown') event.onlineMeetingProvider = 'teamsForBusiness';
    event.joinUrl ??= joinUrl();
  }
  if (body.showAs !== undefined) event.showAs = member(body.showAs, SHOW_AS)!;
  if (body.sensitivity !== undefined) event.sensitivity = member(body.sensitivity, SENSITIVITY)!;
  if (body.importance !== undefined) event.importance = member(body.importance, IMPORTANCE)!;
  if (body.categories !== undefined) event.categories = [...body.categories];
  if (body.isReminderOn !== undefined) event.isReminderOn = body.isReminderOn ?? false;
  if (body.reminderMinutesBeforeStart !== undefined)
    event.reminderMinutesBeforeStart = body.reminderMinutesBeforeStart ?? 0;
  if (body.responseRequested !== undefined) event.responseRequested = body.responseRequested ?? true;
  if (body.hideAttendees !== undefined) event.hideAttendees = body.hideAttendees === true;
  for (const p of body.singleValueExtendedProperties ?? []) {
    if (!p.id) throw invalidRequest('A singleValueExtendedProperty needs its id.');
    event.extended.set(p.id, p.value ?? '');
  }
  if (event.end < event.start) throw invalidRequest("An event's end cannot be before its start.");
  if (event.isAllDay) {
    const [s, e] = [wallOf(event.start, event.startZone), wallOf(event.end, event.endZone)];
    if ([s.h, s.mi, s.s, e.h, e.mi, e.s].some((x) => x !== 0) || event.end === event.start)
      throw invalidRequest('An all-day event must start and end at midnight, at least a day apart.');
  }
  return timing;
}

/** A new event in `calendar`, organized by its owner; copies go to the attendees the fake hosts. */
function createEvent(
  state: CalendarState,
  owner: UserCalendars,
  calendar: StoredCalendar,
  body: EventBody,
): StoredEvent {
  if (!body.start || !body.end) throw invalidRequest('An event needs a start and an end.');
  const now = owner.now;
  const event: StoredEvent = {
    id: exchangeId('AAA='),
    calendarId: calendar.id,
    type: 'singleInstance',
    iCalUId: `040000008200E00074C5B7101A82E008${randomBytes(24).toString('hex').toUpperCase()}`,
    subject: '',
    body: { contentType: 'html', content: '' },
    start: 0,
    end: 0,
    startZone: 'UTC',
    endZone: 'UTC',
    isAllDay: false,
    attendees: [],
    organizer: owner.address,
    isOrganizer: true,
    responseStatus: { response: 'organizer' },
    responseRequested: true,
    isOnlineMeeting: false,
    onlineMeetingProvider: 'unknown',
    showAs: 'busy',
    sensitivity: 'normal',
    importance: 'normal',
    categories: [],
    isReminderOn: true,
    reminderMinutesBeforeStart: 15,
    isCancelled: false,
    hideAttendees: false,
    ...(typeof body.transactionId === 'string' ? { transactionId: body.transactionId } : {}),
    extended: new Map(),
    created: now,
    modified: now,
    changeKey: newChangeKey(),
    exceptions: new Map(),
    cancelled: new Set(),
  };
  applyBody(event, body);
  owner.events.set(event.id, event);
  invite(state, event, event.attendees);
  return event;
}

/** Copies of an organizer's meeting in the default calendar of each attendee the fake hosts. */
function invite(state: CalendarState, event: StoredEvent, attendees: Attendee[]): void {
  for (const a of attendees) {
    const attendee = state.byAddress(a.emailAddress.address);
    if (!attendee || attendee.user.mail.toLowerCase() === event.organizer.address.toLowerCase()) continue;
    const copy: StoredEvent = {
      ...structuredClone({ ...event, extended: undefined, exceptions: undefined, cancelled: undefined }),
      id: exchangeId('AAA='),
      calendarId: attendee.defaultId,
      isOrganizer: false,
      responseStatus: { response: 'notResponded' },
      showAs: 'tentative',
      extended: new Map(),
      exceptions: new Map(),
      cancelled: new Set(),
      created: attendee.now,
      modified: attendee.now,
      changeKey: newChangeKey(),
    };
    attendee.events.set(copy.id, copy);
  }
}

/** The stored event an organizer's meeting was copied to in an attendee's calendar. */
function copyOf(attendee: UserCalendars, iCalUId: string): StoredEvent | undefined {
  for (const e of attendee.events.values()) if (e.iCalUId === iCalUId && !e.isOrganizer) return e;
  return undefined;
}

/** The organizer's meeting for an attendee's copy, when the fake hosts the organizer. */
function organizerEvent(
  state: CalendarState,
  copy: StoredEvent,
): { owner: UserCalendars; event: StoredEvent } | undefined {
  const owner = state.byAddress(copy.organizer.address);
  if (!owner) return undefined;
  for (const e of owner.events.values()) if (e.iCalUId === copy.iCalUId && e.isOrganizer) return { owner, event: e };
  return undefined;
}

/** Runs `change` on each attendee's copy of the same instance (the occurrence at the same original start). */
function forEachCopy(
  state: CalendarState,
  owner: UserCalendars,
  event: StoredEvent,
  change: (c: UserCalendars, e: StoredEvent) => void,
): void {
  if (!event.isOrganizer) return;
  const master = owner.masterOf(event) ?? event;
  for (const a of event.attendees) {
    const attendee = state.byAddress(a.emailAddress.address);
    if (!attendee || attendee === owner) continue;
    const copy = copyOf(attendee, master.iCalUId);
    if (!copy) continue;
    if (event.originalStart === undefined) change(attendee, copy);
    else {
      try {
        change(attendee, attendee.event(occurrenceId(copy.id, event.originalStart)));
      } catch {
        // The attendee removed that occurrence already.
      }
    }
  }
}

/** A changed occurrence becomes an exception stored on its master, under the occurrence's ID. */
function asStored(owner: UserCalendars, event: StoredEvent): StoredEvent {
  if (event.type !== 'occurrence') return event;
  const master = owner.masterOf(event)!;
  const exception: StoredEvent = {
    ...event,
    type: 'exception',
    extended: new Map(master.extended),
    categories: [...master.categories],
    attendees: structuredClone(master.attendees),
    ...(master.location ? { location: structuredClone(master.location) } : {}),
  };
  master.exceptions.set(event.originalStart!, exception);
  return exception;
}

const SHARED_FIELDS = [
  'subject',
  'body',
  'start',
  'end',
  'isAllDay',
  'location',
  'attendees',
  'recurrence',
  'isOnlineMeeting',
  'onlineMeetingProvider',
];

function updateEvent(state: CalendarState, owner: UserCalendars, found: StoredEvent, body: EventBody): StoredEvent {
  // Applied to a draft first, so that a refused change leaves the event as it was.
  const draft: StoredEvent = {
    ...found,
    extended: new Map(found.extended),
    attendees: structuredClone(found.attendees),
    categories: [...found.categories],
    ...(found.location ? { location: structuredClone(found.location) } : {}),
  };
  const timing = applyBody(draft, body);
  const event = asStored(owner, found);
  const before = event.attendees.map((a) => a.emailAddress.address.toLowerCase());
  Object.assign(event, { ...draft, id: event.id, type: draft.type === 'occurrence' ? 'exception' : draft.type });
  if (timing && event.type === 'seriesMaster') {
    // Exchange drops a series' exceptions and cancellations when its time or pattern changes.
    event.exceptions.clear();
    event.cancelled.clear();
  }
  owner.touch(event);
  const master = owner.masterOf(event);
  if (master && event.type === 'exception') owner.touch(master);
  const shared = Object.fromEntries(Object.entries(body).filter(([k]) => SHARED_FIELDS.includes(k))) as EventBody;
  if (Object.keys(shared).length)
    forEachCopy(state, owner, event, (attendee, copy) => {
      const stored = asStored(attendee, copy);
      applyBody(stored, { ...shared, attendees: undefined } as EventBody);
      stored.attendees = structuredClone(event.attendees);
      attendee.touch(stored);
    });
  if (event.isOrganizer && event.type !== 'exception')
    invite(
      state,
      event,
      event.attendees.filter((a) => !before.includes(a.emailAddress.address.toLowerCase())),
    );
  return event;
}

/** Removes an event; an occurrence or exception is cancelled from its series. Attendees' copies are cancelled. */
function deleteEvent(state: CalendarState, owner: UserCalendars, event: StoredEvent): void {
  forEachCopy(state, owner, event, (attendee, copy) => {
    const stored = asStored(attendee, copy);
    stored.isCancelled = true;
    if (!stored.subject.startsWith('Canceled: ')) stored.subject = `Canceled: ${stored.subject}`;
    attendee.touch(stored);
  });
  const master = owner.masterOf(event);
  if (master) {
    master.exceptions.delete(event.originalStart!);
    master.cancelled.add(event.originalStart!);
    owner.touch(master);
  } else owner.events.delete(event.id);
}

// ---------------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------------

const ZERO_TIME = '0001-01-01T00:00:00Z';

function renderStatus(s: ResponseStatus): Record<string, unknown> {
  return { response: s.response, time: s.time === undefined ? ZERO_TIME : isoZ(s.time) };
}

function renderRecurrence(r: Recurrence): Record<string, unknown> {
  return {
    pattern: { ...r.pattern, daysOfWeek: [...r.pattern.daysOfWeek] },
    range: {
      type: r.range.type,
      startDate: r.range.startDate,
      endDate: r.range.endDate ?? '0001-01-01',
      recurrenceTimeZone: r.range.recurrenceTimeZone ?? null,
      numberOfOccurrences: r.range.numberOfOccurrences,
    },
  };
}

/** An event as Graph answers it; times in `zone` (UTC unless the request preferred another). */
export function renderEvent(e: StoredEvent, zone: string): Record<string, unknown> {
  const text = e.body.contentType === 'html' ? e.body.content.replace(/<[^>]*>/g, ' ') : e.body.content;
  return {
    '@odata.etag': `W/"${e.changeKey}"`,
    id: e.id,
    createdDateTime: isoZ(e.created),
    lastModifiedDateTime: isoZ(e.modified),
    changeKey: e.changeKey,
    categories: [...e.categories],
    transactionId: e.transactionId ?? null,
    originalStartTimeZone: e.startZone,
    originalEndTimeZone: e.endZone,
    iCalUId: e.iCalUId,
    reminderMinutesBeforeStart: e.reminderMinutesBeforeStart,
    isReminderOn: e.isReminderOn,
    hasAttachments: false,
    subject: e.subject,
    bodyPreview: text.replace(/\s+/g, ' ').trim().slice(0, 255),
    importance: e.importance,
    sensitivity: e.sensitivity,
    isAllDay: e.isAllDay,
    isCancelled: e.isCancelled,
    isOrganizer: e.isOrganizer,
    responseRequested: e.responseRequested,
    seriesMasterId: e.seriesMasterId ?? null,
    showAs: e.showAs,
    type: e.type,
    webLink: `https://outlook.office365.com/owa/?itemid=${encodeURIComponent(e.id)}&exvsurl=1&path=/calendar/item`,
    onlineMeetingUrl: null,
    isOnlineMeeting: e.isOnlineMeeting,
    onlineMeetingProvider: e.onlineMeetingProvider,
    allowNewTimeProposals: true,
    isDraft: false,
    hideAttendees: e.hideAttendees,
    ...(e.originalStart !== undefined ? { originalStart: isoZ(e.originalStart) } : {}),
    responseStatus: renderStatus(e.responseStatus),
    body: { ...e.body },
    start: dateTimeIn(e.start, zone),
    end: dateTimeIn(e.end, zone),
    location: structuredClone(e.location ?? { displayName: '', locationType: 'default', uniqueIdType: 'unknown' }),
    locations: e.location ? [structuredClone(e.location)] : [],
    ...(e.recurrence ? { recurrence: renderRecurrence(e.recurrence) } : {}),
    attendees: e.attendees.map((a) => ({
      type: a.type,
      status: renderStatus(a.status),
      emailAddress: { ...a.emailAddress },
    })),
    organizer: { emailAddress: { ...e.organizer } },
    ...(e.isOnlineMeeting && e.joinUrl ? { onlineMeeting: { joinUrl: e.joinUrl } } : {}),
  };
}

function renderCalendar(owner: UserCalendars, c: StoredCalendar): Record<string, unknown> {
  return {
    '@odata.etag': `W/"${c.changeKey}"`,
    id: c.id,
    name: c.name,
    color: c.color,
    hexColor: c.hexColor,
    isDefaultCalendar: c.isDefault,
    changeKey: c.changeKey,
    canShare: true,
    canViewPrivateItems: true,
    canEdit: true,
    allowedOnlineMeetingProviders: ['teamsForBusiness'],
    defaultOnlineMeetingProvider: 'teamsForBusiness',
    isTallyingResponses: true,
    isRemovable: !c.isDefault,
    owner: owner.address,
  };
}

/** `$select`: the named properties, plus `id` and the OData annotations, which Graph always sends. */
function project(entity: Record<string, unknown>, select: readonly string[] | undefined): Record<string, unknown> {
  if (!select?.length) return entity;
  return Object.fromEntries(
    Object.entries(entity).filter(([k]) => k === 'id' || k.startsWith('@odata.') || select.includes(k)),
  );
}

// ---------------------------------------------------------------------------------------------------
// Query options
// ---------------------------------------------------------------------------------------------------

export interface CalendarCall extends GraphCall {
  calendars: CalendarState;
}

const listOf = (v: string | null) => (v ? v.split(',').map((s) => s.trim()) : undefined);

/** The zone answers give times in: `Prefer: outlook.timezone="…"`, or UTC. */
function answerZone(headers: IncomingHttpHeaders): string {
  const zone = /outlook\.timezone\s*=\s*"([^"]+)"/i.exec(String(headers.prefer ?? ''))?.[1] ?? 'UTC';
  ianaZone(zone);
  return zone;
}

/**
 * `$expand`: only `singleValueExtendedProperties`, whole or narrowed by `($filter=id eq '…')` as
 * Graph's reference for extended properties writes it.
 */
function expandedProperties(call: CalendarCall): ((e: StoredEvent) => Record<string, unknown>) | undefined {
  const expand = call.query.get('$expand');
  if (expand === null) return undefined;
  const items = topLevelItems(expand).map((s) => s.trim());
  if (items.length !== 1) throw new UnsupportedByFakeError(`$expand=${expand}`);
  const m = /^singleValueExtendedProperties(?:\(\$filter=id eq '((?:[^']|'')*)'\))?$/i.exec(items[0]!);
  if (!m) throw new UnsupportedByFakeError(`$expand=${items[0]}`);
  const wanted = m[1]?.replace(/''/g, "'").toLowerCase();
  return (e) => ({
    singleValueExtendedProperties: [...e.extended]
      .filter(([id]) => wanted === undefined || id.toLowerCase() === wanted)
      .map(([id, value]) => ({ id, value })),
  });
}

function eventView(call: CalendarCall): (e: StoredEvent) => Record<string, unknown> {
  const zone = answerZone(call.headers);
  const expanded = expandedProperties(call);
  const select = listOf(call.query.get('$select'));
  return (e) => ({ ...project(renderEvent(e, zone), select), ...(expanded ? expanded(e) : {}) });
}

function eventFields(call: CalendarCall): Fields<StoredEvent> {
  const declared = call.checker.propertiesOf('calendar', 'microsoft.graph.event');
  return {
    typeName: 'microsoft.graph.event',
    declared: (p) => declared.has(p),
    fields: {
      'start/dateTime': { type: 'datetime', get: (e) => e.start },
      'end/dateTime': { type: 'datetime', get: (e) => e.end },
      createdDateTime: { type: 'datetime', get: (e) => e.created },
      lastModifiedDateTime: { type: 'datetime', get: (e) => e.modified },
      subject: { type: 'string', get: (e) => e.subject },
      iCalUId: { type: 'string', get: (e) => e.iCalUId },
      seriesMasterId: { type: 'string', get: (e) => e.seriesMasterId },
      showAs: { type: 'enum', get: (e) => e.showAs },
      sensitivity: { type: 'enum', get: (e) => e.sensitivity },
      importance: { type: 'enum', get: (e) => e.importance },
      type: { type: 'enum', get: (e) => e.type },
      isAllDay: { type: 'boolean', get: (e) => e.isAllDay },
      isCancelled: { type: 'boolean', get: (e) => e.isCancelled },
      isOrganizer: { type: 'boolean', get: (e) => e.isOrganizer },
      isOnlineMeeting: { type: 'boolean', get: (e) => e.isOnlineMeeting },
      categories: { type: 'strings', get: (e) => e.categories },
    },
  };
}

/**
 * `start/dateTime` and `end/dateTime` are strings in Graph's model, compared with a string literal
 * (`start/dateTime ge '2026-03-02T08:00'`, as Graph's reference writes it); the fake reads the literal as
 * a UTC time (the zone Graph answers in unless told otherwise) and compares instants.
 */
function eventFilter(call: CalendarCall): ((e: StoredEvent) => boolean) | undefined {
  const filter = call.query.get('$filter');
  if (filter === null) return undefined;
  const timeProperty = /\b(start|end)\/dateTime\s+(eq|ne|gt|ge|lt|le)\s+/gi;
  const rewritten = filter.replace(
    new RegExp(`${timeProperty.source}('((?:[^']|'')*)'|[^\\s)]+)`, 'gi'),
    (_all, property: string, op: string, literal: string, inner: string | undefined) => {
      if (inner === undefined)
        throw badRequest(
          `A binary operator with incompatible types was detected. Found operand types 'Edm.String' and '${literal}' for '${property}/dateTime'.`,
        );
      const instant = Date.parse(/(Z|[+-]\d{2}:\d{2})$/i.test(inner) ? inner : `${inner}Z`);
      if (Number.isNaN(instant)) throw badRequest(`'${inner}' is not a valid dateTime.`);
      return `${property}/dateTime ${op} ${new Date(instant).toISOString()}`;
    },
  );
  return compileFilter(rewritten, eventFields(call));
}

function eventOrder(call: CalendarCall): ((a: StoredEvent, b: StoredEvent) => number) | undefined {
  const orderby = call.query.get('$orderby');
  return orderby === null ? undefined : compileOrderBy(orderby, eventFields(call));
}

// ---------------------------------------------------------------------------------------------------
// Handlers, by operationId
// ---------------------------------------------------------------------------------------------------

const ownerOf = (call: CalendarCall) => call.calendars.of(call.mailbox.user);
const userContext = (call: CalendarCall) => `users('${call.mailbox.user.id}')`;
/**
 * The calendar a path names: `calendars/{calendar-id}`, or the default one for `/calendar/…`, `/events`
 * and `/calendarView` (Graph's `/me/events` and `/me/calendarView` read the default calendar only).
 */
const calendarOf = (call: CalendarCall) => ownerOf(call).calendar(call.params['calendar-id']);

/** An event through its path: one in the named calendar when the path names one. */
function eventOf(call: CalendarCall): StoredEvent {
  const owner = ownerOf(call);
  const event = owner.event(call.params['event-id']!);
  if (
    (call.params['calendar-id'] !== undefined || /\/calendar\//i.test(call.path)) &&
    event.calendarId !== calendarOf(call).id
  )
    throw itemNotFound();
  return event;
}

function unsupported(call: CalendarCall, options: string[], where: string): void {
  for (const option of options) if (call.query.has(option)) throw new UnsupportedByFakeError(`${option} on ${where}`);
}

function listCalendars(call: CalendarCall): GraphAnswer {
  unsupported(call, ['$filter', '$orderby', '$search', '$expand'], 'calendars');
  const owner = ownerOf(call);
  const select = listOf(call.query.get('$select'));
  return page(
    call,
    [...owner.calendars.values()],
    (c) => project(renderCalendar(owner, c), select),
    `${userContext(call)}/calendars`,
    1000,
    { selected: true },
  );
}

function getCalendar(call: CalendarCall): GraphAnswer {
  unsupported(call, ['$expand'], 'a calendar');
  const owner = ownerOf(call);
  return {
    status: 200,
    body: project(
      {
        '@odata.context': `${call.base}/$metadata#${userContext(call)}/calendars/$entity`,
        ...renderCalendar(owner, calendarOf(call)),
      },
      listOf(call.query.get('$select')),
    ),
  };
}

const CALENDAR_COLORS = [
  'auto',
  'lightBlue',
  'lightGreen',
  'lightOrange',
  'lightGray',
  'lightYellow',
  'lightTeal',
  'lightPink',
  'lightBrown',
  'lightRed',
  'maxColor',
] as const;

/** Sets a calendar's name and colour, the properties a client may write. */
function writeCalendar(owner: UserCalendars, calendar: StoredCalendar, body: Record<string, unknown>): void {
  const other = Object.keys(body).find((k) => !['name', 'color', 'hexColor'].includes(k) && !k.startsWith('@odata.'));
  if (other) throw badRequest(`The property '${other}' of a calendar cannot be written.`);
  if (body.name !== undefined) {
    const name = String(body.name ?? '').trim();
    if (!name) throw invalidRequest('A calendar needs a name.');
    const taken = [...owner.calendars.values()].some(
      (c) => c.id !== calendar.id && c.name.toLowerCase() === name.toLowerCase(),
    );
    if (taken) throw new GraphError(409, 'ErrorFolderExists', 'A folder with the specified name already exists.');
    calendar.name = name;
  }
  if (body.color !== undefined) calendar.color = member(body.color as string, CALENDAR_COLORS) ?? 'auto';
  if (body.hexColor !== undefined) calendar.hexColor = String(body.hexColor ?? '');
  calendar.changeKey = newChangeKey();
}

function createCalendar(call: CalendarCall): GraphAnswer {
  const owner = ownerOf(call);
  const body = call.body as Record<string, unknown>;
  if (body.name === undefined) throw invalidRequest('A calendar needs a name.');
  const calendar: StoredCalendar = {
    id: exchangeId('AAEGAAA='),
    name: '',
    color: 'auto',
    hexColor: '',
    isDefault: false,
    changeKey: '',
  };
  writeCalendar(owner, calendar, body);
  owner.calendars.set(calendar.id, calendar);
  return {
    status: 201,
    body: {
      '@odata.context': `${call.base}/$metadata#${userContext(call)}/calendars/$entity`,
      ...renderCalendar(owner, calendar),
    },
  };
}

function updateCalendar(call: CalendarCall): GraphAnswer {
  const owner = ownerOf(call);
  const calendar = calendarOf(call);
  writeCalendar(owner, calendar, call.body as Record<string, unknown>);
  return {
    status: 200,
    body: {
      '@odata.context': `${call.base}/$metadata#${userContext(call)}/calendars/$entity`,
      ...renderCalendar(owner, calendar),
    },
  };
}

function deleteCalendar(call: CalendarCall): GraphAnswer {
  const owner = ownerOf(call);
  const calendar = calendarOf(call);
  // The default calendar is a distinguished folder, refused as the mail fake refuses Inbox.
  if (calendar.isDefault)
    throw new GraphError(400, 'ErrorDeleteDistinguishedFolder', 'Distinguished folders cannot be deleted.');
  for (const e of [...owner.events.values()]) if (e.calendarId === calendar.id) owner.events.delete(e.id);
  owner.calendars.delete(calendar.id);
  return { status: 204 };
}

function listEvents(call: CalendarCall): GraphAnswer {
  unsupported(call, ['$search'], 'events');
  const calendar = calendarOf(call);
  let events = [...ownerOf(call).events.values()].filter((e) => e.calendarId === calendar.id);
  const filter = eventFilter(call);
  if (filter) events = events.filter(filter);
  events.sort(eventOrder(call) ?? ((a, b) => a.start - b.start || (a.id < b.id ? -1 : 1)));
  const context = call.params['calendar-id']
    ? `${userContext(call)}/calendars('${calendar.id}')/events`
    : `${userContext(call)}/events`;
  return page(call, events, eventView(call), context, 1000, { selected: true });
}

function eventEntity(call: CalendarCall, event: StoredEvent, status = 200): GraphAnswer {
  return {
    status,
    body: { '@odata.context': `${call.base}/$metadata#${userContext(call)}/events/$entity`, ...eventView(call)(event) },
  };
}

/**
 * A create; one repeating an earlier create's `transactionId` answers the event that one made ("A custom
 * identifier specified by a client app for the server to avoid redundant POST operations in case of
 * client retries", Graph's reference for the event resource).
 */
function createEventHandler(call: CalendarCall): GraphAnswer {
  const owner = ownerOf(call);
  const body = call.body as EventBody;
  const calendar = calendarOf(call);
  const earlier =
    typeof body.transactionId === 'string'
      ? [...owner.events.values()].find((e) => e.isOrganizer && e.transactionId === body.transactionId)
      : undefined;
  return eventEntity(
    { ...call, query: new URLSearchParams() },
    earlier ?? createEvent(call.calendars, owner, calendar, body),
    201,
  );
}

function updateEventHandler(call: CalendarCall): GraphAnswer {
  const event = updateEvent(call.calendars, ownerOf(call), eventOf(call), call.body as EventBody);
  return eventEntity({ ...call, query: new URLSearchParams() }, event);
}

function deleteEventHandler(call: CalendarCall): GraphAnswer {
  deleteEvent(call.calendars, ownerOf(call), eventOf(call));
  return { status: 204 };
}

/** calendarView: the instances of a calendar (the default one unless named) overlapping the window. */
function calendarView(call: CalendarCall): GraphAnswer {
  unsupported(call, ['$search'], 'a calendar view');
  const from = windowTime(call.query.get('startDateTime'), 'StartDateTime');
  const to = windowTime(call.query.get('endDateTime'), 'EndDateTime');
  let events = ownerOf(call).view(calendarOf(call).id, from, to);
  const filter = eventFilter(call);
  if (filter) events = events.filter(filter);
  const order = eventOrder(call);
  if (order) events.sort(order);
  return page(call, events, eventView(call), `${userContext(call)}/calendarView`, 1000, { selected: true });
}

function instances(call: CalendarCall): GraphAnswer {
  unsupported(call, ['$search'], 'instances');
  const from = windowTime(call.query.get('startDateTime'), 'StartDateTime');
  const to = windowTime(call.query.get('endDateTime'), 'EndDateTime');
  const master = eventOf(call);
  let events = master.type === 'seriesMaster' ? instancesOf(master, from, to) : [];
  const filter = eventFilter(call);
  if (filter) events = events.filter(filter);
  const order = eventOrder(call);
  if (order) events.sort(order);
  return page(call, events, eventView(call), `${userContext(call)}/events('${master.id}')/instances`, 1000, {
    selected: true,
  });
}

/** A version of an instance for delta: an occurrence changes with its master. */
function versionOf(owner: UserCalendars, e: StoredEvent): string {
  return e.type === 'occurrence' ? owner.masterOf(e)!.changeKey : e.changeKey;
}

const syncStateNotFound = () =>
  new GraphError(
    410,
    'syncStateNotFound',
    'The sync state is not found or has expired. Start a new sync without a token.',
  );

/**
 * calendarView/delta: a first round lists the window's instances; a deltaLink's round lists those added
 * or changed since, and `@removed` for those gone (deleted, cancelled, moved out of the window). The
 * window and the calendar live in the tokens, as in Graph's links.
 */
function calendarViewDelta(call: CalendarCall): GraphAnswer {
  const owner = ownerOf(call);
  const calendar = calendarOf(call);
  const { query } = call;
  const [skiptoken, deltatoken] = [query.get('$skiptoken'), query.get('$deltatoken')];
  let cursor: Extract<DeltaCursor, { kind: 'page' }>;
  const token = skiptoken ?? deltatoken;
  if (token !== null) {
    const found = owner.cursors.get(token);
    if (!found || found.kind !== (skiptoken !== null ? 'page' : 'delta') || found.scope !== calendar.id)
      throw syncStateNotFound();
    if (found.kind === 'page') cursor = found;
    else {
      const current = owner.view(calendar.id, found.from, found.to);
      const snapshot: Snapshot = new Map(current.map((e) => [e.id, versionOf(owner, e)]));
      cursor = {
        kind: 'page',
        scope: calendar.id,
        removed: [...found.snapshot.keys()].filter((id) => !snapshot.has(id)),
        ids: current.filter((e) => found.snapshot.get(e.id) !== snapshot.get(e.id)).map((e) => e.id),
        snapshot,
        from: found.from,
        to: found.to,
      };
    }
  } else {
    for (const option of ['$select', '$filter', '$orderby', '$expand', '$search'])
      if (query.has(option)) throw new UnsupportedByFakeError(`${option} in a calendarView delta query`);
    const from = windowTime(query.get('startDateTime'), 'StartDateTime');
    const to = windowTime(query.get('endDateTime'), 'EndDateTime');
    const current = owner.view(calendar.id, from, to);
    cursor = {
      kind: 'page',
      scope: calendar.id,
      removed: [],
      ids: current.map((e) => e.id),
      snapshot: new Map(current.map((e) => [e.id, versionOf(owner, e)])),
      from,
      to,
    };
  }
  const top = query.get('$top');
  const size = Math.max(1, maxPageSize(call.headers) ?? (top !== null ? Number(top) : 10));
  const zone = answerZone(call.headers);
  const value: Record<string, unknown>[] = [];
  let { removed, ids } = cursor;
  while (value.length < size && (removed.length || ids.length)) {
    if (removed.length) {
      value.push({ '@odata.type': '#microsoft.graph.event', id: removed[0]!, '@removed': { reason: 'deleted' } });
      removed = removed.slice(1);
      continue;
    }
    const id = ids[0]!;
    ids = ids.slice(1);
    let event: StoredEvent | undefined;
    try {
      event = owner.event(id);
    } catch {
      event = undefined;
    }
    if (event && overlaps(event, cursor.from, cursor.to))
      value.push({ '@odata.type': '#microsoft.graph.event', ...renderEvent(event, zone) });
  }
  const where = `${call.base}${call.path}`;
  const more = removed.length > 0 || ids.length > 0;
  const next = more
    ? `${where}?$skiptoken=${owner.newCursor({ ...cursor, removed, ids })}`
    : `${where}?$deltatoken=${owner.newCursor({ kind: 'delta', scope: calendar.id, snapshot: cursor.snapshot, from: cursor.from, to: cursor.to })}`;
  return {
    status: 200,
    body: {
      '@odata.context': `${call.base}/$metadata#Collection(event)`,
      [more ? '@odata.nextLink' : '@odata.deltaLink']: next,
      value,
    },
    ...(maxPageSize(call.headers) !== undefined
      ? { headers: { 'Preference-Applied': `odata.maxpagesize=${size}` } }
      : {}),
  };
}

/** The top-level names of an action's body, any case (`Comment`, `comment`), as Graph binds them. */
function actionParameter(body: unknown, name: string): unknown {
  return Object.entries((body ?? {}) as Record<string, unknown>).find(([k]) => k.toLowerCase() === name)?.[1];
}

/**
 * accept, tentativelyAccept, decline: an attendee's answer to a meeting. `sendResponse` is true unless
 * the request says false (Graph's reference pages; the description's `default: false` is the generator's);
 * a sent answer shows in the organizer's copy when the fake hosts the organizer. A declined meeting
 * leaves the attendee's calendar, as Exchange removes it.
 */
function respond(call: CalendarCall, response: 'accepted' | 'tentativelyAccepted' | 'declined'): GraphAnswer {
  const owner = ownerOf(call);
  const found = eventOf(call);
  if (found.isOrganizer)
    throw new GraphError(
      400,
      'ErrorInvalidRequest',
      "Your request can't be completed. You can't respond to a meeting you organized.",
    );
  const now = owner.now;
  const event = asStored(owner, found);
  event.responseStatus = { response, time: now };
  event.showAs = response === 'accepted' ? 'busy' : 'tentative';
  owner.touch(event);
  if (actionParameter(call.body, 'sendresponse') !== false) {
    const organizer = organizerEvent(call.calendars, owner.masterOf(event) ?? event);
    if (organizer) {
      const target =
        event.originalStart === undefined
          ? organizer.event
          : asStored(organizer.owner, organizer.owner.event(occurrenceId(organizer.event.id, event.originalStart)));
      const attendee = target.attendees.find(
        (a) => a.emailAddress.address.toLowerCase() === owner.user.mail.toLowerCase(),
      );
      if (attendee) attendee.status = { response, time: now };
      organizer.owner.touch(target);
    }
  }
  if (response === 'declined') {
    const master = owner.masterOf(event);
    if (master) {
      master.exceptions.delete(event.originalStart!);
      master.cancelled.add(event.originalStart!);
      owner.touch(master);
    } else owner.events.delete(event.id);
  }
  return { status: 202 };
}

function cancel(call: CalendarCall): GraphAnswer {
  const owner = ownerOf(call);
  const event = eventOf(call);
  if (!event.isOrganizer)
    throw new GraphError(
      400,
      'ErrorInvalidRequest',
      "Your request can't be completed. Only the meeting organizer can cancel a meeting.",
    );
  deleteEvent(call.calendars, owner, event);
  return { status: 202 };
}

const AVAILABILITY: Record<ShowAs, string> = {
  free: '0',
  tentative: '1',
  busy: '2',
  oof: '3',
  workingElsewhere: '4',
  unknown: '0',
};
/** Which status wins a slot two items share. */
const RANK: Record<ShowAs, number> = { unknown: 0, free: 0, workingElsewhere: 1, tentative: 2, busy: 3, oof: 4 };

/**
 * getSchedule: for each schedule the fake hosts, the default calendar's non-free instances in the window
 * (private ones without subject and location for another user) and the availability view, one digit per
 * interval (0 free, 1 tentative, 2 busy, 3 oof, 4 working elsewhere). A schedule the fake does not host
 * answers an error item, as Graph does for an unknown mailbox.
 */
function getSchedule(call: CalendarCall): GraphAnswer {
  const schedules = actionParameter(call.body, 'schedules') as string[] | undefined;
  const startTime = actionParameter(call.body, 'starttime') as DateTimeTimeZone | undefined;
  const endTime = actionParameter(call.body, 'endtime') as DateTimeTimeZone | undefined;
  const interval = (actionParameter(call.body, 'availabilityviewinterval') as number | null | undefined) ?? 30;
  if (!schedules?.length) throw invalidRequest('The schedules parameter needs at least one address.');
  if (!startTime || !endTime) throw invalidRequest('The startTime and endTime parameters are required.');
  if (interval < 5 || interval > 1440)
    throw invalidRequest('The availabilityViewInterval must be from 5 to 1440 minutes.');
  const [from, to] = [instantFrom(startTime, 'startTime'), instantFrom(endTime, 'endTime')];
  if (to <= from) throw invalidRequest('The endTime must be after the startTime.');
  const zone = answerZone(call.headers);
  const slots = Math.ceil((to - from) / (interval * 60_000));
  const value = schedules.map((scheduleId) => {
    const user = call.calendars.byAddress(scheduleId);
    if (!user)
      return {
        scheduleId,
        availabilityView: '',
        scheduleItems: [],
        error: {
          message: `The specified recipient ${scheduleId} could not be found.`,
          responseCode: 'ErrorMailRecipientNotFound',
        },
      };
    const own = user.user.id === call.mailbox.user.id;
    const items = user
      .view(user.defaultId, from, to)
      .filter((e) => !e.isCancelled && e.showAs !== 'free' && e.showAs !== 'unknown');
    const view = Array.from({ length: slots }, (_, i) => {
      const [s, e] = [from + i * interval * 60_000, from + (i + 1) * interval * 60_000];
      const top = items
        .filter((item) => item.start < e && item.end > s)
        .sort((a, b) => RANK[b.showAs] - RANK[a.showAs])[0];
      return top ? AVAILABILITY[top.showAs] : '0';
    }).join('');
    return {
      scheduleId,
      availabilityView: view,
      scheduleItems: items.map((e) => {
        const hidden = !own && e.sensitivity === 'private';
        return {
          isPrivate: e.sensitivity === 'private',
          status: e.showAs,
          ...(hidden ? {} : { subject: e.subject, location: String(e.location?.displayName ?? '') }),
          start: dateTimeIn(e.start, zone),
          end: dateTimeIn(e.end, zone),
        };
      }),
      workingHours: {
        daysOfWeek: ['monday', 'tuesday', 'wednesday', 'thursday', 'friday'],
        startTime: '08:00:00.0000000',
        endTime: '17:00:00.0000000',
        timeZone: { name: user.timeZone },
      },
    };
  });
  return {
    status: 200,
    body: { '@odata.context': `${call.base}/$metadata#Collection(microsoft.graph.scheduleInformation)`, value },
  };
}

/**
 * Handlers by the descriptions' operationIds. Calendar.yml gives one operationId to the default
 * calendar's path and to the named calendar's (`user_GetCalendar` for `/calendar` and
 * `/calendars/{calendar-id}`), so a handler tells them apart by the `calendar-id` it was given.
 */
export const CALENDAR_HANDLERS: Record<string, (call: CalendarCall) => GraphAnswer> = {
  user_ListCalendar: listCalendars,
  user_CreateCalendar: createCalendar,
  user_GetCalendar: getCalendar,
  user_UpdateCalendar: updateCalendar,
  user_DeleteCalendar: deleteCalendar,

  user_ListEvent: listEvents,
  'user.calendar_ListEvent': listEvents,
  user_CreateEvent: createEventHandler,
  'user.calendar_CreateEvent': createEventHandler,
  user_GetEvent: (call) => eventEntity(call, eventOf(call)),
  'user.calendar_GetEvent': (call) => eventEntity(call, eventOf(call)),
  user_UpdateEvent: updateEventHandler,
  'user.calendar_UpdateEvent': updateEventHandler,
  user_DeleteEvent: deleteEventHandler,
  'user.calendar_DeleteEvent': deleteEventHandler,
  'user.event_ListInstance': instances,

  user_ListCalendarView: calendarView,
  'user.calendar_ListCalendarView': calendarView,
  'user.calendarView_delta': calendarViewDelta,
  'user.calendar.calendarView_delta': calendarViewDelta,

  'user.event_accept': (call) => respond(call, 'accepted'),
  'user.event_tentativelyAccept': (call) => respond(call, 'tentativelyAccepted'),
  'user.event_decline': (call) => respond(call, 'declined'),
  'user.event_cancel': cancel,
  'user.calendar_getSchedule': getSchedule,
};
