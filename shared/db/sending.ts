import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { idempotencyKey, receiveQuotaKey, sendQuotaKey, type Key } from '#shared/db/keys';
import type { GrantId } from '#shared/ids';

/** Send bookkeeping: Idempotency-Key records and the daily send counter of Agent Accounts. */

export interface IdempotencyRecord {
  request_hash: string;
  state: 'in_progress' | 'done';
  status?: number;
  message_id?: string;
  created_at: number;
  expires_at: number;
}

/**
 * Claims an Idempotency-Key for a request. Returns undefined when the claim is ours (go ahead and
 * send), or the existing record when the key was used before (replay or conflict).
 */
export async function claimIdempotencyKey(grantId: GrantId, key: string, record: IdempotencyRecord): Promise<IdempotencyRecord | undefined> {
  try {
    await dynamo.send(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: { ...idempotencyKey(grantId, key), ...record },
        // An expired record still in the table (TTL deletes lazily) may be claimed again.
        ConditionExpression: 'attribute_not_exists(pk) OR expires_at < :now',
        ExpressionAttributeValues: { ':now': record.created_at },
      }),
    );
    return undefined;
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: idempotencyKey(grantId, key), ConsistentRead: true }));
    return Item as IdempotencyRecord | undefined;
  }
}

export async function completeIdempotencyKey(grantId: GrantId, key: string, result: { status: number; message_id: string }): Promise<void> {
  await dynamo.send(
    new UpdateCommand({
      TableName: TABLE_NAME,
      Key: idempotencyKey(grantId, key),
      UpdateExpression: 'SET #s = :done, #st = :status, message_id = :m',
      ExpressionAttributeNames: { '#s': 'state', '#st': 'status' },
      ExpressionAttributeValues: { ':done': 'done', ':status': result.status, ':m': result.message_id },
    }),
  );
}

/** Releases a key whose send failed, so the client may retry with it. */
export async function releaseIdempotencyKey(grantId: GrantId, key: string): Promise<void> {
  await dynamo.send(new DeleteCommand({ TableName: TABLE_NAME, Key: idempotencyKey(grantId, key) }));
}

/**
 * Counts one send against the day's quota; false when the quota is already used up. A single
 * conditional ADD, so concurrent sends can never exceed it.
 */
export const consumeSendQuota = (grantId: GrantId, day: string, limit: number, expiresAt: number) => consumeDaily(sendQuotaKey(grantId, day), limit, expiresAt);

/** Counts one received message against a daily limit; false when it is already reached. */
export const consumeReceiveQuota = (grantId: GrantId, day: string, limit: number, expiresAt: number) => consumeDaily(receiveQuotaKey(grantId, day), limit, expiresAt);

/** Messages received so far on `day` (0 when none). */
export async function receivedOn(grantId: GrantId, day: string): Promise<number> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: receiveQuotaKey(grantId, day) }));
  return (Item?.sent as number | undefined) ?? 0;
}

async function consumeDaily(key: Key, limit: number, expiresAt: number): Promise<boolean> {
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: key,
        UpdateExpression: 'ADD sent :one SET expires_at = :exp',
        ConditionExpression: 'attribute_not_exists(sent) OR sent < :limit',
        ExpressionAttributeValues: { ':one': 1, ':limit': limit, ':exp': expiresAt },
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

/** Gives a quota unit back after a send failed before anything left. */
export async function refundSendQuota(grantId: GrantId, day: string): Promise<void> {
  await dynamo
    .send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: sendQuotaKey(grantId, day),
        UpdateExpression: 'ADD sent :minus',
        ConditionExpression: 'sent > :zero',
        ExpressionAttributeValues: { ':minus': -1, ':zero': 0 },
      }),
    )
    .catch((error) => {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    });
}
