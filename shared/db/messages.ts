import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { MessageRecord } from '#shared/db/mail-records';
import { TABLE_NAME, dynamo, type TransactItem } from '#shared/aws/dynamodb';
import { batchGet, batchWrite, deleteRequests, putRequests } from '#shared/db/batch';
import { folderKey, itemAttributes, messageIdHeaderKey, messageKey, postingKey, type Key } from '#shared/db/keys';
import { outboxItems, type OutboxEntry } from '#shared/db/outbox';
import { TransactionConditionError, transactWrite, type NamedItems, type NamedTransactItem } from '#shared/db/transact';
import type { GrantId, MessageId, ThreadId } from '#shared/ids';

/** Change of a folder's counters caused by one message write. */
export interface FolderDelta {
  folderId: string;
  total: number;
  unread: number;
}

/** The Message-ID header is already stored for this grant: the message is a duplicate. */
export class DuplicateMessageError extends Error {
  constructor(readonly existing: { message_id: MessageId; thread_id: ThreadId }) {
    super('A message with this Message-ID header is already stored');
    this.name = 'DuplicateMessageError';
  }
}

/** The message changed (or disappeared, or a folder it names did) between our read and our write. */
export class MessageConflictError extends Error {
  constructor() {
    super('The message or one of its folders changed during the write');
    this.name = 'MessageConflictError';
  }
}

/** Transaction item that moves a folder's counters by a message (or draft) write. */
export function folderCounter(grantId: GrantId, delta: FolderDelta): TransactItem {
  return {
    Update: {
      TableName: TABLE_NAME,
      Key: folderKey(grantId, delta.folderId),
      UpdateExpression: 'ADD total_count :t, unread_count :u',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':t': delta.total, ':u': delta.unread },
    },
  };
}

const nonZero = (deltas: FolderDelta[]) => deltas.filter((d) => d.total !== 0 || d.unread !== 0);

/** Runs a message transaction; a failed condition is a conflict with another write, named by the caller. */
async function transact(items: NamedItems, onConditionFailed: (error: TransactionConditionError) => Error): Promise<void> {
  try {
    await transactWrite(items);
  } catch (error) {
    if (error instanceof TransactionConditionError) throw onConditionFailed(error);
    throw error;
  }
}

const counterItems = (g: GrantId, deltas: FolderDelta[]): [string, TransactItem][] => nonZero(deltas).map((d) => [`folder:${d.folderId}`, folderCounter(g, d)]);

/**
 * Stores a new message: the item, its Message-ID entry (deduplication), folder counters, mutable
 * postings and `also` (an upload's commit) in one transaction. Its immutable postings (up to a
 * thousand) cannot join it: the caller writes them next (`writePostings`), and an index-message
 * job committed here completes them if it does not.
 */
export async function insertMessage(
  message: MessageRecord,
  postings: { mutable: string[] },
  deltas: FolderDelta[],
  outbox: readonly OutboxEntry[] = [],
  also: NamedItems = [],
): Promise<void> {
  const g = message.grant_id;
  const items: NamedTransactItem[] = [
    ...also,
    ['message', { Put: { TableName: TABLE_NAME, Item: { ...messageKey(g, message.id), ...message }, ConditionExpression: 'attribute_not_exists(pk)' } }],
  ];
  if (message.message_id_header) {
    items.push([
      'message_id_header',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: { ...messageIdHeaderKey(g, message.message_id_header), message_id: message.id, thread_id: message.thread_id },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    ]);
  }
  items.push(...counterItems(g, deltas));
  items.push(...postings.mutable.map((kind): [string, TransactItem] => [`posting:${kind}`, { Put: { TableName: TABLE_NAME, Item: postingKey(g, kind, message.id) } }]));
  items.push(...outboxItems(outbox));
  let duplicate = false;
  await transact(items, (error) => {
    duplicate = error.has('message_id_header');
    return new MessageConflictError();
  }).catch(async (error) => {
    if (!duplicate) throw error;
    const existing = await getMessageIdHeader(g, message.message_id_header!);
    throw new DuplicateMessageError(existing ?? { message_id: message.id, thread_id: message.thread_id });
  });
}

/** Writes a message's immutable postings (idempotent), then marks it indexed. */
export async function writePostings(grantId: GrantId, messageId: MessageId, kinds: readonly string[]): Promise<void> {
  await batchWrite(putRequests(kinds.map((kind) => ({ ...postingKey(grantId, kind, messageId) }))));
  try {
    await dynamo.send(
      new UpdateCommand({ TableName: TABLE_NAME, Key: messageKey(grantId, messageId), UpdateExpression: 'SET #indexed = :t', ConditionExpression: 'attribute_exists(pk)', ExpressionAttributeNames: { '#indexed': 'indexed' }, ExpressionAttributeValues: { ':t': true } }),
    );
  } catch (error) {
    // Deleted meanwhile: its postings are removed with it (remove-contents).
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}

/** Deletes postings of an owner (a message) by kind (idempotent). */
export async function deletePostings(grantId: GrantId, ownerId: string, kinds: readonly string[]): Promise<void> {
  await batchWrite(deleteRequests(kinds.map((kind) => postingKey(grantId, kind, ownerId as MessageId))));
}

export async function getMessage(grantId: GrantId, messageId: MessageId): Promise<MessageRecord | undefined> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: messageKey(grantId, messageId) }));
  return Item ? itemAttributes<MessageRecord>(Item) : undefined;
}

/** Messages by ID, in the order given (IDs that do not exist are left out); `fields` reads only those attributes of each. */
export async function getMessages(grantId: GrantId, ids: string[]): Promise<MessageRecord[]>;
export async function getMessages<K extends keyof MessageRecord>(grantId: GrantId, ids: string[], fields: readonly K[]): Promise<Pick<MessageRecord, K>[]>;
export async function getMessages(grantId: GrantId, ids: string[], fields?: readonly string[]): Promise<Partial<MessageRecord>[]> {
  if (!ids.length) return [];
  const items = await batchGet(ids.map((id) => messageKey(grantId, id as MessageId)), fields ? { projection: [...fields] } : {});
  return items.map((item) => itemAttributes<MessageRecord>(item));
}

/**
 * Replaces a message after a change of its mutable state, conditional on the version read. Folder
 * counters and mutable postings change in the same transaction.
 */
export async function updateMessage(
  before: MessageRecord,
  after: MessageRecord,
  postings: { removed: string[]; added: string[] },
  deltas: FolderDelta[],
  outbox: readonly OutboxEntry[] = [],
): Promise<void> {
  const g = before.grant_id;
  await transact(
    [
      [
        'message',
        {
          Put: {
            TableName: TABLE_NAME,
            Item: { ...messageKey(g, after.id), ...after },
            ConditionExpression: 'version = :v',
            ExpressionAttributeValues: { ':v': before.version },
          },
        },
      ],
      ...counterItems(g, deltas),
      ...postings.removed.map((kind): [string, TransactItem] => [`posting:${kind}`, { Delete: { TableName: TABLE_NAME, Key: postingKey(g, kind, before.id) } }]),
      ...postings.added.map((kind): [string, TransactItem] => [`posting:${kind}`, { Put: { TableName: TABLE_NAME, Item: postingKey(g, kind, before.id) } }]),
      ...outboxItems(outbox),
    ],
    () => new MessageConflictError(),
  );
}

/**
 * Deletes a message for good: item, Message-ID entry, counters and mutable postings in one
 * transaction. Its immutable postings are removed after it (see shared/agent/cleanup.ts).
 */
export async function deleteMessage(
  message: MessageRecord,
  postings: { mutable: string[] },
  deltas: FolderDelta[],
  outbox: readonly OutboxEntry[] = [],
): Promise<void> {
  const g = message.grant_id;
  const items: [string, TransactItem][] = [
    [
      'message',
      {
        Delete: {
          TableName: TABLE_NAME,
          Key: messageKey(g, message.id),
          ConditionExpression: 'version = :v',
          ExpressionAttributeValues: { ':v': message.version },
        },
      },
    ],
    ...counterItems(g, deltas),
    ...postings.mutable.map((kind): [string, TransactItem] => [`posting:${kind}`, { Delete: { TableName: TABLE_NAME, Key: postingKey(g, kind, message.id) } }]),
  ];
  if (message.message_id_header) {
    items.push([
      'message_id_header',
      {
        Delete: {
          TableName: TABLE_NAME,
          Key: messageIdHeaderKey(g, message.message_id_header),
          ConditionExpression: 'attribute_not_exists(pk) OR message_id = :id',
          ExpressionAttributeValues: { ':id': message.id },
        },
      },
    ]);
  }
  items.push(...outboxItems(outbox));
  await transact(items, () => new MessageConflictError());
}

export async function getMessageIdHeader(grantId: GrantId, header: string): Promise<{ message_id: MessageId; thread_id: ThreadId } | undefined> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: messageIdHeaderKey(grantId, header) }));
  return Item ? { message_id: Item.message_id as MessageId, thread_id: Item.thread_id as ThreadId } : undefined;
}

/** Thread of the first of `headers` (In-Reply-To, then References newest first) that is stored. */
export async function findThreadByHeaders(grantId: GrantId, headers: string[]): Promise<ThreadId | undefined> {
  const unique = [...new Set(headers)].filter((h) => h.length > 0 && h.length <= 900).slice(0, 100);
  if (!unique.length) return undefined;
  const found = await batchGet<{ thread_id: ThreadId }>(unique.map((h) => messageIdHeaderKey(grantId, h)));
  return found[0]?.thread_id;
}

export interface IdPage {
  ids: string[];
  /** Sort key of the last item read, when the partition holds more in range. */
  last?: string;
}

/**
 * Reads message IDs (sort keys) of one partition newest first, within `(after, before)` exclusive
 * bounds. This is the one primitive every message filter is built on: it touches only the items it
 * returns, whatever the size of the mailbox.
 */
export async function queryIds(pk: string, range: { after?: string; before?: string }, limit: number): Promise<IdPage> {
  const conditions = ['pk = :pk'];
  const values: Record<string, string> = { ':pk': pk };
  if (range.after !== undefined && range.before !== undefined) {
    conditions.push('sk BETWEEN :lo AND :hi');
    values[':lo'] = range.after;
    values[':hi'] = range.before;
  } else if (range.before !== undefined) {
    conditions.push('sk < :hi');
    values[':hi'] = range.before;
  } else if (range.after !== undefined) {
    conditions.push('sk > :lo');
    values[':lo'] = range.after;
  }
  const { Items = [], LastEvaluatedKey } = await dynamo.send(
    new QueryCommand({
      TableName: TABLE_NAME,
      KeyConditionExpression: conditions.join(' AND '),
      ExpressionAttributeValues: values,
      ProjectionExpression: 'sk',
      ScanIndexForward: false,
      // BETWEEN is inclusive: read one more and drop the bounds themselves below.
      Limit: limit + 2,
    }),
  );
  const ids = Items.map((i) => i.sk as string).filter((sk) => sk !== range.after && sk !== range.before);
  const page = ids.slice(0, limit);
  const more = ids.length > limit || LastEvaluatedKey !== undefined;
  return { ids: page, last: more ? page.at(-1) : undefined };
}

/** Whether each (kind, message) posting exists: verifies extra terms without reading bodies. */
export async function existingPostings(grantId: GrantId, pairs: { kind: string; id: string }[]): Promise<Set<string>> {
  if (!pairs.length) return new Set();
  const found = await batchGet<Key>(pairs.map((p) => postingKey(grantId, p.kind, p.id)));
  return new Set(found.map((k) => `${k.pk}\u0000${k.sk}`));
}

export const postingId = (grantId: GrantId, kind: string, id: string) => {
  const key = postingKey(grantId, kind, id);
  return `${key.pk}\u0000${key.sk}`;
};

