import { occurrencesBetween } from '#shared/calendar/recurrence';
import { decodeOffsetCursor, encodeOffsetCursor } from '#shared/cursor';
import * as db from '#shared/db/events';
import type { EventRecord } from '#shared/db/events';
import type { GrantRecord } from '#shared/db/grants';
import { requireCalendar } from '#shared/mailbox/calendars';
import { isSeries, seriesOf } from '#shared/mailbox/event-windows';
import { eventView } from '#shared/mailbox/events';
import type { CalendarEvent, EventImportWindow, Page } from '#shared/providers/contract';

/**
 * The import of a stored calendar (Agent Accounts; CalDAV through its stored copy): one read of the
 * calendar's time-window index, which holds single events, series (indexed by their whole span) and
 * the overrides of occurrences. A series is kept when one of its occurrences overlaps the window;
 * an override (changed or cancelled occurrence) when it does itself; a cancelled single event or
 * series is left out, as a listing leaves it out. Ordered by start, then ID, so an offset page token
 * continues where the previous page ended.
 */
export async function importStoredEvents(
  grant: GrantRecord,
  window: EventImportWindow,
  limit: number,
): Promise<Page<CalendarEvent>> {
  const calendar = await requireCalendar(grant, window.calendar_id);
  const { start, end } = window;
  const scope = `events-import:${calendar.id}`;
  const offset = window.page_token ? decodeOffsetCursor(window.page_token, scope) : 0;
  const found = await db.eventsInWindow(grant.id, calendar.id, start, end);
  const kept = found
    .filter((r) => {
      if (r.master_event_id) return r.start < end && r.end > start;
      if (r.status === 'cancelled') return false;
      if (isSeries(r)) return occurrencesBetween(seriesOf(r), start, end, 1).length > 0;
      return r.start < end && (r.end > start || r.start >= start);
    })
    .sort(byStart);
  return {
    items: kept.slice(offset, offset + limit).map((r) => eventView(grant, r)),
    ...(offset + limit < kept.length ? { nextCursor: encodeOffsetCursor(scope, offset + limit) } : {}),
  };
}

const byStart = (a: EventRecord, b: EventRecord) => a.start - b.start || (a.id < b.id ? -1 : 1);
