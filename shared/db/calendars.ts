import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo, type TransactItem } from '#shared/aws/dynamodb';
import { calendarKey, calendarsOfGrant, itemAttributes } from '#shared/db/keys';
import { outboxItems, type OutboxEntry } from '#shared/db/outbox';
import { queryAll } from '#shared/db/records';
import { TransactionConditionError, transactWrite } from '#shared/db/transact';
import type { CalendarId, GrantId } from '#shared/ids';

/** Calendars of a grant: a handful of items in one partition, changed with their notifications. */
export interface CalendarRecord {
  id: CalendarId;
  grant_id: GrantId;
  name: string;
  description?: string;
  location?: string;
  timezone: string;
  hex_color?: string;
  hex_foreground_color?: string;
  is_primary: boolean;
  metadata: Record<string, string>;
  /** A calendar kept on a CalDAV server: its collection's URL. */
  href?: string;
  created_at: number;
  updated_at: number;
  version: number;
}

const ENTITY = 'calendar';

export const calendarPut = (record: CalendarRecord): TransactItem => ({
  Put: {
    TableName: TABLE_NAME,
    Item: { ...calendarKey(record.grant_id, record.id), entity: ENTITY, ...record },
    ConditionExpression: 'attribute_not_exists(pk)',
  },
});

export async function getCalendar(grantId: GrantId, id: CalendarId): Promise<CalendarRecord | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: calendarKey(grantId, id), ConsistentRead: true }),
  );
  return Item ? itemAttributes<CalendarRecord>(Item, 'entity') : undefined;
}

/** Every calendar of a grant, oldest first (the primary one first: its ID is the grant's). */
export async function allCalendars(grantId: GrantId): Promise<CalendarRecord[]> {
  const { items } = await queryAll({
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': calendarsOfGrant(grantId).pk },
    ConsistentRead: true,
  });
  return items.map((i) => itemAttributes<CalendarRecord>(i, 'entity'));
}

/** Stores the primary calendar unless it exists (a grant created before calendars gets it on first use). */
export async function ensureCalendar(record: CalendarRecord): Promise<void> {
  try {
    await dynamo.send(new PutCommand(calendarPut(record).Put!));
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}

export async function insertCalendar(record: CalendarRecord, outbox: readonly OutboxEntry[]): Promise<void> {
  await transactWrite([['calendar', calendarPut(record)], ...outboxItems(outbox)]);
}

/** Replaces a calendar with its next version; false when another change came first (or it is gone). */
export async function replaceCalendar(
  current: CalendarRecord,
  next: CalendarRecord,
  outbox: readonly OutboxEntry[],
): Promise<boolean> {
  try {
    await transactWrite([
      [
        'calendar',
        {
          Put: {
            TableName: TABLE_NAME,
            Item: { ...calendarKey(next.grant_id, next.id), entity: ENTITY, ...next },
            ConditionExpression: 'version = :v',
            ExpressionAttributeValues: { ':v': current.version },
          },
        },
      ],
      ...outboxItems(outbox),
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError && error.has('calendar')) return false;
    throw error;
  }
}

export async function deleteCalendar(record: CalendarRecord, outbox: readonly OutboxEntry[]): Promise<boolean> {
  try {
    await transactWrite([
      [
        'calendar',
        {
          Delete: {
            TableName: TABLE_NAME,
            Key: calendarKey(record.grant_id, record.id),
            ConditionExpression: 'attribute_exists(pk)',
          },
        },
      ],
      ...outboxItems(outbox),
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError && error.has('calendar')) return false;
    throw error;
  }
}
