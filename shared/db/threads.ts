import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { ThreadRecord } from '#shared/db/mail-records';
import { TABLE_NAME, dynamo, type TransactItem } from '#shared/aws/dynamodb';
import { batchGet } from '#shared/db/batch';
import { itemAttributes, threadKey, threadListKey, threadsOfGrant } from '#shared/db/keys';
import { newestFirst } from '#shared/db/records';
import { TransactionConditionError, transactWrite, type NamedItems } from '#shared/db/transact';
import type { GrantId, ThreadId } from '#shared/ids';

const toRecord = (item: Record<string, unknown>) => itemAttributes<ThreadRecord>(item);

export async function getThread(grantId: GrantId, threadId: ThreadId): Promise<ThreadRecord | undefined> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: threadKey(grantId, threadId) }));
  return Item ? toRecord(Item) : undefined;
}

export async function getThreads(grantId: GrantId, ids: ThreadId[]): Promise<ThreadRecord[]> {
  return (await batchGet(ids.map((id) => threadKey(grantId, id)))).map(toRecord);
}

export class ThreadChangedError extends Error {
  constructor() {
    super('The thread changed since it was read');
    this.name = 'ThreadChangedError';
  }
}

/**
 * Writes a thread and moves its listing entry to its latest message, so the activity listing stays
 * ordered by the newest message of each thread.
 */
export async function putThread(thread: ThreadRecord, previous?: ThreadRecord): Promise<void> {
  const previousLatest = previous?.latest_message_id;
  const items: [string, TransactItem][] = [
    [
      'thread',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: { ...threadKey(thread.grant_id, thread.id), ...thread },
          // Concurrent refreshes of one thread: only the one that read the current version writes.
          ConditionExpression: previous ? 'version = :v' : 'attribute_not_exists(pk)',
          ExpressionAttributeValues: previous ? { ':v': previous.version } : undefined,
        },
      },
    ],
  ];
  if (previousLatest && previousLatest !== thread.latest_message_id) {
    items.push([
      'old_listing',
      {
        Delete: {
          TableName: TABLE_NAME,
          Key: threadListKey(thread.grant_id, previousLatest),
          ConditionExpression: 'attribute_not_exists(pk) OR thread_id = :t',
          ExpressionAttributeValues: { ':t': thread.id },
        },
      },
    ]);
  }
  items.push([
    'listing',
    {
      Put: {
        TableName: TABLE_NAME,
        Item: { ...threadListKey(thread.grant_id, thread.latest_message_id), thread_id: thread.id },
      },
    },
  ]);
  await writeThread(items);
}

/**
 * Thread writes are transactions conditional on the version read (and on the listing entry still
 * being this thread's); a failed condition means a concurrent writer got there first.
 */
async function writeThread(items: NamedItems): Promise<void> {
  try {
    await transactWrite(items);
  } catch (error) {
    if (error instanceof TransactionConditionError) throw new ThreadChangedError();
    throw error;
  }
}

export async function deleteThread(thread: ThreadRecord): Promise<void> {
  await writeThread([
    [
      'thread',
      {
        Delete: {
          TableName: TABLE_NAME,
          Key: threadKey(thread.grant_id, thread.id),
          ConditionExpression: 'version = :v',
          ExpressionAttributeValues: { ':v': thread.version },
        },
      },
    ],
    [
      'listing',
      {
        Delete: {
          TableName: TABLE_NAME,
          Key: threadListKey(thread.grant_id, thread.latest_message_id),
          ConditionExpression: 'attribute_not_exists(pk) OR thread_id = :t',
          ExpressionAttributeValues: { ':t': thread.id },
        },
      },
    ],
  ]);
}

/** Threads newest activity first: (latest message ID, thread ID) pairs below `before`. */
export async function listThreadEntries(grantId: GrantId, before: string | undefined, limit: number) {
  const page = await newestFirst(threadsOfGrant(grantId).pk, { limit, before });
  return {
    entries: page.items.map((i) => ({ latest: i.sk as string, threadId: i.thread_id as ThreadId })),
    more: page.last !== undefined,
  };
}
