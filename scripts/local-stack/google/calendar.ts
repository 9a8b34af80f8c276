import { createHash } from 'node:crypto';
import { DateTime, IANAZone } from 'luxon';
import * as rrulePackage from 'rrule';
import type { DiscoveryMethod } from './discovery';
import { GoogleApiError, notFound } from './errors';

/**
 * The state and the handlers of the local Google Calendar fake: per user a primary calendar (its id
 * is the user's address) and a calendar list, secondary calendars, events with recurrence expanded
 * the way Google does (RRULE, RDATE, EXDATE, instances with `recurringEventId`/`originalStartTime`,
 * changed or cancelled instances stored as exceptions), incremental sync, conferences, free/busy and
 * watch channels (recorded, not pushed). Names and shapes follow calendar-v3.json; the server checks
 * every request and answer against it, so a handler here only has to be right about behaviour.
 */

// rrule's CommonJS build (Node's loader) exports a default object, its ESM build named exports.
type RRuleModule = typeof import('rrule');
const rruleLoaded = rrulePackage as Partial<RRuleModule> & { default?: RRuleModule };
const { RRule, RRuleSet } = (rruleLoaded.RRule ? rruleLoaded : rruleLoaded.default!) as RRuleModule;
type RRuleSetInstance = InstanceType<RRuleModule['RRuleSet']>;

const DAY_MS = 24 * 60 * 60 * 1000;
/** How far an open-ended series is expanded when the request gives no timeMax. */
const HORIZON_MS = 2 * 365 * DAY_MS;
/** Instances one series may produce for one request: a bound on what an unbounded rule costs. */
const MAX_INSTANCES = 5000;
const WEEK_MS = 7 * DAY_MS;

// ---------------------------------------------------------------------------------------------------
// Errors in Calendar's own reasons
// ---------------------------------------------------------------------------------------------------

const bad = (message: string, reason = 'invalid') => new GoogleApiError(400, message, reason);
const required = (message: string) => new GoogleApiError(400, message, 'required');
const forbidden = () =>
  new GoogleApiError(403, 'You need to have writer access to this calendar.', 'requiredAccessLevel');
const emptyRange = () => bad('The specified time range is empty.', 'timeRangeEmpty');
const fullSyncRequired = () =>
  new GoogleApiError(410, 'Sync token is no longer valid, a full sync is required.', 'fullSyncRequired');

// ---------------------------------------------------------------------------------------------------
// Resources as calendar-v3.json names them
// ---------------------------------------------------------------------------------------------------

type EventType = 'default' | 'focusTime' | 'outOfOffice' | 'workingLocation' | 'birthday' | 'fromGmail';
type EventStatus = 'confirmed' | 'tentative' | 'cancelled';
type AccessRole = 'owner' | 'writer' | 'reader' | 'freeBusyReader';

interface EventDateTime {
  date?: string;
  dateTime?: string;
  timeZone?: string;
}

interface EventAttendee {
  email: string;
  displayName?: string;
  optional?: boolean;
  responseStatus: 'needsAction' | 'declined' | 'tentative' | 'accepted';
  comment?: string;
  additionalGuests?: number;
  resource?: boolean;
  organizer?: boolean;
  self?: boolean;
}

interface EntryPoint {
  entryPointType: string;
  uri: string;
  label?: string;
  meetingCode?: string;
}

interface ConferenceData {
  conferenceId?: string;
  conferenceSolution?: { key: { type: string }; name?: string; iconUri?: string };
  createRequest?: { requestId?: string; conferenceSolutionKey?: { type?: string }; status?: { statusCode: string } };
  entryPoints?: EntryPoint[];
  notes?: string;
  signature?: string;
}

interface ExtendedProperties {
  private?: Record<string, string>;
  shared?: Record<string, string>;
}

/** An Event as the API answers it (the fields this fake sets; the rest pass through as sent). */
export interface EventResource {
  kind: 'calendar#event';
  etag: string;
  id: string;
  status: EventStatus;
  updated?: string;
  [field: string]: unknown;
}

interface Reminder {
  method: 'email' | 'popup';
  minutes: number;
}

/** A watch channel as events.watch recorded it (push delivery is not done by the fake). */
export interface RecordedChannel {
  id: string;
  resourceId: string;
  resourceUri: string;
  calendarId: string;
  address: string;
  type: string;
  token?: string;
  params?: Record<string, string>;
  /** Epoch ms. */
  expiration: number;
  email: string;
}

// ---------------------------------------------------------------------------------------------------
// Times: a start or end is a date (all-day, the end exclusive) or an instant and the zone it was given in
// ---------------------------------------------------------------------------------------------------

type When = { kind: 'date'; date: string; timeZone?: string } | { kind: 'time'; ms: number; timeZone?: string };

const validZone = (zone: string) => IANAZone.isValidZone(zone);

function parseWhen(value: EventDateTime | undefined, which: 'start' | 'end'): When {
  if (!value || (value.date === undefined && value.dateTime === undefined)) throw required(`Missing ${which} time.`);
  if (value.timeZone !== undefined && !validZone(value.timeZone))
    throw bad(`Invalid time zone definition for ${which} time.`);
  if (value.date !== undefined && value.dateTime !== undefined) throw bad(`Invalid ${which} time.`);
  if (value.date !== undefined) return { kind: 'date', date: value.date, timeZone: value.timeZone };
  const parsed = DateTime.fromISO(value.dateTime!, { setZone: true });
  if (!parsed.isValid) throw bad(`Invalid ${which} time.`);
  return { kind: 'time', ms: parsed.toMillis(), timeZone: value.timeZone };
}

/** The instant a start or end is, an all-day date read at midnight in its zone (or the calendar's). */
function instantOf(when: When, calendarZone: string): number {
  if (when.kind === 'time') return when.ms;
  return DateTime.fromISO(when.date, { zone: when.timeZone ?? calendarZone }).toMillis();
}

function renderWhen(when: When, zone: string): EventDateTime {
  if (when.kind === 'date') return compact({ date: when.date, timeZone: when.timeZone });
  const dateTime = DateTime.fromMillis(when.ms, { zone }).toISO({ suppressMilliseconds: true })!;
  return compact({ dateTime, timeZone: when.timeZone });
}

const iso = (ms: number) => new Date(ms).toISOString();

/** Wall-clock time in a JS Date's UTC fields: how rrule is given times (it is right only in UTC). */
const floatingOf = (dt: DateTime): Date =>
  new Date(Date.UTC(dt.year, dt.month - 1, dt.day, dt.hour, dt.minute, dt.second));

const zonedOf = (floating: Date, zone: string): DateTime =>
  DateTime.fromObject(
    {
      year: floating.getUTCFullYear(),
      month: floating.getUTCMonth() + 1,
      day: floating.getUTCDate(),
      hour: floating.getUTCHours(),
      minute: floating.getUTCMinutes(),
      second: floating.getUTCSeconds(),
    },
    { zone },
  );

const isoDate = (floating: Date) => floating.toISOString().slice(0, 10);

/** Drops keys whose value is undefined, so answers carry only what is set. */
function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

// ---------------------------------------------------------------------------------------------------
// Recurrence: RRULE/EXRULE/RDATE/EXDATE expanded in the series' zone
// ---------------------------------------------------------------------------------------------------

interface Series {
  allDay: boolean;
  /** The zone the rule is expanded in: the start's timeZone, else the calendar's. */
  zone: string;
  floatingStart: Date;
  durationMs: number;
  durationDays: number;
}

interface Occurrence {
  start: When;
  end: When;
  startMs: number;
  endMs: number;
  /** The instance's id suffix: `20260105T090000Z` (UTC of the original start) or `20260105` all-day. */
  key: string;
}

function seriesOf(fields: EventFields, calendarZone: string): Series {
  const { start, end } = fields;
  const zone = start.timeZone ?? calendarZone;
  if (start.kind === 'date' && end.kind === 'date') {
    const from = Date.parse(`${start.date}T00:00:00Z`);
    return {
      allDay: true,
      zone,
      floatingStart: new Date(from),
      durationMs: 0,
      durationDays: Math.round((Date.parse(`${end.date}T00:00:00Z`) - from) / DAY_MS),
    };
  }
  const startMs = instantOf(start, calendarZone);
  return {
    allDay: false,
    zone,
    floatingStart: floatingOf(DateTime.fromMillis(startMs, { zone })),
    durationMs: instantOf(end, calendarZone) - startMs,
    durationDays: 0,
  };
}

/** An RDATE/EXDATE value as floating wall-clock time of the series. */
function floatingValue(value: string, params: Map<string, string>, series: Series): Date {
  const date = /^(\d{4})(\d{2})(\d{2})$/.exec(value);
  if (date) {
    const midnight = Date.UTC(Number(date[1]), Number(date[2]) - 1, Number(date[3]));
    // A date excludes (or adds) the series' instance of that day, at the series' time of day.
    const timeOfDay = series.floatingStart.getTime() % DAY_MS;
    return new Date(series.allDay ? midnight : midnight + timeOfDay);
  }
  if (params.get('VALUE') === 'DATE') throw bad('Invalid recurrence rule.');
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(Z?)$/.exec(value);
  if (!m) throw bad('Invalid recurrence rule.');
  const wall = {
    year: Number(m[1]),
    month: Number(m[2]),
    day: Number(m[3]),
    hour: Number(m[4]),
    minute: Number(m[5]),
    second: Number(m[6]),
  };
  if (series.allDay) return new Date(Date.UTC(wall.year, wall.month - 1, wall.day));
  const tzid = m[7] ? 'utc' : params.get('TZID');
  if (tzid === undefined)
    return new Date(Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second));
  if (!validZone(tzid)) throw bad('Invalid recurrence rule.');
  return floatingOf(DateTime.fromObject(wall, { zone: tzid }).setZone(series.zone));
}

/** One RRULE or EXRULE value as an rrule rule starting at the series' start. */
function ruleOf(value: string, series: Series): InstanceType<RRuleModule['RRule']> {
  let options: ReturnType<RRuleModule['RRule']['parseString']>;
  try {
    options = RRule.parseString(value);
  } catch {
    throw bad('Invalid recurrence rule.');
  }
  if (options.freq === undefined || options.dtstart || options.tzid) throw bad('Invalid recurrence rule.');
  let until = options.until ?? undefined;
  const untilText = /UNTIL=(\d{8})(T\d{6}(Z)?)?/i.exec(value);
  if (until && untilText && !series.allDay) {
    if (!untilText[2]) until = new Date(until.getTime() + DAY_MS - 1000);
    else if (untilText[3]) until = floatingOf(DateTime.fromJSDate(until).setZone(series.zone));
  }
  return new RRule({ ...options, dtstart: series.floatingStart, until: until ?? null, tzid: null });
}

/** The rule set of a series; an unusable recurrence is the 400 Google answers for it. */
function ruleSetOf(recurrence: readonly string[], series: Series): RRuleSetInstance {
  const set = new RRuleSet();
  let generates = false;
  for (const line of recurrence) {
    const m = /^(RRULE|EXRULE|RDATE|EXDATE)((?:;[A-Z-]+=[^;:]*)*):(.+)$/i.exec(line.trim());
    if (!m) throw bad('Invalid recurrence rule.');
    const name = m[1]!.toUpperCase();
    if (name === 'RRULE' || name === 'EXRULE') {
      const rule = ruleOf(m[3]!, series);
      if (name === 'RRULE') set.rrule(rule);
      else set.exrule(rule);
      generates ||= name === 'RRULE';
      continue;
    }
    const params = new Map(
      m[2]!
        .split(';')
        .filter(Boolean)
        .map((p) => {
          const [k, v] = p.split('=');
          return [k!.toUpperCase(), v ?? ''] as [string, string];
        }),
    );
    if (params.get('VALUE') === 'PERIOD') throw bad('Invalid recurrence rule.');
    for (const value of m[3]!.split(',')) {
      const date = floatingValue(value.trim(), params, series);
      if (name === 'RDATE') set.rdate(date);
      else set.exdate(date);
    }
    generates ||= name === 'RDATE';
  }
  if (!generates) throw bad('Invalid recurrence rule.');
  return set;
}

/** Refuses a recurrence the fake cannot expand when it is written, as Google does, not when it is read. */
function checkRecurrence(fields: EventFields, calendarZone: string): void {
  if (fields.recurrence) ruleSetOf(fields.recurrence, seriesOf(fields, calendarZone));
}

/**
 * The occurrences of a series that overlap [from, to) (end after `from`, start before `to`; `to`
 * finite), at most `limit` of them.
 */
function occurrencesOf(
  fields: EventFields,
  calendarZone: string,
  from: number,
  to: number,
  limit = MAX_INSTANCES,
): Occurrence[] {
  const series = seriesOf(fields, calendarZone);
  const set = ruleSetOf(fields.recurrence ?? [], series);
  const span = series.allDay ? series.durationDays * DAY_MS : series.durationMs;
  const lower = Number.isFinite(from)
    ? floatingOf(DateTime.fromMillis(from - span - DAY_MS, { zone: series.zone }))
    : new Date(series.floatingStart.getTime() - 1000);
  const upper = floatingOf(DateTime.fromMillis(to + DAY_MS, { zone: series.zone }));
  const found: Occurrence[] = [];
  // rrule hands each date to the callback and stops when it answers false: the bound on the work done.
  set.between(lower, upper, true, (floating, i) => {
    const occurrence = series.allDay
      ? allDayOccurrence(floating, series, fields)
      : timedOccurrence(floating, series, fields);
    if (occurrence.endMs > from && occurrence.startMs < to) found.push(occurrence);
    return found.length < limit && i < MAX_INSTANCES;
  });
  return found;
}

function timedOccurrence(floating: Date, series: Series, fields: EventFields): Occurrence {
  const startMs = zonedOf(floating, series.zone).toMillis();
  const endMs = startMs + series.durationMs;
  return {
    start: { kind: 'time', ms: startMs, timeZone: fields.start.timeZone },
    end: { kind: 'time', ms: endMs, timeZone: fields.end.timeZone },
    startMs,
    endMs,
    key: DateTime.fromMillis(startMs, { zone: 'utc' }).toFormat("yyyyMMdd'T'HHmmss'Z'"),
  };
}

function allDayOccurrence(floating: Date, series: Series, fields: EventFields): Occurrence {
  const date = isoDate(floating);
  const endDate = isoDate(new Date(floating.getTime() + series.durationDays * DAY_MS));
  return {
    start: { kind: 'date', date, timeZone: fields.start.timeZone },
    end: { kind: 'date', date: endDate, timeZone: fields.end.timeZone },
    startMs: DateTime.fromISO(date, { zone: series.zone }).toMillis(),
    endMs: DateTime.fromISO(endDate, { zone: series.zone }).toMillis(),
    key: date.replace(/-/g, ''),
  };
}

// ---------------------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------------------

/** What a client can set on an event, normalized. */
interface EventFields {
  summary?: string;
  description?: string;
  location?: string;
  start: When;
  end: When;
  recurrence?: string[];
  attendees?: EventAttendee[];
  eventType: EventType;
  transparency: 'opaque' | 'transparent';
  extendedProperties?: ExtendedProperties;
  conferenceData?: ConferenceData;
  sequence: number;
  iCalUID: string;
  /** Fields kept as sent (colorId, reminders, visibility, type properties...): the server checked their shape. */
  other: Record<string, unknown>;
}

interface StoredEvent {
  id: string;
  fields: EventFields;
  status: EventStatus;
  created: number;
  updated: number;
  /** The calendar's change counter when this event last changed: what sync tokens compare. */
  seq: number;
  etag: string;
  creator: string;
  /** For an exception (a changed or cancelled instance): its series and the instance's original start. */
  recurringEventId?: string;
  originalStart?: When;
}

export class CalendarStore {
  readonly id: string;
  readonly owner: string;
  readonly primary: boolean;
  summary: string;
  description?: string;
  location?: string;
  timeZone: string;
  /** Bumped by every change of the calendar or its events: sync tokens, the events list's etag. */
  seq = 1;
  /** Sync tokens older than this are answered 410. */
  syncFloor = 0;
  updated: number;
  etag: string;
  deleted = false;
  readonly events = new Map<string, StoredEvent>();

  constructor(init: { id: string; owner: string; primary: boolean; summary: string; timeZone: string; now: number }) {
    this.id = init.id;
    this.owner = init.owner;
    this.primary = init.primary;
    this.summary = init.summary;
    this.timeZone = init.timeZone;
    this.updated = init.now;
    this.etag = etagOf(init.now, this.seq);
  }

  /** Records a change: the calendar's sync state, etag and updated move on. */
  bump(now: number): number {
    this.seq++;
    this.updated = now;
    this.etag = etagOf(now, this.seq);
    return this.seq;
  }
}

interface ListEntry {
  calendarId: string;
  accessRole: AccessRole;
  seq: number;
  etag: string;
  deleted: boolean;
  hidden?: boolean;
  selected?: boolean;
  summaryOverride?: string;
  colorId: string;
  backgroundColor: string;
  foregroundColor: string;
  defaultReminders: Reminder[];
  notificationSettings?: { notifications: { type: string; method: string }[] };
}

export class CalendarAccount {
  readonly email: string;
  readonly entries = new Map<string, ListEntry>();
  listSeq = 1;
  listFloor = 0;

  constructor(email: string) {
    this.email = email;
  }
}

export interface CalendarEnvironment {
  now: () => number;
}

/** Quoted like Google's etags: microseconds of the change, the counter in the last digits. */
function etagOf(now: number, seq: number): string {
  return `"${now * 1000 + (seq % 1000)}"`;
}

export class CalendarState {
  readonly env: CalendarEnvironment;
  readonly calendars = new Map<string, CalendarStore>();
  readonly accounts = new Map<string, CalendarAccount>();
  readonly channels = new Map<string, RecordedChannel>();
  private counter = 0;

  constructor(env: CalendarEnvironment) {
    this.env = env;
  }

  get now(): number {
    return this.env.now();
  }

  /** IDs in Google's alphabet for event ids (base32hex: 0-9, a-v), growing with time. */
  newId(): string {
    return ((BigInt(this.now) << 20n) | BigInt(this.counter++ & 0xfffff)).toString(32);
  }

  /** A user: their account and primary calendar (id: the address), in their list as owner. */
  addUser(email: string, timeZone = 'UTC'): void {
    const id = email.toLowerCase();
    if (this.accounts.has(id)) return;
    if (!validZone(timeZone)) throw new Error(`The Google fake: ${timeZone} is not an IANA time zone`);
    const account = new CalendarAccount(id);
    this.accounts.set(id, account);
    const calendar = new CalendarStore({ id, owner: id, primary: true, summary: id, timeZone, now: this.now });
    this.calendars.set(id, calendar);
    this.listCalendar(account, calendar, 'owner', {
      selected: true,
      defaultReminders: [{ method: 'popup', minutes: 10 }],
      notificationSettings: {
        notifications: [
          { type: 'eventCreation', method: 'email' },
          { type: 'eventChange', method: 'email' },
          { type: 'eventCancellation', method: 'email' },
          { type: 'eventResponse', method: 'email' },
        ],
      },
    });
  }

  account(email: string): CalendarAccount | undefined {
    return this.accounts.get(email.toLowerCase());
  }

  /** The account of a test-only helper's `email`, or a plain error naming it. */
  requiredAccount(email: string): CalendarAccount {
    const account = this.account(email);
    if (!account) throw new Error(`The Google fake has no user ${email}; addUser first`);
    return account;
  }

  listCalendar(
    account: CalendarAccount,
    calendar: CalendarStore,
    accessRole: AccessRole,
    extra: Partial<ListEntry>,
  ): ListEntry {
    const colorId = calendar.primary ? '14' : String((account.entries.size % 24) + 1);
    const color = CALENDAR_COLORS[colorId]!;
    const entry: ListEntry = {
      calendarId: calendar.id,
      accessRole,
      seq: ++account.listSeq,
      etag: etagOf(this.now, account.listSeq),
      deleted: false,
      colorId,
      backgroundColor: color.background,
      foregroundColor: color.foreground,
      defaultReminders: [],
      ...extra,
    };
    account.entries.set(calendar.id, entry);
    return entry;
  }

  /** Marks a list entry changed: it comes back in the next incremental calendarList sync. */
  touchEntry(account: CalendarAccount, entry: ListEntry): void {
    entry.seq = ++account.listSeq;
    entry.etag = etagOf(this.now, entry.seq);
  }

  reset(): void {
    this.calendars.clear();
    this.accounts.clear();
    this.channels.clear();
  }
}

/** Google's calendar and event palettes (colors.get), by colorId. */
const CALENDAR_COLORS: Record<string, { background: string; foreground: string }> = Object.fromEntries(
  [
    '#ac725e',
    '#d06b64',
    '#f83a22',
    '#fa573c',
    '#ff7537',
    '#ffad46',
    '#42d692',
    '#16a765',
    '#7bd148',
    '#b3dc6c',
    '#fbe983',
    '#fad165',
    '#92e1c0',
    '#9fe1e7',
    '#9fc6e7',
    '#4986e7',
    '#9a9cff',
    '#b99aff',
    '#c2c2c2',
    '#cabdbf',
    '#cca6ac',
    '#f691b2',
    '#cd74e6',
    '#a47ae2',
  ].map((background, i) => [String(i + 1), { background, foreground: '#000000' }]),
);
const EVENT_COLORS: Record<string, { background: string; foreground: string }> = Object.fromEntries(
  [
    '#a4bdfc',
    '#7ae7bf',
    '#dbadff',
    '#ff887c',
    '#fbd75b',
    '#ffb878',
    '#46d6db',
    '#e1e1e1',
    '#5484ed',
    '#51b749',
    '#dc2127',
  ].map((background, i) => [String(i + 1), { background, foreground: '#1d1d1d' }]),
);

// ---------------------------------------------------------------------------------------------------
// Access
// ---------------------------------------------------------------------------------------------------

interface Access {
  calendar: CalendarStore;
  role: AccessRole;
  entry?: ListEntry;
}

/**
 * The calendar a request names (`primary`: the caller's) and the caller's role on it. A calendar the
 * caller neither owns nor has in their list is answered 404, as Google hides what one cannot see.
 */
function access(call: CalendarCall, calendarId: string, need: 'read' | 'write'): Access {
  const id = calendarId === 'primary' ? call.account.email : calendarId.toLowerCase();
  const calendar = call.state.calendars.get(id);
  if (!calendar || calendar.deleted) throw notFound();
  const entry = call.account.entries.get(id);
  const role: AccessRole =
    calendar.owner === call.account.email ? 'owner' : entry && !entry.deleted ? entry.accessRole : 'freeBusyReader';
  if (role === 'freeBusyReader') throw notFound();
  if (need === 'write' && role !== 'owner' && role !== 'writer') throw forbidden();
  return { calendar, role, ...(entry ? { entry } : {}) };
}

// ---------------------------------------------------------------------------------------------------
// Writing events: a request body becomes EventFields
// ---------------------------------------------------------------------------------------------------

type EventBody = Record<string, unknown> & {
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
function bodyOf(fields: EventFields, zone: string): EventBody {
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
 * Google's patch: given fields replace, objects merge, arrays replace, null clears. (The Discovery
 * check refuses JSON null in a request today, so only calendarChangedOutside can send one.)
 */
function merge(base: Record<string, unknown>, patch: Record<string, unknown>, top = true): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null && !(top && key === 'conferenceData')) delete out[key];
    else if (isPlainObject(value) && isPlainObject(out[key]) && !(top && REPLACED_WHOLE.has(key)))
      out[key] = merge(out[key] as Record<string, unknown>, value, false);
    else out[key] = value;
  }
  return out;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

// ---------------------------------------------------------------------------------------------------
// Events of one calendar: series, instances, exceptions
// ---------------------------------------------------------------------------------------------------

const isSeries = (e: StoredEvent) => !!e.fields.recurrence?.length && !e.recurringEventId;

function instanceOf(series: StoredEvent, occurrence: Occurrence): StoredEvent {
  return {
    ...series,
    id: `${series.id}_${occurrence.key}`,
    fields: { ...series.fields, start: occurrence.start, end: occurrence.end, recurrence: undefined },
    recurringEventId: series.id,
    originalStart: occurrence.start,
  };
}

/** An event by id: stored, or a generated instance of a stored series (`<series>_<key>`). */
function findEvent(calendar: CalendarStore, id: string): StoredEvent | undefined {
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

function requiredEvent(calendar: CalendarStore, id: string): StoredEvent {
  const event = findEvent(calendar, id);
  if (!event) throw notFound();
  return event;
}

/** Stores a changed event, moving the calendar's sync state on. */
function save(state: CalendarState, calendar: CalendarStore, event: StoredEvent): StoredEvent {
  const now = state.now;
  event.seq = calendar.bump(now);
  event.updated = now;
  event.etag = etagOf(now, event.seq);
  calendar.events.set(event.id, event);
  return event;
}

/** Deletes as Google does: a cancelled tombstone; a series takes its exceptions with it. */
function cancel(state: CalendarState, calendar: CalendarStore, event: StoredEvent): void {
  if (event.status === 'cancelled') throw new GoogleApiError(410, 'Resource has been deleted', 'deleted');
  save(state, calendar, { ...event, status: 'cancelled' });
  if (isSeries(event))
    for (const e of calendar.events.values())
      if (e.recurringEventId === event.id && e.status !== 'cancelled')
        save(state, calendar, { ...e, status: 'cancelled' });
}

function writeOptions(call: CalendarCall, calendar: CalendarStore, instance: boolean, outside = false): WriteOptions {
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

function insertEvent(
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
function changeEvent(
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

function renderEvent(calendar: CalendarStore, e: StoredEvent, o: RenderOptions): EventResource {
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

function renderOptions(call: CalendarCall, calendar: CalendarStore, minimalIfCancelled: boolean): RenderOptions {
  const zone = call.query.get('timeZone') ?? calendar.timeZone;
  if (!validZone(zone)) throw bad('Invalid time zone definition.');
  const maxAttendees = call.query.get('maxAttendees');
  return { zone, minimalIfCancelled, ...(maxAttendees ? { maxAttendees: Number(maxAttendees) } : {}) };
}

// ---------------------------------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------------------------------

const encodeToken = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

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

function pageCursor(call: CalendarCall, currentSeq: number): PageCursor {
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
function syncPosition(text: string, scope: string, floor: number, current: number): number {
  const token = decodeToken<SyncToken>(text, (v) => typeof v.c === 'string' && typeof v.s === 'number');
  if (!token || token.c !== scope || token.s < floor || token.s > current) throw fullSyncRequired();
  return token.s;
}

function maxResultsOf(call: CalendarCall, byDefault: number, cap: number): number {
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

/** Where expanding a series stops: `to`, or the horizon past the clock (or past `from`) when unbounded. */
const expansionEnd = (from: number, to: number, now: number) =>
  Number.isFinite(to) ? to : Math.max(now, Number.isFinite(from) ? from : now) + HORIZON_MS;

const overlaps = (e: StoredEvent, zone: string, from: number, to: number) =>
  instantOf(e.fields.end, zone) > from && instantOf(e.fields.start, zone) < to;

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

/** Single events, exceptions and generated instances of live series in [from, to). */
function expandedEvents(calendar: CalendarStore, from: number, to: number, now: number): StoredEvent[] {
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

function listEvents(call: CalendarCall): CalendarAnswer {
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

function listInstances(call: CalendarCall): CalendarAnswer {
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

// ---------------------------------------------------------------------------------------------------
// freebusy.query
// ---------------------------------------------------------------------------------------------------

interface FreeBusyBody {
  timeMin?: string;
  timeMax?: string;
  timeZone?: string;
  items?: { id?: string }[];
}

/** Busy periods: opaque, not cancelled, not declined by the calendar's owner; clipped and merged. */
function busyOf(calendar: CalendarStore, from: number, to: number, now: number): [number, number][] {
  const periods = expandedEvents(calendar, from, to, now)
    .filter((e) => e.status !== 'cancelled' && e.fields.transparency !== 'transparent')
    .filter(
      (e) =>
        !e.fields.attendees?.some((a) => a.email.toLowerCase() === calendar.owner && a.responseStatus === 'declined'),
    )
    .map((e): [number, number] => [
      Math.max(instantOf(e.fields.start, calendar.timeZone), from),
      Math.min(instantOf(e.fields.end, calendar.timeZone), to),
    ])
    .sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const p of periods) {
    const last = merged[merged.length - 1];
    if (last && p[0] <= last[1]) last[1] = Math.max(last[1], p[1]);
    else merged.push([...p]);
  }
  return merged;
}

function freeBusy(call: CalendarCall): CalendarAnswer {
  const body = (call.body ?? {}) as FreeBusyBody;
  if (!body.timeMin) throw required('Missing timeMin parameter.');
  if (!body.timeMax) throw required('Missing timeMax parameter.');
  const from = Date.parse(body.timeMin);
  const to = Date.parse(body.timeMax);
  if (to <= from) throw emptyRange();
  const zone = body.timeZone ?? 'UTC';
  if (!validZone(zone)) throw bad('Invalid time zone definition.');
  const items = body.items ?? [];
  if (items.length > 50) throw bad('Too many calendars requested.', 'tooManyCalendarsRequested');
  const format = (ms: number) => DateTime.fromMillis(ms, { zone }).toISO({ suppressMilliseconds: true })!;
  const calendars: Record<
    string,
    { busy: { start: string; end: string }[]; errors?: { domain: string; reason: string }[] }
  > = {};
  for (const item of items) {
    const key = item.id ?? '';
    const id = key === 'primary' ? call.account.email : key.toLowerCase();
    const calendar = call.state.calendars.get(id);
    // Free/busy of any calendar the fake knows is visible (as in one Workspace domain by default).
    if (!calendar || calendar.deleted) {
      calendars[key] = { busy: [], errors: [{ domain: 'global', reason: 'notFound' }] };
      continue;
    }
    calendars[key] = {
      busy: busyOf(calendar, from, to, call.state.now).map(([s, e]) => ({ start: format(s), end: format(e) })),
    };
  }
  return ok({ kind: 'calendar#freeBusy', timeMin: format(from), timeMax: format(to), calendars });
}

// ---------------------------------------------------------------------------------------------------
// Calendar list and calendars
// ---------------------------------------------------------------------------------------------------

function renderEntry(state: CalendarState, entry: ListEntry, email: string): Record<string, unknown> {
  const calendar = state.calendars.get(entry.calendarId)!;
  return compact({
    kind: 'calendar#calendarListEntry',
    etag: entry.etag,
    id: calendar.id,
    summary: calendar.summary,
    description: calendar.description,
    location: calendar.location,
    timeZone: calendar.timeZone,
    summaryOverride: entry.summaryOverride,
    colorId: entry.colorId,
    backgroundColor: entry.backgroundColor,
    foregroundColor: entry.foregroundColor,
    hidden: entry.hidden || undefined,
    selected: entry.selected || undefined,
    accessRole: entry.accessRole,
    defaultReminders: entry.defaultReminders,
    notificationSettings: entry.notificationSettings,
    primary: calendar.primary && calendar.owner === email ? true : undefined,
    deleted: entry.deleted || undefined,
    dataOwner: calendar.primary ? undefined : calendar.owner,
    conferenceProperties: { allowedConferenceSolutionTypes: ['hangoutsMeet'] },
  });
}

function renderCalendar(calendar: CalendarStore): Record<string, unknown> {
  return compact({
    kind: 'calendar#calendar',
    etag: calendar.etag,
    id: calendar.id,
    summary: calendar.summary,
    description: calendar.description,
    location: calendar.location,
    timeZone: calendar.timeZone,
    dataOwner: calendar.primary ? undefined : calendar.owner,
    conferenceProperties: { allowedConferenceSolutionTypes: ['hangoutsMeet'] },
  });
}

const ROLE_RANK: Record<AccessRole, number> = { freeBusyReader: 0, reader: 1, writer: 2, owner: 3 };

function listCalendarList(call: CalendarCall): CalendarAnswer {
  const { account, state, query } = call;
  const syncText = query.get('syncToken');
  const cursor = pageCursor(call, account.listSeq);
  let entries = [...account.entries.values()];
  if (syncText !== null) {
    if (query.has('minAccessRole')) throw bad('The syncToken cannot be used together with minAccessRole.');
    const since = syncPosition(syncText, `list:${account.email}`, account.listFloor, account.listSeq);
    entries = entries.filter((e) => e.seq > since && e.seq <= cursor.s);
  } else {
    const minRole = query.get('minAccessRole') as AccessRole | null;
    entries = entries.filter(
      (e) =>
        (!e.deleted || query.get('showDeleted') === 'true') &&
        (!e.hidden || query.get('showHidden') === 'true') &&
        (!minRole || ROLE_RANK[e.accessRole] >= ROLE_RANK[minRole]),
    );
  }
  const max = maxResultsOf(call, 100, 250);
  const more = entries.length > cursor.o + max;
  return ok({
    kind: 'calendar#calendarList',
    etag: etagOf(state.now, account.listSeq),
    ...(more
      ? { nextPageToken: encodeToken({ o: cursor.o + max, s: cursor.s }) }
      : { nextSyncToken: encodeToken({ c: `list:${account.email}`, s: cursor.s }) }),
    items: entries.slice(cursor.o, cursor.o + max).map((e) => renderEntry(state, e, account.email)),
  });
}

function listedEntry(call: CalendarCall): ListEntry {
  const id = call.params.calendarId === 'primary' ? call.account.email : call.params.calendarId!.toLowerCase();
  const entry = call.account.entries.get(id);
  if (!entry || entry.deleted) throw notFound();
  return entry;
}

type EntryBody = Partial<Omit<ListEntry, 'calendarId'>> & { id?: string };

/** Applies what a calendarList insert/patch/update may set; colours in RGB only with colorRgbFormat=true. */
function applyEntry(call: CalendarCall, entry: ListEntry, body: EntryBody, replace: boolean): void {
  const rgb = body.backgroundColor !== undefined || body.foregroundColor !== undefined;
  if (rgb && call.query.get('colorRgbFormat') !== 'true')
    throw bad('The colorRgbFormat parameter must be true to set backgroundColor or foregroundColor.');
  if (body.colorId !== undefined) {
    const color = CALENDAR_COLORS[body.colorId];
    if (!color) throw bad('Invalid color id value.');
    Object.assign(entry, {
      colorId: body.colorId,
      backgroundColor: color.background,
      foregroundColor: color.foreground,
    });
  }
  if (body.backgroundColor !== undefined) entry.backgroundColor = body.backgroundColor;
  if (body.foregroundColor !== undefined) entry.foregroundColor = body.foregroundColor;
  if (replace || body.hidden !== undefined) entry.hidden = body.hidden ?? undefined;
  if (replace || body.selected !== undefined) entry.selected = body.selected ?? undefined;
  if (replace || body.summaryOverride !== undefined) entry.summaryOverride = body.summaryOverride ?? undefined;
  if (replace || body.defaultReminders !== undefined) entry.defaultReminders = body.defaultReminders ?? [];
  if (body.notificationSettings !== undefined) entry.notificationSettings = body.notificationSettings;
  call.state.touchEntry(call.account, entry);
}

type CalendarBody = { summary?: string; description?: string | null; location?: string | null; timeZone?: string };

function applyCalendar(call: CalendarCall, calendar: CalendarStore, body: CalendarBody, replace: boolean): void {
  if (body.timeZone !== undefined && !validZone(body.timeZone)) throw bad('Invalid time zone definition.');
  if (replace && !body.summary) throw required('Missing title.');
  if (body.summary !== undefined) calendar.summary = body.summary;
  if (replace || body.description !== undefined) calendar.description = body.description ?? undefined;
  if (replace || body.location !== undefined) calendar.location = body.location ?? undefined;
  if (body.timeZone !== undefined) calendar.timeZone = body.timeZone;
  calendar.bump(call.state.now);
  // The entries show the calendar's properties; they are read-only there, so list syncs do not return them.
  for (const account of call.state.accounts.values()) {
    const entry = account.entries.get(calendar.id);
    if (entry) entry.etag = etagOf(call.state.now, calendar.seq);
  }
}

// ---------------------------------------------------------------------------------------------------
// Watch channels
// ---------------------------------------------------------------------------------------------------

interface ChannelBody {
  id?: string;
  token?: string;
  type?: string;
  address?: string;
  expiration?: string;
  params?: Record<string, string>;
  resourceId?: string;
}

/** Google takes HTTPS addresses only; the fake also takes plain HTTP on loopback, for local receivers. */
function checkAddress(address: string | undefined): string {
  if (!address) throw required('Missing channel address.');
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    throw bad(`Invalid channel address: ${address}`);
  }
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback))
    throw bad(`WebHook callback must be HTTPS: ${address}`, 'push.webhookUrlNotHttps');
  return address;
}

function watchEvents(call: CalendarCall): CalendarAnswer {
  const { calendar } = access(call, call.params.calendarId!, 'read');
  const body = (call.body ?? {}) as ChannelBody;
  if (!body.id) throw required('Missing channel id.');
  if (body.type !== 'web_hook' && body.type !== 'webhook') throw bad(`Unknown channel type: ${body.type ?? ''}`);
  const address = checkAddress(body.address);
  if (call.state.channels.has(body.id)) throw bad(`Channel id ${body.id} not unique`, 'channelIdNotUnique');
  const ttl = Number(body.params?.ttl ?? 0);
  const expiration = body.expiration ? Number(body.expiration) : call.state.now + (ttl > 0 ? ttl * 1000 : WEEK_MS);
  // The resource watched: the same id for every channel on this calendar's events.
  const resourceId = createHash('sha256').update(`events ${calendar.id}`).digest('base64url').slice(0, 27);
  const channel: RecordedChannel = {
    id: body.id,
    resourceId,
    resourceUri: `https://www.googleapis.com/calendar/v3/calendars/${encodeURIComponent(calendar.id)}/events?alt=json`,
    calendarId: calendar.id,
    address,
    type: body.type,
    ...(body.token !== undefined ? { token: body.token } : {}),
    ...(body.params ? { params: { ...body.params } } : {}),
    expiration,
    email: call.account.email,
  };
  call.state.channels.set(channel.id, channel);
  return ok(
    compact({
      kind: 'api#channel',
      id: channel.id,
      resourceId,
      resourceUri: channel.resourceUri,
      token: channel.token,
      expiration: String(expiration),
    }),
  );
}

function stopChannel(call: CalendarCall): CalendarAnswer {
  const body = (call.body ?? {}) as ChannelBody;
  if (!body.id || !body.resourceId) throw required('Missing channel id or resourceId.');
  const channel = call.state.channels.get(body.id);
  if (!channel || channel.resourceId !== body.resourceId) throw notFound();
  call.state.channels.delete(body.id);
  return empty;
}

// ---------------------------------------------------------------------------------------------------
// Handlers
// ---------------------------------------------------------------------------------------------------

export interface CalendarCall {
  account: CalendarAccount;
  state: CalendarState;
  method: DiscoveryMethod;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
}

export interface CalendarAnswer {
  status: number;
  /** JSON body; undefined for an empty answer (204). */
  body?: unknown;
}

const ok = (body: unknown): CalendarAnswer => ({ status: 200, body });
const empty: CalendarAnswer = { status: 204 };
const eventBody = (call: CalendarCall) => (call.body ?? {}) as EventBody;

function eventAnswer(call: CalendarCall, calendar: CalendarStore, event: StoredEvent): CalendarAnswer {
  return ok(renderEvent(calendar, event, renderOptions(call, calendar, false)));
}

/** The handlers, by discovery method id. */
export const CALENDAR_HANDLERS: Record<string, (call: CalendarCall) => CalendarAnswer> = {
  // Calendar list

  'calendar.calendarList.list': listCalendarList,

  'calendar.calendarList.get': (call) => ok(renderEntry(call.state, listedEntry(call), call.account.email)),

  'calendar.calendarList.insert': (call) => {
    const body = (call.body ?? {}) as EntryBody;
    const id = body.id!.toLowerCase();
    const calendar = call.state.calendars.get(id);
    if (!calendar || calendar.deleted) throw notFound();
    let entry = call.account.entries.get(id);
    if (!entry || entry.deleted) {
      const role: AccessRole = calendar.owner === call.account.email ? 'owner' : 'reader';
      entry = call.state.listCalendar(call.account, calendar, role, { selected: true });
    }
    applyEntry(call, entry, body, false);
    return ok(renderEntry(call.state, entry, call.account.email));
  },

  'calendar.calendarList.patch': (call) => {
    const entry = listedEntry(call);
    applyEntry(call, entry, (call.body ?? {}) as EntryBody, false);
    return ok(renderEntry(call.state, entry, call.account.email));
  },

  'calendar.calendarList.update': (call) => {
    const entry = listedEntry(call);
    applyEntry(call, entry, (call.body ?? {}) as EntryBody, true);
    return ok(renderEntry(call.state, entry, call.account.email));
  },

  'calendar.calendarList.delete': (call) => {
    const entry = listedEntry(call);
    if (entry.calendarId === call.account.email) throw bad('The primary calendar cannot be removed from the list.');
    entry.deleted = true;
    call.state.touchEntry(call.account, entry);
    return empty;
  },

  // Calendars

  'calendar.calendars.get': (call) => ok(renderCalendar(access(call, call.params.calendarId!, 'read').calendar)),

  'calendar.calendars.insert': (call) => {
    const body = (call.body ?? {}) as CalendarBody;
    const { state, account } = call;
    const primary = state.calendars.get(account.email)!;
    let id: string;
    do id = `${state.newId()}@group.calendar.google.com`;
    while (state.calendars.has(id));
    const calendar = new CalendarStore({
      id,
      owner: account.email,
      primary: false,
      summary: body.summary ?? '',
      timeZone: primary.timeZone,
      now: state.now,
    });
    applyCalendar(call, calendar, body, true);
    state.calendars.set(id, calendar);
    state.listCalendar(account, calendar, 'owner', { selected: true });
    return ok(renderCalendar(calendar));
  },

  'calendar.calendars.patch': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    applyCalendar(call, calendar, (call.body ?? {}) as CalendarBody, false);
    return ok(renderCalendar(calendar));
  },

  'calendar.calendars.update': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    applyCalendar(call, calendar, (call.body ?? {}) as CalendarBody, true);
    return ok(renderCalendar(calendar));
  },

  'calendar.calendars.delete': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    if (calendar.primary)
      throw bad('The primary calendar cannot be deleted; use calendars.clear.', 'cannotDeletePrimaryCalendar');
    if (calendar.owner !== call.account.email) throw forbidden();
    calendar.deleted = true;
    calendar.bump(call.state.now);
    for (const account of call.state.accounts.values()) {
      const entry = account.entries.get(calendar.id);
      if (entry && !entry.deleted) {
        entry.deleted = true;
        call.state.touchEntry(account, entry);
      }
    }
    return empty;
  },

  'calendar.calendars.clear': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    if (!calendar.primary) throw bad('Only a primary calendar can be cleared; delete a secondary one.');
    for (const e of [...calendar.events.values()])
      if (e.status !== 'cancelled') save(call.state, calendar, { ...e, status: 'cancelled' });
    return empty;
  },

  // Events

  'calendar.events.list': listEvents,
  'calendar.events.instances': listInstances,

  'calendar.events.get': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'read');
    return eventAnswer(call, calendar, requiredEvent(calendar, call.params.eventId!));
  },

  'calendar.events.insert': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    const event = insertEvent(
      call.state,
      calendar,
      eventBody(call),
      writeOptions(call, calendar, false),
      call.account.email,
    );
    return eventAnswer(call, calendar, event);
  },

  'calendar.events.update': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    const event = requiredEvent(calendar, call.params.eventId!);
    const o = writeOptions(call, calendar, !!event.recurringEventId);
    return eventAnswer(call, calendar, changeEvent(call.state, calendar, event, eventBody(call), o));
  },

  'calendar.events.patch': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    const event = requiredEvent(calendar, call.params.eventId!);
    const merged = merge(bodyOf(event.fields, calendar.timeZone), eventBody(call)) as EventBody;
    const o = writeOptions(call, calendar, !!event.recurringEventId);
    return eventAnswer(call, calendar, changeEvent(call.state, calendar, event, merged, o));
  },

  'calendar.events.delete': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    cancel(call.state, calendar, requiredEvent(calendar, call.params.eventId!));
    return empty;
  },

  'calendar.events.move': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    const { calendar: destination } = access(call, call.query.get('destination')!, 'write');
    const event = requiredEvent(calendar, call.params.eventId!);
    if (event.status === 'cancelled') throw new GoogleApiError(410, 'Resource has been deleted', 'deleted');
    if (event.fields.eventType !== 'default')
      throw bad(`Events of type ${event.fields.eventType} cannot be moved.`, 'eventTypeRestriction');
    if (event.recurringEventId)
      throw bad('Cannot change the organizer of an instance.', 'cannotChangeOrganizerOfInstance');
    if (destination === calendar) return eventAnswer(call, calendar, event);
    const existing = destination.events.get(event.id);
    if (existing && existing.status !== 'cancelled')
      throw new GoogleApiError(409, 'The requested identifier already exists.', 'duplicate');
    const related = [...calendar.events.values()].filter((e) => e.recurringEventId === event.id);
    for (const e of [event, ...related]) {
      save(call.state, destination, { ...e, fields: { ...e.fields } });
      save(call.state, calendar, { ...e, status: 'cancelled' });
    }
    return eventAnswer(call, destination, destination.events.get(event.id)!);
  },

  'calendar.events.watch': watchEvents,
  'calendar.channels.stop': stopChannel,
  'calendar.freebusy.query': freeBusy,

  'calendar.colors.get': () =>
    ok({
      kind: 'calendar#colors',
      updated: '2012-02-14T00:00:00.000Z',
      calendar: CALENDAR_COLORS,
      event: EVENT_COLORS,
    }),
};

// ---------------------------------------------------------------------------------------------------
// Another client's change (a test helper)
// ---------------------------------------------------------------------------------------------------

/** An event body as another client would send it; with the id of a stored event it changes that one. */
export type OutsideChange = Record<string, unknown> & { id?: string; status?: EventStatus };

/**
 * Changes a calendar as another client of the same account would (Google's web UI, a phone): an
 * insert, a patch (an `id` the calendar has) or a delete (`status: 'cancelled'`); the sync state moves
 * on as for any change. Answers the event as events.get would, to the calendar's owner.
 */
export function changeOutside(
  state: CalendarState,
  email: string,
  calendarId: string,
  change: OutsideChange,
): EventResource {
  const account = state.requiredAccount(email);
  const call: CalendarCall = {
    account,
    state,
    method: { id: 'calendar.events.patch', path: '', httpMethod: 'PATCH' },
    params: {},
    query: new URLSearchParams('conferenceDataVersion=1'),
    body: change,
  };
  const { calendar } = access(call, calendarId, 'write');
  const existing = change.id !== undefined ? findEvent(calendar, change.id) : undefined;
  let event: StoredEvent;
  if (!existing) event = insertEvent(state, calendar, change, writeOptions(call, calendar, false, true), account.email);
  else if (change.status === 'cancelled') {
    cancel(state, calendar, existing);
    event = calendar.events.get(existing.id)!;
  } else {
    const merged = merge(bodyOf(existing.fields, calendar.timeZone), change) as EventBody;
    const o = writeOptions(call, calendar, !!existing.recurringEventId, true);
    event = changeEvent(state, calendar, existing, merged, o);
  }
  return renderEvent(calendar, event, { zone: calendar.timeZone, minimalIfCancelled: false });
}

/** Makes every sync token of the calendar so far unusable: the next incremental sync is answered 410. */
export function expireSync(state: CalendarState, email: string, calendarId: string): void {
  const account = state.requiredAccount(email);
  const id = calendarId === 'primary' ? account.email : calendarId.toLowerCase();
  const calendar = state.calendars.get(id);
  if (!calendar) throw new Error(`The Google fake has no calendar ${calendarId}`);
  calendar.syncFloor = calendar.bump(state.now);
}
