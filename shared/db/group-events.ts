import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { bookingKey, groupEventKey, groupEventsOfConfiguration, itemAttributes } from '#shared/db/keys';
import { outboxItems, type OutboxEntry } from '#shared/db/outbox';
import { queryAll } from '#shared/db/records';
import type { BookingRecord } from '#shared/db/scheduling';
import { TransactionConditionError, transactWrite, type NamedTransactItem } from '#shared/db/transact';
import type { ApplicationId, BookingId, ConfigurationId, GrantId } from '#shared/ids';

/**
 * Group events of group configurations: one item per event of the organizer's calendar offered as
 * a slot, holding its capacity, the seats taken and which booking holds how many. A seat is taken
 * or given back in the booking's own transaction by an update conditional on the seats still free
 * (`seats <= capacity - n`, with the capacity and the time as read): concurrent bookings of the last
 * seats never overbook, and none waits for another's version. A group event being deleted
 * (`status: 'deleting'`) takes no more seats.
 */

export interface GroupEventRecord {
  application_id: ApplicationId;
  configuration_id: ConfigurationId;
  /** The organizer's grant. */
  grant_id: GrantId;
  /** The event's ID on the organizer's calendar (the group event's ID). */
  event_id: string;
  calendar_id: string;
  capacity: number;
  /** Seats held by live bookings; `bookings` says which (booking ID → seats). */
  seats: number;
  bookings: Record<string, number>;
  start: number;
  end: number;
  start_timezone?: string;
  end_timezone?: string;
  title: string;
  description?: string;
  location?: string;
  participants: { email: string; name?: string; is_organizer?: boolean }[];
  conferencing?: Record<string, unknown>;
  status: 'active' | 'deleting';
  created_at: number;
  updated_at: number;
  version: number;
}

/** Why a seat could not be written: the event's seats or time changed, it is going, or the booking changed. */
export type SeatWrite = 'ok' | 'seats' | 'booking' | 'busy';

const ENTITY = 'group_event';
/** Attribute names of a group event's update (several are DynamoDB reserved words). */
const NAMES = {
  '#capacity': 'capacity',
  '#seats': 'seats',
  '#start': 'start',
  '#end': 'end',
  '#status': 'status',
  '#version': 'version',
} as const;
const read = (item: Record<string, unknown>) => itemAttributes<GroupEventRecord>(item, 'entity');

export async function getGroupEvent(configId: ConfigurationId, eventId: string): Promise<GroupEventRecord | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: groupEventKey(configId, eventId), ConsistentRead: true }),
  );
  return Item ? read(Item) : undefined;
}

/** Every group event of a configuration, by start time. */
export async function listGroupEvents(configId: ConfigurationId): Promise<GroupEventRecord[]> {
  const { pk, skPrefix } = groupEventsOfConfiguration(configId);
  const { items } = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': pk, ':prefix': skPrefix },
    ConsistentRead: true,
  });
  return items.map(read).sort((a, b) => a.start - b.start || a.event_id.localeCompare(b.event_id));
}

/** Stores a new group event; false when the configuration already offers that event. */
export async function insertGroupEvent(record: GroupEventRecord): Promise<boolean> {
  return written(() =>
    transactWrite([
      [
        'group_event',
        {
          Put: {
            TableName: TABLE_NAME,
            Item: { ...groupEventKey(record.configuration_id, record.event_id), entity: ENTITY, ...record },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
      ],
    ]),
  );
}

/**
 * Replaces a group event's fields (not its seats) with `next`, conditional on the version read and
 * on the seats taken fitting the new capacity; false when either changed.
 */
export async function updateGroupEvent(
  current: GroupEventRecord,
  next: GroupEventRecord,
  outbox: OutboxEntry[] = [],
): Promise<boolean> {
  return written(() =>
    transactWrite([
      ...outboxItems(outbox),
      [
        'group_event',
        {
          Update: {
            TableName: TABLE_NAME,
            Key: groupEventKey(current.configuration_id, current.event_id),
            UpdateExpression:
              'SET #capacity = :cap, #start = :start, #end = :end, #title = :title, #participants = :participants, ' +
              '#calendar = :calendar, #status = :status, #updated = :now, #version = :next' +
              optional(next, ['start_timezone', 'end_timezone', 'description', 'location', 'conferencing']).set,
            ConditionExpression: '#version = :v AND #seats <= :cap',
            ExpressionAttributeNames: {
              ...NAMES,
              '#title': 'title',
              '#participants': 'participants',
              '#calendar': 'calendar_id',
              '#updated': 'updated_at',
              ...optional(next, ['start_timezone', 'end_timezone', 'description', 'location', 'conferencing']).names,
            },
            ExpressionAttributeValues: {
              ':cap': next.capacity,
              ':start': next.start,
              ':end': next.end,
              ':title': next.title,
              ':participants': next.participants,
              ':calendar': next.calendar_id,
              ':status': next.status,
              ':now': next.updated_at,
              ':next': current.version + 1,
              ':v': current.version,
              ...optional(next, ['start_timezone', 'end_timezone', 'description', 'location', 'conferencing']).values,
            },
          },
        },
      ],
    ]),
  );
}

function optional(r: GroupEventRecord, fields: readonly (keyof GroupEventRecord)[]) {
  const present = fields.filter((f) => r[f] !== undefined);
  return {
    set: present.map((f) => `, #${f} = :${f}`).join(''),
    names: Object.fromEntries(present.map((f) => [`#${f}`, f])),
    values: Object.fromEntries(present.map((f) => [`:${f}`, r[f]])),
  };
}

/** Removes a group event that holds no seats; false when it still does or changed. */
export async function deleteGroupEvent(record: GroupEventRecord): Promise<boolean> {
  return written(() =>
    transactWrite([
      [
        'group_event',
        {
          Delete: {
            TableName: TABLE_NAME,
            Key: groupEventKey(record.configuration_id, record.event_id),
            ConditionExpression: 'attribute_not_exists(pk) OR #seats = :zero',
            ExpressionAttributeNames: { '#seats': 'seats' },
            ExpressionAttributeValues: { ':zero': 0 },
          },
        },
      ],
    ]),
  );
}

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

/** Takes `seats` on `event` (as read: its capacity and time) for a booking. */
const takeSeats = (event: GroupEventRecord, bookingId: BookingId, seats: number, name = 'seats'): NamedTransactItem => [
  name,
  {
    Update: {
      TableName: TABLE_NAME,
      Key: groupEventKey(event.configuration_id, event.event_id),
      UpdateExpression: 'ADD #seats :n SET #bookings.#b = :n',
      ConditionExpression:
        'attribute_exists(pk) AND #status = :active AND #capacity = :cap AND #start = :start AND #end = :end AND #seats <= :room AND attribute_not_exists(#bookings.#b)',
      ExpressionAttributeNames: {
        '#capacity': 'capacity',
        '#seats': 'seats',
        '#start': 'start',
        '#end': 'end',
        '#status': 'status',
        '#bookings': 'bookings',
        '#b': bookingId,
      },
      ExpressionAttributeValues: {
        ':n': seats,
        ':active': 'active',
        ':cap': event.capacity,
        ':start': event.start,
        ':end': event.end,
        ':room': event.capacity - seats,
      },
    },
  },
];

/** Gives back the seats a booking holds on a group event (once: only while the event still lists it). */
const releaseSeats = (
  configId: ConfigurationId,
  eventId: string,
  bookingId: BookingId,
  seats: number,
): NamedTransactItem => [
  'release',
  {
    Update: {
      TableName: TABLE_NAME,
      Key: groupEventKey(configId, eventId),
      UpdateExpression: 'ADD #seats :minus REMOVE #bookings.#b',
      ConditionExpression: 'attribute_exists(#bookings.#b)',
      ExpressionAttributeNames: { '#seats': 'seats', '#bookings': 'bookings', '#b': bookingId },
      ExpressionAttributeValues: { ':minus': -seats },
    },
  },
];

/** A new group booking with its seats and `outbox`, in one transaction. */
export function writeSeatBooking(
  record: BookingRecord,
  event: GroupEventRecord,
  seats: number,
  outbox: readonly OutboxEntry[],
): Promise<SeatWrite> {
  return seatWrite([bookingPut(record, 'new'), takeSeats(event, record.id, seats), ...outboxItems(outbox)]);
}

/**
 * A group booking's next version with `outbox`: cancelled (its seats given back, if its event still
 * holds them), or moved to `to` (seats taken there, given back on the old event).
 */
export function updateSeatBooking(
  current: BookingRecord,
  next: BookingRecord,
  seats: number,
  outbox: readonly OutboxEntry[],
  options: { release?: boolean; to?: GroupEventRecord } = {},
): Promise<SeatWrite> {
  const items: NamedTransactItem[] = [bookingPut(next, current.version)];
  if (options.release) items.push(releaseSeats(current.configuration_id, current.event_id, current.id, seats));
  if (options.to) items.push(takeSeats(options.to, next.id, seats));
  return seatWrite([...items, ...outboxItems(outbox)]);
}

async function seatWrite(items: NamedTransactItem[]): Promise<SeatWrite> {
  try {
    await transactWrite(items);
    return 'ok';
  } catch (error) {
    if (error instanceof TransactionConditionError) return error.has('booking') ? 'booking' : 'seats';
    // Still conflicting after the transaction's own retries: the caller reads again and tries again.
    if (error instanceof TransactionCanceledException) return 'busy';
    throw error;
  }
}

async function written(write: () => Promise<void>): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError) return false;
    throw error;
  }
}
