import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { uploadKey } from '#shared/db/keys';
import { getRecord } from '#shared/db/records';
import type { GrantId, UploadId } from '#shared/ids';

/**
 * Attachment uploads (`attachment-uploads`): one item per upload, in the grant's uploads partition
 * and shaped as an upload record of shared/db/uploads.ts (`entity: 'upload'`, `keys` naming the
 * object). So the table's TTL removes it at `expires_at`, one hour after creation, and the outbox
 * consumer turns that removal into the job that deletes the object: the file is kept exactly as long
 * as the upload may be used, completed or not, and nothing else needs to undo it.
 */
export interface AttachmentUploadRecord {
  id: UploadId;
  application_id: string;
  grant_id: GrantId;
  /** The S3 object the file is PUT to (one key: the upload record's `keys`). */
  keys: [string];
  kind: 'attachment';
  filename: string;
  content_type: string;
  /** Bytes declared at creation; absent when none were. */
  declared_size?: number;
  /** The largest file the grant's provider takes, when the upload was created. */
  max_size: number;
  status: 'pending' | 'ready';
  /** Bytes stored, once ready. */
  size?: number;
  created_at: number;
  /** Unix seconds: the TTL, after which the upload and its object are gone. */
  expires_at: number;
}

const BOOKKEEPING = ['entity', 'pk', 'sk'];

/** Writes a new upload (its ID is new: the condition only guards against a reused one). */
export async function putAttachmentUpload(record: AttachmentUploadRecord): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: TABLE_NAME,
      Item: { ...uploadKey(record.grant_id, record.id), entity: 'upload', ...record },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
}

/** An upload of the grant (the partition is the grant's: another grant's ID is simply absent). */
export async function getAttachmentUpload(grantId: GrantId, id: UploadId): Promise<AttachmentUploadRecord | undefined> {
  const record = await getRecord<AttachmentUploadRecord & { kind?: string }>(uploadKey(grantId, id), ...BOOKKEEPING);
  // The partition also holds the uncommitted-contents records of other changes.
  return record?.kind === 'attachment' ? record : undefined;
}

/**
 * Marks a pending upload ready with its stored size, if it is still pending and not expired at
 * `now` (DynamoDB's TTL removes items late); false when another request completed it first or it expired.
 */
export async function markAttachmentUploadReady(
  grantId: GrantId,
  id: UploadId,
  size: number,
  now: number,
): Promise<boolean> {
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: uploadKey(grantId, id),
        UpdateExpression: 'SET #status = :ready, #size = :size',
        ConditionExpression: '#status = :pending AND expires_at > :now',
        ExpressionAttributeNames: { '#status': 'status', '#size': 'size' },
        ExpressionAttributeValues: { ':ready': 'ready', ':pending': 'pending', ':size': size, ':now': now },
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

/** Removes an upload refused at completion (its object is deleted by the caller). */
export async function deleteAttachmentUpload(grantId: GrantId, id: UploadId): Promise<void> {
  await dynamo.send(new DeleteCommand({ TableName: TABLE_NAME, Key: uploadKey(grantId, id) }));
}
