import * as agent from '#shared/mailbox/events';
import { isSeries } from '#shared/mailbox/event-windows';
import { buildCalendar, IcsError, parseCalendar, type IcsEvent } from '#shared/calendar/ical';
import { icsEventOf } from '#shared/calendar/imip';
import { normalizeRecurrence, occurrenceByKey, seriesBounds, whenBounds } from '#shared/calendar/recurrence';
import type { CalendarRecord } from '#shared/db/calendars';
import * as db from '#shared/db/events';
import type { EventRecord } from '#shared/db/events';
import type { GrantRecord } from '#shared/db/grants';
import type { OutboxEntry } from '#shared/db/outbox';
import { ConflictError, InvalidRequestError } from '#shared/errors';
import { derivedId, newId, parseId } from '#shared/ids';
import { logger } from '#shared/logger';
import { inPool } from '#shared/pool';
import type { EventServer, EventsProvider } from '#shared/providers/contract';
import { clock } from '#shared/time';
import { DavError, PreconditionFailed, type DavClient, type DavObject } from '#shared/dav/client';
import { collectionChanges } from '#shared/dav/changes';
import { withCalendarsReady as ready } from '#shared/dav/calendars';
import { davClientOf, davRequestError } from '#shared/dav/session';

/**
 * Events of a grant's CalDAV calendars. They are kept in the table exactly as Agent Account events
 * are (series, overrides, the time-window index), so every list filter, recurrence expansion (our
 * own engine: servers such as Radicale ignore CalDAV `expand`), free/busy and availability read
 * them there. Each series or single event is one object on the server (a VEVENT and its
 * RECURRENCE-ID exceptions); its URL and ETag are kept on the master record, never rebuilt from its
 * UID. Changes through the API are written to the server first, conditional on the ETag last read
 * (a 412 means another client changed it: the object is read again and the request answers 409,
 * never overwriting). Changes made elsewhere arrive by sync runs: RFC 6578 sync-collection from the
 * calendar's token (a full listing compared by ETag when the token is refused), objects fetched by
 * multiget, and `event.created`, `event.updated`, `event.deleted` committed with each change.
 */

const log = logger.child({ module: 'caldav' });
const CALENDAR_TYPE = 'text/calendar; charset=utf-8';
/** Objects per multiget (the client batches further requests itself). */
const FETCH_BATCH = 50;
/** Override puts per transaction beside their master (DynamoDB's 100 items; each takes its window copies). */
const OVERRIDES_PER_WRITE = 20;

/** The master ID of a calendar object: objects this API wrote are named `<evt_id>.ics`; others get one derived from their URL. */
export function eventIdOfHref(calendar: Pick<CalendarRecord, 'id'>, href: string): string {
  const last = decodeURIComponent(new URL(href).pathname.split('/').filter(Boolean).pop() ?? '');
  const named = /^(evt_[0-9a-hjkmnp-tv-z]{26})\.ics$/.exec(last)?.[1];
  return named && parseId('event', named) ? named : derivedId('event', 0, `${calendar.id}\n${href}`);
}

const lower = (s: string) => s.toLowerCase();
const occurrenceKeyOfId = (id: NonNullable<IcsEvent['recurrence_id']>) =>
  'date' in id ? id.date.replaceAll('-', '') : agent.occurrenceKeyOf(id.time);

/** The fields a VEVENT sets on a record. */
function fieldsOf(event: IcsEvent, calendar: CalendarRecord) {
  const zone = event.when.object === 'timespan' ? (event.when.start_timezone ?? calendar.timezone) : calendar.timezone;
  const url = event.conferencing_url;
  return {
    when: event.when,
    zone,
    ...whenBounds(event.when, zone),
    status: event.status,
    busy: event.busy,
    sequence: event.sequence,
    participants: event.participants,
    resources: event.resources ?? [],
    ...(event.title !== undefined ? { title: event.title } : {}),
    ...(event.description !== undefined ? { description: event.description } : {}),
    ...(event.location !== undefined ? { location: event.location } : {}),
    ...(event.visibility ? { visibility: event.visibility } : {}),
    ...(url ? { conferencing: { provider: 'unknown', details: { url } } } : {}),
    ...(event.reminders?.length
      ? {
          reminders: {
            use_default: false,
            overrides: event.reminders.map((r) => ({
              reminder_minutes: r.minutes,
              reminder_method: r.method === 'email' ? 'email' : 'popup',
            })),
          },
        }
      : {}),
  };
}

/** The records one calendar object stands for: its series (or single event) and the overrides of its changed occurrences. */
export function recordsOfObject(
  grant: GrantRecord,
  calendar: CalendarRecord,
  object: DavObject,
  previous: EventRecord | undefined,
): { master: EventRecord; overrides: EventRecord[] } {
  const events = parseCalendar(object.data).events;
  if (!events.length) throw new IcsError('the object holds no VEVENT');
  const uid = events[0]!.uid;
  const mine = events.filter((e) => e.uid === uid);
  const main = mine.find((e) => !e.recurrence_id);
  if (!main) throw new IcsError('the object holds only changed occurrences of a series, not the series');
  const now = clock.nowSeconds();
  const fields = fieldsOf(main, calendar);
  let recurrence: string[] | undefined;
  if (main.recurrence?.length) {
    try {
      recurrence = normalizeRecurrence(main.recurrence, fields.when, fields.zone);
    } catch (error) {
      // A pattern our engine does not expand: the first occurrence stands alone (logged, not fatal).
      log.warn('recurrence not supported, first occurrence kept', {
        href: object.url,
        reason: (error as Error).message,
      });
    }
  }
  const patternChanged =
    previous !== undefined &&
    (JSON.stringify(previous.recurrence ?? []) !== JSON.stringify(recurrence ?? []) ||
      JSON.stringify(previous.when) !== JSON.stringify(fields.when));
  const revision = (previous?.pattern_revision ?? 0) + (patternChanged ? 1 : 0);
  const organizer = main.organizer
    ? { email: lower(main.organizer.email), ...(main.organizer.name ? { name: main.organizer.name } : {}) }
    : { email: lower(grant.email) };
  const master: EventRecord = {
    id: previous?.id ?? eventIdOfHref(calendar, object.url),
    grant_id: grant.id,
    calendar_id: calendar.id,
    ical_uid: uid,
    ...fields,
    ...(recurrence
      ? {
          recurrence,
          last_end: seriesBounds({ when: fields.when, zone: fields.zone, recurrence }).last_end,
          pattern_revision: revision,
        }
      : {}),
    hide_participants: previous?.hide_participants ?? false,
    organizer,
    creator: previous?.creator ?? organizer,
    metadata: previous?.metadata ?? {},
    href: object.url,
    ...(object.etag ? { etag: object.etag } : {}),
    created_at: previous?.created_at ?? main.created_at ?? now,
    updated_at: now,
    version: (previous?.version ?? 0) + 1,
  };
  const overrides: EventRecord[] = [];
  if (recurrence) {
    for (const exception of mine.filter((e) => e.recurrence_id)) {
      const key = occurrenceKeyOfId(exception.recurrence_id!);
      const found = occurrenceByKey({ when: master.when, zone: master.zone, recurrence }, key);
      if (!found) continue;
      const base = agent.instanceOf(master, found.occurrence);
      overrides.push({ ...base, ...fieldsOf(exception, calendar), series_revision: revision, version: 1 });
    }
    master.exceptions = overrides.map((o) => o.occurrence_key!);
  }
  return { master, overrides };
}

const notification = (
  grant: GrantRecord,
  type: 'event.created' | 'event.updated' | 'event.deleted',
  record: EventRecord,
): OutboxEntry => agent.eventNotification(grant, type, record);

/** Commits what an object now holds over what the table held (its series, its overrides), with the master's notification. */
async function storeObject(
  grant: GrantRecord,
  previous: { master?: EventRecord; overrides: EventRecord[] },
  next: { master: EventRecord; overrides: EventRecord[] },
  quiet: boolean,
): Promise<void> {
  const byId = new Map(previous.overrides.map((o) => [o.id, o]));
  const puts = next.overrides.map((o) => ({
    next: { ...o, version: (byId.get(o.id)?.version ?? 0) + 1 },
    ...(byId.get(o.id) ? { current: byId.get(o.id)! } : {}),
  }));
  const keep = new Set(next.overrides.map((o) => o.id));
  const removed = previous.overrides.filter((o) => !keep.has(o.id));
  const outbox = quiet
    ? []
    : [
        notification(
          grant,
          previous.master ? (next.master.status === 'cancelled' ? 'event.deleted' : 'event.updated') : 'event.created',
          next.master,
        ),
      ];
  const first = puts.slice(0, OVERRIDES_PER_WRITE);
  const change: db.EventChange = {
    put: [{ next: next.master, ...(previous.master ? { current: previous.master } : {}) }, ...first],
    remove: removed.slice(0, OVERRIDES_PER_WRITE),
  };
  if (!(await db.writeEvents(change, outbox)))
    throw new Error(`caldav: ${next.master.href} changed in the table meanwhile; the next sync run stores it`);
  for (let i = OVERRIDES_PER_WRITE; i < Math.max(puts.length, removed.length); i += OVERRIDES_PER_WRITE) {
    await db.writeEvents(
      { put: puts.slice(i, i + OVERRIDES_PER_WRITE), remove: removed.slice(i, i + OVERRIDES_PER_WRITE) },
      [],
    );
  }
}

async function storedSeries(
  grant: GrantRecord,
  calendar: CalendarRecord,
  id: string,
): Promise<{ master?: EventRecord; overrides: EventRecord[] }> {
  const master = await db.getEvent(grant.id, calendar.id, id);
  return { ...(master ? { master } : {}), overrides: master && isSeries(master) ? await db.overridesOf(master) : [] };
}

export interface ObjectsOutcome {
  changed: number;
  deleted: number;
  /** Objects the server holds that could not be read (malformed iCalendar): skipped, the rest stored. */
  skipped: { url: string; reason: string }[];
}

/** Objects stored side by side: each is a transaction of its own, and a batch's are independent. */
const STORE_CONCURRENCY = 8;

/** Fetches and stores changed objects, removes deleted ones. */
export async function applyObjects(
  grant: GrantRecord,
  client: DavClient,
  calendar: CalendarRecord & { href: string },
  changed: readonly string[],
  deleted: readonly string[],
  quiet: boolean,
): Promise<ObjectsOutcome> {
  const outcome: ObjectsOutcome = { changed: 0, deleted: 0, skipped: [] };
  for (let i = 0; i < changed.length; i += FETCH_BATCH) {
    const objects = await client.multiget(calendar.href, changed.slice(i, i + FETCH_BATCH), 'calendar');
    // What the table holds of the batch, in one read (and the overrides of the series among it).
    const stored = new Map(
      (
        await db.getEvents(
          grant.id,
          calendar.id,
          objects.map((o) => eventIdOfHref(calendar, o.url)),
        )
      ).map((r) => [r.id, r]),
    );
    await inPool(objects, STORE_CONCURRENCY, async (object) => {
      const master = stored.get(eventIdOfHref(calendar, object.url));
      if (master?.etag && master.etag === object.etag) return;
      const previous = {
        ...(master ? { master } : {}),
        overrides: master && isSeries(master) ? await db.overridesOf(master) : [],
      };
      let next: { master: EventRecord; overrides: EventRecord[] };
      try {
        next = recordsOfObject(grant, calendar, object, previous.master);
      } catch (error) {
        if (!(error instanceof IcsError) && !(error instanceof RangeError) && !(error instanceof TypeError))
          throw error;
        outcome.skipped.push({ url: object.url, reason: (error as Error).message });
        log.warn('calendar object skipped', { href: object.url, reason: (error as Error).message });
        return;
      }
      await storeObject(grant, previous, next, quiet);
      outcome.changed++;
    });
  }
  for (const url of deleted) {
    const previous = await storedSeries(grant, calendar, eventIdOfHref(calendar, url));
    if (!previous.master) continue;
    const outbox = quiet ? [] : [notification(grant, 'event.deleted', { ...previous.master, status: 'cancelled' })];
    if (
      await db.writeEvents({ remove: [previous.master, ...previous.overrides.slice(0, OVERRIDES_PER_WRITE)] }, outbox)
    )
      outcome.deleted++;
    if (previous.overrides.length > OVERRIDES_PER_WRITE)
      await db.purgeEvents(previous.overrides.slice(OVERRIDES_PER_WRITE));
  }
  return outcome;
}

/** Every series and single event of a calendar that lives on the server: URL → ETag. */
async function storedObjects(grant: GrantRecord, calendar: CalendarRecord): Promise<Map<string, string | undefined>> {
  const found = new Map<string, string | undefined>();
  let after: Parameters<typeof db.scanEvents>[2]['after'];
  do {
    const page = await db.scanEvents(grant.id, calendar.id, {
      limit: 500,
      ...(after ? { after } : {}),
      keep: (r) => !r.master_event_id && r.href !== undefined,
    });
    for (const r of page.items) found.set(r.href!, r.etag);
    after = page.last;
  } while (after);
  return found;
}

/**
 * One calendar's changes since `token` (shared/dav/changes.ts). A full answer (first sync, a token
 * the server no longer knows, no sync-collection) is compared by ETag with what is stored: only what
 * differs is fetched, and what the table has and the server not is removed.
 */
export async function syncCalendarObjects(
  grant: GrantRecord,
  client: DavClient,
  calendar: CalendarRecord & { href: string },
  token: string | undefined,
  quiet: boolean,
): Promise<ObjectsOutcome & { token?: string }> {
  const changes = await collectionChanges(client, calendar.href, token);
  let changed = [...changes.changed.keys()];
  let deleted = [...changes.deleted];
  if (changes.full) {
    const stored = await storedObjects(grant, calendar);
    changed = changed.filter((url) => !changes.changed.get(url) || stored.get(url) !== changes.changed.get(url));
    deleted = [...stored.keys()].filter((url) => !changes.changed.has(url));
  }
  const outcome = await applyObjects(grant, client, calendar, changed, deleted, quiet);
  return { ...outcome, ...(changes.token !== undefined ? { token: changes.token } : {}) };
}

// ---- writes through the API: the server first ------------------------------------------------

const conflict = () =>
  new ConflictError(
    'The event was changed on the calendar server by another client; it has been read again: fetch it and retry',
  );

/** Writes each touched series to the server, conditional on its ETag; answers the change with the new places. */
async function writeToServer(
  grant: GrantRecord,
  calendar: CalendarRecord,
  change: db.EventChange,
): Promise<db.EventChange> {
  if (!calendar.href) throw new InvalidRequestError(`Calendar '${calendar.id}' is not on the grant's CalDAV server`);
  const href = calendar.href;
  const client = await davClientOf(grant);
  const reread = async (url: string) => {
    await applyObjects(grant, client, { ...calendar, href }, [url], [], false).catch((error: unknown) =>
      log.warn('re-read failed', { href: url, reason: (error as Error).message }),
    );
  };
  const removedMasters = (change.remove ?? []).filter((r) => !r.master_event_id);
  const removedIds = new Set((change.remove ?? []).map((r) => r.id));
  try {
    for (const master of removedMasters) {
      if (!master.href) continue;
      try {
        await client.deleteObject(master.href, master.etag);
      } catch (error) {
        if (error instanceof DavError && error.kind === 'not_found') continue;
        if (error instanceof PreconditionFailed) {
          await reread(master.href);
          throw conflict();
        }
        throw error;
      }
    }
    const puts = [...(change.put ?? [])];
    const masters = new Set(puts.map((p) => p.next.master_event_id ?? p.next.id));
    for (const masterId of masters) {
      if (removedIds.has(masterId)) continue;
      const index = puts.findIndex((p) => p.next.id === masterId);
      if (index < 0) continue;
      const master = puts[index]!.next;
      const stored = isSeries(master)
        ? (await db.overridesOf(master)).filter((o) => o.series_revision === (master.pattern_revision ?? 0))
        : [];
      const overrides = new Map(stored.filter((o) => !removedIds.has(o.id)).map((o) => [o.id, o]));
      for (const p of puts) if (p.next.master_event_id === masterId) overrides.set(p.next.id, p.next);
      const text = buildCalendar(
        'PUBLISH',
        [master, ...[...overrides.values()].filter((o) => o.series_revision === (master.pattern_revision ?? 0))].map(
          (r) => icsEventOf(r, { master }),
        ),
        { stored: true },
      );
      const url = master.href ?? new URL(`${encodeURIComponent(master.id)}.ics`, href).href;
      let etag: string | undefined;
      try {
        etag = await client.putObject(
          url,
          text,
          CALENDAR_TYPE,
          master.href && master.etag ? { etag: master.etag } : { create: true },
        );
      } catch (error) {
        if (!(error instanceof PreconditionFailed)) throw error;
        // A create that finds its object: an earlier attempt with the same idempotency key wrote it.
        if (!master.href) etag = (await client.getObject(url)).etag;
        else {
          await reread(url);
          throw conflict();
        }
      }
      puts[index] = { ...puts[index]!, next: { ...master, href: url, ...(etag ? { etag } : {}) } };
    }
    return { ...change, put: puts };
  } catch (error) {
    if (error instanceof ConflictError) throw error;
    throw davRequestError(error, "The grant's CalDAV server");
  }
}

export const calDavEventServer: EventServer = {
  newEventId: (calendar, idempotencyKey) =>
    idempotencyKey !== undefined
      ? derivedId('event', 0, `${calendar.grant_id}\n${calendar.id}\n${idempotencyKey}`)
      : newId('event'),
  write: writeToServer,
};

export const calDavEvents: EventsProvider = {
  list: ready(agent.listEvents),
  get: ready(agent.getEvent),
  ics: ready(async (grant, eventId, calendarId, method = 'PUBLISH') => {
    const { record, overrides } = await agent.eventRecords(grant, eventId, calendarId);
    return buildCalendar(
      method,
      [record, ...overrides].map((r) => icsEventOf(r)),
    );
  }),
  create: ready((grant, calendarId, body, notify, idempotencyKey) =>
    agent.createEvent(grant, calendarId, body, notify, idempotencyKey, calDavEventServer),
  ),
  update: ready((grant, eventId, calendarId, body, notify) =>
    agent.updateEvent(grant, eventId, calendarId, body, notify, calDavEventServer),
  ),
  delete: ready((grant, eventId, calendarId, notify) =>
    agent.deleteEvent(grant, eventId, calendarId, notify, calDavEventServer),
  ),
  sendRsvp: ready((grant, eventId, calendarId, body) =>
    agent.sendRsvp(grant, eventId, calendarId, body, calDavEventServer),
  ),
};
