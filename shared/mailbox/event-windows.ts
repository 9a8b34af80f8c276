import { requireCalendar } from '#shared/mailbox/calendars';
import { occurrencesBetween, type Occurrence, type Series } from '#shared/calendar/recurrence';
import type { CalendarRecord } from '#shared/db/calendars';
import * as db from '#shared/db/events';
import type { EventRecord } from '#shared/db/events';
import type { GrantRecord } from '#shared/db/grants';
import type { BusyQuery, BusyTimes } from '#shared/providers/contract';

/**
 * What a window of an Agent Account calendar holds, series expanded, and the busy time it makes.
 * Apart from the rest of the events (shared/mailbox/events.ts), which commit iTIP mail with their
 * changes: free/busy and availability (functions/availability) bundle this without the iCalendar code.
 */

const lower = (s: string) => s.toLowerCase();
export const isSeries = (r: Pick<EventRecord, 'recurrence'>) => !!r.recurrence?.length;
export const seriesOf = (r: Pick<EventRecord, 'when' | 'zone' | 'recurrence'>): Series => ({
  when: r.when,
  zone: r.zone,
  recurrence: r.recurrence ?? [],
});

/** Whether the account holds an event only tentatively (it answered `maybe` to the invitation, or marked it so). */
export const tentativeFor = (grant: GrantRecord) => {
  const me = lower(grant.email);
  return (r: Pick<EventRecord, 'status' | 'origin' | 'participants'>) =>
    r.status === 'maybe' ||
    (r.origin === 'invitation' && r.participants.some((p) => p.email === me && p.status === 'maybe'));
};

/** What expanding a window needs of each record found in it. */
type WindowFields =
  | 'id'
  | 'master_event_id'
  | 'series_revision'
  | 'pattern_revision'
  | 'recurrence'
  | 'exceptions'
  | 'when'
  | 'zone'
  | 'start'
  | 'end';

/**
 * What a window holds, record by record: single events and overrides as themselves (stale or
 * orphaned overrides left out), series as each occurrence in [from, to) that no exception removed.
 */
export async function instancesIn<R extends Pick<EventRecord, WindowFields>>(
  grant: GrantRecord,
  calendar: CalendarRecord,
  records: R[],
  from: number,
  to: number,
): Promise<{ record: R; occurrence?: Occurrence }[]> {
  const masters = new Map<string, Pick<EventRecord, WindowFields>>(records.filter(isSeries).map((m) => [m.id, m]));
  const missing = [
    ...new Set(
      records.filter((r) => r.master_event_id && !masters.has(r.master_event_id)).map((r) => r.master_event_id!),
    ),
  ];
  for (const m of await db.getEvents(grant.id, calendar.id, missing)) masters.set(m.id, m);
  const out: { record: R; occurrence?: Occurrence }[] = [];
  for (const r of records) {
    if (r.master_event_id) {
      const master = masters.get(r.master_event_id);
      if (master && isSeries(master) && r.series_revision === (master.pattern_revision ?? 0)) out.push({ record: r });
    } else if (isSeries(r)) {
      const exceptions = new Set(r.exceptions ?? []);
      for (const occurrence of occurrencesBetween(seriesOf(r), from, to))
        if (!exceptions.has(occurrence.key)) out.push({ record: r, occurrence });
    } else out.push({ record: r });
  }
  return out;
}

// ---- busy time ---------------------------------------------------------------------------------

/** What busy time needs of an event: its times, whether it blocks time, and its round-robin mark. */
export const BUSY_FIELDS = [
  'master_event_id',
  'series_revision',
  'pattern_revision',
  'recurrence',
  'exceptions',
  'when',
  'zone',
  'start',
  'end',
  'status',
  'busy',
  'metadata',
  'origin',
] as const;

/** Busy time of calendars in a window (FreeBusyProvider): one window query per calendar, series expanded. */
export async function busyTimes(grant: GrantRecord, query: BusyQuery): Promise<BusyTimes> {
  const tentative = tentativeFor(grant);
  const calendars = await Promise.all([...new Set(query.calendar_ids)].map((id) => requireCalendar(grant, id)));
  const unique = [...new Map(calendars.map((c) => [c.id, c])).values()];
  // Who answered what matters only when tentative events are not busy.
  const fields: readonly ((typeof BUSY_FIELDS)[number] | 'participants')[] = query.tentative_as_busy
    ? BUSY_FIELDS
    : [...BUSY_FIELDS, 'participants'];
  const busy: BusyTimes['busy'] = [];
  let fairness = 0;
  await Promise.all(
    unique.map(async (calendar) => {
      const found = await db.eventsInWindow(grant.id, calendar.id, query.start, query.end, fields);
      for (const { record: r, occurrence } of await instancesIn(grant, calendar, found, query.start, query.end)) {
        const [start, end] = occurrence ? [occurrence.start, occurrence.end] : [r.start, r.end];
        if (r.status === 'cancelled' || end <= query.start || start >= query.end) continue;
        const key5 = r.metadata.key5;
        if (
          query.fairness_group !== undefined &&
          key5 !== undefined &&
          (query.fairness_group === null || key5 === query.fairness_group)
        )
          fairness++;
        if (r.busy && (query.tentative_as_busy || !tentative(r))) busy.push({ start, end });
      }
    }),
  );
  return { busy, fairness_count: fairness };
}
