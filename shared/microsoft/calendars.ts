import type { CreateCalendarBody, ListCalendarsQuery, UpdateCalendarBody } from '#schemas/calendar';
import { decodeProviderCursor, encodeProviderCursor, invalidPageToken } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import {
  graphClientOf,
  GraphGoneError,
  GraphNotFoundError,
  GraphRequestError,
  type GraphClient,
} from '#shared/microsoft/client';
import { calendarFromGraph, GRAPH_CALENDAR_SELECT, type GraphCalendar } from '#shared/microsoft/graph-event';
import type { Calendar, CalendarsProvider, Page } from '#shared/providers/contract';

/**
 * Provider B's calendars, live: Outlook's calendars through Graph (`…/calendars`, the default one at
 * `…/calendar`, which `primary` names). Outlook calendars have a name and a named colour only: a
 * description, location, time zone, colours or metadata of ours cannot be kept, and asking for them
 * is a 400 naming them (Graph's `hexColor` is read-only). The default calendar can be renamed but
 * not deleted. Page tokens wrap Graph's nextLink and continue only this grant's calendar listing.
 */

const IDENTIFIER = /^[A-Za-z0-9_=-]{1,512}$/;

const noCalendar = (id: string) => new NotFoundError(`No calendar '${id}' in this grant`);

/** The path of a calendar of the grant's mailbox: `primary` is the default calendar. */
export function calendarPath(client: GraphClient, calendarId: string): string {
  if (calendarId === 'primary') return `${client.mailbox}/calendar`;
  if (!IDENTIFIER.test(calendarId)) throw noCalendar(calendarId);
  return `${client.mailbox}/calendars/${encodeURIComponent(calendarId)}`;
}

/** A calendar as Graph holds it; 404 naming it when the grant has none by that ID. */
export async function readCalendar(client: GraphClient, calendarId: string): Promise<GraphCalendar> {
  try {
    return await client.call<GraphCalendar>({
      path: calendarPath(client, calendarId),
      query: { $select: GRAPH_CALENDAR_SELECT },
      batch: true,
    });
  } catch (error) {
    if (error instanceof GraphNotFoundError) throw noCalendar(calendarId);
    throw error;
  }
}

const scopeOf = (grant: GrantRecord) => `graph-calendars:${grant.id}`;

const invalidToken = invalidPageToken;

function refuseFields(body: UpdateCalendarBody): void {
  const refused = (['description', 'location', 'timezone', 'hex_color', 'hex_foreground_color', 'metadata'] as const)
    .filter((k) => body[k] !== undefined)
    .map((k) => `'${k}'`);
  if (refused.length)
    throw new InvalidRequestError(
      `Outlook calendars keep a name only: ${refused.join(', ')} ${refused.length > 1 ? 'are' : 'is'} not available for microsoft grants' calendars`,
    );
}

async function list(grant: GrantRecord, query: ListCalendarsQuery, limit: number): Promise<Page<Calendar>> {
  if (query.metadata_pair !== undefined)
    throw new InvalidRequestError("'metadata_pair' is not available for microsoft grants' calendars");
  const client = await graphClientOf(grant);
  let page;
  if (query.page_token) {
    const link = decodeProviderCursor(query.page_token, scopeOf(grant));
    let path: string;
    try {
      path = new URL(link).pathname;
    } catch {
      throw invalidToken();
    }
    if (path.toLowerCase() !== `${client.mailbox}/calendars`.toLowerCase()) throw invalidToken();
    try {
      page = await client.page<GraphCalendar>(link);
    } catch (error) {
      if (error instanceof GraphGoneError) throw invalidToken();
      throw error;
    }
  } else
    page = await client.page<GraphCalendar>({
      path: `${client.mailbox}/calendars`,
      query: { $top: limit, $select: GRAPH_CALENDAR_SELECT },
    });
  return {
    items: page.value.map((c) => calendarFromGraph(grant, c)),
    ...(page.nextLink ? { nextCursor: encodeProviderCursor(scopeOf(grant), page.nextLink) } : {}),
  };
}

async function get(grant: GrantRecord, calendarId: string): Promise<Calendar> {
  return calendarFromGraph(grant, await readCalendar(await graphClientOf(grant), calendarId));
}

async function create(grant: GrantRecord, body: CreateCalendarBody): Promise<Calendar> {
  refuseFields(body);
  const client = await graphClientOf(grant);
  const created = await client.call<GraphCalendar>({
    method: 'POST',
    path: `${client.mailbox}/calendars`,
    body: { name: body.name },
  });
  return calendarFromGraph(grant, created);
}

async function update(grant: GrantRecord, calendarId: string, body: UpdateCalendarBody): Promise<Calendar> {
  refuseFields(body);
  const client = await graphClientOf(grant);
  if (body.name === undefined) return get(grant, calendarId);
  try {
    return calendarFromGraph(
      grant,
      await client.call<GraphCalendar>({
        method: 'PATCH',
        path: calendarPath(client, calendarId),
        body: { name: body.name },
      }),
    );
  } catch (error) {
    if (error instanceof GraphNotFoundError) throw noCalendar(calendarId);
    throw error;
  }
}

async function remove(grant: GrantRecord, calendarId: string): Promise<void> {
  const refusal = new InvalidRequestError('The primary calendar cannot be deleted');
  if (calendarId === 'primary') throw refusal;
  const client = await graphClientOf(grant);
  try {
    await client.call({ method: 'DELETE', path: calendarPath(client, calendarId) });
  } catch (error) {
    if (error instanceof GraphNotFoundError) throw noCalendar(calendarId);
    // The default calendar named by its ID: Graph refuses it as a distinguished folder.
    if (error instanceof GraphRequestError && error.graphCode === 'ErrorDeleteDistinguishedFolder') throw refusal;
    throw error;
  }
}

export const graphCalendars: CalendarsProvider = { list, get, create, update, delete: remove };
