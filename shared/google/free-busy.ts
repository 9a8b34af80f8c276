import { DateTime } from 'luxon';
import type { GrantRecord } from '#shared/db/grants';
import { NotFoundError } from '#shared/errors';
import type { GoogleEvent } from '#shared/google/calendar-event';
import { googleClientOf, type GoogleClient } from '#shared/google/client';
import type { BusyQuery, BusyTimes, FreeBusyProvider } from '#shared/providers/contract';

/**
 * Busy time of provider A's calendars, live. When Google's own answer is enough (tentative events
 * busy, nothing counted for round-robin), one freebusy.query for every calendar of the request.
 * Otherwise the window's events (events.list, series expanded), because only they say which the
 * account answered "maybe" and which carry the round-robin mark (`key5` in the private extended
 * properties, where our metadata lives): busy unless cancelled, free (transparent), or tentative
 * when tentative is not busy.
 */

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
const seconds = (value: string | undefined) => (value ? Math.floor(Date.parse(value) / 1000) : 0);
/** Pages of one calendar's window read at most (2,500 events each). */
const MAX_PAGES = 4;

async function freeBusyQuery(client: GoogleClient, query: BusyQuery): Promise<BusyTimes> {
  const answer = await client.call<{
    calendars?: Record<string, { busy?: { start?: string; end?: string }[]; errors?: { reason?: string }[] }>;
  }>({
    api: 'calendar',
    method: 'POST',
    path: '/calendar/v3/freeBusy',
    body: { timeMin: iso(query.start), timeMax: iso(query.end), items: query.calendar_ids.map((id) => ({ id })) },
  });
  const busy: BusyTimes['busy'] = [];
  for (const id of query.calendar_ids) {
    const calendar = answer.calendars?.[id];
    if (!calendar || calendar.errors?.length)
      throw new NotFoundError(
        `Calendar '${id}' is not a calendar of this grant (${calendar?.errors?.[0]?.reason ?? 'not found'})`,
      );
    for (const b of calendar.busy ?? []) busy.push({ start: seconds(b.start), end: seconds(b.end) });
  }
  return { busy, fairness_count: 0 };
}

const tentative = (event: GoogleEvent) =>
  event.status === 'tentative' || event.attendees?.some((a) => a.self && a.responseStatus === 'tentative') === true;

async function fromEvents(client: GoogleClient, query: BusyQuery): Promise<BusyTimes> {
  const busy: BusyTimes['busy'] = [];
  let fairness = 0;
  for (const id of query.calendar_ids) {
    let pageToken: string | undefined;
    let pages = 0;
    do {
      const page = await client.call<{ items?: GoogleEvent[]; nextPageToken?: string; timeZone?: string }>({
        api: 'calendar',
        path: `/calendar/v3/calendars/${encodeURIComponent(id)}/events`,
        query: {
          timeMin: iso(query.start),
          timeMax: iso(query.end),
          singleEvents: true,
          maxResults: 2500,
          ...(pageToken ? { pageToken } : {}),
        },
      });
      for (const event of page.items ?? []) {
        if (event.status === 'cancelled') continue;
        // All-day events are floating: their days begin at midnight in the calendar's zone.
        const at = (t: GoogleEvent['start']) =>
          t?.dateTime
            ? seconds(t.dateTime)
            : Math.floor(DateTime.fromISO(t?.date ?? '', { zone: page.timeZone ?? 'UTC' }).toSeconds());
        const start = at(event.start);
        const end = at(event.end);
        if (end <= query.start || start >= query.end) continue;
        const key5 = event.extendedProperties?.private?.key5;
        if (
          query.fairness_group !== undefined &&
          key5 !== undefined &&
          (query.fairness_group === null || key5 === query.fairness_group)
        )
          fairness++;
        if (event.transparency === 'transparent') continue;
        if (!query.tentative_as_busy && tentative(event)) continue;
        busy.push({ start, end });
      }
      pageToken = page.nextPageToken;
    } while (pageToken && ++pages < MAX_PAGES);
  }
  return { busy, fairness_count: fairness };
}

export const googleFreeBusy: FreeBusyProvider = {
  async busy(grant: GrantRecord, query: BusyQuery): Promise<BusyTimes> {
    const client = await googleClientOf(grant);
    return query.tentative_as_busy && query.fairness_group === undefined
      ? freeBusyQuery(client, query)
      : fromEvents(client, query);
  },
};
