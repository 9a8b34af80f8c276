import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { MessageRecord } from '#shared/db/mail-records';
import { TABLE_NAME, dynamo, type TransactItem } from '#shared/aws/dynamodb';
import { batchGet, batchWrite, deleteRequests } from '#shared/db/batch';
import { folderKey, itemAttributes, messageIdHeaderKey, messageKey, postingKey, referenceKey } from '#shared/db/keys';
import { MESSAGE_ENTITY, outboxItems, type OutboxEntry } from '#shared/db/outbox';
import { searchEntryPut, searchTombstonePut } from '#shared/db/search';
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
async function transact(
  items: NamedItems,
  onConditionFailed: (error: TransactionConditionError) => Error,
): Promise<void> {
  try {
    await transactWrite(items);
  } catch (error) {
    if (error instanceof TransactionConditionError) throw onConditionFailed(error);
    throw error;
  }
}

const counterItems = (g: GrantId, deltas: FolderDelta[]): [string, TransactItem][] =>
  nonZero(deltas).map((d) => [`folder:${d.folderId}`, folderCounter(g, d)]);

/** A new message and what commits with it (see insertMessage). */
export interface NewMessageWrite {
  message: MessageRecord;
  /** The mailbox's application: the item carries it for the outbox consumer (see insertItems). */
  applicationId: string;
  postings: { postings: string[]; search: readonly string[] };
  deltas: FolderDelta[];
  outbox?: readonly OutboxEntry[];
  also?: NamedItems;
}

/** What a message item holds besides its record: what the outbox consumer reads from the stream. */
const MESSAGE_BOOKKEEPING = ['entity', 'application_id'];

/** Whether a stream image (unmarshalled) is a message item, with its record and application. */
export const isMessageItem = (
  item: Record<string, unknown>,
): item is Record<string, unknown> & MessageRecord & { application_id: string } =>
  item.entity === MESSAGE_ENTITY &&
  typeof item.application_id === 'string' &&
  typeof item.id === 'string' &&
  typeof item.grant_id === 'string';

/** The record of a message item read from the stream. */
export const messageOfItem = (item: Record<string, unknown>): MessageRecord =>
  itemAttributes<MessageRecord>(item, ...MESSAGE_BOOKKEEPING);

/** The transaction items of a new message, named (`prefix` tells the messages of one transaction apart). */
function insertItems(write: NewMessageWrite, prefix = '', counters = true): NamedTransactItem[] {
  const { message, postings } = write;
  const g = message.grant_id;
  const items: NamedTransactItem[] = [
    ...(write.also ?? []),
    // The item's insertion is its own outbox entry: the table's stream hands the new image to the
    // outbox consumer, which announces message.created and runs the message-stored job from it
    // (shared/mailbox/message-events.ts), so neither takes an item of its own.
    [
      'message',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: {
            ...messageKey(g, message.id),
            ...message,
            entity: MESSAGE_ENTITY,
            application_id: write.applicationId,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    ],
  ];
  if (message.message_id_header) {
    items.push([
      'message_id_header',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: {
            ...messageIdHeaderKey(g, message.message_id_header),
            message_id: message.id,
            thread_id: message.thread_id,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    ]);
  }
  if (counters) items.push(...counterItems(g, write.deltas));
  items.push(
    ...postings.postings.map((kind): [string, TransactItem] => [
      `posting:${kind}`,
      { Put: { TableName: TABLE_NAME, Item: postingKey(g, kind, message.id) } },
    ]),
  );
  items.push(...outboxItems(write.outbox ?? []));
  // Last, just before the transaction: the entry's sequence is taken now (see shared/db/search.ts).
  items.push(['search', searchEntryPut(g, message.id, postings.search)]);
  return items.map(([name, item]) => [`${prefix}${name}`, item] as const);
}

/**
 * Stores a new message: the item, its Message-ID entry (deduplication), folder counters, postings,
 * its search entry (one item holding every search token: shared/db/search.ts) and `also` (an
 * upload's commit) in one transaction.
 */
export async function insertMessage(write: NewMessageWrite): Promise<void> {
  const { message } = write;
  let duplicate = false;
  await transact(insertItems(write), (error) => {
    duplicate = error.has('message_id_header');
    return new MessageConflictError();
  }).catch(async (error) => {
    if (!duplicate) throw error;
    const existing = await getMessageIdHeader(message.grant_id, message.message_id_header!);
    throw new DuplicateMessageError(existing ?? { message_id: message.id, thread_id: message.thread_id });
  });
}

/** Items and bytes one transaction of several messages holds at most (DynamoDB: 100 items, 4 MB). */
const GROUP_ITEMS = 100;
const GROUP_BYTES = 3 * 1024 * 1024;

/**
 * Stores several new messages (in different mailboxes: the copies of one message) in as few
 * transactions as DynamoDB allows, each message exactly as insertMessage stores it. A message whose
 * Message-ID is already stored in its mailbox, or whose transaction cannot succeed (its folder is
 * gone: a mailbox deleted meanwhile), is left out and its group committed without it. Returns, per
 * message, whether it was stored.
 */
export async function insertMessages(
  writes: readonly NewMessageWrite[],
): Promise<('stored' | 'duplicate' | 'refused')[]> {
  const outcome: ('stored' | 'duplicate' | 'refused')[] = writes.map(() => 'refused');
  // Measured once; the items themselves are made again right before their transaction (the search
  // entry's sequence is taken then).
  const sizes = writes.map((w) => {
    const made = insertItems(w);
    return { items: made.length, bytes: JSON.stringify(made).length };
  });
  const groups: number[][] = [];
  let group: number[] = [];
  let items = 0;
  let bytes = 0;
  sizes.forEach((size, i) => {
    if (group.length && (items + size.items > GROUP_ITEMS || bytes + size.bytes > GROUP_BYTES)) {
      groups.push(group);
      group = [];
      items = 0;
      bytes = 0;
    }
    group.push(i);
    items += size.items;
    bytes += size.bytes;
  });
  if (group.length) groups.push(group);
  await Promise.all(
    groups.map(async (members) => {
      let left = members;
      while (left.length) {
        try {
          await transactWrite(left.flatMap((i) => insertItems(writes[i]!, `${i}:`)));
          for (const i of left) outcome[i] = 'stored';
          return;
        } catch (error) {
          if (!(error instanceof TransactionConditionError)) throw error;
          const failed = new Set(error.failed.map((name) => Number(name.slice(0, name.indexOf(':')))));
          for (const i of failed) outcome[i] = error.has(`${i}:message_id_header`) ? 'duplicate' : 'refused';
          left = left.filter((i) => !failed.has(i));
        }
      }
    }),
  );
  return outcome;
}

/** Deletes postings of an owner (a message) by kind (idempotent). */
export async function deletePostings(grantId: GrantId, ownerId: string, kinds: readonly string[]): Promise<void> {
  await batchWrite(deleteRequests(kinds.map((kind) => postingKey(grantId, kind, ownerId as MessageId))));
}

export async function getMessage(grantId: GrantId, messageId: MessageId): Promise<MessageRecord | undefined> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: messageKey(grantId, messageId) }));
  return Item ? itemAttributes<MessageRecord>(Item, ...MESSAGE_BOOKKEEPING) : undefined;
}

/** Messages by ID, in the order given (IDs that do not exist are left out); `fields` reads only those attributes of each. */
export async function getMessages(grantId: GrantId, ids: string[]): Promise<MessageRecord[]>;
export async function getMessages<K extends keyof MessageRecord>(
  grantId: GrantId,
  ids: string[],
  fields: readonly K[],
): Promise<Pick<MessageRecord, K>[]>;
export async function getMessages(
  grantId: GrantId,
  ids: string[],
  fields?: readonly string[],
): Promise<Partial<MessageRecord>[]> {
  if (!ids.length) return [];
  const items = await batchGet(
    ids.map((id) => messageKey(grantId, id as MessageId)),
    fields ? { projection: [...fields] } : {},
  );
  return items.map((item) => itemAttributes<MessageRecord>(item, ...MESSAGE_BOOKKEEPING));
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
  also: NamedItems = [],
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
      ...postings.removed.map((kind): [string, TransactItem] => [
        `posting:${kind}`,
        { Delete: { TableName: TABLE_NAME, Key: postingKey(g, kind, before.id) } },
      ]),
      ...postings.added.map((kind): [string, TransactItem] => [
        `posting:${kind}`,
        { Put: { TableName: TABLE_NAME, Item: postingKey(g, kind, before.id) } },
      ]),
      ...outboxItems(outbox),
      ...also,
    ],
    () => new MessageConflictError(),
  );
}

/**
 * Deletes a message for good: item, Message-ID entry, counters and postings in one transaction,
 * with a tombstone for the search index. (Postings of a message stored before the search index are
 * removed after it: see shared/mailbox/cleanup.ts.)
 */
export async function deleteMessage(
  message: MessageRecord,
  postings: { postings: string[] },
  deltas: FolderDelta[],
  outbox: readonly OutboxEntry[] = [],
  also: NamedItems = [],
): Promise<void> {
  const g = message.grant_id;
  const items: NamedTransactItem[] = [
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
    ...postings.postings.map((kind): [string, TransactItem] => [
      `posting:${kind}`,
      { Delete: { TableName: TABLE_NAME, Key: postingKey(g, kind, message.id) } },
    ]),
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
  items.push(...outboxItems(outbox), ...also);
  if (message.search) items.push(['search', searchTombstonePut(g, message.id)]);
  await transact(items, () => new MessageConflictError());
}

export async function getMessageIdHeader(
  grantId: GrantId,
  header: string,
): Promise<{ message_id: MessageId; thread_id: ThreadId } | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: messageIdHeaderKey(grantId, header) }),
  );
  return Item ? { message_id: Item.message_id as MessageId, thread_id: Item.thread_id as ThreadId } : undefined;
}

/** The stored messages of these Message-ID headers (one BatchGetItem per 100): header → message and thread. */
export async function getMessageIdHeaders(
  grantId: GrantId,
  headers: readonly string[],
): Promise<Map<string, { message_id: MessageId; thread_id: ThreadId }>> {
  const byKey = new Map(
    [...new Set(headers)].filter((h) => h.length > 0).map((h) => [messageIdHeaderKey(grantId, h).sk, h]),
  );
  const found = byKey.size
    ? await batchGet<{ sk: string; message_id: MessageId; thread_id: ThreadId }>(
        [...byKey.values()].map((h) => messageIdHeaderKey(grantId, h)),
      )
    : [];
  return new Map(found.map((f) => [byKey.get(f.sk)!, { message_id: f.message_id, thread_id: f.thread_id }]));
}

/** Threads of synced messages that reference these Message-ID headers (their parents, synced after them): header → thread. */
export async function threadsReferencing(grantId: GrantId, headers: readonly string[]): Promise<Map<string, ThreadId>> {
  const byKey = new Map([...new Set(headers)].filter((h) => h.length > 0).map((h) => [referenceKey(grantId, h).sk, h]));
  const found = byKey.size
    ? await batchGet<{ sk: string; thread_id: ThreadId }>([...byKey.values()].map((h) => referenceKey(grantId, h)))
    : [];
  return new Map(found.map((f) => [byKey.get(f.sk)!, f.thread_id]));
}

/** Records that synced messages of `thread_id` reference these headers (idempotent puts, one BatchWriteItem per 25). */
export async function putReferences(
  grantId: GrantId,
  references: readonly { header: string; thread_id: ThreadId }[],
): Promise<void> {
  const byHeader = new Map(references.filter((r) => r.header.length > 0).map((r) => [r.header, r.thread_id]));
  if (!byHeader.size) return;
  await batchWrite(
    [...byHeader].map(([header, threadId]) => ({
      PutRequest: { Item: { ...referenceKey(grantId, header), thread_id: threadId } },
    })),
  );
}

/** Thread of the first of `headers` (In-Reply-To, then References newest first) that is stored. */
export async function findThreadByHeaders(grantId: GrantId, headers: string[]): Promise<ThreadId | undefined> {
  const unique = [...new Set(headers)].filter((h) => h.length > 0).slice(0, 100);
  if (!unique.length) return undefined;
  const found = await batchGet<{ thread_id: ThreadId }>(unique.map((h) => messageIdHeaderKey(grantId, h)));
  return found[0]?.thread_id;
}

/** `findThreadByHeaders` for many mailboxes at once (one message stored in each): grant → thread. */
export async function findThreadsByHeaders(
  grantIds: readonly GrantId[],
  headers: string[],
): Promise<Map<GrantId, ThreadId>> {
  const unique = [...new Set(headers)].filter((h) => h.length > 0).slice(0, 100);
  const out = new Map<GrantId, ThreadId>();
  if (!unique.length || !grantIds.length) return out;
  const found = await batchGet<{ pk: string; sk: string; thread_id: ThreadId }>(
    grantIds.flatMap((g) => unique.map((h) => messageIdHeaderKey(g, h))),
  );
  const byKey = new Map(found.map((f) => [`${f.pk}\u0000${f.sk}`, f.thread_id]));
  for (const g of grantIds) {
    for (const h of unique) {
      const key = messageIdHeaderKey(g, h);
      const thread = byKey.get(`${key.pk}\u0000${key.sk}`);
      if (thread) {
        out.set(g, thread);
        break;
      }
    }
  }
  return out;
}

/** Which of these mailboxes already hold a message with this Message-ID header. */
export async function mailboxesHolding(grantIds: readonly GrantId[], header: string): Promise<Set<GrantId>> {
  const found = await batchGet<{ pk: string }>(grantIds.map((g) => messageIdHeaderKey(g, header)));
  const pks = new Set(found.map((f) => f.pk));
  return new Set(grantIds.filter((g) => pks.has(messageIdHeaderKey(g, header).pk)));
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

/**
 * Stores several new messages of one mailbox (a batch of a sync) in as few transactions as DynamoDB
 * allows: each message's items as insertMessage writes them, and each folder's counter once per
 * transaction with the sum of its messages' deltas (a transaction may touch an item only once). A
 * message whose Message-ID is already stored is left out (`duplicate`), as is one whose folder is
 * gone (`refused`); the rest of its transaction commits without it. `outbox`: entries of the whole
 * batch, committed with its last transaction. Returns the outcome per message.
 */
export async function insertMailboxMessages(
  writes: readonly NewMessageWrite[],
  outbox: readonly OutboxEntry[] = [],
): Promise<('stored' | 'duplicate' | 'refused')[]> {
  const outcome: ('stored' | 'duplicate' | 'refused')[] = writes.map(() => 'refused');
  if (!writes.length) return outcome;
  const g = writes[0]!.message.grant_id;
  const folders = new Set(writes.flatMap((w) => w.deltas.map((d) => d.folderId)));
  const sizes = writes.map((w) => {
    const made = insertItems(w, '', false);
    return { items: made.length, bytes: JSON.stringify(made).length };
  });
  const groups: number[][] = [];
  let group: number[] = [];
  let items = folders.size;
  let bytes = 0;
  sizes.forEach((size, i) => {
    if (group.length && (items + size.items > GROUP_ITEMS || bytes + size.bytes > GROUP_BYTES)) {
      groups.push(group);
      group = [];
      items = folders.size;
      bytes = 0;
    }
    group.push(i);
    items += size.items;
    bytes += size.bytes;
  });
  if (group.length) groups.push(group);
  const summed = (members: number[]) => {
    const byFolder = new Map<string, FolderDelta>();
    for (const d of members.flatMap((i) => writes[i]!.deltas)) {
      const current = byFolder.get(d.folderId) ?? { folderId: d.folderId, total: 0, unread: 0 };
      byFolder.set(d.folderId, {
        folderId: d.folderId,
        total: current.total + d.total,
        unread: current.unread + d.unread,
      });
    }
    return counterItems(g, [...byFolder.values()]);
  };
  for (const [g, members] of groups.entries()) {
    let left = members;
    // The batch's own outbox entries commit with its last group: after every message of the batch.
    const last = g === groups.length - 1 ? outboxItems(outbox) : [];
    while (left.length) {
      try {
        await transactWrite([
          ...left.flatMap((i) => insertItems(writes[i]!, `${i}:`, false)),
          ...summed(left),
          ...last,
        ]);
        for (const i of left) outcome[i] = 'stored';
        break;
      } catch (error) {
        if (!(error instanceof TransactionConditionError)) throw error;
        const failed = new Set(
          error.failed.filter((name) => /^\d+:/.test(name)).map((name) => Number(name.slice(0, name.indexOf(':')))),
        );
        for (const i of failed) outcome[i] = error.has(`${i}:message_id_header`) ? 'duplicate' : 'refused';
        // A folder gone meanwhile: its messages cannot be stored.
        const goneFolders = new Set(
          error.failed.filter((name) => name.startsWith('folder:')).map((name) => name.slice('folder:'.length)),
        );
        for (const i of left) if (writes[i]!.deltas.some((d) => goneFolders.has(d.folderId))) failed.add(i);
        if (!failed.size) throw error;
        left = left.filter((i) => !failed.has(i));
      }
    }
  }
  return outcome;
}
