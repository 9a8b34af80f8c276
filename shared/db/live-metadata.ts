import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo, TABLE_NAME } from '#shared/aws/dynamodb';
import { batchGet } from '#shared/db/batch';
import { liveMetadataKey, liveMetadataPairKey, liveMetadataPairPrefix } from '#shared/db/keys';
import { TransactionConditionError, transactWrite, type NamedTransactItem } from '#shared/db/transact';
import type { GrantId } from '#shared/ids';

/**
 * Our metadata of messages a live provider keeps (provider A's Gmail holds the message; the
 * metadata, which Gmail has no place for, is ours): one record per message that has any, and one
 * index item per indexed pair (key1..key5) so that `metadata_pair` lists come from here. A change
 * replaces the record and its index items in one transaction, conditional on the version it read.
 */

export type Metadata = Record<string, string>;

interface MetadataRecord {
  metadata: Metadata;
  version: number;
}

const indexedPairs = (metadata: Metadata, keys: readonly string[]) =>
  keys.flatMap((key) => (metadata[key] !== undefined ? [{ key, value: metadata[key]! }] : []));

/** The metadata of these messages (those without any are left out). */
export async function liveMetadataOf(grantId: GrantId, messageIds: readonly string[]): Promise<Map<string, Metadata>> {
  if (!messageIds.length) return new Map();
  const items = await batchGet<{ sk: string; message_id: string; metadata: Metadata }>(
    messageIds.map((id) => liveMetadataKey(grantId, id)),
  );
  return new Map(items.map((i) => [i.message_id, i.metadata]));
}

/**
 * Replaces a message's metadata (an empty object removes it), its `indexed` keys' pairs indexed;
 * read again and retried when another change won.
 */
export async function setLiveMetadata(
  grantId: GrantId,
  messageId: string,
  metadata: Metadata,
  indexed: readonly string[],
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const { Item } = await dynamo.send(
      new GetCommand({ TableName: TABLE_NAME, Key: liveMetadataKey(grantId, messageId), ConsistentRead: true }),
    );
    const current = Item as (MetadataRecord & { message_id: string }) | undefined;
    const version = current?.version ?? 0;
    const condition = current
      ? { ConditionExpression: 'version = :v', ExpressionAttributeValues: { ':v': version } }
      : { ConditionExpression: 'attribute_not_exists(pk)' };
    const before = indexedPairs(current?.metadata ?? {}, indexed);
    const after = indexedPairs(metadata, indexed);
    const same = (a: { key: string; value: string }, b: { key: string; value: string }) =>
      a.key === b.key && a.value === b.value;
    const items: NamedTransactItem[] = [
      Object.keys(metadata).length
        ? [
            'record',
            {
              Put: {
                TableName: TABLE_NAME,
                Item: {
                  ...liveMetadataKey(grantId, messageId),
                  entity: 'live_metadata',
                  message_id: messageId,
                  metadata,
                  version: version + 1,
                },
                ...condition,
              },
            },
          ]
        : ['record', { Delete: { TableName: TABLE_NAME, Key: liveMetadataKey(grantId, messageId), ...condition } }],
      ...before
        .filter((p) => !after.some((q) => same(p, q)))
        .map((p, i): NamedTransactItem => [
          `unindex${i}`,
          { Delete: { TableName: TABLE_NAME, Key: liveMetadataPairKey(grantId, p.key, p.value, messageId) } },
        ]),
      ...after
        .filter((p) => !before.some((q) => same(p, q)))
        .map((p, i): NamedTransactItem => [
          `index${i}`,
          {
            Put: {
              TableName: TABLE_NAME,
              Item: { ...liveMetadataPairKey(grantId, p.key, p.value, messageId), message_id: messageId },
            },
          },
        ]),
    ];
    if (!current && !Object.keys(metadata).length) return;
    try {
      await transactWrite(items);
      return;
    } catch (error) {
      if (!(error instanceof TransactionConditionError) || attempt > 2) throw error;
    }
  }
}

/** Message IDs under one metadata pair, newest ID first, a page at a time. */
export async function messagesWithLivePair(
  grantId: GrantId,
  key: string,
  value: string,
  limit: number,
  after?: string,
): Promise<{ ids: string[]; last?: string }> {
  const { pk, prefix } = liveMetadataPairPrefix(grantId, key, value);
  const { Items = [] } = await dynamo.send(
    new QueryCommand({
      TableName: TABLE_NAME,
      KeyConditionExpression: after
        ? 'pk = :pk AND sk BETWEEN :prefix AND :after'
        : 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': pk, ':prefix': prefix, ...(after ? { ':after': after } : {}) },
      ScanIndexForward: false,
      // One more than a page tells whether there is more (and the item paged after, which BETWEEN includes).
      Limit: limit + 1 + (after ? 1 : 0),
    }),
  );
  const fetched = Items.filter((i) => i.sk !== after);
  const page = fetched.slice(0, limit);
  const more = fetched.length > limit;
  return {
    ids: page.map((i) => i.message_id as string),
    ...(more && page.length ? { last: page.at(-1)!.sk as string } : {}),
  };
}

/** Forgets a message's metadata and its index items (the message is gone for good). */
export const deleteLiveMetadata = (grantId: GrantId, messageId: string, indexed: readonly string[]) =>
  setLiveMetadata(grantId, messageId, {}, indexed);
