import * as agent from '#shared/mailbox/events';
import { calDavEvents } from '#shared/dav/events';
import { withCalendarsReady } from '#shared/dav/calendars';
import { googleEvents, listGoogleEvents } from '#shared/google/events';
import { graphEvents, importGraphEvents } from '#shared/microsoft/events';
import { importStoredEvents } from '#shared/mailbox/events-import';
import type { ImportEventsQuery } from '#schemas/event';
import { decodeProviderCursor, encodeProviderCursor, invalidPageToken } from '#shared/cursor';
import { InvalidRequestError } from '#shared/errors';
import { clock } from '#shared/time';
import { icsEventOf } from '#shared/calendar/imip';
import { buildCalendar } from '#shared/calendar/ical';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { CalendarEvent, EventImportProvider, EventsProvider, Page } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

const registry: Partial<Record<Provider, EventsProvider>> = {
  agent: {
    list: agent.listEvents,
    get: agent.getEvent,
    ics: async (grant, eventId, calendarId, method = 'PUBLISH') => {
      const { record, overrides } = await agent.eventRecords(grant, eventId, calendarId);
      return buildCalendar(
        method,
        [record, ...overrides].map((r) => icsEventOf(r)),
      );
    },
    create: agent.createEvent,
    update: agent.updateEvent,
    delete: agent.deleteEvent,
    sendRsvp: agent.sendRsvp,
  },
  imap: calDavEvents,
  icloud: calDavEvents,
  yahoo: calDavEvents,
  // Provider A's events, live from Calendar v3.
  google: googleEvents,
  // Provider B's, live from Microsoft Graph.
  microsoft: graphEvents,
};

export const eventsOf = (grant: GrantRecord) => providerOf(registry, grant, 'Events');

const storedImport: EventImportProvider = { import: importStoredEvents };
const calDavImport: EventImportProvider = { import: withCalendarsReady(importStoredEvents) };

const imports: Partial<Record<Provider, EventImportProvider>> = {
  agent: storedImport,
  imap: calDavImport,
  icloud: calDavImport,
  yahoo: calDavImport,
  // Calendar v3's events.list unexpanded is an import already: masters, exceptions and single events.
  google: {
    import: (grant, { calendar_id, start, end, page_token }, limit) =>
      listGoogleEvents(grant, { calendar_id, start, end, ...(page_token ? { page_token } : {}) }, limit),
  },
  microsoft: { import: importGraphEvents },
};

/** The window an import defaults to after its `start`, and the longest it may be (the listing's longest expanded window). */
export const IMPORT_WINDOW_SECONDS = 30 * 86_400;
const MAX_IMPORT_SECONDS = 366 * 86_400;

/**
 * `GET /events/import`: the window resolved (`start` now, `end` 30 days after `start`, unless given),
 * then the grant's provider's import. The page token carries the window with the provider's own
 * token, so the pages of one import read the same window even when `start` was left to "now"; a
 * token sent with another `start` or `end` is refused.
 */
export async function importEvents(
  grant: GrantRecord,
  query: ImportEventsQuery,
  limit: number,
): Promise<Page<CalendarEvent>> {
  const provider = providerOf(imports, grant, 'Event import');
  const scope = `events-import:${grant.id}:${query.calendar_id}`;
  let window: { start: number; end: number; token?: string };
  if (query.page_token) {
    const held = heldWindow(decodeProviderCursor(query.page_token, scope));
    if ((query.start !== undefined && query.start !== held.s) || (query.end !== undefined && query.end !== held.e))
      throw invalidPageToken();
    window = { start: held.s, end: held.e, token: held.t };
  } else {
    const start = query.start ?? clock.nowSeconds();
    const end = query.end ?? start + IMPORT_WINDOW_SECONDS;
    if (end <= start) throw new InvalidRequestError(`'end' (${end}) must be after 'start' (${start})`);
    if (end - start > MAX_IMPORT_SECONDS)
      throw new InvalidRequestError(
        `'start' to 'end' spans more than ${MAX_IMPORT_SECONDS / 86_400} days; import a longer time in several windows`,
      );
    window = { start, end };
  }
  const page = await provider.import(
    grant,
    { calendar_id: query.calendar_id, start: window.start, end: window.end, page_token: window.token },
    limit,
  );
  return {
    items: page.items,
    ...(page.nextCursor
      ? {
          nextCursor: encodeProviderCursor(
            scope,
            JSON.stringify({ s: window.start, e: window.end, t: page.nextCursor }),
          ),
        }
      : {}),
  };
}

/** The window and provider token an import page token holds (a forged one is a 400, never a 500). */
function heldWindow(text: string): { s: number; e: number; t: string } {
  let held: unknown;
  try {
    held = JSON.parse(text);
  } catch {
    throw invalidPageToken();
  }
  const { s, e, t } = (held ?? {}) as Record<string, unknown>;
  if (!Number.isSafeInteger(s) || !Number.isSafeInteger(e) || typeof t !== 'string' || !t) throw invalidPageToken();
  return { s: s as number, e: e as number, t };
}
