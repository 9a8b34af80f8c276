/**
 * Times and recurrence for the local Google Calendar fake: an EventDateTime read into a date (all-day)
 * or an instant and written back in a zone, and a series' RRULE/EXRULE/RDATE/EXDATE expanded in the
 * series' zone into the occurrences Google would list, with the bounds on how far and how many.
 */

import { DateTime, IANAZone } from 'luxon';
import * as rrulePackage from 'rrule';
import type { EventFields } from './calendar-state';
import { bad, compact, required, type EventDateTime } from './calendar-resources';

// rrule's CommonJS build (Node's loader) exports a default object, its ESM build named exports.
type RRuleModule = typeof import('rrule');
const rruleLoaded = rrulePackage as Partial<RRuleModule> & { default?: RRuleModule };
const { RRule, RRuleSet } = (rruleLoaded.RRule ? rruleLoaded : rruleLoaded.default!) as RRuleModule;
type RRuleSetInstance = InstanceType<RRuleModule['RRuleSet']>;

export const DAY_MS = 24 * 60 * 60 * 1000;
/** How far an open-ended series is expanded when the request gives no timeMax. */
export const HORIZON_MS = 2 * 365 * DAY_MS;
/** Instances one series may produce for one request: a bound on what an unbounded rule costs. */
const MAX_INSTANCES = 5000;

// ---------------------------------------------------------------------------------------------------
// Times: a start or end is a date (all-day, the end exclusive) or an instant and the zone it was given in
// ---------------------------------------------------------------------------------------------------

export type When = { kind: 'date'; date: string; timeZone?: string } | { kind: 'time'; ms: number; timeZone?: string };

export const validZone = (zone: string) => IANAZone.isValidZone(zone);

/** A dateTime that ends in a zone offset (`Z`, `+01:00`), as RFC 3339 wants unless a timeZone is given. */
const WITH_OFFSET = /T.*(?:Z|[+-]\d{2}(?::?\d{2})?)$/i;

/**
 * A start or end as the body gives it. A dateTime with an offset is that instant; one without is a
 * local time in the zone `timeZone` names ("a time zone offset is required unless a time zone is
 * explicitly specified in timeZone"), and without either Google refuses it.
 */
export function parseWhen(value: EventDateTime | undefined, which: 'start' | 'end'): When {
  if (!value || (value.date === undefined && value.dateTime === undefined)) throw required(`Missing ${which} time.`);
  if (value.timeZone !== undefined && !validZone(value.timeZone))
    throw bad(`Invalid time zone definition for ${which} time.`);
  if (value.date !== undefined && value.dateTime !== undefined) throw bad(`Invalid ${which} time.`);
  if (value.date !== undefined) return { kind: 'date', date: value.date, timeZone: value.timeZone };
  const local = !WITH_OFFSET.test(value.dateTime!);
  if (local && value.timeZone === undefined) throw required(`Missing time zone definition for ${which} time.`);
  const parsed = DateTime.fromISO(value.dateTime!, local ? { zone: value.timeZone } : { setZone: true });
  if (!parsed.isValid) throw bad(`Invalid ${which} time.`);
  return { kind: 'time', ms: parsed.toMillis(), timeZone: value.timeZone };
}

/** The instant a start or end is, an all-day date read at midnight in its zone (or the calendar's). */
export function instantOf(when: When, calendarZone: string): number {
  if (when.kind === 'time') return when.ms;
  return DateTime.fromISO(when.date, { zone: when.timeZone ?? calendarZone }).toMillis();
}

export function renderWhen(when: When, zone: string): EventDateTime {
  if (when.kind === 'date') return compact({ date: when.date, timeZone: when.timeZone });
  const dateTime = DateTime.fromMillis(when.ms, { zone }).toISO({ suppressMilliseconds: true })!;
  return compact({ dateTime, timeZone: when.timeZone });
}

export const iso = (ms: number) => new Date(ms).toISOString();

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

export interface Occurrence {
  start: When;
  end: When;
  startMs: number;
  endMs: number;
  /** The instance's id suffix: `20260105T090000Z` (UTC of the original start) or `20260105` all-day. */
  key: string;
}

export function seriesOf(fields: EventFields, calendarZone: string): Series {
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
export function checkRecurrence(fields: EventFields, calendarZone: string): void {
  if (fields.recurrence) ruleSetOf(fields.recurrence, seriesOf(fields, calendarZone));
}

/**
 * The occurrences of a series that overlap [from, to) (end after `from`, start before `to`; `to`
 * finite), at most `limit` of them.
 */
export function occurrencesOf(
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
