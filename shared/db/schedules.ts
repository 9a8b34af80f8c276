import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo, type TransactItem } from '#shared/aws/dynamodb';
import type { AttachmentRecord, HeaderRecord, ParticipantRecord, TrackingSettings } from '#shared/db/mail-records';
import { itemAttributes, scheduleKey, schedulesOfGrant } from '#shared/db/keys';
import { outboxItems, type OutboxEntry } from '#shared/db/outbox';
import { listRecords } from '#shared/db/records';
import { transactWrite, TransactionConditionError, type NamedItems } from '#shared/db/transact';
import type { ApplicationId, DraftId, GrantId, MessageId, ScheduleId, ThreadId } from '#shared/ids';

/**
 * Scheduled sends. One record per scheduled message holds what will be sent, rendered and checked
 * when it was scheduled (large bodies and attachments in S3), and its state:
 *
 *   pending ──(worker takes it at send_at)──▶ sending ──▶ success | failed
 *   pending ──(DELETE, until send_at − 10 s)──▶ cancelled
 *
 * Every transition is a conditional write on the state read, so a second firing, a redelivered
 * queue message or a retried worker cannot send twice: the record is the Idempotency-Key of the
 * send, keyed by its schedule ID. A worker holds `sending` under a lease (`lease_until`); a worker
 * that died mid-send leaves the lease to expire, and the next delivery of its queue message takes
 * it over. `relay_started_at` records that the message was handed to the mail relay: after that,
 * an interrupted attempt is never repeated (the relay may have sent it), and ends as failed.
 * `success` is committed in the transaction that stores the Sent copy.
 */
export type ScheduleStatus = 'pending' | 'sending' | 'success' | 'failed' | 'cancelled';

/** What a scheduled message will be sent as (the same fields as a draft's, rendered). */
export interface ScheduledContent {
  subject: string;
  from: ParticipantRecord[];
  to: ParticipantRecord[];
  cc: ParticipantRecord[];
  bcc: ParticipantRecord[];
  reply_to: ParticipantRecord[];
  /** Inline when small; otherwise `body_key` names it in S3. */
  body: string;
  body_key?: string;
  body_size: number;
  is_plaintext: boolean;
  starred: boolean;
  attachments: AttachmentRecord[];
  metadata: Record<string, string>;
  custom_headers: HeaderRecord[];
  thread_id?: ThreadId;
  reply_to_message_id?: MessageId;
  in_reply_to?: string;
  references: string[];
  /** What the sent message tracks (opens, links, replies), when the send asked for it. */
  tracking?: TrackingSettings;
}

export interface ScheduleRecord extends ScheduledContent {
  id: ScheduleId;
  grant_id: GrantId;
  application_id: ApplicationId;
  status: ScheduleStatus;
  /** Unix seconds. */
  send_at: number;
  /** The ID the sent message gets (known from the start, so the answer can name it). */
  message_id: MessageId;
  /** With use_draft: the draft shown in Drafts until the message is sent. */
  draft_id?: DraftId;
  /** The request that scheduled it (reported with message.send_success / send_failed). */
  request_id: string;
  attempts: number;
  /** Milliseconds; while `sending`, no other worker takes the record before this. */
  lease_until?: number;
  /** Milliseconds; set just before the message is handed to the mail relay. */
  relay_started_at?: number;
  /** Once success: when it left (Unix seconds). */
  sent_at?: number;
  /** Once failed: why. */
  reason?: string;
  created_at: number;
  updated_at: number;
  /** TTL (Unix seconds): closed schedules are kept 30 days, then removed. */
  expires_at?: number;
}

/** How long a closed schedule stays listed. */
export const CLOSED_RETENTION_SECONDS = 30 * 86400;

const BOOKKEEPING = ['entity', 'expires_at'] as const;

export const schedulePut = (record: ScheduleRecord): TransactItem => ({
  Put: {
    TableName: TABLE_NAME,
    Item: { ...scheduleKey(record.grant_id, record.id), entity: 'schedule', ...record },
    ConditionExpression: 'attribute_not_exists(pk)',
  },
});

/** Stores a new schedule with whatever else its request commits (uploads, the draft). */
export async function insertSchedule(
  record: ScheduleRecord,
  also: NamedItems = [],
  outbox: readonly OutboxEntry[] = [],
): Promise<void> {
  await transactWrite([...also, ['schedule', schedulePut(record)], ...outboxItems(outbox)]);
}

export async function getSchedule(grantId: GrantId, id: ScheduleId): Promise<ScheduleRecord | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: scheduleKey(grantId, id), ConsistentRead: true }),
  );
  return Item ? itemAttributes<ScheduleRecord>(Item, ...BOOKKEEPING) : undefined;
}

export async function listSchedules(grantId: GrantId, options: { limit: number; before?: string }) {
  return listRecords<ScheduleRecord>(schedulesOfGrant(grantId).pk, options, ...BOOKKEEPING);
}

/** A conditional update of one schedule; false when its condition did not hold. */
async function update(
  grantId: GrantId,
  id: ScheduleId,
  input: { set: string; condition: string; values: Record<string, unknown>; remove?: string },
): Promise<boolean> {
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: scheduleKey(grantId, id),
        UpdateExpression: `SET ${input.set}${input.remove ? ` REMOVE ${input.remove}` : ''}`,
        ConditionExpression: `attribute_exists(pk) AND ${input.condition}`,
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: input.values,
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

/**
 * Takes the record for one send attempt: from `pending`, or from `sending` whose lease has expired
 * (a worker died mid-attempt). False when another worker holds it or it is no longer open.
 */
export function takeForSending(record: ScheduleRecord, nowMs: number, leaseMs: number): Promise<boolean> {
  return update(record.grant_id, record.id, {
    set: '#s = :sending, lease_until = :lease, attempts = :attempts, updated_at = :now',
    condition: '(#s = :pending OR (#s = :sending AND lease_until < :nowMs)) AND attempts = :seen',
    values: {
      ':sending': 'sending',
      ':pending': 'pending',
      ':lease': nowMs + leaseMs,
      ':nowMs': nowMs,
      ':attempts': record.attempts + 1,
      ':seen': record.attempts,
      ':now': Math.floor(nowMs / 1000),
    },
  });
}

/** Records, under this attempt's lease, that the message is being handed to the mail relay. */
export function markRelayStarted(record: ScheduleRecord, attempt: number, nowMs: number): Promise<boolean> {
  return update(record.grant_id, record.id, {
    set: 'relay_started_at = :nowMs',
    condition: '#s = :sending AND attempts = :attempt',
    values: { ':sending': 'sending', ':attempt': attempt, ':nowMs': nowMs },
  });
}

/** Gives the attempt up without sending (nothing left): `pending` again, for the next delivery. */
export function releaseAttempt(record: ScheduleRecord, attempt: number): Promise<boolean> {
  return update(record.grant_id, record.id, {
    set: '#s = :pending',
    condition: '#s = :sending AND attempts = :attempt',
    values: { ':sending': 'sending', ':pending': 'pending', ':attempt': attempt },
    remove: 'lease_until',
  });
}

/** The transition to success, for the transaction that stores the Sent copy (under this attempt). */
export const successItems = (record: ScheduleRecord, attempt: number, nowSeconds: number): NamedItems => [
  [
    'schedule',
    {
      Update: {
        TableName: TABLE_NAME,
        Key: scheduleKey(record.grant_id, record.id),
        UpdateExpression:
          'SET #s = :success, sent_at = :now, updated_at = :now, expires_at = :expires REMOVE lease_until, draft_id',
        ConditionExpression: '#s = :sending AND attempts = :attempt',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: {
          ':success': 'success',
          ':sending': 'sending',
          ':attempt': attempt,
          ':now': nowSeconds,
          ':expires': nowSeconds + CLOSED_RETENTION_SECONDS,
        },
      },
    },
  ],
];

/**
 * Closes a schedule (failed or cancelled) with what closing it commits (its notification, removing
 * the draft, the contents job): `status`, `updated_at`, the retention TTL and `set`, under
 * `condition`. False when the condition did not hold.
 */
async function closeSchedule(
  record: ScheduleRecord,
  status: 'failed' | 'cancelled',
  nowSeconds: number,
  change: { set?: string; remove: string; condition: string; values: Record<string, unknown> },
  also: NamedItems,
  outbox: readonly OutboxEntry[],
): Promise<boolean> {
  try {
    await transactWrite([
      ...also,
      [
        'schedule',
        {
          Update: {
            TableName: TABLE_NAME,
            Key: scheduleKey(record.grant_id, record.id),
            UpdateExpression: `SET #s = :closed, updated_at = :now, expires_at = :expires${change.set ? `, ${change.set}` : ''} REMOVE ${change.remove}`,
            ConditionExpression: `attribute_exists(pk) AND ${change.condition}`,
            ExpressionAttributeNames: { '#s': 'status' },
            ExpressionAttributeValues: {
              ':closed': status,
              ':now': nowSeconds,
              ':expires': nowSeconds + CLOSED_RETENTION_SECONDS,
              ...change.values,
            },
          },
        },
      ],
      ...outboxItems(outbox),
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError && error.has('schedule')) return false;
    throw error;
  }
}

/** Ends an attempt as failed; false when the record is no longer this attempt's. */
export const failSchedule = (
  record: ScheduleRecord,
  attempt: number,
  reason: string,
  nowSeconds: number,
  also: NamedItems,
  outbox: readonly OutboxEntry[],
) =>
  closeSchedule(
    record,
    'failed',
    nowSeconds,
    {
      set: 'reason = :reason',
      remove: 'lease_until, draft_id',
      condition: '#s = :sending AND attempts = :attempt',
      values: { ':reason': reason, ':sending': 'sending', ':attempt': attempt },
    },
    also,
    outbox,
  );

/**
 * Cancels a pending schedule while `send_at` is at least `windowSeconds` away. False when it is no
 * longer pending or too close to its send time: the caller reads it again to say which.
 */
export const cancelSchedule = (
  record: ScheduleRecord,
  nowSeconds: number,
  windowSeconds: number,
  also: NamedItems,
  outbox: readonly OutboxEntry[],
) =>
  closeSchedule(
    record,
    'cancelled',
    nowSeconds,
    {
      remove: 'draft_id',
      condition: '#s = :pending AND send_at >= :earliest',
      values: { ':pending': 'pending', ':earliest': nowSeconds + windowSeconds },
    },
    also,
    outbox,
  );
