/**
 * freebusy.query for the local Google Calendar fake: the busy periods of the calendars asked for
 * (opaque, live events and instances not declined by the calendar's owner), clipped to the window and
 * merged, written in the request's zone.
 */

import { DateTime } from 'luxon';
import { bad, emptyRange, required } from './calendar-resources';
import { instantOf, validZone } from './recurrence';
import { ok, type CalendarAnswer, type CalendarCall, type CalendarStore } from './calendar-state';
import { expandedEvents } from './calendar-events';

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

export function freeBusy(call: CalendarCall): CalendarAnswer {
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
