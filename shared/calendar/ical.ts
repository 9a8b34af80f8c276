import { DateTime, IANAZone } from 'luxon';
// Read only inside functions: the lazy chunk (scripts/esbuild-plugins.cjs, lazy-chunks) loads on the first calendar parsed or built.
import { ICAL, tzlib_get_ical_block, tzlib_get_timezones } from '#shared/lazy/ical';
import type { EventStatus, Participant, ParticipantStatus, Person, When } from '#shared/calendar/types';
import { windowsZoneToIana } from '#shared/calendar/windows-zones';
import { clock } from '#shared/time';

/**
 * iCalendar (RFC 5545) and iTIP/iMIP (RFC 5546/6047) for our events: `buildCalendar` writes one
 * VCALENDAR for a method, `parseCalendar` reads what Google, Outlook/Exchange, Apple and others send.
 *
 * Both sides go through ical.js, which does the syntax (line folding by octets, TEXT escaping, RFC
 * 6868 parameter quoting); time arithmetic is Luxon with an explicit zone and never the process time
 * zone. VTIMEZONE blocks come from timezones-ical-library. ical-generator is not used: it cannot write
 * a per-attendee COMMENT, a RECURRENCE-ID;VALUE=DATE, nor different zones for DTSTART and DTEND.
 */

export class IcsError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IcsError';
  }
}

export interface IcsEvent {
  uid: string;
  sequence: number;
  title?: string;
  description?: string;
  location?: string;
  /** Timespans carry Unix seconds and IANA zones; all-day events are dates (DTSTART;VALUE=DATE). */
  when: When;
  /** RRULE/EXDATE/RDATE lines as the API carries them ('RRULE:FREQ=WEEKLY;BYDAY=MO', 'EXDATE;TZID=Europe/Berlin:20261012T090000'). */
  recurrence?: string[];
  /** RECURRENCE-ID of an exception (one occurrence of a series). */
  recurrence_id?: { time: number; timezone?: string } | { date: string };
  status: EventStatus;
  busy: boolean;
  visibility?: 'public' | 'private' | 'default';
  organizer?: Person;
  /** ATTENDEEs that are people (not CUTYPE=ROOM/RESOURCE). */
  participants: Participant[];
  /** ATTENDEE;CUTYPE=ROOM or RESOURCE. */
  resources?: Person[];
  conferencing_url?: string;
  url?: string;
  created_at?: number;
  updated_at?: number;
  /** Event-level COMMENT (in a REPLY, the replying participant's comment is its `comment`). */
  comment?: string;
  reminders?: { minutes: number; method: 'display' | 'email' }[];
}

export type ItipMethod = 'PUBLISH' | 'REQUEST' | 'REPLY' | 'CANCEL';

export interface ParsedCalendar {
  method?: ItipMethod | string;
  events: IcsEvent[];
}

export const PRODID = '-//Switchboard//Calendar API//EN';

// ---------------------------------------------------------------------------------------------
// jCal (RFC 7265), the form ical.js reads and writes: [name, params, type, ...values].

type Params = Record<string, string | string[]>;
type JCalProperty = [string, Params, string, ...unknown[]];
type JCalComponent = [string, JCalProperty[], JCalComponent[]];

// ---------------------------------------------------------------------------------------------
// Time zones

const UTC_NAMES = new Set(
  ['utc', 'z', 'gmt', 'uct', 'universal', 'zulu', 'greenwich', 'gmt0', 'gmt+0', 'gmt-0'].flatMap((n) => [
    n,
    `etc/${n}`,
  ]),
);

const isUtcName = (name: string) => UTC_NAMES.has(name.trim().toLowerCase());

/** Intl also takes offsets like '+01:00' as a zone on newer Node versions; those are not IANA names. */
const isIanaName = (name: string) => /^[A-Za-z]/.test(name) && IANAZone.isValidZone(name);

/**
 * The IANA zone a TZID names: 'UTC' for the UTC aliases, the IANA name itself, a Windows ID mapped
 * through CLDR (Outlook: 'W. Europe Standard Time'), or a prefixed form ('/Europe/Berlin',
 * '/citadel.org/20070103_1/Europe/Berlin', '/mozilla.org/20050126_1/America/New_York').
 * Undefined when it is none of those (then only the file's VTIMEZONE can tell the offset).
 */
export function ianaZoneOf(tzid: string): string | undefined {
  const name = tzid
    .trim()
    .replace(/^"(.*)"$/, '$1')
    .trim();
  if (!name) return undefined;
  if (isUtcName(name)) return 'UTC';
  const windows = windowsZoneToIana(name);
  if (windows) return isUtcName(windows) ? 'UTC' : windows;
  if (isIanaName(name)) return name;
  const parts = name.split('/').filter(Boolean);
  for (let i = 0; i < parts.length; i++) {
    const candidate = parts.slice(i).join('/');
    if (isUtcName(candidate)) return 'UTC';
    if (candidate.includes('/') && isIanaName(candidate)) return candidate;
  }
  return undefined;
}

let tzlibZones: Set<string> | undefined;
const vtimezones = new Map<string, JCalComponent | null>();

/**
 * The VTIMEZONE for an IANA zone, named as asked: timezones-ical-library names links by their target
 * (Asia/Calcutta → Asia/Kolkata), and a VTIMEZONE must carry the TZID the properties use. The
 * library's list is checked first because it logs to the console for a name it does not know.
 */
function vtimezoneOf(zone: string): JCalComponent | undefined {
  if (!vtimezones.has(zone)) {
    tzlibZones ??= new Set(tzlib_get_timezones() as string[]);
    const block = tzlibZones.has(zone) ? tzlib_get_ical_block(zone) : undefined;
    let component: JCalComponent | null = null;
    if (Array.isArray(block) && block[0]) {
      const [name, props, subs] = ICAL.parse(block[0]) as JCalComponent;
      const renamed = props.map((p): JCalProperty =>
        p[0] === 'tzid' || p[0] === 'x-lic-location' ? [p[0], p[1], p[2], zone] : p,
      );
      component = [name, renamed, subs];
    }
    vtimezones.set(zone, component);
  }
  return vtimezones.get(zone) ?? undefined;
}

// ---------------------------------------------------------------------------------------------
// Date and time values

interface LocalTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

/** A DATE or DATE-TIME value as written: a date, a UTC time ('Z'), or a local time (TZID or floating). */
type RawValue = { kind: 'date'; date: string } | { kind: 'utc' | 'local'; local: LocalTime };

const pad = (n: number, width = 2) => String(n).padStart(width, '0');
const isoDate = (t: Pick<LocalTime, 'year' | 'month' | 'day'>) => `${pad(t.year, 4)}-${pad(t.month)}-${pad(t.day)}`;

/**
 * Reads a value from its jCal form. ical.js turns '20261012' into '2026-10-12' but also turns a
 * DATE written without VALUE=DATE into '2026-10-12T::' and garbage into 'garb-ag-eT::', so the
 * separators are dropped and the compact form is checked here, strictly.
 */
function rawValueOf(value: unknown, what: string): RawValue {
  const compact = String(value).replace(/[-:]/g, '');
  const date = /^(\d{4})(\d{2})(\d{2})T?$/.exec(compact);
  const time = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(Z?)$/.exec(compact);
  const m = date ?? time;
  if (!m) throw new IcsError(`${what}: '${String(value)}' is not a DATE or DATE-TIME`);
  const [year, month, day, hour = 0, minute = 0, second = 0] = m.slice(1, 7).map(Number) as number[];
  const local = { year: year!, month: month!, day: day!, hour, minute, second: Math.min(second, 59) };
  const valid = DateTime.fromObject(local, { zone: 'utc' }).isValid;
  if (!valid) throw new IcsError(`${what}: '${String(value)}' is not a valid date or time`);
  if (date) return { kind: 'date', date: isoDate(local) };
  return { kind: time![7] ? 'utc' : 'local', local };
}

const utcSeconds = (t: LocalTime) => Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second) / 1000;

/** 00:00 UTC of a date, where a date has to be placed on the time line (an all-day EXDATE among times, a DATE CREATED). */
function midnightUtc(date: string): number {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number];
  return utcSeconds({ year, month, day, hour: 0, minute: 0, second: 0 });
}

/** The VTIMEZONEs of the file being read, by TZID, for zones no name can be mapped from. */
type FileZones = Map<string, InstanceType<typeof ICAL.Timezone>>;

/**
 * The instant of a local time and the IANA zone to report. Known zones go through Luxon. An unknown
 * TZID is computed from the file's VTIMEZONE and reported as 'UTC'; floating times and TZIDs nothing
 * describes are read as UTC.
 */
function instantOf(local: LocalTime, tzid: string | undefined, zones: FileZones): { time: number; zone: string } {
  if (tzid === undefined) return { time: utcSeconds(local), zone: 'UTC' };
  const zone = ianaZoneOf(tzid);
  if (zone === 'UTC') return { time: utcSeconds(local), zone };
  if (zone) return { time: DateTime.fromObject(local, { zone }).toSeconds(), zone };
  const vtimezone = zones.get(tzid);
  if (vtimezone) return { time: utcSeconds(local) - vtimezone.utcOffset(ICAL.Time.fromData(local)), zone: 'UTC' };
  return { time: utcSeconds(local), zone: 'UTC' };
}

type ReadTime = { kind: 'date'; date: string } | { kind: 'time'; time: number; zone: string };

function readValue(value: unknown, tzid: string | undefined, zones: FileZones, what: string): ReadTime {
  const raw = rawValueOf(value, what);
  if (raw.kind === 'date') return raw;
  if (raw.kind === 'utc') return { kind: 'time', time: utcSeconds(raw.local), zone: 'UTC' };
  return { kind: 'time', ...instantOf(raw.local, tzid, zones) };
}

const addDays = (date: string, days: number) => DateTime.fromISO(date, { zone: 'utc' }).plus({ days }).toISODate()!;
const compactUtc = (time: number) => DateTime.fromSeconds(time, { zone: 'utc' }).toFormat("yyyyLLdd'T'HHmmss'Z'");
const jcalUtc = (time: number) => DateTime.fromSeconds(time, { zone: 'utc' }).toFormat("yyyy-LL-dd'T'HH:mm:ss'Z'");

// ---------------------------------------------------------------------------------------------
// Parsing

type Component = InstanceType<typeof ICAL.Component>;
type Property = InstanceType<typeof ICAL.Property>;

function param(prop: Property, name: string): string | undefined {
  const value = prop.getParameter(name) as string | string[] | undefined;
  const text = Array.isArray(value) ? value.join(',') : value;
  return text === undefined || text === '' ? undefined : text;
}

/** A property's value as text; an empty value (Google writes 'LOCATION:') counts as absent. */
function textOf(component: Component, name: string): string | undefined {
  const value = component.getFirstPropertyValue(name);
  const text = value === null || value === undefined ? '' : String(value);
  return text === '' ? undefined : text;
}

/** The address of an ORGANIZER or ATTENDEE: its mailto: URI, or the EMAIL parameter (RFC 7986) beside a urn:uuid:. */
function personOf(prop: Property): Person | undefined {
  const value = String(prop.getFirstValue() ?? '').trim();
  const address = /^mailto:/i.test(value)
    ? value.replace(/^mailto:/i, '')
    : value.includes(':')
      ? (param(prop, 'email') ?? '')
      : value;
  const email = address.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) return undefined;
  const name = param(prop, 'cn')?.trim();
  return name ? { email, name } : { email };
}

const PARTSTAT: Record<string, ParticipantStatus> = {
  ACCEPTED: 'yes',
  DECLINED: 'no',
  TENTATIVE: 'maybe',
  'NEEDS-ACTION': 'noreply',
};
const STATUS: Record<string, EventStatus> = { CONFIRMED: 'confirmed', TENTATIVE: 'maybe', CANCELLED: 'cancelled' };

/** Video meeting links worth calling a conference when no property says so. */
const MEETING_LINK =
  /https?:\/\/(?:[\w-]+\.)*(?:zoom\.us|zoomgov\.com|meet\.google\.com|teams\.microsoft\.com|teams\.live\.com|webex\.com)\/[^\s<>"'\\]*/i;

const meetingLinkIn = (text: string | undefined) => text?.match(MEETING_LINK)?.[0].replace(/[).,;]+$/, '');

/**
 * The conference link: Google's X-GOOGLE-CONFERENCE, RFC 7986 CONFERENCE, Microsoft's Teams URL
 * property, else the first Meet/Zoom/Teams/Webex link in URL, LOCATION or DESCRIPTION.
 */
function conferencingOf(ev: Component): string | undefined {
  for (const name of [
    'x-google-conference',
    'conference',
    'x-microsoft-skypeteamsmeetingurl',
    'x-microsoft-onlinemeetingconflink',
  ]) {
    for (const prop of ev.getAllProperties(name)) {
      const value = String(prop.getFirstValue() ?? '').trim();
      if (/^https?:\/\//i.test(value)) return value;
    }
  }
  for (const name of ['url', 'location', 'description']) {
    const link = meetingLinkIn(textOf(ev, name));
    if (link) return link;
  }
  return undefined;
}

/** EXDATE/RDATE as one line of ours: TZID mapped to IANA, or UTC with Z (also for zones only the file describes), or VALUE=DATE. */
function dateListLine(prop: Property, zones: FileZones): string {
  const name = prop.name.toUpperCase();
  const tzid = param(prop, 'tzid');
  // A PERIOD (RDATE only) is kept as its start: our lines carry instants, not durations.
  const values = (prop.toJSON() as JCalProperty).slice(3).map((v) => (Array.isArray(v) ? v[0] : v));
  const raws = values.map((v) => rawValueOf(v, name));
  if (!raws.length) throw new IcsError(`${name} without a value`);
  if (raws.every((r) => r.kind === 'date'))
    return `${name};VALUE=DATE:${raws.map((r) => (r as { date: string }).date.replaceAll('-', '')).join(',')}`;
  const zone = tzid === undefined ? undefined : ianaZoneOf(tzid);
  if (zone && zone !== 'UTC' && raws.every((r) => r.kind === 'local')) {
    const locals = raws.map((r) =>
      DateTime.fromObject((r as { local: LocalTime }).local, { zone: 'utc' }).toFormat("yyyyLLdd'T'HHmmss"),
    );
    return `${name};TZID=${zone}:${locals.join(',')}`;
  }
  const instants = raws.map((r) =>
    r.kind === 'date'
      ? midnightUtc(r.date)
      : r.kind === 'utc'
        ? utcSeconds(r.local)
        : instantOf(r.local, tzid, zones).time,
  );
  return `${name}:${instants.map(compactUtc).join(',')}`;
}

/** A DURATION added the RFC 5545 way: days and weeks are nominal (same wall time), the rest exact. */
function plusDuration(time: number, zone: string, duration: InstanceType<typeof ICAL.Duration>): number {
  const sign = duration.isNegative ? -1 : 1;
  const days = sign * (duration.weeks * 7 + duration.days);
  const seconds = sign * (duration.hours * 3600 + duration.minutes * 60 + duration.seconds);
  const base = isIanaName(zone) ? DateTime.fromSeconds(time, { zone }) : DateTime.fromSeconds(time, { zone: 'utc' });
  return base.plus({ days }).toSeconds() + seconds;
}

function durationOf(ev: Component): InstanceType<typeof ICAL.Duration> | undefined {
  const prop = ev.getFirstProperty('duration');
  if (!prop) return undefined;
  const text = String(prop.toJSON()[3] ?? '');
  if (!ICAL.Duration.isValueString(text)) throw new IcsError(`DURATION: '${text}' is not a duration`);
  return ICAL.Duration.fromString(text);
}

function whenOf(ev: Component, zones: FileZones): When {
  const dtstart = ev.getFirstProperty('dtstart');
  if (!dtstart) throw new IcsError('VEVENT without DTSTART');
  const start = readValue(dtstart.toJSON()[3], param(dtstart, 'tzid'), zones, 'DTSTART');
  const dtend = ev.getFirstProperty('dtend');
  const duration = durationOf(ev);
  if (start.kind === 'date') {
    let end = addDays(start.date, 1);
    if (dtend) {
      const read = readValue(dtend.toJSON()[3], param(dtend, 'tzid'), zones, 'DTEND');
      end = read.kind === 'date' ? read.date : DateTime.fromSeconds(read.time, { zone: 'utc' }).toISODate()!;
    } else if (duration) {
      end = addDays(start.date, Math.round(duration.toSeconds() / 86400));
    }
    if (end <= start.date) end = addDays(start.date, 1);
    return end === addDays(start.date, 1)
      ? { object: 'date', date: start.date }
      : { object: 'datespan', start_date: start.date, end_date: end };
  }
  let end = { time: start.time, zone: start.zone };
  if (dtend) {
    const read = readValue(dtend.toJSON()[3], param(dtend, 'tzid'), zones, 'DTEND');
    end =
      read.kind === 'time'
        ? read
        : {
            time: DateTime.fromISO(read.date, { zone: isIanaName(start.zone) ? start.zone : 'utc' }).toSeconds(),
            zone: start.zone,
          };
  } else if (duration) {
    end = { time: plusDuration(start.time, start.zone, duration), zone: start.zone };
  }
  return {
    object: 'timespan',
    start_time: start.time,
    end_time: Math.max(start.time, end.time),
    start_timezone: start.zone,
    end_timezone: end.zone,
  };
}

function recurrenceOf(ev: Component, zones: FileZones): string[] {
  const lines: string[] = [];
  for (const prop of ev.getAllProperties()) {
    const name = prop.name;
    if (name === 'rrule' || name === 'exrule') {
      const [, , , value] = prop.toJSON() as JCalProperty;
      if (!value || typeof value !== 'object' || !('freq' in value))
        throw new IcsError(`${name.toUpperCase()} without FREQ`);
      // The jCal recur keeps the parts in their order, so the line reads as the sender wrote it.
      lines.push(ICAL.stringify.property([name, {}, 'recur', value], ICAL.design.icalendar, true));
    } else if (name === 'exdate' || name === 'rdate') {
      lines.push(dateListLine(prop, zones));
    }
  }
  return lines;
}

function remindersOf(ev: Component, when: When): IcsEvent['reminders'] {
  const reminders: NonNullable<IcsEvent['reminders']> = [];
  const length =
    when.object === 'timespan'
      ? when.end_time - when.start_time
      : when.object === 'datespan'
        ? midnightUtc(when.end_date) - midnightUtc(when.start_date)
        : 86400;
  const startInstant = when.object === 'timespan' ? when.start_time : undefined;
  for (const alarm of ev.getAllSubcomponents('valarm')) {
    const action = textOf(alarm, 'action')?.toUpperCase();
    // Apple writes ACTION:NONE for "no alert"; PROCEDURE and the like are not reminders.
    if (action !== 'DISPLAY' && action !== 'AUDIO' && action !== 'EMAIL') continue;
    const trigger = alarm.getFirstProperty('trigger');
    if (!trigger) continue;
    const value = String(trigger.toJSON()[3] ?? '');
    let before: number | undefined;
    if (ICAL.Duration.isValueString(value)) {
      const offset = ICAL.Duration.fromString(value).toSeconds();
      before = -(offset + (param(trigger, 'related')?.toUpperCase() === 'END' ? length : 0));
    } else if (startInstant !== undefined) {
      const raw = rawValueOf(value, 'TRIGGER');
      if (raw.kind !== 'date') before = startInstant - utcSeconds(raw.local);
    }
    if (before === undefined || before < 0) continue;
    reminders.push({ minutes: Math.round(before / 60), method: action === 'EMAIL' ? 'email' : 'display' });
  }
  return reminders.length ? reminders : undefined;
}

function instantProp(ev: Component, name: string, zones: FileZones): number | undefined {
  const prop = ev.getFirstProperty(name);
  if (!prop) return undefined;
  const read = readValue(prop.toJSON()[3], param(prop, 'tzid'), zones, name.toUpperCase());
  return read.kind === 'time' ? read.time : midnightUtc(read.date);
}

function parseEvent(ev: Component, method: string | undefined, zones: FileZones): IcsEvent {
  const uid = textOf(ev, 'uid')?.trim();
  if (!uid) throw new IcsError('VEVENT without UID');
  const sequence = Number.parseInt(textOf(ev, 'sequence') ?? '0', 10);
  const when = whenOf(ev, zones);

  const organizerProp = ev.getFirstProperty('organizer');
  const organizer = organizerProp ? personOf(organizerProp) : undefined;
  const participants: Participant[] = [];
  const resources: Person[] = [];
  const seen = new Set<string>();
  for (const prop of ev.getAllProperties('attendee')) {
    const person = personOf(prop);
    if (!person || seen.has(person.email)) continue;
    seen.add(person.email);
    const cutype = param(prop, 'cutype')?.toUpperCase();
    if (cutype === 'ROOM' || cutype === 'RESOURCE') {
      resources.push(person);
      continue;
    }
    const comment = param(prop, 'x-response-comment');
    participants.push({
      ...person,
      status: PARTSTAT[param(prop, 'partstat')?.toUpperCase() ?? ''] ?? 'noreply',
      ...(comment ? { comment } : {}),
    });
  }
  const comment = textOf(ev, 'comment');
  // In a REPLY the COMMENT is the replying attendee's (RFC 5546 3.2.3).
  if (method === 'REPLY' && comment && participants.length === 1 && participants[0]!.comment === undefined)
    participants[0]!.comment = comment;

  const recurrence = recurrenceOf(ev, zones);
  const recurrenceIdProp = ev.getFirstProperty('recurrence-id');
  let recurrenceId: IcsEvent['recurrence_id'];
  if (recurrenceIdProp) {
    const read = readValue(recurrenceIdProp.toJSON()[3], param(recurrenceIdProp, 'tzid'), zones, 'RECURRENCE-ID');
    recurrenceId = read.kind === 'date' ? { date: read.date } : { time: read.time, timezone: read.zone };
  }
  const statusText = textOf(ev, 'status')?.toUpperCase() ?? '';
  const status: EventStatus = method === 'CANCEL' ? 'cancelled' : (STATUS[statusText] ?? 'confirmed');
  const transp = textOf(ev, 'transp')?.toUpperCase();
  const busy = transp ? transp !== 'TRANSPARENT' : textOf(ev, 'x-microsoft-cdo-busystatus')?.toUpperCase() !== 'FREE';
  const klass = textOf(ev, 'class')?.toUpperCase();
  const visibility =
    klass === 'PUBLIC' ? 'public' : klass === 'PRIVATE' || klass === 'CONFIDENTIAL' ? 'private' : undefined;
  const title = textOf(ev, 'summary');
  const description = textOf(ev, 'description');
  const location = textOf(ev, 'location');
  const url = textOf(ev, 'url');
  const conferencing = conferencingOf(ev);
  const created = instantProp(ev, 'created', zones);
  const updated = instantProp(ev, 'last-modified', zones) ?? instantProp(ev, 'dtstamp', zones);
  const reminders = remindersOf(ev, when);

  return {
    uid,
    sequence: Number.isFinite(sequence) && sequence > 0 ? sequence : 0,
    ...(title !== undefined ? { title } : {}),
    ...(description !== undefined ? { description } : {}),
    ...(location !== undefined ? { location } : {}),
    when,
    ...(recurrence.length ? { recurrence } : {}),
    ...(recurrenceId ? { recurrence_id: recurrenceId } : {}),
    status,
    busy,
    ...(visibility ? { visibility } : {}),
    ...(organizer ? { organizer } : {}),
    participants,
    ...(resources.length ? { resources } : {}),
    ...(conferencing ? { conferencing_url: conferencing } : {}),
    ...(url ? { url } : {}),
    ...(created !== undefined ? { created_at: created } : {}),
    ...(updated !== undefined ? { updated_at: updated } : {}),
    ...(comment !== undefined ? { comment } : {}),
    ...(reminders ? { reminders } : {}),
  };
}

/** Parses any iCalendar text; throws IcsError for malformed input or a VCALENDAR with no VEVENT, and nothing else. */
export function parseCalendar(text: string): ParsedCalendar {
  const ical = ICAL; // outside the try: a library that fails to load is not malformed input
  try {
    if (typeof text !== 'string') throw new IcsError('iCalendar text must be a string');
    const parsed = ical.parse(text.replace(/^\uFEFF/, '').trim()) as JCalComponent | JCalComponent[];
    const roots = (parsed.length && typeof parsed[0] === 'string' ? [parsed] : parsed) as JCalComponent[];
    if (!roots.length || roots.some((root) => root[0] !== 'vcalendar')) throw new IcsError('not a VCALENDAR');
    const calendars = roots.map((root) => new ical.Component(root));
    const methodText = textOf(calendars[0]!, 'method')?.trim().toUpperCase();
    const method = methodText || undefined;
    const events: IcsEvent[] = [];
    for (const calendar of calendars) {
      const zones: FileZones = new Map();
      for (const vtimezone of calendar.getAllSubcomponents('vtimezone')) {
        const tzid = textOf(vtimezone, 'tzid');
        if (tzid) zones.set(tzid, new ical.Timezone(vtimezone));
      }
      for (const ev of calendar.getAllSubcomponents('vevent')) events.push(parseEvent(ev, method, zones));
    }
    if (!events.length) throw new IcsError('the VCALENDAR has no VEVENT');
    return { ...(method ? { method } : {}), events };
  } catch (error) {
    if (error instanceof IcsError) throw error;
    throw new IcsError(`malformed iCalendar: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Building

/** The VTIMEZONEs a calendar being built needs, by IANA name. */
type UsedZones = Map<string, JCalComponent>;

/** The zone a time is written in, with its VTIMEZONE recorded; undefined means UTC with Z (no zone, UTC, or a zone we cannot describe). */
function writableZone(zone: string | undefined, used: UsedZones): string | undefined {
  const iana = zone === undefined ? undefined : ianaZoneOf(zone);
  if (!iana || iana === 'UTC') return undefined;
  const vtimezone = vtimezoneOf(iana);
  if (!vtimezone) return undefined;
  used.set(iana, vtimezone);
  return iana;
}

function checkTime(time: number, what: string): number {
  if (!Number.isFinite(time)) throw new IcsError(`${what}: ${String(time)} is not a Unix time`);
  return Math.floor(time);
}

function checkDate(date: string, what: string): string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date) || !DateTime.fromISO(date, { zone: 'utc' }).isValid)
    throw new IcsError(`${what}: '${date}' is not a date (YYYY-MM-DD)`);
  return date;
}

function timeProp(name: string, time: number, zone: string | undefined, used: UsedZones): JCalProperty {
  const seconds = checkTime(time, name.toUpperCase());
  const tzid = writableZone(zone, used);
  if (!tzid) return [name, {}, 'date-time', jcalUtc(seconds)];
  return [name, { tzid }, 'date-time', DateTime.fromSeconds(seconds, { zone: tzid }).toFormat("yyyy-LL-dd'T'HH:mm:ss")];
}

const dateProp = (name: string, date: string): JCalProperty => [name, {}, 'date', checkDate(date, name.toUpperCase())];

function whenProps(when: When, used: UsedZones): JCalProperty[] {
  switch (when.object) {
    case 'timespan':
      return [
        timeProp('dtstart', when.start_time, when.start_timezone, used),
        timeProp('dtend', Math.max(when.end_time, when.start_time), when.end_timezone ?? when.start_timezone, used),
      ];
    case 'datespan': {
      const start = checkDate(when.start_date, 'start_date');
      const end = checkDate(when.end_date, 'end_date') > start ? when.end_date : addDays(start, 1);
      return [dateProp('dtstart', start), dateProp('dtend', end)];
    }
    case 'date':
      return [dateProp('dtstart', when.date), dateProp('dtend', addDays(checkDate(when.date, 'date'), 1))];
    default:
      throw new IcsError(`unknown when.object '${(when as { object: unknown }).object}'`);
  }
}

/**
 * Our recurrence lines as VEVENT properties. RRULE/EXRULE are written as given; an EXDATE/RDATE
 * TZID gets its VTIMEZONE, or (for a zone we cannot describe) its times are written in UTC.
 */
function recurrenceProps(lines: readonly string[], used: UsedZones): JCalProperty[] {
  const props: JCalProperty[] = [];
  for (const line of lines) {
    const text = line.trim();
    if (!text || /^DTSTART[;:]/i.test(text)) continue;
    let prop: JCalProperty;
    const ical = ICAL; // outside the try: a library that fails to load is not a malformed line
    try {
      prop = ical.Property.fromString(text, ical.design.icalendar).toJSON() as JCalProperty;
    } catch (error) {
      throw new IcsError(`recurrence line '${text}': ${(error as Error).message}`, { cause: error });
    }
    const [name, params, , ...values] = prop;
    if (name === 'rrule' || name === 'exrule') {
      if (!values[0] || typeof values[0] !== 'object' || !('freq' in values[0]))
        throw new IcsError(`recurrence line '${text}': no FREQ`);
      props.push([name, {}, 'recur', values[0]]);
      continue;
    }
    if (name !== 'exdate' && name !== 'rdate')
      throw new IcsError(`recurrence line '${text}': only RRULE, EXRULE, EXDATE and RDATE are recurrence`);
    const raws = values.map((v) => rawValueOf(Array.isArray(v) ? v[0] : v, name.toUpperCase()));
    if (!raws.length) throw new IcsError(`recurrence line '${text}': no value`);
    if (raws.every((r) => r.kind === 'date')) {
      props.push([name, {}, 'date', ...raws.map((r) => (r as { date: string }).date)]);
      continue;
    }
    if (raws.some((r) => r.kind === 'date')) throw new IcsError(`recurrence line '${text}': dates and times mixed`);
    const tzid = typeof params.tzid === 'string' ? params.tzid : undefined;
    const zone = tzid === undefined ? undefined : ianaZoneOf(tzid);
    if (tzid !== undefined && !zone) throw new IcsError(`recurrence line '${text}': unknown time zone '${tzid}'`);
    const writable = writableZone(zone, used);
    const locals = raws as { kind: 'utc' | 'local'; local: LocalTime }[];
    if (writable && locals.every((r) => r.kind === 'local')) {
      props.push([
        name,
        { tzid: writable },
        'date-time',
        ...locals.map((r) => DateTime.fromObject(r.local, { zone: 'utc' }).toFormat("yyyy-LL-dd'T'HH:mm:ss")),
      ]);
    } else if (!zone && locals.every((r) => r.kind === 'local')) {
      // Floating, as the event's own times may be: kept as written.
      props.push([
        name,
        {},
        'date-time',
        ...locals.map((r) => DateTime.fromObject(r.local, { zone: 'utc' }).toFormat("yyyy-LL-dd'T'HH:mm:ss")),
      ]);
    } else {
      // UTC from here on; floating times among them are read as UTC, as they are when parsed.
      const instants = locals.map((r) =>
        r.kind === 'utc' || !zone || zone === 'UTC'
          ? utcSeconds(r.local)
          : DateTime.fromObject(r.local, { zone }).toSeconds(),
      );
      props.push([name, {}, 'date-time', ...instants.map(jcalUtc)]);
    }
  }
  return props;
}

const PARTSTAT_OUT: Record<ParticipantStatus, string> = {
  yes: 'ACCEPTED',
  no: 'DECLINED',
  maybe: 'TENTATIVE',
  noreply: 'NEEDS-ACTION',
};
const STATUS_OUT: Record<EventStatus, string> = { confirmed: 'CONFIRMED', maybe: 'TENTATIVE', cancelled: 'CANCELLED' };

function checkEmail(email: string, what: string): string {
  const address = email
    .trim()
    .replace(/^mailto:/i, '')
    .toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(address)) throw new IcsError(`${what}: '${email}' is not an email address`);
  return address;
}

const withName = (params: Params, person: Person): Params =>
  person.name?.trim() ? { cn: person.name.trim(), ...params } : params;

function organizerProp(organizer: Person): JCalProperty {
  return ['organizer', withName({}, organizer), 'cal-address', `mailto:${checkEmail(organizer.email, 'organizer')}`];
}

function attendeeProps(method: ItipMethod, event: IcsEvent): JCalProperty[] {
  const organizer = event.organizer ? checkEmail(event.organizer.email, 'organizer') : undefined;
  const people = event.participants.map((p): JCalProperty => {
    const email = checkEmail(p.email, 'participant');
    const params: Params = {
      cutype: 'INDIVIDUAL',
      role: 'REQ-PARTICIPANT',
      partstat: PARTSTAT_OUT[p.status] ?? 'NEEDS-ACTION',
    };
    // Only a REQUEST asks for answers, and not from the organizer attending their own event.
    if (method === 'REQUEST' && email !== organizer) params.rsvp = 'TRUE';
    return ['attendee', withName(params, p), 'cal-address', `mailto:${email}`];
  });
  if (method === 'REPLY') return people;
  const rooms = (event.resources ?? []).map((r): JCalProperty => [
    'attendee',
    withName({ cutype: 'ROOM', role: 'NON-PARTICIPANT', partstat: 'NEEDS-ACTION' }, r),
    'cal-address',
    `mailto:${checkEmail(r.email, 'resource')}`,
  ]);
  return [...people, ...rooms];
}

function alarmComponents(event: IcsEvent): JCalComponent[] {
  return (event.reminders ?? []).map((reminder): JCalComponent => {
    const minutes = Math.max(0, Math.round(reminder.minutes));
    const trigger: JCalProperty = ['trigger', {}, 'duration', ICAL.Duration.fromSeconds(-minutes * 60).toString()];
    const text = event.title ?? 'Reminder';
    if (reminder.method !== 'email' || !event.organizer)
      return ['valarm', [['action', {}, 'text', 'DISPLAY'], ['description', {}, 'text', text], trigger], []];
    // RFC 5545 3.6.6: an EMAIL alarm has SUMMARY, DESCRIPTION and the ATTENDEE to mail.
    const to: JCalProperty = [
      'attendee',
      {},
      'cal-address',
      `mailto:${checkEmail(event.organizer.email, 'organizer')}`,
    ];
    return [
      'valarm',
      [['action', {}, 'text', 'EMAIL'], ['summary', {}, 'text', text], ['description', {}, 'text', text], trigger, to],
      [],
    ];
  });
}

function recurrenceIdProp(event: IcsEvent, used: UsedZones): JCalProperty | undefined {
  const id = event.recurrence_id;
  if (!id) return undefined;
  if ('date' in id) return dateProp('recurrence-id', id.date);
  // Best in the zone of DTSTART, which the RECURRENCE-ID of an exception names.
  const zone = id.timezone ?? (event.when.object === 'timespan' ? event.when.start_timezone : undefined);
  return timeProp('recurrence-id', id.time, zone, used);
}

/**
 * One VEVENT for a method. REPLY keeps to what RFC 5546 3.2.3 asks (UID, SEQUENCE, DTSTAMP, the
 * times, RECURRENCE-ID, ORGANIZER, the one ATTENDEE answering and its COMMENT); CANCEL is
 * STATUS:CANCELLED with everyone; neither carries alarms.
 */
function eventComponent(method: ItipMethod, event: IcsEvent, used: UsedZones): JCalComponent {
  if (!event.uid?.trim()) throw new IcsError('event without uid');
  if (method === 'REPLY' && event.participants.length !== 1)
    throw new IcsError(`a REPLY carries exactly one participant (the one answering), not ${event.participants.length}`);
  const sequence = Number.isInteger(event.sequence) && event.sequence > 0 ? event.sequence : 0;
  const props: JCalProperty[] = [
    ['uid', {}, 'text', event.uid],
    ['sequence', {}, 'integer', sequence],
    ['dtstamp', {}, 'date-time', jcalUtc(clock.nowSeconds())],
    ...whenProps(event.when, used),
  ];
  const recurrenceId = recurrenceIdProp(event, used);
  if (method !== 'REPLY' && event.recurrence?.length) props.push(...recurrenceProps(event.recurrence, used));
  if (recurrenceId) props.push(recurrenceId);
  if (event.title !== undefined) props.push(['summary', {}, 'text', event.title]);
  if (method === 'REPLY') {
    if (event.organizer) props.push(organizerProp(event.organizer));
    props.push(...attendeeProps(method, event));
    const comment = event.participants[0]!.comment ?? event.comment;
    if (comment !== undefined) props.push(['comment', {}, 'text', comment]);
    return ['vevent', props, []];
  }
  if (event.description !== undefined) props.push(['description', {}, 'text', event.description]);
  if (event.location !== undefined) props.push(['location', {}, 'text', event.location]);
  if (event.url) props.push(['url', {}, 'uri', event.url]);
  // RFC 7986 CONFERENCE. Clients that ignore it see the link only if the description has it too.
  if (event.conferencing_url) props.push(['conference', { feature: 'VIDEO' }, 'uri', event.conferencing_url]);
  props.push(['status', {}, 'text', method === 'CANCEL' ? 'CANCELLED' : (STATUS_OUT[event.status] ?? 'CONFIRMED')]);
  props.push(['transp', {}, 'text', event.busy === false ? 'TRANSPARENT' : 'OPAQUE']);
  if (event.visibility === 'public' || event.visibility === 'private')
    props.push(['class', {}, 'text', event.visibility.toUpperCase()]);
  if (event.organizer) props.push(organizerProp(event.organizer));
  props.push(...attendeeProps(method, event));
  if (event.comment !== undefined) props.push(['comment', {}, 'text', event.comment]);
  if (event.created_at !== undefined)
    props.push(['created', {}, 'date-time', jcalUtc(checkTime(event.created_at, 'CREATED'))]);
  if (event.updated_at !== undefined)
    props.push(['last-modified', {}, 'date-time', jcalUtc(checkTime(event.updated_at, 'LAST-MODIFIED'))]);
  return ['vevent', props, method === 'CANCEL' ? [] : alarmComponents(event)];
}

/**
 * ical.js folds at `foldLength` octets and then adds the leading space of the next line, so a
 * continuation line would be 76 octets; RFC 5545 3.1 allows 75. The setting is global to ical.js,
 * so it is set for this synchronous call only.
 */
function stringify(calendar: JCalComponent): string {
  const previous = ICAL.foldLength;
  ICAL.foldLength = 74;
  try {
    const text = ICAL.stringify(calendar);
    return text.endsWith('\r\n') ? text : `${text}\r\n`;
  } finally {
    ICAL.foldLength = previous;
  }
}

/**
 * One VCALENDAR with METHOD, PRODID '-//Switchboard//Calendar API//EN', a VTIMEZONE for every zone
 * used, one VEVENT per event (a master and its exceptions share the UID). `stored`: a calendar
 * object resource as CalDAV servers keep it (RFC 4791 4.1: no METHOD).
 */
export function buildCalendar(method: ItipMethod, events: IcsEvent[], options: { stored?: boolean } = {}): string {
  if (!['PUBLISH', 'REQUEST', 'REPLY', 'CANCEL'].includes(method))
    throw new IcsError(`unknown iTIP method '${String(method)}'`);
  if (!events.length) throw new IcsError('a calendar needs at least one event');
  const used: UsedZones = new Map();
  const vevents = events.map((event) => eventComponent(method, event, used));
  const props: JCalProperty[] = [
    ['prodid', {}, 'text', PRODID],
    ['version', {}, 'text', '2.0'],
    ['calscale', {}, 'text', 'GREGORIAN'],
    ...(options.stored ? [] : [['method', {}, 'text', method] as JCalProperty]),
  ];
  return stringify(['vcalendar', props, [...used.values(), ...vevents]]);
}
