import type { GrantRecord } from '#shared/db/grants';
import { NotFoundError, ProviderError } from '#shared/errors';
import { calendarPath } from '#shared/microsoft/calendars';
import { graphClientOf, GraphNotFoundError, type GraphClient } from '#shared/microsoft/client';
import {
  instantOf,
  isTentative,
  METADATA_EXPAND,
  metadataOf,
  type GraphDateTime,
  type GraphEvent,
} from '#shared/microsoft/graph-event';
import type { BusyQuery, BusyTimes, FreeBusyProvider } from '#shared/providers/contract';

/**
 * Busy time of provider B's calendars, live. The default calendar (`primary`) is read with
 * getSchedule, Graph's own free/busy: each item with its status, so tentative ones are told apart
 * (B's default counts them busy), in windows of at most 62 days as Graph allows. Another calendar,
 * or a request counting round-robin events (`key5` of our metadata, which getSchedule does not
 * give), is read from its calendarView: busy unless cancelled, free, or tentative when tentative
 * is not busy.
 */

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
/** getSchedule's longest window. */
const SCHEDULE_WINDOW = 62 * 86_400;
/** Instances read per page of a calendarView (Graph's limit). */
const PAGE = 1000;
/** Pages of one calendar's window read at most. */
const MAX_PAGES = 10;

interface ScheduleItem {
  status?: string | null;
  start?: GraphDateTime | null;
  end?: GraphDateTime | null;
}

interface ScheduleInformation {
  scheduleId?: string | null;
  scheduleItems?: ScheduleItem[] | null;
  error?: { message?: string | null; responseCode?: string | null } | null;
}

/** The account's own schedule (its default calendar), window by window. */
async function fromSchedule(grant: GrantRecord, client: GraphClient, query: BusyQuery): Promise<BusyTimes['busy']> {
  const busy: BusyTimes['busy'] = [];
  for (let from = query.start; from < query.end; from += SCHEDULE_WINDOW) {
    const to = Math.min(query.end, from + SCHEDULE_WINDOW);
    const answer = await client.call<{ value?: ScheduleInformation[] }>({
      method: 'POST',
      path: `${client.mailbox}/calendar/getSchedule`,
      body: {
        schedules: [grant.email],
        startTime: { dateTime: iso(from).slice(0, 19), timeZone: 'UTC' },
        endTime: { dateTime: iso(to).slice(0, 19), timeZone: 'UTC' },
        availabilityViewInterval: 30,
      },
    });
    const schedule = answer.value?.[0];
    if (!schedule) throw new ProviderError("Provider B answered getSchedule without the account's schedule");
    if (schedule.error)
      throw new ProviderError(
        `Provider B could not read the account's schedule (${schedule.error.responseCode ?? 'error'}: ${schedule.error.message ?? ''})`,
      );
    for (const item of schedule.scheduleItems ?? []) {
      if (item.status === 'free' || item.status === 'unknown') continue;
      if (!query.tentative_as_busy && item.status === 'tentative') continue;
      const [start, end] = [instantOf(item.start), instantOf(item.end)];
      if (end > from && start < to) busy.push({ start, end });
    }
  }
  return busy;
}

/** A calendar's instances in the window (calendarView), with our metadata. */
async function fromView(client: GraphClient, calendarId: string, query: BusyQuery, times: BusyTimes): Promise<void> {
  let pages = 0;
  try {
    for await (const page of client.pages<GraphEvent>({
      path: `${calendarPath(client, calendarId)}/calendarView`,
      query: {
        startDateTime: iso(query.start),
        endDateTime: iso(query.end),
        $top: PAGE,
        $select: ['id', 'start', 'end', 'showAs', 'isCancelled', 'responseStatus'],
        $expand: METADATA_EXPAND,
      },
    })) {
      for (const event of page.value) {
        if (event.isCancelled) continue;
        const [start, end] = [instantOf(event.start), instantOf(event.end)];
        if (end <= query.start || start >= query.end) continue;
        const key5 = metadataOf(event).key5;
        if (
          query.fairness_group !== undefined &&
          key5 !== undefined &&
          (query.fairness_group === null || key5 === query.fairness_group)
        )
          times.fairness_count++;
        if (event.showAs === 'free') continue;
        if (!query.tentative_as_busy && isTentative(event)) continue;
        times.busy.push({ start, end });
      }
      if (++pages >= MAX_PAGES) break;
    }
  } catch (error) {
    if (error instanceof GraphNotFoundError)
      throw new NotFoundError(`Calendar '${calendarId}' is not a calendar of this grant`);
    throw error;
  }
}

export const graphFreeBusy: FreeBusyProvider = {
  async busy(grant: GrantRecord, query: BusyQuery): Promise<BusyTimes> {
    const client = await graphClientOf(grant);
    const times: BusyTimes = { busy: [], fairness_count: 0 };
    const ids = [...new Set(query.calendar_ids)];
    await Promise.all(
      ids.map(async (id) => {
        if (id === 'primary' && query.fairness_group === undefined)
          times.busy.push(...(await fromSchedule(grant, client, query)));
        else await fromView(client, id, query, times);
      }),
    );
    return times;
  },
};
