import { DateTime } from 'luxon';
import type { Options } from 'rrule';
import type { When } from '#shared/calendar/types';
import { InvalidRequestError } from '#shared/errors';
// Read only inside functions: the lazy chunk (scripts/esbuild-plugins.cjs, lazy-chunks) loads on the first rule read.
import { RRule } from '#shared/lazy/rrule';

/**
 * Recurring events (RFC 5545): one RRULE with EXDATE and RDATE lines; DTSTART is the event's `when`.
 *
 * `rrule` with TZID is right only when the process runs in UTC, so it is never given a zone here.
 * Rules are expanded in "floating" time: the wall-clock time of the first occurrence in the series'
 * zone, carried in a JS Date whose UTC fields hold it; each generated wall time is then placed in the
 * zone with Luxon. A wall time in a DST gap moves forward by the gap (RFC 5545 3.3.10); an ambiguous
 * one takes the earlier offset. All-day series expand dates the same way, read in the series zone.
 */

export interface Series {
  when: When;
  zone: string;
  recurrence: readonly string[];
}

export interface Occurrence {
  /** Unix seconds of this occurrence's original start (for all-day: 00:00 of the date in the zone). */
  original_start: number;
  start: number;
  end: number;
  /** `YYYYMMDDTHHMMSSZ` (UTC of the original start) for timed series; `YYYYMMDD` for all-day ones. */
  key: string;
  when: When;
}

let supported: ReadonlySet<number> | undefined;
const isSupported = (freq: number) =>
  (supported ??= new Set([RRule.DAILY, RRule.WEEKLY, RRule.MONTHLY, RRule.YEARLY])).has(freq);
const FREQ_NAMES = ['YEARLY', 'MONTHLY', 'WEEKLY', 'DAILY', 'HOURLY', 'MINUTELY', 'SECONDLY'];
const DEFAULT_MAX = 5000;
/** How far an open-ended series is looked at for a neighbour or an occurrence key. */
const HORIZON_YEARS = 200;

const bad = (message: string) => new InvalidRequestError(message);
const allDay = (when: When) => when.object !== 'timespan';

// ---- dates and zones -------------------------------------------------------------------------

const floatingOf = (dt: DateTime) => new Date(Date.UTC(dt.year, dt.month - 1, dt.day, dt.hour, dt.minute, dt.second));
const zonedOf = (floating: Date, zone: string) =>
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
const isoDate = (d: Date) => d.toISOString().slice(0, 10);

/** 00:00 of a YYYY-MM-DD date in `zone`, as Unix seconds. */
export function startOfDate(date: string, zone: string): number {
  return Math.floor(DateTime.fromISO(date, { zone }).startOf('day').toSeconds());
}

/** [start, end) instants of a `when` (all-day values read in `zone`). */
export function whenBounds(when: When, zone: string): { start: number; end: number } {
  if (when.object === 'timespan') return { start: when.start_time, end: when.end_time };
  if (when.object === 'date')
    return {
      start: startOfDate(when.date, zone),
      end: Math.floor(DateTime.fromISO(when.date, { zone }).plus({ days: 1 }).toSeconds()),
    };
  return { start: startOfDate(when.start_date, zone), end: startOfDate(when.end_date, zone) };
}

// ---- lines -----------------------------------------------------------------------------------

interface Parsed {
  rule: Partial<Options>;
  ruleText: string;
  /** EXDATE/RDATE values as floating wall times of the series zone (timed) or dates (all-day). */
  exdates: Set<number>;
  rdates: Date[];
  lines: string[];
}

const BASIC_DATE = /^(\d{4})(\d{2})(\d{2})$/;
const BASIC_TIME = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(Z?)$/;

function checkedZone(zone: string, line: string): string {
  if (!DateTime.local().setZone(zone).isValid) throw bad(`Unknown TZID '${zone}' in recurrence line '${line}'`);
  return zone;
}

/** One EXDATE/RDATE value as a floating Date in the series frame. */
function dateValue(
  value: string,
  params: Map<string, string>,
  series: { when: When; zone: string },
  line: string,
): Date {
  if (allDay(series.when)) {
    const m = BASIC_DATE.exec(value);
    if (!m || (params.get('VALUE') ?? 'DATE') !== 'DATE')
      throw bad(`An all-day series takes dates (VALUE=DATE:YYYYMMDD) in '${line}'`);
    const d = new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!));
    if (isoDate(d) !== `${m[1]}-${m[2]}-${m[3]}`) throw bad(`'${value}' is not a date in '${line}'`);
    return d;
  }
  const m = BASIC_TIME.exec(value);
  if (!m || params.get('VALUE') === 'DATE')
    throw bad(`A timed series takes date-times (YYYYMMDDTHHMMSS, with Z or TZID) in '${line}'`);
  const fields = { year: +m[1]!, month: +m[2]!, day: +m[3]!, hour: +m[4]!, minute: +m[5]!, second: +m[6]! };
  const zone = m[7] ? 'UTC' : params.has('TZID') ? checkedZone(params.get('TZID')!, line) : series.zone;
  const dt = DateTime.fromObject(fields, { zone });
  if (!dt.isValid) throw bad(`'${value}' is not a date-time in '${line}'`);
  return floatingOf(dt.setZone(series.zone));
}

function parseLines(lines: readonly string[], series: { when: When; zone: string }): Parsed {
  let rule: Partial<Options> | undefined;
  let ruleText = '';
  const exdates = new Set<number>();
  const rdates: Date[] = [];
  const out: { rrule?: string; rest: string[] } = { rest: [] };
  for (const raw of lines) {
    const line = raw.trim();
    const colon = line.indexOf(':');
    if (colon < 0) throw bad(`'${line}' is not an iCalendar line (NAME:VALUE)`);
    const [name, ...paramParts] = line.slice(0, colon).split(';');
    const upper = name!.toUpperCase();
    const params = new Map(
      paramParts.map((p) => [p.split('=')[0]!.toUpperCase(), p.slice(p.indexOf('=') + 1)] as [string, string]),
    );
    const value = line.slice(colon + 1).trim();
    if (upper === 'RRULE') {
      if (rule) throw bad('A recurrence holds one RRULE line; found a second one');
      ruleText = value.toUpperCase();
      rule = parseRule(ruleText, line, series);
      out.rrule = `RRULE:${ruleText}`;
    } else if (upper === 'EXDATE' || upper === 'RDATE') {
      const values = value.split(',').map((v) => v.trim().toUpperCase());
      if (!values.length || values.some((v) => !v)) throw bad(`'${line}' has no date`);
      for (const v of values) {
        const d = dateValue(v, params, series, line);
        if (upper === 'EXDATE') exdates.add(d.getTime());
        else rdates.push(d);
      }
      const canonicalParams = [...params].map(([k, v]) => `;${k}=${k === 'TZID' ? v : v.toUpperCase()}`).join('');
      out.rest.push(`${upper}${canonicalParams}:${values.join(',')}`);
    } else {
      throw bad(`Recurrence lines are RRULE, EXDATE and RDATE; '${upper}' is not supported`);
    }
  }
  if (!rule) throw bad('A recurrence needs one RRULE line (e.g. RRULE:FREQ=WEEKLY;BYDAY=MO)');
  return { rule, ruleText, exdates, rdates, lines: [out.rrule!, ...out.rest] };
}

function parseRule(text: string, line: string, series: { when: When; zone: string }): Partial<Options> {
  if (/(^|;)DTSTART=|DTSTART/.test(text))
    throw bad(`DTSTART does not belong in the RRULE ('${line}'): the event's 'when' is the first occurrence`);
  const parts = new Map(
    text.split(';').map((p) => [p.split('=')[0]!, p.slice(p.indexOf('=') + 1)] as [string, string]),
  );
  if (!parts.has('FREQ')) throw bad(`'${line}' has no FREQ`);
  if (parts.has('COUNT') && parts.has('UNTIL'))
    throw bad(`'${line}' has both COUNT and UNTIL; an RRULE takes one of them`);
  const byday = parts.get('BYDAY');
  if (
    parts.get('FREQ') === 'MONTHLY' &&
    byday &&
    byday.split(',').length > 1 &&
    byday.split(',').some((d) => /^[+-]?\d/.test(d))
  ) {
    throw bad(
      `'${line}': monthly BYDAY rules with several weekday indices are not supported (use one, e.g. BYDAY=2TU, or one series per weekday)`,
    );
  }
  let options: Partial<Options>;
  const rrule = RRule; // outside the try: a chunk that fails to load is not an invalid rule
  try {
    options = rrule.parseString(text);
  } catch (error) {
    throw bad(`'${line}' is not a valid RRULE: ${(error as Error).message}`);
  }
  if (options.freq === undefined || !isSupported(options.freq)) {
    throw bad(
      `'${line}': FREQ must be DAILY, WEEKLY, MONTHLY or YEARLY${options.freq !== undefined ? `, not ${FREQ_NAMES[options.freq]}` : ''}`,
    );
  }
  for (const [key, v] of parts) {
    if (
      ![
        'FREQ',
        'INTERVAL',
        'COUNT',
        'UNTIL',
        'BYDAY',
        'BYMONTHDAY',
        'BYMONTH',
        'BYYEARDAY',
        'BYWEEKNO',
        'BYSETPOS',
        'WKST',
        'BYHOUR',
        'BYMINUTE',
        'BYSECOND',
      ].includes(key)
    )
      throw bad(`'${line}': unknown RRULE part '${key}'`);
    if (['INTERVAL', 'COUNT'].includes(key) && !/^\d+$/.test(v))
      throw bad(`'${line}': ${key} must be a positive integer`);
    if (key === 'BYDAY' && !v.split(',').every((d) => /^[+-]?\d{0,2}(MO|TU|WE|TH|FR|SA|SU)$/.test(d)))
      throw bad(`'${line}': BYDAY '${v}' is not a list of weekdays (MO..SU, optionally with an index like 2TU)`);
    if (key === 'UNTIL' && !/^\d{8}(T\d{6}Z?)?$/.test(v))
      throw bad(`'${line}': UNTIL must be YYYYMMDD or YYYYMMDDTHHMMSSZ`);
  }
  if (options.count !== undefined && options.count !== null && options.count < 1)
    throw bad(`'${line}': COUNT must be at least 1`);
  // UNTIL is UTC (or a date): into the floating frame of the series.
  const until = parts.get('UNTIL');
  if (until) {
    if (allDay(series.when))
      options.until = new Date(Date.UTC(+until.slice(0, 4), +until.slice(4, 6) - 1, +until.slice(6, 8)));
    else {
      const m = BASIC_TIME.exec(until.length === 8 ? `${until}T235959` : until)!;
      const dt = DateTime.fromObject(
        { year: +m[1]!, month: +m[2]!, day: +m[3]!, hour: +m[4]!, minute: +m[5]!, second: +m[6]! },
        { zone: m[7] ? 'UTC' : series.zone },
      );
      options.until = floatingOf(dt.setZone(series.zone));
    }
  }
  delete options.dtstart;
  delete options.tzid;
  return options;
}

// ---- expansion -------------------------------------------------------------------------------

interface Prepared {
  parsed: Parsed;
  rule: InstanceType<typeof RRule>;
  first: Date;
  /** Length of one occurrence: seconds (timed) or days (all-day). */
  length: number;
  series: Series;
}

function prepare(series: Series): Prepared {
  const parsed = parseLines(series.recurrence, series);
  let first: Date;
  let length: number;
  if (series.when.object === 'timespan') {
    first = floatingOf(DateTime.fromSeconds(series.when.start_time, { zone: series.zone }));
    length = series.when.end_time - series.when.start_time;
  } else {
    const startDate = series.when.object === 'date' ? series.when.date : series.when.start_date;
    first = new Date(`${startDate}T00:00:00Z`);
    length =
      series.when.object === 'date'
        ? 1
        : Math.round((Date.parse(`${series.when.end_date}T00:00:00Z`) - first.getTime()) / 86_400_000);
  }
  const rule = new RRule({ ...parsed.rule, dtstart: first });
  return { parsed, rule, first, length, series };
}

function occurrenceAt(p: Prepared, floating: Date): Occurrence {
  const { series } = p;
  if (series.when.object === 'timespan') {
    const start = Math.floor(zonedOf(floating, series.zone).toSeconds());
    const end = start + p.length;
    const when: When = { ...series.when, start_time: start, end_time: end };
    return {
      original_start: start,
      start,
      end,
      key: new Date(start * 1000)
        .toISOString()
        .replace(/\.\d{3}Z$/, 'Z')
        .replace(/[-:]/g, ''),
      when,
    };
  }
  const date = isoDate(floating);
  const endDate = isoDate(new Date(floating.getTime() + p.length * 86_400_000));
  const when: When =
    series.when.object === 'date'
      ? { object: 'date', date }
      : { object: 'datespan', start_date: date, end_date: endDate };
  const start = startOfDate(date, series.zone);
  return { original_start: start, start, end: startOfDate(endDate, series.zone), key: date.replaceAll('-', ''), when };
}

/** Floating dates of the series in [from, to] (floating), RDATEs in, EXDATEs out, sorted, de-duplicated. */
function floatingBetween(p: Prepared, from: Date, to: Date, max: number): Date[] {
  const dates = p.rule.between(from, to, true, (_d: Date, i: number) => i < max + p.parsed.exdates.size);
  // RFC 5545: DTSTART is always the first occurrence, even when the rule does not produce it.
  const all = [
    ...dates,
    ...p.parsed.rdates.filter((d) => d >= from && d <= to),
    ...(p.first >= from && p.first <= to ? [p.first] : []),
  ];
  const seen = new Set<number>();
  return all
    .filter((d) => !p.parsed.exdates.has(d.getTime()) && !seen.has(d.getTime()) && (seen.add(d.getTime()), true))
    .sort((a, b) => a.getTime() - b.getTime())
    .slice(0, max);
}

/** Floating frame bounds around an instant window, wide enough for any offset and the occurrence length. */
function floatingWindow(p: Prepared, from: number, to: number): [Date, Date] {
  const lengthSeconds = p.series.when.object === 'timespan' ? p.length : p.length * 86_400;
  return [new Date((from - lengthSeconds - 2 * 86_400) * 1000), new Date((to + 2 * 86_400) * 1000)];
}

/** Validates and canonicalises recurrence lines (RRULE first, then EXDATE/RDATE); 400 on anything wrong. */
export function normalizeRecurrence(lines: readonly string[], when: When, zone: string): string[] {
  const series = { when, zone, recurrence: lines };
  const p = prepare(series);
  if (
    !floatingBetween(p, new Date(Date.UTC(1, 0, 1)), new Date(p.first.getTime() + HORIZON_YEARS * 366 * 86_400_000), 1)
      .length
  ) {
    throw bad('This recurrence produces no occurrence at all (check COUNT, UNTIL and EXDATE)');
  }
  return p.parsed.lines;
}

/** Occurrences overlapping [from, to), sorted by start; at most `max`. */
export function occurrencesBetween(series: Series, from: number, to: number, max = DEFAULT_MAX): Occurrence[] {
  const p = prepare(series);
  const [a, b] = floatingWindow(p, from, to);
  return floatingBetween(p, a, b, Number.MAX_SAFE_INTEGER)
    .map((d) => occurrenceAt(p, d))
    .filter((o) => o.end > from && o.start < to && (o.end > o.start || o.start >= from))
    .slice(0, max);
}

/** First start and last end of the whole series; last_end null when it never ends. */
export function seriesBounds(series: Series): { first_start: number; last_end: number | null } {
  const p = prepare(series);
  const firstStart = whenBounds(series.when, series.zone).start;
  const lastRdate = p.parsed.rdates.length ? Math.max(...p.parsed.rdates.map((d) => d.getTime())) : -Infinity;
  if (!p.rule.options.count && !p.rule.options.until) return { first_start: firstStart, last_end: null };
  const all = p.rule.all((_d: Date, i: number) => i < 100_000);
  const last = new Date(
    Math.max(all.length ? all[all.length - 1]!.getTime() : -Infinity, lastRdate, p.first.getTime()),
  );
  return { first_start: firstStart, last_end: occurrenceAt(p, last).end };
}

/** The occurrence with `key`, if the series produces it, and its neighbours. */
export function occurrenceByKey(
  series: Series,
  key: string,
): { occurrence: Occurrence; previous?: Occurrence; next?: Occurrence } | undefined {
  const p = prepare(series);
  let instant: number;
  if (series.when.object === 'timespan') {
    const m = BASIC_TIME.exec(key);
    if (!m || !m[7]) return undefined;
    instant = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) / 1000;
  } else {
    const m = BASIC_DATE.exec(key);
    if (!m) return undefined;
    instant = startOfDate(`${m[1]}-${m[2]}-${m[3]}`, series.zone);
  }
  const span = series.when.object === 'timespan' ? p.length : p.length * 86_400;
  const around = occurrencesBetween(
    series,
    instant - 400 * 86_400,
    instant + span + 400 * 86_400,
    Number.MAX_SAFE_INTEGER,
  );
  const index = around.findIndex((o) => o.key === key);
  if (index < 0) return undefined;
  return {
    occurrence: around[index]!,
    ...(index > 0 ? { previous: around[index - 1]! } : {}),
    ...(index + 1 < around.length ? { next: around[index + 1]! } : {}),
  };
}
