import type { CreateCalendarBody, UpdateCalendarBody } from '#schemas/calendar';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import type { GoogleCalendarListEntry } from '#shared/google/calendar-event';
import { googleClientOf, GoogleNotFoundError, type GoogleClient } from '#shared/google/client';
import { getGoogleCalendar, listGoogleCalendars } from '#shared/google/events';
import type { Calendar, CalendarsProvider } from '#shared/providers/contract';

/**
 * Provider A's calendars, live: the calendar list read (shared/google/events.ts), calendars made,
 * changed and removed with Calendar v3 (`calendars` for name, description, location and zone; the
 * account's calendar list entry for its colours). Google's calendars carry no metadata of ours:
 * `metadata` is a 400. The primary calendar can be changed but not deleted.
 */

const calendarPath = (id: string) => {
  if (!id || id.length > 1024 || /[\u0000-\u001f]/.test(id))
    throw new NotFoundError(`No calendar '${id}' in this grant`);
  return `/calendar/v3/calendars/${encodeURIComponent(id)}`;
};
const entryPath = (id: string) => `/calendar/v3/users/me/calendarList/${encodeURIComponent(id)}`;

function refuseMetadata(body: { metadata?: unknown }) {
  if (body.metadata !== undefined)
    throw new InvalidRequestError("'metadata' is not available on google grants' calendars");
}

const calendarFields = (body: UpdateCalendarBody) => ({
  ...(body.name !== undefined ? { summary: body.name } : {}),
  ...(body.description !== undefined ? { description: body.description } : {}),
  ...(body.location !== undefined ? { location: body.location } : {}),
  ...(body.timezone !== undefined ? { timeZone: body.timezone } : {}),
});

/** Colours are the account's own, on its calendar list entry (`colorRgbFormat` takes hex). */
async function colour(
  client: GoogleClient,
  id: string,
  body: UpdateCalendarBody,
): Promise<GoogleCalendarListEntry | undefined> {
  if (body.hex_color === undefined && body.hex_foreground_color === undefined) return undefined;
  return client.call<GoogleCalendarListEntry>({
    api: 'calendar',
    method: 'PATCH',
    path: entryPath(id),
    query: { colorRgbFormat: true },
    body: {
      ...(body.hex_color !== undefined ? { backgroundColor: body.hex_color.toLowerCase() } : {}),
      ...(body.hex_foreground_color !== undefined ? { foregroundColor: body.hex_foreground_color.toLowerCase() } : {}),
    },
  });
}

async function create(grant: GrantRecord, body: CreateCalendarBody): Promise<Calendar> {
  refuseMetadata(body);
  const client = await googleClientOf(grant);
  const created = await client.call<{ id: string }>({
    api: 'calendar',
    method: 'POST',
    path: '/calendar/v3/calendars',
    body: calendarFields(body),
  });
  await colour(client, created.id, body);
  return getGoogleCalendar(grant, created.id);
}

async function update(grant: GrantRecord, calendarId: string, body: UpdateCalendarBody): Promise<Calendar> {
  refuseMetadata(body);
  const client = await googleClientOf(grant);
  const fields = calendarFields(body);
  try {
    if (Object.keys(fields).length)
      await client.call({ api: 'calendar', method: 'PATCH', path: calendarPath(calendarId), body: fields });
    await colour(client, calendarId, body);
  } catch (error) {
    if (error instanceof GoogleNotFoundError) throw new NotFoundError(`No calendar '${calendarId}' in this grant`);
    throw error;
  }
  return getGoogleCalendar(grant, calendarId);
}

async function remove(grant: GrantRecord, calendarId: string): Promise<void> {
  const calendar = await getGoogleCalendar(grant, calendarId);
  if (calendar.is_primary) throw new InvalidRequestError('The primary calendar cannot be deleted');
  const client = await googleClientOf(grant);
  await client.call({ api: 'calendar', method: 'DELETE', path: calendarPath(calendar.id) });
}

export const googleCalendars: CalendarsProvider = {
  list: listGoogleCalendars,
  get: getGoogleCalendar,
  create,
  update,
  delete: remove,
};
