import { DateTime, IANAZone } from 'luxon';

/**
 * The slot engine: pure (no I/O, no clock), over busy intervals and open hours. Free/busy, the
 * availability endpoint and the scheduler all answer through it.
 *
 * Times are Unix seconds; intervals are half-open `[start, end)`. A participant is free where their
 * open hours (in their own zones, so across DST changes) are not covered by busy time widened by
 * the buffers. A slot is `duration` long and starts on a multiple of `round_to` (counted from the
 * Unix epoch, so on the clock's quarter hours in every zone with a whole or half-hour offset) at
 * the first such time of a free period, then every `interval` (rounded up to `round_to` again).
 *
 * Methods:
 * - `collective`: slots where every participant is free; `emails` lists everyone.
 * - `max-availability`: every slot at least one participant is free for; `emails` lists who is,
 *   in round-robin `order` (fewest counted events first).
 * - `max-fairness`: the same, but only among the fairer half of `order` (those with the fewest
 *   counted events, ties included), so bookings go to whoever has had the fewest.
 */

export interface Interval {
  start: number;
  end: number;
}

export type AvailabilityMethod = 'collective' | 'max-availability' | 'max-fairness';

export interface OpenHours {
  /** Days of the week, 0 = Sunday … 6 = Saturday. */
  days: readonly number[];
  timezone: string;
  /** `H:MM` or `HH:MM`, 24-hour; `end` may be `24:00`. */
  start: string;
  end: string;
  /** Local dates (`YYYY-MM-DD`) without open hours. */
  exdates?: readonly string[] | undefined;
}

export interface EngineParticipant {
  email: string;
  /** Busy time, in any order, possibly overlapping. */
  busy: readonly Interval[];
  /** Their own open hours; absent: the defaults; neither: open all the time. */
  open_hours?: readonly OpenHours[] | undefined;
  /** Events counted for round-robin order (metadata key5). */
  fairness_count?: number | undefined;
}

export interface EngineInput {
  start: number;
  end: number;
  duration_minutes: number;
  interval_minutes: number;
  round_to: number;
  method: AvailabilityMethod;
  buffer?: { before?: number | undefined; after?: number | undefined } | undefined;
  default_open_hours?: readonly OpenHours[] | undefined;
  participants: readonly EngineParticipant[];
}

export interface TimeSlot {
  emails: string[];
  start_time: number;
  end_time: number;
}

export interface EngineResult {
  time_slots: TimeSlot[];
  order: string[];
}

const MINUTE = 60;
const DAY = 86_400;
const CLOCK = /^(\d{1,2}):(\d{2})$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Minutes after midnight of `H:MM`, or undefined when it is not a time of day (`24:00` only as an end). */
export function minutesOf(clock: string, isEnd: boolean): number | undefined {
  const m = CLOCK.exec(clock);
  if (!m) return undefined;
  const [h, min] = [Number(m[1]), Number(m[2])];
  if (min > 59) return undefined;
  if (h === 24 && min === 0 && isEnd) return 24 * 60;
  return h <= 23 ? h * 60 + min : undefined;
}

/** Why `zone` is no IANA time zone (undefined when it is one), for a 400 naming `field`. */
export function zoneProblem(field: string, zone: string): string | undefined {
  return IANAZone.isValidZone(zone)
    ? undefined
    : `${field} must be an IANA time zone such as Europe/Berlin; '${zone}' is not one`;
}

/** Why a number of minutes is not a multiple of 5 (undefined when it is, or is absent). */
export function fiveMinuteProblem(field: string, value: number | undefined): string | undefined {
  return value !== undefined && value % 5 !== 0
    ? `'${field}' must be a multiple of 5 minutes; ${value} is not`
    : undefined;
}

/** What is wrong with one open-hours entry, for a 400 (`where` names it, e.g. `participants[0].open_hours[1]`). */
export function openHoursProblems(hours: OpenHours, where: string): string[] {
  const problems: string[] = [];
  if (!Array.isArray(hours.days) || hours.days.length === 0)
    problems.push(`${where}.days must list at least one day (0 = Sunday … 6 = Saturday)`);
  else {
    const wrong = hours.days.filter((d) => !Number.isInteger(d) || d < 0 || d > 6);
    if (wrong.length)
      problems.push(`${where}.days must be days of the week 0 (Sunday) to 6 (Saturday); ${wrong.join(', ')} is not`);
  }
  const zone = zoneProblem(`${where}.timezone`, hours.timezone);
  if (zone) problems.push(zone);
  const start = minutesOf(hours.start, false);
  const end = minutesOf(hours.end, true);
  if (start === undefined)
    problems.push(`${where}.start must be a time of day H:MM from 0:00 to 23:59; '${hours.start}' is not`);
  if (end === undefined)
    problems.push(`${where}.end must be a time of day H:MM from 0:01 to 24:00; '${hours.end}' is not`);
  if (start !== undefined && end !== undefined && start >= end)
    problems.push(`${where}.start (${hours.start}) must be before its end (${hours.end})`);
  for (const d of hours.exdates ?? []) {
    if (!DATE.test(d) || !DateTime.fromISO(d, { zone: 'UTC' }).isValid)
      problems.push(`${where}.exdates holds '${d}', which is not a date YYYY-MM-DD`);
  }
  return problems;
}

// ---- interval algebra (sorted, disjoint lists) -------------------------------------------------

/** Sorts and merges intervals (touching ones join), dropping empty ones. */
export function normalize(intervals: readonly Interval[]): Interval[] {
  const sorted = intervals.filter((i) => i.end > i.start).sort((a, b) => a.start - b.start || a.end - b.end);
  const out: Interval[] = [];
  for (const i of sorted) {
    const last = out[out.length - 1];
    if (last && i.start <= last.end) last.end = Math.max(last.end, i.end);
    else out.push({ start: i.start, end: i.end });
  }
  return out;
}

/** `a` minus `b`; both normalized. */
export function subtract(a: readonly Interval[], b: readonly Interval[]): Interval[] {
  const out: Interval[] = [];
  let j = 0;
  for (const i of a) {
    let cursor = i.start;
    while (j < b.length && b[j]!.end <= cursor) j++;
    let k = j;
    while (k < b.length && b[k]!.start < i.end) {
      if (b[k]!.start > cursor) out.push({ start: cursor, end: b[k]!.start });
      cursor = Math.max(cursor, b[k]!.end);
      k++;
    }
    if (cursor < i.end) out.push({ start: cursor, end: i.end });
  }
  return out;
}

/** `a` ∩ `b`; both normalized. */
export function intersect(a: readonly Interval[], b: readonly Interval[]): Interval[] {
  const out: Interval[] = [];
  let [i, j] = [0, 0];
  while (i < a.length && j < b.length) {
    const start = Math.max(a[i]!.start, b[j]!.start);
    const end = Math.min(a[i]!.end, b[j]!.end);
    if (start < end) out.push({ start, end });
    if (a[i]!.end < b[j]!.end) i++;
    else j++;
  }
  return out;
}

/** Whether `[start, end)` lies inside one interval of a normalized list (binary search). */
export function covers(list: readonly Interval[], start: number, end: number): boolean {
  let [lo, hi] = [0, list.length - 1];
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const i = list[mid]!;
    if (i.end <= start) lo = mid + 1;
    else if (i.start > start) hi = mid - 1;
    else return end <= i.end;
  }
  return false;
}

// ---- open hours --------------------------------------------------------------------------------

/** Open-hours intervals (Unix seconds) overlapping the window, each day's hours placed in its own zone. */
export function openIntervals(hours: readonly OpenHours[], start: number, end: number): Interval[] {
  const out: Interval[] = [];
  for (const h of hours) {
    const from = minutesOf(h.start, false);
    const to = minutesOf(h.end, true);
    if (from === undefined || to === undefined || from >= to) continue;
    const days = new Set(h.days);
    const exdates = new Set(h.exdates ?? []);
    // Local dates from the day before the window to the day after it, so no zone offset is missed.
    let day = DateTime.fromSeconds(start - DAY, { zone: h.timezone }).startOf('day');
    const last = DateTime.fromSeconds(end + DAY, { zone: h.timezone }).startOf('day');
    while (day <= last) {
      if (days.has(day.weekday % 7) && !exdates.has(day.toISODate()!)) {
        const open = localInstant(day, from, h.timezone);
        const close = localInstant(day, to, h.timezone);
        if (close > start && open < end) out.push({ start: Math.max(open, start), end: Math.min(close, end) });
      }
      day = day.plus({ days: 1 });
    }
  }
  return normalize(out);
}

/** The instant of a local wall-clock time (minutes after midnight) on a day; a time skipped by DST moves forward. */
function localInstant(day: DateTime, minutes: number, zone: string): number {
  if (minutes === 24 * 60) return Math.round(day.plus({ days: 1 }).startOf('day').toSeconds());
  return Math.round(
    DateTime.fromObject(
      { year: day.year, month: day.month, day: day.day, hour: Math.floor(minutes / 60), minute: minutes % 60 },
      { zone },
    ).toSeconds(),
  );
}

// ---- slots -------------------------------------------------------------------------------------

const ceilTo = (t: number, step: number) => Math.ceil(t / step) * step;

/** Slot starts in one free period: the first `round_to` mark, then every interval (re-aligned). */
function startsIn(period: Interval, duration: number, interval: number, roundTo: number, into: Set<number>): void {
  let t = ceilTo(period.start, roundTo);
  while (t + duration <= period.end) {
    into.add(t);
    t = ceilTo(t + interval, roundTo);
  }
}

/** Each participant's free time in the window: open hours minus busy time widened by the buffers. */
export function freeTimes(input: EngineInput): Map<string, Interval[]> {
  const before = (input.buffer?.before ?? 0) * MINUTE;
  const after = (input.buffer?.after ?? 0) * MINUTE;
  const everything = [{ start: input.start, end: input.end }];
  const free = new Map<string, Interval[]>();
  for (const p of input.participants) {
    const hours = p.open_hours?.length ? p.open_hours : input.default_open_hours;
    const open = hours?.length ? openIntervals(hours, input.start, input.end) : everything;
    const busy = normalize(p.busy.map((b) => ({ start: b.start - before, end: b.end + after })));
    free.set(p.email, subtract(open, busy));
  }
  return free;
}

/** Round-robin order: fewest counted events first, then by email, whatever order participants came in. */
export function fairnessOrder(participants: readonly EngineParticipant[]): string[] {
  return [...participants]
    .sort(
      (a, b) =>
        (a.fairness_count ?? 0) - (b.fairness_count ?? 0) || (a.email < b.email ? -1 : a.email > b.email ? 1 : 0),
    )
    .map((p) => p.email);
}

export function computeAvailability(input: EngineInput): EngineResult {
  const duration = input.duration_minutes * MINUTE;
  const interval = input.interval_minutes * MINUTE;
  const roundTo = input.round_to * MINUTE;
  const free = freeTimes(input);
  const slots: TimeSlot[] = [];

  if (input.method === 'collective') {
    const emails = input.participants.map((p) => p.email).sort();
    let common: Interval[] = [{ start: input.start, end: input.end }];
    for (const email of emails) common = intersect(common, free.get(email)!);
    const starts = new Set<number>();
    for (const period of common) startsIn(period, duration, interval, roundTo, starts);
    for (const t of [...starts].sort((a, b) => a - b))
      slots.push({ emails: [...emails], start_time: t, end_time: t + duration });
    return { time_slots: slots, order: [] };
  }

  const order = fairnessOrder(input.participants);
  let pool = order;
  if (input.method === 'max-fairness' && order.length > 1) {
    const counts = new Map(input.participants.map((p) => [p.email, p.fairness_count ?? 0]));
    const cut = counts.get(order[Math.ceil(order.length / 2) - 1]!)!;
    pool = order.filter((email) => counts.get(email)! <= cut);
  }
  const starts = new Set<number>();
  for (const email of pool)
    for (const period of free.get(email)!) startsIn(period, duration, interval, roundTo, starts);
  for (const t of [...starts].sort((a, b) => a - b)) {
    const emails = pool.filter((email) => covers(free.get(email)!, t, t + duration));
    if (emails.length) slots.push({ emails, start_time: t, end_time: t + duration });
  }
  return { time_slots: slots, order };
}
