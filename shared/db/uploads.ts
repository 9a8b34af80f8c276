import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { batchWrite, putRequests } from '#shared/db/batch';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { uploadKey, type Key } from '#shared/db/keys';
import type { NamedTransactItem } from '#shared/db/transact';
import { newId, type GrantId, type UploadId } from '#shared/ids';
import { clock } from '#shared/time';

/**
 * Contents uploaded to S3 ahead of the transaction that makes them reachable. Before uploading, a
 * change records what it is about to upload (an upload item with a TTL); the transaction that
 * commits the change deletes that item. When the transaction never commits (it fails, the function
 * dies, or the message turns out to be a duplicate), the item stays and expires: DynamoDB's TTL
 * removes it, the table's stream carries that removal to the outbox consumer, and the consumer
 * turns it into a remove-contents job for those keys. Nothing is undone in a catch block.
 *
 * A change that commits an item existing exactly as long as the contents are in use (a stored
 * message's thread posting) names that item instead (`committedBy`): the commit then writes nothing
 * for the upload, and the consumer removes an expired upload's contents only when that item does not
 * exist (one small read an hour later, instead of a delete in every transaction).
 */
const UPLOAD_TTL_SECONDS = 3600;

export interface UploadRecord {
  id: UploadId;
  application_id: string;
  grant_id: GrantId;
  keys: string[];
  /** The item whose existence says the change committed (see above). */
  committed_by?: Key;
}

/** Whether an item (a stream record's old image, unmarshalled) is an upload record. */
export const isUploadItem = (item: Record<string, unknown>): item is Record<string, unknown> & UploadRecord =>
  item.entity === 'upload' && typeof item.grant_id === 'string' && Array.isArray(item.keys);

/**
 * Records the keys about to be uploaded; returns what commits them, for the change's transaction
 * (nothing, and nothing written, when there is nothing to upload).
 */
export async function openUpload(
  grant: { id: GrantId; application_id: string },
  keys: (string | undefined)[],
  committedBy?: Key,
): Promise<NamedTransactItem[]> {
  const wanted = [...new Set(keys.filter((k): k is string => !!k))];
  if (!wanted.length) return [];
  const id = newId('upload');
  const record: UploadRecord = {
    id,
    application_id: grant.application_id,
    grant_id: grant.id,
    keys: wanted,
    ...(committedBy ? { committed_by: committedBy } : {}),
  };
  await dynamo.send(
    new PutCommand({
      TableName: TABLE_NAME,
      Item: {
        ...uploadKey(grant.id, id),
        entity: 'upload',
        ...record,
        expires_at: clock.nowSeconds() + UPLOAD_TTL_SECONDS,
      },
    }),
  );
  return committedBy ? [] : [['upload', { Delete: { TableName: TABLE_NAME, Key: uploadKey(grant.id, id) } }]];
}

/**
 * `openUpload` for many changes at once (the copies of one message in many mailboxes): the records
 * in BatchWrites; returns what commits each, in order.
 */
export async function openUploads(
  list: readonly { grant: { id: GrantId; application_id: string }; keys: (string | undefined)[]; committedBy?: Key }[],
): Promise<NamedTransactItem[][]> {
  const expires = clock.nowSeconds() + UPLOAD_TTL_SECONDS;
  const records = list.map(({ grant, keys, committedBy }) => {
    const wanted = [...new Set(keys.filter((k): k is string => !!k))];
    if (!wanted.length) return undefined;
    const record: UploadRecord = {
      id: newId('upload'),
      application_id: grant.application_id,
      grant_id: grant.id,
      keys: wanted,
      ...(committedBy ? { committed_by: committedBy } : {}),
    };
    return record;
  });
  await batchWrite(
    putRequests(
      records.flatMap((r) =>
        r ? [{ ...uploadKey(r.grant_id, r.id), entity: 'upload', ...r, expires_at: expires }] : [],
      ),
    ),
  );
  return records.map((r): NamedTransactItem[] =>
    r && !r.committed_by ? [['upload', { Delete: { TableName: TABLE_NAME, Key: uploadKey(r.grant_id, r.id) } }]] : [],
  );
}
