import { DateTime } from 'luxon';
import type { When } from '#shared/calendar/types';
import { normalizeRecurrence } from '#shared/calendar/recurrence';
import { InvalidRequestError } from '#shared/errors';

/**
 * Our recurrence lines (one RRULE, EXDATE lines) as Graph's patternedRecurrence, and back. Outlook's
 * patterns are fewer than RFC 5545's rules: daily, weekly (days of the week), absolute and relative
 * monthly and yearly (one day of the month, or one weekday index such as "second Tuesday"), with an
 * end date, a count or no end. A rule outside them is a 400 naming the part Graph cannot express,
 * before Graph is called; so is provider B's fourth recurrence restriction (monthly BYDAY rules with
 * several weekday indices, `BYDAY=1MO,3WE`). RDATE has no counterpart; EXDATE lines are occurrences
 * to remove once the series is written (Graph keeps removed occurrences on the series, not in its pattern).
 */

type DayOfWeek = 'sunday' | 'monday' | 'tuesday' | 'wednesday' | 'thursday' | 'friday' | 'saturday';
type WeekIndex = 'first' | 'second' | 'third' | 'fourth' | 'last';

export interface GraphRecurrence {
  pattern: {
    type: 'daily' | 'weekly' | 'absoluteMonthly' | 'relativeMonthly' | 'absoluteYearly' | 'relativeYearly';
    interval: number;
    daysOfWeek?: DayOfWeek[] | null;
    dayOfMonth?: number | null;
    month?: number | null;
    index?: WeekIndex | null;
    firstDayOfWeek?: DayOfWeek | null;
  };
  range: {
    type: 'endDate' | 'noEnd' | 'numbered';
    startDate: string;
    endDate?: string | null;
    numberOfOccurrences?: number | null;
    recurrenceTimeZone?: string | null;
  };
}

const RFC_DAYS = ['SU', 'MO', 'TU', 'WE', 'TH', 'FR', 'SA'] as const;
const DAYS: DayOfWeek[] = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const INDEX: Record<string, WeekIndex> = { '1': 'first', '2': 'second', '3': 'third', '4': 'fourth', '-1': 'last' };
const INDEX_BACK: Record<WeekIndex, string> = { first: '1', second: '2', third: '3', fourth: '4', last: '-1' };

const refuse = (line: string, what: string) =>
  new InvalidRequestError(`'${line}': provider B (Microsoft Graph) recurrence patterns cannot express ${what}`);

const dayOf = (rfc: string) => DAYS[RFC_DAYS.indexOf(rfc as (typeof RFC_DAYS)[number])]!;
const rfcOf = (day: DayOfWeek) => RFC_DAYS[DAYS.indexOf(day)]!;

/** The first day of a series in its zone (YYYY-MM-DD). */
export function firstDateOf(when: When, zone: string): string {
  if (when.object === 'date') return when.date;
  if (when.object === 'datespan') return when.start_date;
  return DateTime.fromSeconds(when.start_time, { zone }).toISODate()!;
}

/** Restriction 4 of provider B, said as such (our engine refuses it too, for every provider, in its own words). */
function refuseSeveralIndices(line: string, parts: Map<string, string>): void {
  const byday = parts.get('BYDAY')?.split(',') ?? [];
  if (parts.get('FREQ') === 'MONTHLY' && byday.length > 1 && byday.some((d) => /^[+-]?\d/.test(d)))
    throw new InvalidRequestError(
      `'${line}': monthly BYDAY rules with several weekday indices are not possible on microsoft grants (recurrence restriction 4); use one index (BYDAY=2TU) or one series per weekday`,
    );
}

/** What a create or update asks of a series: Graph's pattern, and the original starts (Unix seconds) its EXDATE lines remove. */
export interface GraphSeries {
  recurrence: GraphRecurrence;
  removed: number[];
}

/**
 * Our recurrence lines as Graph's recurrence for a series starting at `when` in `zone` (an IANA
 * zone, Graph's `recurrenceTimeZone`). 400 for what Graph cannot hold, before anything is sent.
 */
export function graphRecurrenceOf(lines: readonly string[], when: When, zone: string): GraphSeries {
  for (const raw of lines) {
    const line = raw.trim();
    if (/^RRULE:/i.test(line)) refuseSeveralIndices(line, ruleParts(line));
    if (/^RDATE[:;]/i.test(line))
      throw new InvalidRequestError(
        `'${line}': provider B (Microsoft Graph) series have no extra dates (RDATE); create a separate event instead`,
      );
  }
  // Our engine checks every line first (syntax, zones, a series with no occurrence).
  const normalized = normalizeRecurrence(lines, when, zone);
  const ruleLine = normalized.find((l) => l.startsWith('RRULE:'))!;
  const parts = ruleParts(ruleLine);
  const start = firstDateOf(when, zone);
  const startDt = DateTime.fromISO(start, { zone: 'UTC' });
  const interval = Number(parts.get('INTERVAL') ?? '1');
  const byday = parts.get('BYDAY')?.split(',');
  const indexed = byday?.map((d) => /^([+-]?\d+)?([A-Z]{2})$/.exec(d)!).map((m) => ({ n: m[1], day: m[2]! }));
  const monthday = parts.get('BYMONTHDAY')?.split(',');
  const months = parts.get('BYMONTH')?.split(',');
  const setpos = parts.get('BYSETPOS')?.split(',');
  for (const part of ['BYYEARDAY', 'BYWEEKNO', 'BYHOUR', 'BYMINUTE', 'BYSECOND'])
    if (parts.has(part)) throw refuse(ruleLine, part);
  if (monthday && (monthday.length > 1 || !/^\d+$/.test(monthday[0]!) || Number(monthday[0]) > 31))
    throw refuse(ruleLine, 'several or negative days of the month (BYMONTHDAY takes one day, 1 to 31)');
  if (months && months.length > 1) throw refuse(ruleLine, 'several months (BYMONTH takes one)');
  if (setpos && (setpos.length > 1 || INDEX[setpos[0]!.replace(/^\+/, '')] === undefined))
    throw refuse(ruleLine, 'BYSETPOS other than one of 1, 2, 3, 4 or -1');
  const weekdays = () => {
    if (indexed?.some((d) => d.n !== undefined))
      throw refuse(ruleLine, 'weekday indices in a daily or weekly rule (BYDAY=2MO)');
    return (indexed ?? [{ day: RFC_DAYS[startDt.weekday % 7]! }]).map((d) => dayOf(d.day));
  };
  /** A relative pattern's weekdays and index: one indexed weekday (2TU, -1FR), or plain weekdays with one BYSETPOS. */
  const relative = (): { daysOfWeek: DayOfWeek[]; index: WeekIndex } => {
    if (indexed!.length === 1 && indexed![0]!.n !== undefined) {
      const index = INDEX[indexed![0]!.n.replace(/^\+/, '')];
      if (!index)
        throw refuse(ruleLine, `the weekday index ${indexed![0]!.n} (Outlook takes 1 to 4, or -1 for the last)`);
      if (setpos) throw refuse(ruleLine, 'BYSETPOS with an indexed weekday');
      return { daysOfWeek: [dayOf(indexed![0]!.day)], index };
    }
    if (!setpos)
      throw refuse(ruleLine, 'every matching weekday of a month or year (give an index, BYDAY=2TU, or BYSETPOS)');
    return { daysOfWeek: indexed!.map((d) => dayOf(d.day)), index: INDEX[setpos[0]!.replace(/^\+/, '')]! };
  };
  const noMonthParts = (freq: string) => {
    if (monthday || months || setpos) throw refuse(ruleLine, `BYMONTHDAY, BYMONTH or BYSETPOS in a ${freq} rule`);
  };
  let pattern: GraphRecurrence['pattern'];
  switch (parts.get('FREQ')) {
    case 'DAILY':
      noMonthParts('daily');
      if (byday) {
        // Every weekday, say: Outlook's weekly pattern on those days.
        if (interval !== 1) throw refuse(ruleLine, 'a daily rule with BYDAY and an INTERVAL over 1');
        pattern = { type: 'weekly', interval: 1, daysOfWeek: weekdays(), firstDayOfWeek: 'monday' };
      } else pattern = { type: 'daily', interval };
      break;
    case 'WEEKLY':
      noMonthParts('weekly');
      pattern = {
        type: 'weekly',
        interval,
        daysOfWeek: weekdays(),
        firstDayOfWeek: dayOf(parts.get('WKST') ?? 'MO'),
      };
      break;
    case 'MONTHLY':
      if (months) throw refuse(ruleLine, 'BYMONTH in a monthly rule');
      if (byday) {
        if (monthday) throw refuse(ruleLine, 'BYDAY together with BYMONTHDAY');
        pattern = { type: 'relativeMonthly', interval, ...relative() };
      } else {
        if (setpos) throw refuse(ruleLine, 'BYSETPOS without BYDAY');
        pattern = { type: 'absoluteMonthly', interval, dayOfMonth: Number(monthday?.[0] ?? startDt.day) };
      }
      break;
    case 'YEARLY': {
      const month = Number(months?.[0] ?? startDt.month);
      if (byday) {
        if (monthday) throw refuse(ruleLine, 'BYDAY together with BYMONTHDAY');
        if (!months) throw refuse(ruleLine, 'a yearly weekday rule without its month (BYMONTH)');
        pattern = { type: 'relativeYearly', interval, month, ...relative() };
      } else {
        if (setpos) throw refuse(ruleLine, 'BYSETPOS without BYDAY');
        pattern = { type: 'absoluteYearly', interval, month, dayOfMonth: Number(monthday?.[0] ?? startDt.day) };
      }
      break;
    }
    default:
      throw refuse(ruleLine, `FREQ=${parts.get('FREQ')}`);
  }
  const count = parts.get('COUNT');
  const until = parts.get('UNTIL');
  const range: GraphRecurrence['range'] = count
    ? { type: 'numbered', startDate: start, numberOfOccurrences: Number(count), recurrenceTimeZone: zone }
    : until
      ? { type: 'endDate', startDate: start, endDate: untilDate(until, zone), recurrenceTimeZone: zone }
      : { type: 'noEnd', startDate: start, recurrenceTimeZone: zone };
  return { recurrence: { pattern, range }, removed: removedStarts(normalized, when, zone) };
}

function ruleParts(line: string): Map<string, string> {
  const value = line.slice(line.indexOf(':') + 1).toUpperCase();
  return new Map(value.split(';').map((p) => [p.split('=')[0]!, p.slice(p.indexOf('=') + 1)] as [string, string]));
}

/** The last day UNTIL allows, in the series' zone (Graph's endDate is a date). */
function untilDate(until: string, zone: string): string {
  if (/^\d{8}$/.test(until)) return `${until.slice(0, 4)}-${until.slice(4, 6)}-${until.slice(6, 8)}`;
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(Z?)$/.exec(until)!;
  const dt = DateTime.fromObject(
    { year: +m[1]!, month: +m[2]!, day: +m[3]!, hour: +m[4]!, minute: +m[5]!, second: +m[6]! },
    { zone: m[7] ? 'UTC' : zone },
  );
  return dt.setZone(zone).toISODate()!;
}

/** The original starts (Unix seconds) named by normalized EXDATE lines: a date's midnight in `zone` for all-day series. */
function removedStarts(lines: readonly string[], when: When, zone: string): number[] {
  const out: number[] = [];
  for (const line of lines.filter((l) => l.startsWith('EXDATE'))) {
    const colon = line.indexOf(':');
    const tzid = /;TZID=([^;:]+)/.exec(line.slice(0, colon))?.[1];
    for (const value of line.slice(colon + 1).split(',')) {
      const m = /^(\d{4})(\d{2})(\d{2})(?:T(\d{2})(\d{2})(\d{2})(Z?))?$/.exec(value)!;
      const fields = { year: +m[1]!, month: +m[2]!, day: +m[3]!, hour: +(m[4] ?? 0), minute: +(m[5] ?? 0) };
      const at =
        when.object === 'timespan'
          ? DateTime.fromObject({ ...fields, second: +(m[6] ?? 0) }, { zone: m[7] ? 'UTC' : (tzid ?? zone) })
          : DateTime.fromObject({ year: fields.year, month: fields.month, day: fields.day }, { zone });
      out.push(Math.floor(at.toSeconds()));
    }
  }
  return out;
}

/**
 * Graph's recurrence as one RRULE line (`allDay`: UNTIL as a date, else the end of its last day in
 * the series' zone, in UTC, as RFC 5545 wants with a timed DTSTART).
 */
export function rruleOfGraph(recurrence: GraphRecurrence, allDay: boolean, zone: string): string {
  const { pattern, range } = recurrence;
  const parts: string[] = [];
  const interval = pattern.interval > 1 ? [`INTERVAL=${pattern.interval}`] : [];
  const days = (pattern.daysOfWeek ?? []).map(rfcOf);
  const relative = () =>
    days.length === 1
      ? [`BYDAY=${INDEX_BACK[pattern.index ?? 'first']}${days[0]}`]
      : [`BYDAY=${days.join(',')}`, `BYSETPOS=${INDEX_BACK[pattern.index ?? 'first']}`];
  switch (pattern.type) {
    case 'daily':
      parts.push('FREQ=DAILY', ...interval);
      break;
    case 'weekly':
      parts.push(
        'FREQ=WEEKLY',
        ...interval,
        `BYDAY=${days.join(',')}`,
        ...(pattern.interval > 1 && pattern.firstDayOfWeek && pattern.firstDayOfWeek !== 'monday'
          ? [`WKST=${rfcOf(pattern.firstDayOfWeek)}`]
          : []),
      );
      break;
    case 'absoluteMonthly':
      parts.push('FREQ=MONTHLY', ...interval, `BYMONTHDAY=${pattern.dayOfMonth}`);
      break;
    case 'relativeMonthly':
      parts.push('FREQ=MONTHLY', ...interval, ...relative());
      break;
    case 'absoluteYearly':
      parts.push('FREQ=YEARLY', ...interval, `BYMONTH=${pattern.month}`, `BYMONTHDAY=${pattern.dayOfMonth}`);
      break;
    case 'relativeYearly':
      parts.push('FREQ=YEARLY', ...interval, `BYMONTH=${pattern.month}`, ...relative());
      break;
  }
  if (range.type === 'numbered' && range.numberOfOccurrences) parts.push(`COUNT=${range.numberOfOccurrences}`);
  if (range.type === 'endDate' && range.endDate) {
    const compact = range.endDate.replaceAll('-', '');
    parts.push(
      `UNTIL=${
        allDay
          ? compact
          : DateTime.fromISO(range.endDate, { zone: range.recurrenceTimeZone || zone })
              .endOf('day')
              .toUTC()
              .toFormat("yyyyMMdd'T'HHmmss'Z'")
      }`,
    );
  }
  return `RRULE:${parts.join(';')}`;
}

/** Whether two recurrences make the same series (pattern and range; how Graph spells them aside). */
export function samePattern(a: GraphRecurrence, b: GraphRecurrence, allDay: boolean, zone: string): boolean {
  return a.range.startDate === b.range.startDate && rruleOfGraph(a, allDay, zone) === rruleOfGraph(b, allDay, zone);
}
