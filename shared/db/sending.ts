import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { receiveQuotaKey, sendQuotaKey, type Key } from '#shared/db/keys';
import { TransactionConditionError, transactWrite, type NamedItems, type NamedTransactItem } from '#shared/db/transact';
import type { GrantId } from '#shared/ids';

/** Send bookkeeping: Idempotency-Key records, and the daily send and receive counters of Agent Accounts. */

export interface IdempotencyRecord {
  request_hash: string;
  state: 'in_progress' | 'done';
  status?: number;
  /** What replays the answer: the sent message's ID (a schedule's for a scheduled send), or the answer itself (JSON) when nothing was stored. */
  message_id?: string;
  created_at: number;
  expires_at: number;
}

/**
 * Claims an Idempotency-Key for a request. Returns undefined when the claim is ours (go ahead and
 * send), or the existing record when the key was used before (replay or conflict).
 */
export async function claimIdempotencyKey(
  itemKey: Key,
  record: IdempotencyRecord,
): Promise<IdempotencyRecord | undefined> {
  try {
    await dynamo.send(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: { ...itemKey, ...record },
        // An expired record still in the table (TTL deletes lazily) may be claimed again.
        ConditionExpression: 'attribute_not_exists(pk) OR expires_at < :now',
        ExpressionAttributeValues: { ':now': record.created_at },
      }),
    );
    return undefined;
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: itemKey, ConsistentRead: true }));
    return Item as IdempotencyRecord | undefined;
  }
}

export async function completeIdempotencyKey(
  itemKey: Key,
  result: { status: number; message_id: string },
): Promise<void> {
  await dynamo.send(
    new UpdateCommand({
      TableName: TABLE_NAME,
      Key: itemKey,
      UpdateExpression: 'SET #s = :done, #st = :status, message_id = :m',
      ExpressionAttributeNames: { '#s': 'state', '#st': 'status' },
      ExpressionAttributeValues: { ':done': 'done', ':status': result.status, ':m': result.message_id },
    }),
  );
}

/** Releases a key whose send failed, so the client may retry with it. */
export async function releaseIdempotencyKey(itemKey: Key): Promise<void> {
  await dynamo.send(new DeleteCommand({ TableName: TABLE_NAME, Key: itemKey }));
}

/** Counts one received message against a daily limit; false when it is already reached. */
export const consumeReceiveQuota = (grantId: GrantId, day: string, limit: number, expiresAt: number) =>
  consumeDaily(receiveQuotaKey(grantId, day), limit, expiresAt);

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

/**
 * The daily send counter of an Agent Account counts the messages sent and the sends in flight. A send
 * in flight is a hold: an attribute `hold_<id>` of the counter, whose value is when it lapses (epoch
 * seconds). A send takes its hold by a conditional write before its message can leave (the counter
 * below the limit: `send_quota`), and the transaction that commits its Sent copy converts it (the hold
 * goes, the count stays). A send that dies in between leaves a hold that lapses, and a later send that
 * finds the counter full takes its place. Nothing is given back after a failure: the one early
 * release is the relay's refusal of the message (releaseSendQuotaHold), an answer that nothing left.
 */
export interface SendQuotaHold {
  grantId: GrantId;
  day: string;
  limit: number;
  id: string;
  /** When the hold lapses, in epoch seconds. */
  until: number;
  /** When the counter itself expires (TTL). */
  expiresAt: number;
}

const HOLD_PREFIX = 'hold_';
/** Takeovers tried before a full counter is reported as used up (each lost to another send that took the same lapsed hold). */
const TAKEOVER_ATTEMPTS = 5;

/** The item that takes a new hold: counted, when the counter is below the limit. */
const holdItem = (hold: SendQuotaHold): NamedTransactItem => [
  'send_quota',
  {
    Update: {
      TableName: TABLE_NAME,
      Key: sendQuotaKey(hold.grantId, hold.day),
      UpdateExpression: 'SET #hold = :until, expires_at = :exp ADD sent :one',
      ConditionExpression: 'attribute_not_exists(sent) OR sent < :limit',
      ExpressionAttributeNames: { '#hold': HOLD_PREFIX + hold.id },
      ExpressionAttributeValues: { ':until': hold.until, ':exp': hold.expiresAt, ':one': 1, ':limit': hold.limit },
    },
  },
];

/** The item that takes the place of a lapsed hold: the count is the same, the unit changes hands. */
const takeoverItem = (hold: SendQuotaHold, lapsed: { name: string; until: number }): NamedTransactItem => [
  'send_quota',
  {
    Update: {
      TableName: TABLE_NAME,
      Key: sendQuotaKey(hold.grantId, hold.day),
      UpdateExpression: 'REMOVE #lapsed SET #hold = :until',
      ConditionExpression: '#lapsed = :was',
      ExpressionAttributeNames: { '#lapsed': lapsed.name, '#hold': HOLD_PREFIX + hold.id },
      ExpressionAttributeValues: { ':was': lapsed.until, ':until': hold.until },
    },
  },
];

/** A hold of the counter that lapsed before `now` (one at random, so that concurrent sends spread over them). */
async function lapsedHold(hold: SendQuotaHold, now: number): Promise<{ name: string; until: number } | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: sendQuotaKey(hold.grantId, hold.day), ConsistentRead: true }),
  );
  const lapsed = Object.entries(Item ?? {}).filter(
    ([name, until]) => name.startsWith(HOLD_PREFIX) && typeof until === 'number' && until < now,
  );
  const [name, until] = lapsed[Math.floor(Math.random() * lapsed.length)] ?? [];
  return name === undefined ? undefined : { name, until: until as number };
}

/** Whether `items` committed; false when only the quota's condition failed (any other failure is thrown). */
async function committed(items: NamedItems): Promise<boolean> {
  try {
    await transactWrite(items);
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError && error.failed.every((name) => name === 'send_quota')) return false;
    throw error;
  }
}

/**
 * Takes a hold on the day's send quota, with `also` (the send's other claims) in the same
 * transaction: a new unit while the counter is below the limit, else the place of a lapsed hold.
 * False when the quota is used up by sends made and in flight; a failed condition of `also` is
 * thrown (TransactionConditionError naming it) and takes nothing.
 */
export async function holdSendQuota(hold: SendQuotaHold, also: NamedItems, now: number): Promise<boolean> {
  for (let attempt = 0; attempt < TAKEOVER_ATTEMPTS; attempt++) {
    if (await committed([...also, holdItem(hold)])) return true;
    const lapsed = await lapsedHold(hold, now);
    if (!lapsed) return false;
    if (await committed([...also, takeoverItem(hold, lapsed)])) return true;
  }
  return false;
}

/** The item of the Sent copy's transaction that converts a hold: the hold goes, its unit stays counted. */
export const sendQuotaCommitItem = (hold: SendQuotaHold): NamedTransactItem => [
  'send_quota',
  {
    Update: {
      TableName: TABLE_NAME,
      Key: sendQuotaKey(hold.grantId, hold.day),
      // Unconditional: a hold outlives any function that sends, so it is there; were it taken over
      // after a lapse all the same, the message has left and its Sent copy is stored regardless.
      UpdateExpression: 'REMOVE #hold SET expires_at = if_not_exists(expires_at, :exp)',
      ExpressionAttributeNames: { '#hold': HOLD_PREFIX + hold.id },
      ExpressionAttributeValues: { ':exp': hold.expiresAt },
    },
  },
];

/**
 * Gives a hold up before it lapses, with its unit: the relay refused the message, so nothing left
 * and a retry may send at once. Only this hold, once (a hold already taken over is left alone).
 */
export async function releaseSendQuotaHold(hold: SendQuotaHold): Promise<void> {
  await dynamo
    .send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: sendQuotaKey(hold.grantId, hold.day),
        UpdateExpression: 'REMOVE #hold ADD sent :minus',
        ConditionExpression: '#hold = :until',
        ExpressionAttributeNames: { '#hold': HOLD_PREFIX + hold.id },
        ExpressionAttributeValues: { ':until': hold.until, ':minus': -1 },
      }),
    )
    .catch((error) => {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    });
}
