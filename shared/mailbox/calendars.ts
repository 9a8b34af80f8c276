import { metadataPair } from '#shared/mailbox/metadata';
import * as db from '#shared/db/calendars';
import type { CalendarRecord } from '#shared/db/calendars';
import type { GrantRecord } from '#shared/db/grants';
import type { NamedTransactItem } from '#shared/db/transact';
import { decodeOffsetCursor, encodeOffsetCursor } from '#shared/cursor';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { newId, parseId, type CalendarId, type GrantId } from '#shared/ids';
import { newNotification } from '#shared/notifications/notification';
import { clock } from '#shared/time';
import type { CreateCalendarBody, ListCalendarsQuery, UpdateCalendarBody } from '#schemas/calendar';

/**
 * Calendars of an Agent Account. Every account has a primary calendar whose ID is `cal_` followed by
 * the grant's own ULID: created in the grant's transaction, or on first use for an account created
 * before calendars (a conditional put, so concurrent first uses create one). `primary` is an alias
 * of its ID in every path, and it cannot be deleted. Changes are committed with their `calendar.*`
 * notification.
 */
export const primaryCalendarId = (grantId: GrantId) => `cal_${grantId.slice(grantId.indexOf('_') + 1)}` as CalendarId;

function primaryRecord(grant: { id: GrantId }, now: number): CalendarRecord {
  return {
    id: primaryCalendarId(grant.id),
    grant_id: grant.id,
    name: 'Calendar',
    timezone: 'UTC',
    is_primary: true,
    metadata: {},
    created_at: now,
    updated_at: now,
    version: 1,
  };
}

/** The primary calendar's item, for the transaction that creates the grant. */
export const primaryCalendarItem = (grant: { id: GrantId }, now: number): NamedTransactItem => [
  'calendar:primary',
  db.calendarPut(primaryRecord(grant, now)),
];

export function calendarView(grant: GrantRecord, c: CalendarRecord) {
  return {
    id: c.id,
    object: 'calendar' as const,
    grant_id: c.grant_id,
    name: c.name,
    ...(c.description !== undefined ? { description: c.description } : {}),
    ...(c.location !== undefined ? { location: c.location } : {}),
    timezone: c.timezone,
    ...(c.hex_color !== undefined ? { hex_color: c.hex_color } : {}),
    ...(c.hex_foreground_color !== undefined ? { hex_foreground_color: c.hex_foreground_color } : {}),
    is_primary: c.is_primary,
    read_only: false,
    is_owned_by_user: true,
    owner_email: grant.email,
    metadata: c.metadata,
    created_at: c.created_at,
    updated_at: c.updated_at,
  };
}

/** An IANA time zone name as Intl knows it (canonical spelling), or 400. */
export function checkedTimeZone(field: string, zone: string): string {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    throw new InvalidRequestError(
      `'${field}' must be an IANA time zone such as Europe/Berlin or America/New_York; '${zone}' is not one`,
    );
  }
}

/** The primary calendar of a grant created before calendars existed: stored on first use. */
async function createMissingPrimary(grant: GrantRecord): Promise<CalendarRecord> {
  const record = primaryRecord(grant, clock.nowSeconds());
  await db.ensureCalendar(record);
  return (await db.getCalendar(grant.id, record.id)) ?? record;
}

export async function requireCalendar(grant: GrantRecord, calendarId: string): Promise<CalendarRecord> {
  const id = calendarId === 'primary' ? primaryCalendarId(grant.id) : parseId('calendar', calendarId);
  const record = id ? await db.getCalendar(grant.id, id) : undefined;
  if (record) return record;
  if (id === primaryCalendarId(grant.id)) return createMissingPrimary(grant);
  throw new NotFoundError(`Calendar '${calendarId}' not found`);
}

const notify = (
  grant: GrantRecord,
  type: 'calendar.created' | 'calendar.updated' | 'calendar.deleted',
  c: CalendarRecord,
) => ({
  notification: newNotification({
    type,
    applicationId: grant.application_id,
    grantId: grant.id,
    object: calendarView(grant, c),
  }),
});

export async function listCalendars(grant: GrantRecord, query: ListCalendarsQuery, limit: number) {
  const filter = query.metadata_pair !== undefined ? metadataPair(query.metadata_pair) : undefined;
  let calendars = await db.allCalendars(grant.id);
  if (!calendars.some((c) => c.is_primary)) calendars = [await createMissingPrimary(grant), ...calendars];
  const all = calendars.filter((c) => !filter || c.metadata[filter.key] === filter.value);
  const offset = query.page_token ? decodeOffsetCursor(query.page_token, 'calendars') : 0;
  const items = all.slice(offset, offset + limit).map((c) => calendarView(grant, c));
  return {
    items,
    nextCursor: offset + limit < all.length ? encodeOffsetCursor('calendars', offset + limit) : undefined,
  };
}

export async function getCalendar(grant: GrantRecord, calendarId: string) {
  return calendarView(grant, await requireCalendar(grant, calendarId));
}

export async function createCalendar(grant: GrantRecord, body: CreateCalendarBody) {
  const now = clock.nowSeconds();
  const record: CalendarRecord = {
    id: newId('calendar'),
    grant_id: grant.id,
    name: body.name,
    ...(body.description !== undefined ? { description: body.description } : {}),
    ...(body.location !== undefined ? { location: body.location } : {}),
    timezone: body.timezone !== undefined ? checkedTimeZone('timezone', body.timezone) : 'UTC',
    ...(body.hex_color !== undefined ? { hex_color: body.hex_color.toLowerCase() } : {}),
    ...(body.hex_foreground_color !== undefined
      ? { hex_foreground_color: body.hex_foreground_color.toLowerCase() }
      : {}),
    is_primary: false,
    metadata: body.metadata ?? {},
    created_at: now,
    updated_at: now,
    version: 1,
  };
  await db.insertCalendar(record, [notify(grant, 'calendar.created', record)]);
  return calendarView(grant, record);
}

export async function updateCalendar(grant: GrantRecord, calendarId: string, body: UpdateCalendarBody) {
  const current = await requireCalendar(grant, calendarId);
  const next: CalendarRecord = {
    ...current,
    ...(body.name !== undefined ? { name: body.name } : {}),
    ...(body.description !== undefined ? { description: body.description } : {}),
    ...(body.location !== undefined ? { location: body.location } : {}),
    ...(body.timezone !== undefined ? { timezone: checkedTimeZone('timezone', body.timezone) } : {}),
    ...(body.hex_color !== undefined ? { hex_color: body.hex_color.toLowerCase() } : {}),
    ...(body.hex_foreground_color !== undefined
      ? { hex_foreground_color: body.hex_foreground_color.toLowerCase() }
      : {}),
    ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
    updated_at: clock.nowSeconds(),
    version: current.version + 1,
  };
  if (!(await db.replaceCalendar(current, next, [notify(grant, 'calendar.updated', next)]))) {
    throw new ConflictError('The calendar was changed by another request; fetch it again and retry');
  }
  return calendarView(grant, next);
}

export async function deleteCalendar(grant: GrantRecord, calendarId: string): Promise<void> {
  const calendar = await requireCalendar(grant, calendarId);
  if (calendar.is_primary)
    throw new InvalidRequestError('The primary calendar cannot be deleted: every Agent Account keeps one');
  // Its events go with it, by a job committed with the deletion (a calendar may hold many).
  const purge = {
    job: {
      kind: 'purge-calendar' as const,
      application_id: grant.application_id,
      grant_id: grant.id,
      calendar_id: calendar.id,
    },
    id: newId('job'),
    applicationId: grant.application_id,
  };
  if (!(await db.deleteCalendar(calendar, [notify(grant, 'calendar.deleted', calendar), purge])))
    throw new NotFoundError(`Calendar '${calendarId}' not found`);
}
