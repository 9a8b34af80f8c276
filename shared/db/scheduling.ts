import { DeleteCommand, GetCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo, type TransactItem } from '#shared/aws/dynamodb';
import type { CreateConfigurationBody } from '#schemas/scheduling';
import {
  appConfigurationKey,
  bookedDayKey,
  bookingKey,
  configurationKey,
  configurationSlugKey,
  configurationsOfApplication,
  itemAttributes,
  sessionKey,
} from '#shared/db/keys';
import { outboxItems, type OutboxEntry } from '#shared/db/outbox';
import { queryAll } from '#shared/db/records';
import { TransactionConditionError, transactWrite, type NamedTransactItem } from '#shared/db/transact';
import type { ApplicationId, BookingId, CalendarId, ConfigurationId, GrantId } from '#shared/ids';

/**
 * The scheduler's records: configurations (one item by ID for public lookups, a copy in the
 * application's partition for lists, a slug reservation unique across applications), sessions
 * (by token hash, TTL), bookings, and each organizer's booked time per UTC day: the slot locks that
 * make double booking impossible (a booking is written only with a conditional update of every day
 * it touches).
 */

export type ConfigurationFields = Omit<CreateConfigurationBody, 'slug' | 'requires_session_auth' | 'scheduler'> & {
  scheduler: NonNullable<CreateConfigurationBody['scheduler']>;
};

export interface ConfigurationRecord extends ConfigurationFields {
  id: ConfigurationId;
  application_id: ApplicationId;
  /** The organizer's grant. */
  grant_id: GrantId;
  slug?: string;
  requires_session_auth: boolean;
  /**
   * The credential of the request that last saved the configuration: an access token can name its
   * own grant only, so a configuration it saved reads only that grant's calendars (shared/scheduling/access.ts,
   * authorityOf). Absent on records saved before it was kept: the API key.
   */
  saved_with?: 'api_key' | 'access_token';
  created_at: number;
  updated_at: number;
  version: number;
}

export interface SessionRecord {
  configuration_id: ConfigurationId;
  application_id: ApplicationId;
  /** Unix seconds; also the item's TTL. */
  expires_at: number;
}

export type BookingStatus = 'booked' | 'pending' | 'cancelled';

/**
 * Where a booking's last change stands on the organizer's calendar: `pending` until its
 * `booking-event` job has done the provider step, `synced` once the event reflects it, `failed` when
 * the provider refused for good (`event_error` says why). Records older than this field are synced.
 */
export type EventStatus = 'pending' | 'synced' | 'failed';
/** The provider step a booking's change needs: create, move, confirm (tentative → confirmed) or cancel (delete) its event. */
export type EventStep = 'create' | 'move' | 'confirm' | 'cancel';

export interface BookingRecord {
  id: BookingId;
  application_id: ApplicationId;
  configuration_id: ConfigurationId;
  /** The organizer's grant and the calendar the event is on. */
  grant_id: GrantId;
  calendar_id: CalendarId | string;
  event_id: string;
  status: BookingStatus;
  start: number;
  end: number;
  title: string;
  description?: string;
  location?: string;
  organizer: { email: string; name?: string };
  guest: { email: string; name: string };
  additional_guests: { email: string; name?: string }[];
  participants: { email: string }[];
  timezone: string;
  email_language: string;
  additional_fields: Record<string, unknown>;
  /** SHA-256 of the salt in the booking reference (the salt itself is only in the reference). */
  salt_hash: string;
  /** SHA-256 of the salt in the organizer's confirmation link (pending bookings): only it confirms. */
  confirm_salt_hash?: string;
  cancellation_reason?: string;
  event_status?: EventStatus;
  /** The step of the last change (what `event_status` is about). */
  event_step?: EventStep;
  /** Why the provider step failed (`event_status: 'failed'`). */
  event_error?: string;
  created_at: number;
  updated_at: number;
  version: number;
}

export class SlugTakenError extends Error {}

// ---- configurations --------------------------------------------------------------------------

const CONFIG = 'scheduling_configuration';
const readConfig = (item: Record<string, unknown>) => itemAttributes<ConfigurationRecord>(item, 'entity');

const configPuts = (record: ConfigurationRecord, condition: 'new' | number): NamedTransactItem[] => {
  const cond =
    condition === 'new'
      ? { ConditionExpression: 'attribute_not_exists(pk)' }
      : { ConditionExpression: 'version = :v', ExpressionAttributeValues: { ':v': condition } };
  return [
    [
      'configuration',
      { Put: { TableName: TABLE_NAME, Item: { ...configurationKey(record.id), entity: CONFIG, ...record }, ...cond } },
    ],
    [
      'configuration_copy',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: { ...appConfigurationKey(record.application_id, record.id), entity: CONFIG, ...record },
        },
      },
    ],
  ];
};
/** Reserves a slug across the deployment, in the configuration's transaction: fails when any configuration of any application holds it. */
const slugReservation = (record: ConfigurationRecord, slug: string): NamedTransactItem => [
  'slug',
  {
    Put: {
      TableName: TABLE_NAME,
      Item: {
        ...configurationSlugKey(slug),
        entity: 'configuration_slug',
        application_id: record.application_id,
        configuration_id: record.id,
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  },
];
/** Gives a slug back when its configuration lets it go; never another configuration's reservation. */
const slugRelease = (record: ConfigurationRecord, slug: string): NamedTransactItem => [
  'old_slug',
  {
    Delete: {
      TableName: TABLE_NAME,
      Key: configurationSlugKey(slug),
      ConditionExpression: 'attribute_not_exists(pk) OR configuration_id = :id',
      ExpressionAttributeValues: { ':id': record.id },
    },
  },
];

async function writeConfig(items: NamedTransactItem[]): Promise<boolean> {
  try {
    await transactWrite(items);
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError) {
      if (error.failed.includes('slug')) throw new SlugTakenError();
      return false;
    }
    throw error;
  }
}

export async function insertConfiguration(
  record: ConfigurationRecord,
  outbox: readonly OutboxEntry[] = [],
): Promise<void> {
  await writeConfig([
    ...configPuts(record, 'new'),
    ...(record.slug ? [slugReservation(record, record.slug)] : []),
    ...outboxItems(outbox),
  ]);
}

/** Replaces a configuration with its next version; false when another change came first. Throws SlugTakenError. */
export async function replaceConfiguration(current: ConfigurationRecord, next: ConfigurationRecord): Promise<boolean> {
  const changes =
    current.slug === next.slug
      ? []
      : [
          ...(next.slug ? [slugReservation(next, next.slug)] : []),
          ...(current.slug ? [slugRelease(current, current.slug)] : []),
        ];
  return writeConfig([...configPuts(next, current.version), ...changes]);
}

/**
 * Deletes a configuration as read (its version) with its slug reservation; false when another change
 * came first (a slug it moved to would otherwise stay reserved by a configuration that is gone).
 */
export async function deleteConfiguration(record: ConfigurationRecord): Promise<boolean> {
  try {
    await transactWrite([
      [
        'configuration',
        {
          Delete: {
            TableName: TABLE_NAME,
            Key: configurationKey(record.id),
            ConditionExpression: 'version = :v',
            ExpressionAttributeValues: { ':v': record.version },
          },
        },
      ],
      [
        'configuration_copy',
        { Delete: { TableName: TABLE_NAME, Key: appConfigurationKey(record.application_id, record.id) } },
      ],
      ...(record.slug ? [slugRelease(record, record.slug)] : []),
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError) return false;
    throw error;
  }
}

// ---- slugs of the per-application scheme ----------------------------------------------------------

/**
 * A slug item written before slugs were unique across applications: `app#<app>` / `slug#<slug>`
 * (the application's reservation) and `slug#<slug>` / `<app>` (who used the slug).
 */
export interface LegacySlugItem {
  key: { pk: string; sk: string };
  slug: string;
  application_id: ApplicationId;
  configuration_id: ConfigurationId;
}

/**
 * Every slug item of the per-application scheme, by Scan: for the one-off upgrade
 * (`npm run admin -- migrate-slugs`), never on a request path.
 */
export async function legacySlugItems(): Promise<LegacySlugItem[]> {
  const found: LegacySlugItem[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.send(
      new ScanCommand({
        TableName: TABLE_NAME,
        FilterExpression: '(entity = :reservation AND begins_with(pk, :app)) OR entity = :owner',
        ExpressionAttributeValues: {
          ':reservation': 'configuration_slug',
          ':app': 'app#',
          ':owner': 'configuration_slug_owner',
        },
        ExclusiveStartKey: start,
        ConsistentRead: true,
      }),
    );
    for (const item of page.Items ?? []) {
      const pk = String(item.pk);
      const sk = String(item.sk);
      const [slug, app] = pk.startsWith('app#')
        ? [sk.slice('slug#'.length), pk.slice('app#'.length)]
        : [pk.slice('slug#'.length), sk];
      found.push({
        key: { pk, sk },
        slug,
        application_id: app as ApplicationId,
        configuration_id: item.configuration_id as ConfigurationId,
      });
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return found;
}

/**
 * Moves one slug to the deployment-wide scheme in one transaction: `keeper` holds the slug (unless a
 * configuration already does), each of `others` (configurations of other applications that used the
 * same slug) loses it, and the old items go. False when something changed meanwhile (read again).
 */
export async function adoptLegacySlug(
  slug: string,
  keeper: ConfigurationRecord | undefined,
  others: readonly ConfigurationRecord[],
  legacy: readonly LegacySlugItem[],
  now: number,
): Promise<boolean> {
  const items: NamedTransactItem[] = [];
  if (keeper) {
    items.push([
      'slug',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: {
            ...configurationSlugKey(slug),
            entity: 'configuration_slug',
            application_id: keeper.application_id,
            configuration_id: keeper.id,
          },
          ConditionExpression: 'attribute_not_exists(pk) OR configuration_id = :id',
          ExpressionAttributeValues: { ':id': keeper.id },
        },
      },
    ]);
  }
  for (const record of others) {
    const { slug: _dropped, ...rest } = record;
    items.push(
      ...configPuts({ ...rest, updated_at: now, version: record.version + 1 }, record.version).map(
        ([name, item]) => [`${name}_${record.id}`, item] as NamedTransactItem,
      ),
    );
  }
  legacy.forEach((item, i) => items.push([`legacy_${i}`, { Delete: { TableName: TABLE_NAME, Key: item.key } }]));
  try {
    // DynamoDB transactions take at most 100 items: a slug shared by more than ~30 applications goes in parts.
    for (let i = 0; i < items.length; i += 100) await transactWrite(items.slice(i, i + 100));
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError) return false;
    throw error;
  }
}

/** The configuration holding a slug, and its application (slugs are unique across the deployment). */
export async function slugOwner(
  slug: string,
): Promise<{ application_id: ApplicationId; configuration_id: ConfigurationId } | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: configurationSlugKey(slug), ConsistentRead: true }),
  );
  return Item
    ? {
        application_id: Item.application_id as ApplicationId,
        configuration_id: Item.configuration_id as ConfigurationId,
      }
    : undefined;
}

export async function getConfiguration(id: ConfigurationId): Promise<ConfigurationRecord | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: configurationKey(id), ConsistentRead: true }),
  );
  return Item ? readConfig(Item) : undefined;
}

/** Every configuration of an application, oldest first (optionally one organizer's). */
export async function listConfigurations(appId: ApplicationId, grantId?: GrantId): Promise<ConfigurationRecord[]> {
  const { pk, skPrefix } = configurationsOfApplication(appId);
  const { items } = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': pk, ':prefix': skPrefix, ...(grantId ? { ':gid': grantId } : {}) },
    ...(grantId ? { FilterExpression: 'grant_id = :gid' } : {}),
  });
  return items.map(readConfig);
}

// ---- sessions --------------------------------------------------------------------------------

export async function putSession(tokenHash: string, record: SessionRecord): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: TABLE_NAME,
      Item: { ...sessionKey(tokenHash), entity: 'scheduling_session', ...record },
    }),
  );
}

export async function getSession(tokenHash: string): Promise<SessionRecord | undefined> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: sessionKey(tokenHash) }));
  return Item ? itemAttributes<SessionRecord>(Item, 'entity') : undefined;
}

/** Deletes a session; false when there was none. */
export async function deleteSession(tokenHash: string): Promise<boolean> {
  const { Attributes } = await dynamo.send(
    new DeleteCommand({ TableName: TABLE_NAME, Key: sessionKey(tokenHash), ReturnValues: 'ALL_OLD' }),
  );
  return Attributes !== undefined;
}

// ---- bookings and slot locks -----------------------------------------------------------------

/** One UTC day of an organizer's booked time: booking ID → [start, end), and a version for conditional writes. */
export interface BookedDay {
  day: string;
  slots: Record<string, [number, number]>;
  version: number;
}

const DAY = 86_400;
/** The UTC days `[start, end)` touches. */
export function daysOf(start: number, end: number): string[] {
  const out: string[] = [];
  for (let d = Math.floor(start / DAY); d <= Math.floor((Math.max(end, start + 1) - 1) / DAY); d++)
    out.push(new Date(d * DAY * 1000).toISOString().slice(0, 10));
  return out;
}

export async function bookedDays(grantId: GrantId, days: readonly string[]): Promise<BookedDay[]> {
  return Promise.all(
    days.map(async (day) => {
      const { Item } = await dynamo.send(
        new GetCommand({ TableName: TABLE_NAME, Key: bookedDayKey(grantId, day), ConsistentRead: true }),
      );
      return { day, slots: (Item?.slots as BookedDay['slots']) ?? {}, version: (Item?.version as number) ?? 0 };
    }),
  );
}

/**
 * Takes `[start, end)` for a booking on one day, conditional on the version read: a new day item is
 * created with its map, an existing one gets the entry added (one action per item per transaction).
 */
function lockDay(
  grantId: GrantId,
  day: BookedDay,
  bookingId: BookingId,
  start: number,
  end: number,
): NamedTransactItem {
  const key = bookedDayKey(grantId, day.day);
  // A day's locks matter until the day is over: the item expires a week later (TTL).
  const expires = Date.parse(`${day.day}T00:00:00Z`) / 1000 + 8 * DAY;
  const update: NonNullable<TransactItem['Update']> =
    day.version === 0
      ? {
          TableName: TABLE_NAME,
          Key: key,
          UpdateExpression: 'SET slots = :slots, version = :next, entity = :entity, expires_at = :expires',
          ConditionExpression: 'attribute_not_exists(pk)',
          ExpressionAttributeValues: {
            ':slots': { [bookingId]: [start, end] },
            ':next': 1,
            ':entity': 'booked_day',
            ':expires': expires,
          },
        }
      : {
          TableName: TABLE_NAME,
          Key: key,
          UpdateExpression: 'SET slots.#b = :slot, version = :next',
          ConditionExpression: 'version = :v',
          ExpressionAttributeNames: { '#b': bookingId },
          ExpressionAttributeValues: { ':slot': [start, end], ':next': day.version + 1, ':v': day.version },
        };
  return [`lock:${day.day}`, { Update: update }];
}

/** Gives a booking's time back on each day it held (unconditionally: releasing never conflicts). */
const releaseDay = (grantId: GrantId, day: string, bookingId: BookingId): NamedTransactItem => [
  `release:${day}`,
  {
    Update: {
      TableName: TABLE_NAME,
      Key: bookedDayKey(grantId, day),
      UpdateExpression: 'REMOVE slots.#b SET version = if_not_exists(version, :zero) + :one',
      ExpressionAttributeNames: { '#b': bookingId },
      ExpressionAttributeValues: { ':zero': 0, ':one': 1 },
    },
  },
];

const bookingPut = (record: BookingRecord, condition: 'new' | number): NamedTransactItem => [
  'booking',
  {
    Put: {
      TableName: TABLE_NAME,
      Item: { ...bookingKey(record.id), entity: 'booking', ...record },
      ...(condition === 'new'
        ? { ConditionExpression: 'attribute_not_exists(pk)' }
        : { ConditionExpression: 'version = :v', ExpressionAttributeValues: { ':v': condition } }),
    },
  },
];

/**
 * Writes a new booking (or moves one, `previous` its current version) together with the slot locks
 * of every day its time touches, each conditional on the version read in `days`, the locks of days
 * it no longer touches released, and `outbox` (its booking-event job): false when another booking
 * changed one of those days first (read again, check again, retry).
 */
export async function writeBookingWithLocks(
  record: BookingRecord,
  days: readonly BookedDay[],
  outbox: readonly OutboxEntry[],
  previous?: BookingRecord,
): Promise<boolean> {
  const items: NamedTransactItem[] = [bookingPut(record, previous ? previous.version : 'new')];
  for (const day of days) items.push(lockDay(record.grant_id, day, record.id, record.start, record.end));
  if (previous)
    for (const day of daysOf(previous.start, previous.end))
      if (!days.some((d) => d.day === day)) items.push(releaseDay(previous.grant_id, day, previous.id));
  try {
    await transactWrite([...items, ...outboxItems(outbox)]);
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError) return false;
    throw error;
  }
}

/**
 * Saves a booking's next version (status, event, reason) with `outbox`, conditional on the version
 * read, releasing its slot locks when it becomes cancelled (a cancel, or a create the provider
 * refused). False on a lost race.
 */
export async function updateBooking(
  current: BookingRecord,
  next: BookingRecord,
  outbox: readonly OutboxEntry[],
): Promise<boolean> {
  const release =
    next.status === 'cancelled' && current.status !== 'cancelled'
      ? daysOf(current.start, current.end).map((day) => releaseDay(current.grant_id, day, current.id))
      : [];
  try {
    await transactWrite([bookingPut(next, current.version), ...release, ...outboxItems(outbox)]);
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError) return false;
    throw error;
  }
}

export async function getBooking(id: BookingId): Promise<BookingRecord | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: bookingKey(id), ConsistentRead: true }),
  );
  return Item ? itemAttributes<BookingRecord>(Item, 'entity') : undefined;
}

/** Commits outbox entries on their own (a reminder's email or notification). */
export async function commitOutbox(outbox: readonly OutboxEntry[]): Promise<void> {
  if (outbox.length) await transactWrite(outboxItems(outbox));
}
