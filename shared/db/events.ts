import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo, type TransactItem } from '#shared/aws/dynamodb';
import type { EventStatus, Participant, Person, When } from '#shared/calendar/types';
import { batchGet, batchWrite, deleteRequests } from '#shared/db/batch';
import {
  eventKey,
  eventsOfCalendar,
  icalUidKey,
  itemAttributes,
  windowKey,
  windowPartition,
  windowSortKey,
  type Key,
} from '#shared/db/keys';
import { outboxItems, type OutboxEntry } from '#shared/db/outbox';
import type { StartKey } from '#shared/db/records';
import { TransactionConditionError, transactWrite } from '#shared/db/transact';
import type { CalendarId, GrantId } from '#shared/ids';

/**
 * Events of Agent Account calendars.
 *
 * The event item lives in its calendar's partition under its ID; an override of one occurrence of a
 * series is an event whose ID is `<master ID>_<occurrence key>`, so it sorts right after its series.
 *
 * The window index makes a time-window query cost what the window holds, not what the calendar
 * holds. Every event is copied into the time buckets its span touches, at the finest of three bucket
 * sizes (1 week, 16 weeks, 256 weeks) where that takes at most four copies; spans longer than that,
 * and open-ended series, go to one `long` partition that every window query reads. A series' span
 * is its first start to its last end. A window query reads, per level, the one or two buckets the
 * window touches plus the long partition: about seven small queries side by side, whatever the
 * calendar's size. Copies are whole records, so a window query needs no second read.
 */
export interface EventRecord {
  /** `evt_…`, or `evt_…_<occurrence key>` for an override of one occurrence. */
  id: string;
  grant_id: GrantId;
  calendar_id: CalendarId;
  ical_uid: string;
  /** iCalendar SEQUENCE: bumped by every change participants are told about. */
  sequence: number;
  title?: string;
  description?: string;
  location?: string;
  when: When;
  /** The zone the event's times are read in: its start zone, else its calendar's zone when written. */
  zone: string;
  /** Instants of `when` (the first occurrence for a series). */
  start: number;
  end: number;
  /** Series only: RRULE/EXDATE/RDATE lines, canonical. */
  recurrence?: string[];
  /** Series only: the end of its last occurrence; null when open-ended. */
  last_end?: number | null;
  /** Series only: the keys of occurrences that have an override, and the pattern's revision. */
  exceptions?: string[];
  pattern_revision?: number;
  /** Overrides only. */
  master_event_id?: string;
  occurrence_key?: string;
  original_start_time?: number;
  /** Overrides only: the master's pattern revision they belong to (stale ones are ignored, then purged). */
  series_revision?: number;
  status: EventStatus;
  busy: boolean;
  visibility?: 'default' | 'public' | 'private';
  hide_participants: boolean;
  capacity?: number;
  organizer: Person;
  creator: Person;
  participants: Participant[];
  resources: Person[];
  conferencing?: { provider: string; details: Record<string, unknown> };
  reminders?: { use_default: boolean; overrides: { reminder_minutes: number; reminder_method: string }[] | null };
  metadata: Record<string, string>;
  /** `invitation` when it arrived by iMIP from another organizer: read-only but for the RSVP. */
  origin?: 'invitation';
  /** A calendar kept on a CalDAV server: where the series or single event is (its object's URL), and its ETag as last written or read. */
  href?: string;
  etag?: string;
  created_at: number;
  updated_at: number;
  version: number;
}

const ENTITY = 'event';
const WINDOW_ENTITY = 'event_window';
const WEEK = 7 * 86_400;
const LEVELS = [WEEK, 16 * WEEK, 256 * WEEK] as const;
const MAX_COPIES = 4;
/** Stands for "no end" in the window index (open-ended series). */
const OPEN_END = 99_999_999_999;

/** The span an event occupies in the index: a series from its first start to its last end. */
function span(record: EventRecord): { start: number; end: number } {
  if (record.recurrence?.length) return { start: record.start, end: record.last_end ?? OPEN_END };
  return { start: record.start, end: Math.max(record.end, record.start + 1) };
}

/** The buckets an event is copied into: the finest level where its span needs at most four. */
export function bucketsOf(record: EventRecord): string[] {
  const { start, end } = span(record);
  if (end < OPEN_END) {
    for (const [level, size] of LEVELS.entries()) {
      const first = Math.floor(start / size);
      const last = Math.floor((end - 1) / size);
      if (last - first < MAX_COPIES) return Array.from({ length: last - first + 1 }, (_, i) => `${level}.${first + i}`);
    }
  }
  return ['long'];
}

/** Every bucket a window [from, to) must read. */
export function bucketsOfWindow(from: number, to: number): string[] {
  const buckets = ['long'];
  for (const [level, size] of LEVELS.entries()) {
    for (let b = Math.floor(from / size); b <= Math.floor((to - 1) / size); b++) buckets.push(`${level}.${b}`);
  }
  return buckets;
}

const item = (record: EventRecord) => ({
  ...eventKey(record.grant_id, record.calendar_id, record.id),
  entity: ENTITY,
  ...record,
});
/** A window copy holds what a listing shows: where the event lives on a CalDAV server (URL, ETag) stays on the event's own item. */
const windowCopies = (record: EventRecord) => {
  const { href: _href, etag: _etag, ...listed } = record;
  return bucketsOf(record).map((bucket) => ({
    ...windowKey(record.grant_id, record.calendar_id, bucket, record.start, record.id),
    entity: WINDOW_ENTITY,
    window_end: span(record).end,
    ...listed,
  }));
};
const windowKeys = (record: EventRecord): Key[] =>
  bucketsOf(record).map((bucket) => windowKey(record.grant_id, record.calendar_id, bucket, record.start, record.id));
const keyString = (key: Key) => `${key.pk}\u0000${key.sk}`;

/** Every item an event is stored as: itself, its window copies and (a master or single event) its UID. */
export function eventItems(record: EventRecord): Record<string, unknown>[] {
  return [
    item(record),
    ...windowCopies(record),
    ...(record.master_event_id
      ? []
      : [{ ...icalUidKey(record.grant_id, record.ical_uid), calendar_id: record.calendar_id, event_id: record.id }]),
  ];
}

const read = (i: Record<string, unknown>) => itemAttributes<EventRecord>(i, 'entity', 'window_end');

export async function getEvent(grantId: GrantId, calendarId: CalendarId, id: string): Promise<EventRecord | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: eventKey(grantId, calendarId, id), ConsistentRead: true }),
  );
  return Item ? read(Item) : undefined;
}

export async function getEvents(
  grantId: GrantId,
  calendarId: CalendarId,
  ids: readonly string[],
): Promise<EventRecord[]> {
  if (!ids.length) return [];
  return (await batchGet(ids.map((id) => eventKey(grantId, calendarId, id)))).map(read);
}

/** Where an iCalendar UID lives in a grant. */
export async function eventByUid(
  grantId: GrantId,
  uid: string,
): Promise<{ calendar_id: CalendarId; event_id: string } | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: icalUidKey(grantId, uid), ConsistentRead: true }),
  );
  return Item ? { calendar_id: Item.calendar_id as CalendarId, event_id: Item.event_id as string } : undefined;
}

/** Thrown by writeEvents when a new event's UID already names an event of the grant (`uniqueUid`). */
export class UidTakenError extends Error {}

/** A change to write in one transaction: events to put (with their previous version, if any) and to delete. */
export interface EventChange {
  put?: { next: EventRecord; current?: EventRecord }[];
  remove?: EventRecord[];
}

/**
 * Commits a change with its notifications. Each put is conditional on the version it replaces (or
 * on absence), each removal on the version read; the window copies of the old and new versions are
 * swapped in the same transaction, and the UID item of a master or single event follows it. Returns
 * false when another change came first.
 */
export async function writeEvents(
  change: EventChange,
  outbox: readonly OutboxEntry[],
  options: { uniqueUid?: boolean } = {},
): Promise<boolean> {
  const items: [string, TransactItem][] = [];
  // `uniqueUid`: a new event's UID item is claimed on absence, so two creates with one UID (an idempotency key) store one event.
  const claims: Record<string, unknown>[] = [];
  const deletes = new Map<string, Key>();
  const puts = new Map<string, Record<string, unknown>>();
  for (const record of change.remove ?? []) {
    items.push([
      `event:${record.id}`,
      {
        Delete: {
          TableName: TABLE_NAME,
          Key: eventKey(record.grant_id, record.calendar_id, record.id),
          ConditionExpression: 'version = :v',
          ExpressionAttributeValues: { ':v': record.version },
        },
      },
    ]);
    for (const key of windowKeys(record)) deletes.set(keyString(key), key);
    if (!record.master_event_id)
      deletes.set(
        keyString(icalUidKey(record.grant_id, record.ical_uid)),
        icalUidKey(record.grant_id, record.ical_uid),
      );
  }
  for (const { next, current } of change.put ?? []) {
    items.push([
      `event:${next.id}`,
      current
        ? {
            Put: {
              TableName: TABLE_NAME,
              Item: item(next),
              ConditionExpression: 'version = :v',
              ExpressionAttributeValues: { ':v': current.version },
            },
          }
        : { Put: { TableName: TABLE_NAME, Item: item(next), ConditionExpression: 'attribute_not_exists(pk)' } },
    ]);
    if (current) for (const key of windowKeys(current)) deletes.set(keyString(key), key);
    for (const copy of windowCopies(next)) {
      deletes.delete(keyString(copy));
      puts.set(keyString(copy), copy);
    }
    if (!next.master_event_id && current?.ical_uid !== next.ical_uid) {
      const uid = { ...icalUidKey(next.grant_id, next.ical_uid), calendar_id: next.calendar_id, event_id: next.id };
      deletes.delete(keyString(uid));
      if (options.uniqueUid && !current) claims.push(uid);
      else puts.set(keyString(uid), uid);
    }
  }
  for (const [i, key] of [...deletes.values()].entries())
    items.push([`drop:${i}`, { Delete: { TableName: TABLE_NAME, Key: key } }]);
  for (const [i, copy] of [...puts.values()].entries())
    items.push([`copy:${i}`, { Put: { TableName: TABLE_NAME, Item: copy } }]);
  for (const [i, uid] of claims.entries())
    items.push([
      `uid:${i}`,
      { Put: { TableName: TABLE_NAME, Item: uid, ConditionExpression: 'attribute_not_exists(pk)' } },
    ]);
  try {
    await transactWrite([...items, ...outboxItems(outbox)]);
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError && claims.some((_, i) => error.has(`uid:${i}`)))
      throw new UidTakenError();
    if (
      error instanceof TransactionConditionError &&
      items.some(([name]) => name.startsWith('event:') && error.has(name))
    )
      return false;
    throw error;
  }
}

/** Removes events outside a transaction (stale overrides, a deleted calendar's events): idempotent. */
export async function purgeEvents(records: readonly EventRecord[]): Promise<void> {
  const keys = new Map<string, Key>();
  for (const record of records) {
    for (const key of [eventKey(record.grant_id, record.calendar_id, record.id), ...windowKeys(record)])
      keys.set(keyString(key), key);
    if (!record.master_event_id)
      keys.set(keyString(icalUidKey(record.grant_id, record.ical_uid)), icalUidKey(record.grant_id, record.ical_uid));
  }
  await batchWrite(deleteRequests([...keys.values()]));
}

/**
 * Events whose indexed span overlaps [from, to): the window's buckets read side by side, each a key
 * range (start before `to`) filtered on the span's end. A series appears once, as its master. The
 * records are the window copies: without a CalDAV event's URL and ETag (getEvent has them).
 */
export async function eventsInWindow(
  grantId: GrantId,
  calendarId: CalendarId,
  from: number,
  to: number,
): Promise<EventRecord[]>;
/** The same, reading only `fields` of each event (and its ID): less to read and decode when only times matter. */
export async function eventsInWindow<K extends keyof EventRecord>(
  grantId: GrantId,
  calendarId: CalendarId,
  from: number,
  to: number,
  fields: readonly K[],
): Promise<Pick<EventRecord, K | 'id'>[]>;
export async function eventsInWindow(
  grantId: GrantId,
  calendarId: CalendarId,
  from: number,
  to: number,
  fields?: readonly (keyof EventRecord)[],
): Promise<Partial<EventRecord>[]> {
  const names = fields ? [...new Set<string>(['id', ...fields])] : undefined;
  const projection = names
    ? {
        ProjectionExpression: names.map((_, i) => `#f${i}`).join(', '),
        ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#f${i}`, n])),
      }
    : {};
  const pages = await Promise.all(
    bucketsOfWindow(from, to).map(async (bucket) => {
      const found: Partial<EventRecord>[] = [];
      let startKey: StartKey | undefined;
      do {
        const out = await dynamo.send(
          new QueryCommand({
            TableName: TABLE_NAME,
            KeyConditionExpression: 'pk = :pk AND sk < :to',
            FilterExpression: 'window_end > :from',
            ExpressionAttributeValues: {
              ':pk': windowPartition(grantId, calendarId, bucket),
              ':to': windowSortKey(to, ''),
              ':from': from,
            },
            ExclusiveStartKey: startKey,
            ...projection,
          }),
        );
        for (const i of out.Items ?? []) found.push(read(i));
        startKey = out.LastEvaluatedKey as StartKey | undefined;
      } while (startKey);
      return found;
    }),
  );
  const byId = new Map<string, Partial<EventRecord>>();
  for (const record of pages.flat()) byId.set(record.id!, record);
  return [...byId.values()];
}

/**
 * One page of a calendar's events in ID order (creation order), filtered in memory by `keep`:
 * pages of the partition are read until `limit` events matched and one more is known to match (or
 * the partition ends). The cursor is the key of the last event returned, so the next page
 * continues right after it; there is none when no event follows.
 */
export async function scanEvents(
  grantId: GrantId,
  calendarId: CalendarId,
  options: { limit: number; after?: StartKey; prefix?: string; keep: (record: EventRecord) => boolean },
): Promise<{ items: EventRecord[]; last?: StartKey }> {
  const items: EventRecord[] = [];
  let startKey = options.after;
  const pk = eventsOfCalendar(grantId, calendarId);
  for (;;) {
    const out = await dynamo.send(
      new QueryCommand({
        TableName: TABLE_NAME,
        KeyConditionExpression: options.prefix !== undefined ? 'pk = :pk AND begins_with(sk, :prefix)' : 'pk = :pk',
        ExpressionAttributeValues: {
          ':pk': pk,
          ...(options.prefix !== undefined ? { ':prefix': options.prefix } : {}),
        },
        ExclusiveStartKey: startKey,
        Limit: Math.max(options.limit * 2, 50),
        ConsistentRead: true,
      }),
    );
    for (const raw of out.Items ?? []) {
      const record = read(raw);
      if (!options.keep(record)) continue;
      // A cursor only when one more event matches: the last page carries none (spec: next_cursor
      // is present only when more results exist).
      if (items.length === options.limit) return { items, last: { pk, sk: items.at(-1)!.id } };
      items.push(record);
    }
    startKey = out.LastEvaluatedKey as StartKey | undefined;
    if (!startKey) return { items };
  }
}

/** Overrides of a series (IDs `<master>_…`). */
export async function overridesOf(master: EventRecord): Promise<EventRecord[]> {
  const all: EventRecord[] = [];
  let after: StartKey | undefined;
  do {
    const page = await scanEvents(master.grant_id, master.calendar_id, {
      limit: 500,
      after,
      prefix: `${master.id}_`,
      keep: () => true,
    });
    all.push(...page.items);
    after = page.last;
  } while (after);
  return all;
}

/** Every event of a calendar, a page at a time (purges). */
export async function eventsPage(grantId: GrantId, calendarId: CalendarId, limit: number): Promise<EventRecord[]> {
  return (await scanEvents(grantId, calendarId, { limit, keep: () => true })).items;
}

/** Deletes a calendar's events a page at a time until none is left or `shouldStop()` (purges). */
export async function purgeCalendarEvents(
  grantId: GrantId,
  calendarId: CalendarId,
  shouldStop: () => boolean = () => false,
): Promise<'done' | 'more'> {
  for (;;) {
    const page = await eventsPage(grantId, calendarId, 200);
    if (!page.length) return 'done';
    await purgeEvents(page);
    if (shouldStop()) return 'more';
  }
}
