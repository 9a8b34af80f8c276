import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo, TABLE_NAME } from '#shared/aws/dynamodb';
import { batchGet } from '#shared/db/batch';
import {
  itemAttributes,
  trackedLinkKey,
  trackedLinksOf,
  trackedMessageKey,
  type Key,
  type TrackingOwner,
} from '#shared/db/keys';
import type { TrackingSettings } from '#shared/db/mail-records';
import { outboxItems, type OutboxEntry } from '#shared/db/outbox';
import { TransactionConditionError, transactWrite, type NamedTransactItem } from '#shared/db/transact';
import type { ApplicationId, GrantId, MessageId, ThreadId } from '#shared/ids';

/**
 * The stored side of message tracking: one item per tracked sent message (its settings, its opens
 * and replies counted) and one per link of it that was clicked (its clicks counted), in the grant's
 * `track` partition (purged with the grant). What is announced is decided by conditional writes
 * committed with their notification: the first open sets `first_open_at`, the first click of a link
 * its `first_click_at`, each only once however many requests race. Opens and clicks that announced
 * themselves as automated (link scanners, prefetchers) are counted apart and announce nothing.
 */
export interface TrackedMessageRecord extends TrackingSettings {
  application_id: ApplicationId;
  /** Absent for a transactional send (no grant): its application owns it. */
  grant_id?: GrantId;
  message_id: MessageId;
  /** Absent for a transactional send (no mailbox, no thread). */
  thread_id?: ThreadId;
  message_id_header?: string;
  sent_at: number;
  open_count?: number;
  bot_open_count?: number;
  first_open_at?: number;
  last_open_at?: number;
  reply_count?: number;
  last_reply_at?: number;
}

export interface TrackedLinkRecord {
  message_id: MessageId;
  index: number;
  url: string;
  click_count?: number;
  bot_click_count?: number;
  first_click_at?: number;
  last_click_at?: number;
}

const BOOKKEEPING = ['pk', 'sk', 'entity'];

/** Whose partition a tracked message is in: its grant's, or for a transactional send its application's. */
export const ownerOf = (record: Pick<TrackedMessageRecord, 'application_id' | 'grant_id'>): TrackingOwner =>
  record.grant_id ?? record.application_id;

/** The item that records a tracked message, committed with its Sent copy. */
export function trackedMessagePut(record: TrackedMessageRecord): NamedTransactItem {
  return [
    'tracking',
    {
      Put: {
        TableName: TABLE_NAME,
        Item: { ...trackedMessageKey(ownerOf(record), record.message_id), entity: 'tracked_message', ...record },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
  ];
}

/**
 * The item that points a tracking URL's ID at the tracked message a live provider named once it had
 * sent it (shared/tracking/outgoing.ts liveTracking).
 */
export function trackedAliasPut(owner: TrackingOwner, alias: MessageId, messageId: MessageId): NamedTransactItem {
  return [
    'tracking-alias',
    {
      Put: {
        TableName: TABLE_NAME,
        Item: { ...trackedMessageKey(owner, alias), entity: ALIAS, alias_of: messageId },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
  ];
}

const ALIAS = 'tracked_alias';

/** A tracked message by its ID, or by the alias its tracking URLs name. */
export async function getTrackedMessage(
  owner: TrackingOwner,
  messageId: MessageId,
): Promise<TrackedMessageRecord | undefined> {
  const [item] = await batchGet([trackedMessageKey(owner, messageId)]);
  if (item?.entity === ALIAS) {
    const target = item.alias_of as MessageId;
    return (await trackedMessagesOf(owner, [target])).get(target);
  }
  return item ? itemAttributes<TrackedMessageRecord>(item, ...BOOKKEEPING) : undefined;
}

/** The tracked ones among these messages, by message ID. */
export async function trackedMessagesOf(
  owner: TrackingOwner,
  messageIds: readonly MessageId[],
): Promise<Map<MessageId, TrackedMessageRecord>> {
  if (!messageIds.length) return new Map();
  const items = await batchGet(messageIds.map((id) => trackedMessageKey(owner, id)));
  return new Map(
    items
      .filter((item) => item.entity !== ALIAS)
      .map((item) => {
        const record = itemAttributes<TrackedMessageRecord>(item, ...BOOKKEEPING);
        return [record.message_id, record];
      }),
  );
}

/** The links of a message that were clicked (by people or scanners), in body order. */
export async function clickedLinksOf(owner: TrackingOwner, messageId: MessageId): Promise<TrackedLinkRecord[]> {
  const { pk, prefix } = trackedLinksOf(owner, messageId);
  const { Items = [] } = await dynamo.send(
    new QueryCommand({
      TableName: TABLE_NAME,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': pk, ':prefix': prefix },
    }),
  );
  return Items.map((item) => itemAttributes<TrackedLinkRecord>(item, ...BOOKKEEPING));
}

/**
 * Records the first open of a message with its notification; false when another open was first
 * (or the tracked message is gone), and nothing was written.
 */
export async function recordFirstOpen(
  owner: TrackingOwner,
  messageId: MessageId,
  now: number,
  notification: OutboxEntry,
): Promise<boolean> {
  return firstOnly([
    [
      'open',
      {
        Update: {
          TableName: TABLE_NAME,
          Key: trackedMessageKey(owner, messageId),
          UpdateExpression: 'SET first_open_at = :now, last_open_at = :now, open_count = :one',
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(first_open_at)',
          ExpressionAttributeValues: { ':now': now, ':one': 1 },
        },
      },
    ],
    ...outboxItems([notification]),
  ]);
}

/** Counts an open that announces nothing: a later one, or an automated one (`bot`). */
export async function countOpen(owner: TrackingOwner, messageId: MessageId, now: number, bot: boolean): Promise<void> {
  await countOn(
    trackedMessageKey(owner, messageId),
    bot ? 'ADD bot_open_count :one SET last_bot_open_at = :now' : 'ADD open_count :one SET last_open_at = :now',
    now,
    { condition: 'attribute_exists(pk)' },
  );
}

/**
 * Records the first click of a link with its notification, while its message is tracked; false when
 * another click of it was first, and nothing was written.
 */
export async function recordFirstClick(
  owner: TrackingOwner,
  link: TrackedLinkRecord,
  now: number,
  notification: OutboxEntry,
): Promise<boolean> {
  return firstOnly([
    [
      'tracked',
      {
        ConditionCheck: {
          TableName: TABLE_NAME,
          Key: trackedMessageKey(owner, link.message_id),
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
    ],
    [
      'click',
      {
        Update: {
          TableName: TABLE_NAME,
          Key: trackedLinkKey(owner, link.message_id, link.index),
          UpdateExpression:
            'SET entity = :entity, message_id = :message, #index = :index, #url = :url, first_click_at = :now, last_click_at = :now, click_count = :one',
          ConditionExpression: 'attribute_not_exists(first_click_at)',
          ExpressionAttributeNames: { '#index': 'index', '#url': 'url' },
          ExpressionAttributeValues: {
            ':entity': 'tracked_link',
            ':message': link.message_id,
            ':index': link.index,
            ':url': link.url,
            ':now': now,
            ':one': 1,
          },
        },
      },
    ],
    ...outboxItems([notification]),
  ]);
}

/** Counts a click that announces nothing: a later one, or an automated one (`bot`). */
export async function countClick(
  owner: TrackingOwner,
  link: TrackedLinkRecord,
  now: number,
  bot: boolean,
): Promise<void> {
  await countOn(
    trackedLinkKey(owner, link.message_id, link.index),
    `SET entity = :entity, message_id = :message, #index = :index, #url = :url, ${
      bot ? 'last_bot_click_at = :now ADD bot_click_count :one' : 'last_click_at = :now ADD click_count :one'
    }`,
    now,
    {
      names: { '#index': 'index', '#url': 'url' },
      values: { ':entity': 'tracked_link', ':message': link.message_id, ':index': link.index, ':url': link.url },
    },
  );
}

/** The item a reply to a tracked message commits with the reply (its count; never a condition that could refuse the reply). */
export function replyCountItem(owner: TrackingOwner, messageId: MessageId, now: number): NamedTransactItem {
  return [
    `reply:${messageId}`,
    {
      Update: {
        TableName: TABLE_NAME,
        Key: trackedMessageKey(owner, messageId),
        UpdateExpression: 'ADD reply_count :one SET last_reply_at = :now',
        ExpressionAttributeValues: { ':one': 1, ':now': now },
      },
    },
  ];
}

async function firstOnly(items: NamedTransactItem[]): Promise<boolean> {
  try {
    await transactWrite(items);
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError && error.has('open', 'click', 'tracked')) return false;
    throw error;
  }
}

async function countOn(
  key: Key,
  update: string,
  now: number,
  extra: { names?: Record<string, string>; values?: Record<string, unknown>; condition?: string } = {},
): Promise<void> {
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: key,
        UpdateExpression: update,
        ...(extra.condition ? { ConditionExpression: extra.condition } : {}),
        ...(extra.names ? { ExpressionAttributeNames: extra.names } : {}),
        ExpressionAttributeValues: { ':one': 1, ':now': now, ...extra.values },
      }),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}
