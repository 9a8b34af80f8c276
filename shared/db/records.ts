import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { batchWrite, deleteRequests } from '#shared/db/batch';
import { itemAttributes, type Key } from '#shared/db/keys';

/** Where a DynamoDB query continues (its LastEvaluatedKey); page tokens carry it (shared/cursor.ts). */
export type StartKey = Record<string, string | number>;

/**
 * Storage of simple grant-scoped documents (drafts, templates, signatures): one item per document,
 * optimistic locking on a `version` attribute, listing newest first by ULID sort key.
 */
export class VersionConflictError extends Error {
  constructor() {
    super('The record changed or disappeared since it was read');
    this.name = 'VersionConflictError';
  }
}

export class RecordExistsError extends Error {
  constructor() {
    super('A record with this key already exists');
    this.name = 'RecordExistsError';
  }
}

/** A record by key, without its keys and the `bookkeeping` attributes. */
export async function getRecord<T>(key: Key, ...bookkeeping: string[]): Promise<T | undefined> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: key }));
  return Item ? itemAttributes<T>(Item, ...bookkeeping) : undefined;
}

/** Creates a record; RecordExistsError if the key is taken. */
export async function createRecord(key: Key, record: object): Promise<void> {
  try {
    await dynamo.send(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: { ...key, ...record },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) throw new RecordExistsError();
    throw error;
  }
}

/** Replaces a record if it still has `expectedVersion`. */
export async function replaceRecord(key: Key, record: object, expectedVersion: number): Promise<void> {
  try {
    await dynamo.send(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: { ...key, ...record },
        ConditionExpression: 'version = :v',
        ExpressionAttributeValues: { ':v': expectedVersion },
      }),
    );
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) throw new VersionConflictError();
    throw error;
  }
}

/** Deletes a record if it exists (and, when given, still has `expectedVersion`); false if it did not exist. */
export async function deleteRecord(key: Key, expectedVersion?: number): Promise<boolean> {
  try {
    await dynamo.send(
      new DeleteCommand({
        TableName: TABLE_NAME,
        Key: key,
        ConditionExpression: expectedVersion === undefined ? 'attribute_exists(pk)' : 'version = :v',
        ExpressionAttributeValues: expectedVersion === undefined ? undefined : { ':v': expectedVersion },
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) {
      if (expectedVersion === undefined) return false;
      throw new VersionConflictError();
    }
    throw error;
  }
}

/**
 * A page of a partition's items, newest first, below the sort key `before` (exclusive). `last` (the
 * page's last sort key) is set whenever more may follow: a full page, or a page DynamoDB cut at 1 MB.
 */
export async function newestFirst(
  pk: string,
  options: { limit: number; before?: string },
): Promise<{ items: Record<string, unknown>[]; last?: string }> {
  const { Items = [], LastEvaluatedKey } = await dynamo.send(
    new QueryCommand({
      TableName: TABLE_NAME,
      KeyConditionExpression: options.before ? 'pk = :pk AND sk < :before' : 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk, ...(options.before ? { ':before': options.before } : {}) },
      ScanIndexForward: false,
      Limit: options.limit + 1,
    }),
  );
  const page = Items.slice(0, options.limit);
  const more = Items.length > options.limit || LastEvaluatedKey !== undefined;
  return { items: page, last: more ? (page.at(-1)?.sk as string | undefined) : undefined };
}

/** A page of records, newest first (see newestFirst), without their keys and the `bookkeeping` attributes. */
export async function listRecords<T>(
  pk: string,
  options: { limit: number; before?: string },
  ...bookkeeping: string[]
): Promise<{ items: T[]; last?: string }> {
  const page = await newestFirst(pk, options);
  return { items: page.items.map((i) => itemAttributes<T>(i, ...bookkeeping)), last: page.last };
}

/** Deletes every item of a partition. */
export async function deletePartition(pk: string): Promise<void> {
  await batchWrite(deleteRequests(await allKeys(pk)));
}

/** Every page of a query (TableName and paging are added here): the items, and their count. */
export async function queryAll(
  input: Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey'>,
): Promise<{ items: Record<string, unknown>[]; count: number }> {
  const items: Record<string, unknown>[] = [];
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.send(new QueryCommand({ ...input, TableName: TABLE_NAME, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    count += page.Count ?? 0;
    start = page.LastEvaluatedKey;
  } while (start);
  return { items, count };
}

/** Every sort key of a partition (used to purge a grant's partitions). */
export async function allKeys(pk: string): Promise<Key[]> {
  const { items } = await queryAll({
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': pk },
    ProjectionExpression: 'pk, sk',
  });
  return items as unknown as Key[];
}
