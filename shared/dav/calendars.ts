import { randomUUID } from 'node:crypto';
import * as agent from '#shared/mailbox/calendars';
import * as db from '#shared/db/calendars';
import type { CalendarRecord } from '#shared/db/calendars';
import type { GrantRecord } from '#shared/db/grants';
import type { OutboxEntry } from '#shared/db/outbox';
import { InvalidRequestError } from '#shared/errors';
import { derivedId, newId, type CalendarId } from '#shared/ids';
import { newNotification } from '#shared/notifications/notification';
import type { CalendarsProvider } from '#shared/providers/contract';
import { clock } from '#shared/time';
import type { DavClient, DavCollection } from '#shared/dav/client';
import { davClientOf, davRequestError, davSettingsOf } from '#shared/dav/session';

/**
 * Calendars of a grant whose calendars live on a CalDAV server: the event calendars (collections
 * taking VEVENT) under its calendar home, kept in the table as Agent Account calendars are, with
 * their collection's URL. The first one found is the primary calendar (its ID: the grant's
 * primary-calendar ID, so `primary` names it). The list is read from the server on first use and by
 * every sync run (calendar.created, calendar.updated and calendar.deleted for changes made
 * elsewhere); changes through the API go to the server first (MKCALENDAR, PROPPATCH, DELETE).
 */

/** The grant's calendar home, or a 400 saying the grant has no CalDAV server. */
export function calendarHomeOf(grant: GrantRecord): string {
  const home = davSettingsOf(grant).calendar_home;
  if (!home)
    throw new InvalidRequestError(
      `Grant ${grant.id} has no CalDAV server: connect it with settings.caldav_url to use its calendars`,
    );
  return home;
}

export const hasCalDav = (grant: GrantRecord) => davSettingsOf(grant).calendar_home !== undefined;

/**
 * The IANA zone a calendar's TZID names, if it is one Intl knows (CalDAV servers write IANA names). Not
 * through the iCalendar module: the calendars function would bundle its time library for this alone.
 */
function zoneOf(tzid: string): string | undefined {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: tzid.trim() }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** #RRGGBB from a server's color (#RRGGBB or #RRGGBBAA), if it is one. */
const hexColor = (color: string | undefined) =>
  color && /^#[0-9a-f]{6}([0-9a-f]{2})?$/i.test(color) ? color.slice(0, 7).toLowerCase() : undefined;
const lastSegment = (url: string) =>
  decodeURIComponent(new URL(url).pathname.split('/').filter(Boolean).pop() ?? 'Calendar');

/** What the table keeps of a collection. */
function fieldsOf(
  collection: DavCollection,
): Pick<CalendarRecord, 'name' | 'timezone'> & Partial<Pick<CalendarRecord, 'description' | 'hex_color'>> {
  const zone = collection.timezoneId ? zoneOf(collection.timezoneId) : undefined;
  const color = hexColor(collection.color);
  return {
    name: collection.displayName?.trim() || lastSegment(collection.url),
    timezone: zone ?? 'UTC',
    ...(collection.description ? { description: collection.description } : {}),
    ...(color ? { hex_color: color } : {}),
  };
}

const notify = (
  grant: GrantRecord,
  type: 'calendar.created' | 'calendar.updated' | 'calendar.deleted',
  record: CalendarRecord,
): OutboxEntry => ({
  notification: newNotification({
    type,
    applicationId: grant.application_id,
    grantId: grant.id,
    object: agent.calendarView(grant, record),
  }),
});

const calendarIdOf = (grant: GrantRecord, url: string) => derivedId('calendar', 0, `${grant.id}\n${url}`);

/**
 * Brings the table's calendars in line with the server's event calendars. `quiet`: the first listing
 * of a grant (history, not news) announces nothing. Answers the calendars, whether any changed, and
 * each calendar's CTag (by ID) where the server has them: a calendar whose CTag did not move since
 * the last run has no changes to read.
 */
export async function syncCalendarList(
  grant: GrantRecord,
  client: DavClient,
  options: { quiet: boolean },
): Promise<{ calendars: CalendarRecord[]; changed: boolean; ctags: Map<string, string> }> {
  const collections = (await client.listCollections(calendarHomeOf(grant))).filter(
    (c) => c.kind === 'calendar' && (!c.components || c.components.includes('VEVENT')),
  );
  const stored = await db.allCalendars(grant.id);
  const byHref = new Map(stored.filter((c) => c.href).map((c) => [c.href!, c]));
  let hasPrimary = stored.some((c) => c.is_primary);
  const now = clock.nowSeconds();
  const out = (type: Parameters<typeof notify>[1], record: CalendarRecord) =>
    options.quiet ? [] : [notify(grant, type, record)];
  let changed = false;
  const calendars: CalendarRecord[] = [];
  for (const collection of collections) {
    const current = byHref.get(collection.url);
    const fields = fieldsOf(collection);
    if (!current) {
      const primary = !hasPrimary;
      hasPrimary = true;
      const record: CalendarRecord = {
        id: primary ? agent.primaryCalendarId(grant.id) : calendarIdOf(grant, collection.url),
        grant_id: grant.id,
        ...fields,
        is_primary: primary,
        metadata: {},
        href: collection.url,
        created_at: now,
        updated_at: now,
        version: 1,
      };
      await db.insertCalendar(record, out('calendar.created', record));
      calendars.push(record);
      changed = true;
      continue;
    }
    const { description: _d, hex_color: _c, ...kept } = current;
    const next: CalendarRecord = { ...kept, ...fields, updated_at: now, version: current.version + 1 };
    const same = (['name', 'timezone', 'description', 'hex_color'] as const).every((f) => current[f] === next[f]);
    if (!same && (await db.replaceCalendar(current, next, out('calendar.updated', next)))) {
      calendars.push(next);
      changed = true;
    } else calendars.push(current);
  }
  const live = new Set(collections.map((c) => c.url));
  for (const gone of stored.filter((c) => c.href && !live.has(c.href))) {
    const purge = {
      job: {
        kind: 'purge-calendar' as const,
        application_id: grant.application_id,
        grant_id: grant.id,
        calendar_id: gone.id,
      },
      id: newId('job'),
      applicationId: grant.application_id,
    };
    if (await db.deleteCalendar(gone, [...out('calendar.deleted', gone), purge])) changed = true;
  }
  const urls = new Map(collections.map((c) => [c.url, c.ctag]));
  const ctags = new Map(
    calendars.flatMap((c) => (c.href && urls.get(c.href) ? [[c.id as string, urls.get(c.href)!] as const] : [])),
  );
  return { calendars, changed, ctags };
}

/** Calendars are read from the server once before first use (later, sync runs keep them in step). */
export async function calendarsReady(grant: GrantRecord): Promise<void> {
  calendarHomeOf(grant);
  if ((await db.allCalendars(grant.id)).some((c) => c.href)) return;
  try {
    await syncCalendarList(grant, await davClientOf(grant), { quiet: true });
  } catch (error) {
    throw davRequestError(error, "The grant's CalDAV server");
  }
}

/** An operation of a grant's calendars, run once they are known (calendarsReady). */
export const withCalendarsReady =
  <A extends unknown[], R>(run: (grant: GrantRecord, ...args: A) => Promise<R>) =>
  async (grant: GrantRecord, ...args: A): Promise<R> => {
    await calendarsReady(grant);
    return run(grant, ...args);
  };

/** A calendar of the grant that lives on its server (a 400 for one that does not). */
async function serverCalendar(grant: GrantRecord, calendarId: string): Promise<CalendarRecord & { href: string }> {
  const record = await agent.requireCalendar(grant, calendarId);
  if (!record.href) throw new InvalidRequestError(`Calendar '${calendarId}' is not on the grant's CalDAV server`);
  return record as CalendarRecord & { href: string };
}

export const calDavCalendars: CalendarsProvider = {
  list: withCalendarsReady(agent.listCalendars),
  get: withCalendarsReady(agent.getCalendar),
  async create(grant, body) {
    await calendarsReady(grant);
    const zone = body.timezone !== undefined ? agent.checkedTimeZone('timezone', body.timezone) : 'UTC';
    const url = new URL(`${randomUUID()}/`, calendarHomeOf(grant)).href;
    const client = await davClientOf(grant);
    try {
      await client.makeCalendar(url, {
        name: body.name,
        ...(body.hex_color ? { color: body.hex_color } : {}),
        ...(body.description ? { description: body.description } : {}),
      });
    } catch (error) {
      throw davRequestError(error, 'Creating the calendar on the CalDAV server');
    }
    // The server may answer the collection under another spelling of its URL: what it lists is kept.
    const listed = (await client.listCollections(calendarHomeOf(grant))).find(
      (c) => c.url === url || decodeURI(c.url) === decodeURI(url),
    );
    const now = clock.nowSeconds();
    const record: CalendarRecord = {
      id: calendarIdOf(grant, listed?.url ?? url) as CalendarId,
      grant_id: grant.id,
      name: body.name,
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.location !== undefined ? { location: body.location } : {}),
      timezone: zone,
      ...(body.hex_color !== undefined ? { hex_color: body.hex_color.toLowerCase() } : {}),
      ...(body.hex_foreground_color !== undefined
        ? { hex_foreground_color: body.hex_foreground_color.toLowerCase() }
        : {}),
      is_primary: false,
      metadata: body.metadata ?? {},
      href: listed?.url ?? url,
      created_at: now,
      updated_at: now,
      version: 1,
    };
    await db.insertCalendar(record, [notify(grant, 'calendar.created', record)]);
    return agent.calendarView(grant, record);
  },
  async update(grant, calendarId, body) {
    await calendarsReady(grant);
    const record = await serverCalendar(grant, calendarId);
    if (body.name !== undefined || body.hex_color !== undefined || body.description !== undefined) {
      try {
        const client = await davClientOf(grant);
        await client.updateCollection(record.href, 'calendar', {
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.hex_color !== undefined ? { color: body.hex_color } : {}),
          ...(body.description !== undefined ? { description: body.description } : {}),
        });
      } catch (error) {
        throw davRequestError(error, 'Changing the calendar on the CalDAV server');
      }
    }
    return agent.updateCalendar(grant, calendarId, body);
  },
  async delete(grant, calendarId) {
    await calendarsReady(grant);
    const record = await serverCalendar(grant, calendarId);
    if (record.is_primary)
      throw new InvalidRequestError(
        "The primary calendar cannot be deleted through the API: it is the account's default calendar on its CalDAV server",
      );
    try {
      await (await davClientOf(grant)).deleteCollection(record.href);
    } catch (error) {
      throw davRequestError(error, 'Deleting the calendar on the CalDAV server');
    }
    await agent.deleteCalendar(grant, calendarId);
  },
};
