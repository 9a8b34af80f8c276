import { BatchGetCommand, BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import type { Key } from '#shared/db/keys';
import { inPool } from '#shared/pool';

/**
 * BatchWriteItem and BatchGetItem with their limits handled: chunks of 25 / 100, a few chunks in
 * flight, and unprocessed items retried with backoff (throttling returns them instead of failing).
 */
const CONCURRENCY = 4;

const pool = <T>(items: T[], run: (item: T) => Promise<void>) => inPool(items, CONCURRENCY, run);

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

const backoff = (attempt: number) => new Promise((r) => setTimeout(r, Math.min(1000, 25 * 2 ** attempt)));

type WriteRequest = { PutRequest: { Item: Record<string, unknown> } } | { DeleteRequest: { Key: Key } };

export async function batchWrite(requests: WriteRequest[]): Promise<void> {
  await pool(chunks(requests, 25), async (chunk) => {
    let pending: WriteRequest[] = chunk;
    for (let attempt = 0; pending.length; attempt++) {
      if (attempt > 8) throw new Error(`BatchWriteItem left ${pending.length} items unprocessed`);
      if (attempt) await backoff(attempt);
      const { UnprocessedItems } = await dynamo.send(
        new BatchWriteCommand({ RequestItems: { [TABLE_NAME]: pending } }),
      );
      pending = (UnprocessedItems?.[TABLE_NAME] ?? []) as WriteRequest[];
    }
  });
}

export const putRequests = (items: Record<string, unknown>[]): WriteRequest[] =>
  items.map((Item) => ({ PutRequest: { Item } }));
export const deleteRequests = (keys: Key[]): WriteRequest[] => keys.map((Key) => ({ DeleteRequest: { Key } }));

/** Items for keys, in the order of the keys; missing items are left out. */
export async function batchGet<T = Record<string, unknown>>(
  keys: Key[],
  options: { projection?: string[] } = {},
): Promise<T[]> {
  const found = new Map<string, Record<string, unknown>>();
  // Keys are always read (answers are matched to them): a projection names what else to read, if anything.
  const names = options.projection
    ? Object.fromEntries(options.projection.filter((p) => p !== 'pk' && p !== 'sk').map((p, i) => [`#p${i}`, p]))
    : undefined;
  await pool(chunks(keys, 100), async (chunk) => {
    let pending: Key[] = chunk;
    for (let attempt = 0; pending.length; attempt++) {
      if (attempt > 8) throw new Error(`BatchGetItem left ${pending.length} keys unprocessed`);
      if (attempt) await backoff(attempt);
      const { Responses, UnprocessedKeys } = await dynamo.send(
        new BatchGetCommand({
          RequestItems: {
            [TABLE_NAME]: {
              Keys: pending,
              ...(names
                ? {
                    ProjectionExpression: [...Object.keys(names), 'pk', 'sk'].join(', '),
                    ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
                  }
                : {}),
            },
          },
        }),
      );
      for (const item of Responses?.[TABLE_NAME] ?? []) found.set(`${item.pk}\u0000${item.sk}`, item);
      pending = (UnprocessedKeys?.[TABLE_NAME]?.Keys ?? []) as Key[];
    }
  });
  const out: T[] = [];
  for (const key of keys) {
    const item = found.get(`${key.pk}\u0000${key.sk}`);
    if (item) out.push(item as T);
  }
  return out;
}
