import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo, type TransactItem } from '#shared/aws/dynamodb';
import { searchEntriesOf, searchEntryKey, searchManifestKey } from '#shared/db/keys';
import { ID_PREFIXES, newId, type GrantId, type MessageId } from '#shared/ids';
import { clock } from '#shared/time';

/**
 * Storage of a mailbox's search index in DynamoDB: the entries not yet read into segments, and the
 * manifest naming the live segments (the segments themselves are S3 objects).
 *
 * Entries are keyed by a ULID taken right before the transaction that writes them (with the message,
 * or with its hard delete), so their sort order is commit order to within COMMIT_MARGIN_MS: a
 * transaction commits within that margin of taking its ULID, or not at all. A merge that read every
 * entry above the watermark at time t can therefore move the watermark to t − COMMIT_MARGIN_MS:
 * every entry at or below it was committed before t, and is in a segment now. Queries read the
 * entries above the watermark, so merged entries cost nothing; they expire by TTL, with no delete.
 */
export const SEARCH_ENTRY_TTL_SECONDS = 30 * 24 * 3600;
export const COMMIT_MARGIN_MS = 5 * 60_000;

/** A stored message's tokens, or a hard-deleted message's tombstone. */
export interface SearchEntry {
  sequence: string;
  messageId: MessageId;
  tokens: string[];
  deleted: boolean;
}

export interface SegmentMeta {
  docs: number;
  bytes: number;
  level: number;
  /** Newest and oldest message ID in the segment. */
  newest: string;
  oldest: string;
  /** Doc numbers of deleted messages (delta-encoded varints), until the segment is rewritten. */
  deleted?: Uint8Array;
}

export interface SearchManifest {
  segments: Record<string, SegmentMeta>;
  /** Entries at or below this sequence are in the segments (or, for tombstones, applied to them). */
  watermark: string;
  /** Segments replaced by a merge, with when (ms): their objects are removed a while later. */
  garbage: Record<string, number>;
  version: number;
  lease?: string;
  lease_until?: number;
}

/** An entry sequence of `now` (a ULID body: sorts by time). */
export const entrySequence = (nowMs = clock.nowMs()) => newId('message', nowMs).slice(ID_PREFIXES.message.length + 1);

/** The sequence below every entry taken at or after `nowMs`. */
export const sequenceBefore = (nowMs: number) => entrySequence(nowMs).slice(0, 10) + '0'.repeat(16);

const entryItem = (grantId: GrantId, messageId: MessageId, fields: Record<string, unknown>): TransactItem => {
  const now = clock.nowMs();
  return {
    Put: {
      TableName: TABLE_NAME,
      Item: {
        ...searchEntryKey(grantId, entrySequence(now)),
        message_id: messageId,
        ...fields,
        expires_at: Math.floor(now / 1000) + SEARCH_ENTRY_TTL_SECONDS,
      },
    },
  };
};

/** The transaction item holding a stored message's tokens (take it right before the transaction). */
export const searchEntryPut = (grantId: GrantId, messageId: MessageId, tokens: readonly string[]): TransactItem =>
  entryItem(grantId, messageId, { tokens: tokens.join('\n') });

/** The transaction item telling the index a message was deleted for good. */
export const searchTombstonePut = (grantId: GrantId, messageId: MessageId): TransactItem =>
  entryItem(grantId, messageId, { deleted: true });

/** Entries above `after` (every entry when it is empty), in sequence order, read consistently. */
export async function readSearchEntries(grantId: GrantId, after: string): Promise<SearchEntry[]> {
  const entries: SearchEntry[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.send(
      new QueryCommand({
        TableName: TABLE_NAME,
        KeyConditionExpression: after ? 'pk = :pk AND sk > :after' : 'pk = :pk',
        ExpressionAttributeValues: { ':pk': searchEntriesOf(grantId), ...(after ? { ':after': after } : {}) },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) {
      const tokens = typeof item.tokens === 'string' && item.tokens ? item.tokens.split('\n') : [];
      entries.push({
        sequence: item.sk as string,
        messageId: item.message_id as MessageId,
        tokens,
        deleted: item.deleted === true,
      });
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return entries;
}

const emptyManifest = (): SearchManifest => ({ segments: {}, watermark: '', garbage: {}, version: 0 });

function toManifest(item: Record<string, unknown> | undefined): SearchManifest | undefined {
  if (!item) return undefined;
  return {
    segments: (item.segments as Record<string, SegmentMeta> | undefined) ?? {},
    watermark: (item.watermark as string | undefined) ?? '',
    garbage: (item.garbage as Record<string, number> | undefined) ?? {},
    version: (item.version as number | undefined) ?? 0,
    ...(typeof item.lease === 'string' ? { lease: item.lease, lease_until: item.lease_until as number } : {}),
  };
}

/** The manifest (an empty one for a mailbox never merged), read consistently. */
export async function getSearchManifest(grantId: GrantId): Promise<SearchManifest> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: searchManifestKey(grantId), ConsistentRead: true }),
  );
  return toManifest(Item) ?? emptyManifest();
}

/**
 * Takes the merge lease until `untilMs` (creating the manifest when there is none); undefined while
 * another merge holds an unexpired lease.
 */
export async function takeMergeLease(
  grantId: GrantId,
  owner: string,
  untilMs: number,
): Promise<SearchManifest | undefined> {
  try {
    const { Attributes } = await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: searchManifestKey(grantId),
        UpdateExpression: 'SET #lease = :owner, #lease_until = :until',
        ConditionExpression: 'attribute_not_exists(#lease_until) OR #lease_until < :now',
        ExpressionAttributeNames: { '#lease': 'lease', '#lease_until': 'lease_until' },
        ExpressionAttributeValues: { ':owner': owner, ':until': untilMs, ':now': clock.nowMs() },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return toManifest(Attributes) ?? emptyManifest();
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return undefined;
    throw error;
  }
}

/** Another merge published first (or took the lease): the manifest is not the one this merge read. */
export class MergeConflictError extends Error {
  constructor(grantId: string) {
    super(`The search manifest of ${grantId} changed during the merge`);
    this.name = 'MergeConflictError';
  }
}

/**
 * Publishes a merge: the new segment set, watermark and garbage, conditional on the manifest version
 * the merge read, and on its lease (released here) or, without one, on no other lease being held.
 */
export async function commitMerge(
  grantId: GrantId,
  expectedVersion: number,
  owner: string | undefined,
  next: Pick<SearchManifest, 'segments' | 'watermark' | 'garbage'>,
): Promise<void> {
  // Attribute names through placeholders: several are DynamoDB reserved words.
  const version = expectedVersion ? '#version = :v' : 'attribute_not_exists(#version)';
  const lease = owner ? '#lease = :owner' : '(attribute_not_exists(#lease_until) OR #lease_until < :now)';
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: searchManifestKey(grantId),
        UpdateExpression:
          'SET #segments = :segments, #watermark = :watermark, #garbage = :garbage, #version = :next REMOVE #lease, #lease_until',
        ConditionExpression: `${version} AND ${lease}`,
        ExpressionAttributeNames: {
          '#segments': 'segments',
          '#watermark': 'watermark',
          '#garbage': 'garbage',
          '#version': 'version',
          '#lease': 'lease',
          '#lease_until': 'lease_until',
        },
        ExpressionAttributeValues: {
          ':segments': next.segments,
          ':watermark': next.watermark,
          ':garbage': next.garbage,
          ':next': expectedVersion + 1,
          ...(expectedVersion ? { ':v': expectedVersion } : {}),
          ...(owner ? { ':owner': owner } : { ':now': clock.nowMs() }),
        },
      }),
    );
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) throw new MergeConflictError(grantId);
    throw error;
  }
}

/** Deletes the manifest (a purged grant; its entries go with the grant's partitions). */
export async function deleteSearchManifest(grantId: GrantId): Promise<void> {
  await dynamo.send(new DeleteCommand({ TableName: TABLE_NAME, Key: searchManifestKey(grantId) }));
}
