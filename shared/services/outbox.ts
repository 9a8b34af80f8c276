import { GetObjectCommand } from '@aws-sdk/client-s3';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { MAIL_BUCKET, s3 } from '#shared/aws/s3';
import { sendMessages } from '#shared/aws/sqs';
import { env } from '#shared/config';
import { isOutboxItem, readOutboxItem } from '#shared/db/outbox';
import { batchGet } from '#shared/db/batch';
import type { Key } from '#shared/db/keys';
import { isUploadItem, type UploadRecord } from '#shared/db/uploads';
import { logger } from '#shared/logger';
import type { Notification } from '#shared/notifications/notification';
import { publishNotifications } from '#shared/notifications/publisher';
import type { Outgoing } from '#shared/providers/contract';
import { storedItemReaderOf } from '#shared/registries/stored-items';

/**
 * The outbox consumer: the table's stream (filtered to inserted outbox items and messages where the
 * platform allows it) → the fan-out queue (notifications) and the jobs queue (jobs a change needs).
 * An item a provider's store writes as its own outbox entry (an inserted message) says what it sends
 * through its provider's reader (shared/registries/stored-items.ts). Records
 * are handled in stream order; the first that cannot be sent is reported as the batch's failure, so
 * Lambda retries from it (what follows it is sent again too: receivers deduplicate on the
 * notification `id`, which never changes, and jobs are idempotent). A record this consumer does not
 * know is logged and skipped: it must never block the shard.
 */
const log = logger.child({ function: 'outbox' });

async function readBody(key: string): Promise<string> {
  const result = await s3.send(new GetObjectCommand({ Bucket: MAIL_BUCKET, Key: key }));
  return result.Body!.transformToString('utf8');
}

async function restoreBody(notification: Notification, bodyKey: string): Promise<Notification> {
  const body = await readBody(bodyKey);
  return { ...notification, data: { ...notification.data, object: { ...notification.data.object, body } } };
}

/** What a record asks to send (nothing for records that ask nothing). Throws if it cannot be read now. */
async function outgoingOf(
  record: DynamoDBRecord,
  uncommitted: ReadonlyMap<DynamoDBRecord, UploadRecord>,
): Promise<Outgoing[]> {
  if (record.eventName === 'REMOVE') {
    const upload = uncommitted.get(record);
    return upload ? removeContents(upload) : [];
  }
  if (record.eventName !== 'INSERT') return [];
  const image = record.dynamodb?.NewImage;
  if (!image) {
    log.warn('stream record without a new image skipped (the stream must carry new images)', {
      event_id: record.eventID,
    });
    return [];
  }
  const item = unmarshall(image as Record<string, AttributeValue>);
  const reader = storedItemReaderOf(item);
  if (reader) return reader.outgoing(item, readBody);
  if (!isOutboxItem(item)) {
    log.debug('stream record of another item skipped', { event_id: record.eventID, entity: item.entity });
    return [];
  }
  let entry;
  try {
    entry = readOutboxItem(item);
  } catch (error) {
    // Retrying cannot repair an item: say so loudly and move on.
    log.error('unreadable outbox item skipped', { event_id: record.eventID, pk: item.pk, error });
    return [];
  }
  if (entry.kind === 'job') return [entry];
  return [
    {
      kind: 'notification',
      notification: entry.bodyKey ? await restoreBody(entry.notification, entry.bodyKey) : entry.notification,
    },
  ];
}

/** Removed by TTL, not by DynamoDB's users: how a record's removal by expiry is told from a delete. */
const byTtl = (record: DynamoDBRecord) =>
  record.userIdentity?.type === 'Service' && record.userIdentity?.principalId === 'dynamodb.amazonaws.com';

function expiredUploadItem(record: DynamoDBRecord) {
  const image = record.dynamodb?.OldImage;
  if (record.eventName !== 'REMOVE' || !image || !byTtl(record)) return undefined;
  const item = unmarshall(image as Record<string, AttributeValue>);
  return isUploadItem(item) ? item : undefined;
}

const keyId = (key: Key) => `${key.pk}\u0000${key.sk}`;

/**
 * The upload records of a batch that expired with their change never committed (shared/db/uploads.ts),
 * by record: those the commit did not delete, less those naming an item that exists (their change
 * committed and the contents are in use), read with one BatchGet for the batch. Expired outbox
 * entries, and uploads a commit deleted, are not among them.
 */
async function uncommittedUploads(records: readonly DynamoDBRecord[]): Promise<Map<DynamoDBRecord, UploadRecord>> {
  const expired = records.flatMap((record) => {
    const item = expiredUploadItem(record);
    return item ? [{ record, item }] : [];
  });
  const named = expired.flatMap(({ item }) => item.committed_by ?? []);
  const existing = new Set(named.length ? (await batchGet<Key>(named, { projection: ['pk', 'sk'] })).map(keyId) : []);
  return new Map(
    expired
      .filter(({ item }) => !item.committed_by || !existing.has(keyId(item.committed_by)))
      .map(({ record, item }) => [record, item]),
  );
}

/** An expired upload whose change never committed: the job that removes its contents. */
function removeContents(item: UploadRecord): Outgoing[] {
  log.info('contents of an upload that was never committed are removed', {
    upload_id: item.id,
    keys: item.keys.length,
  });
  return [
    {
      kind: 'job',
      job: {
        kind: 'remove-contents',
        application_id: item.application_id,
        grant_id: item.grant_id,
        owner_id: item.id,
        postings: [],
        blobs: item.keys,
      },
    },
  ];
}

/** Sends each item to its queue; returns the indexes (in `items`) that were refused. */
async function send(items: Outgoing[]): Promise<Set<number>> {
  const notifications = items.flatMap((item, i) =>
    item.kind === 'notification' ? [{ i, notification: item.notification }] : [],
  );
  const jobs = items.flatMap((item, i) => (item.kind === 'job' ? [{ i, job: item.job }] : []));
  const [refusedNotifications, refusedJobs] = await Promise.all([
    publishNotifications(notifications.map((n) => n.notification)),
    jobs.length
      ? sendMessages(
          env.jobsQueueUrl(),
          jobs.map((j) => ({ body: JSON.stringify(j.job), attributes: { kind: j.job.kind } })),
        )
      : new Map<number, string>(),
  ]);
  const refused = new Set<number>();
  for (const [index, reason] of refusedNotifications) {
    refused.add(notifications[index]!.i);
    log.warn('the fan-out queue refused a notification', {
      notification_id: notifications[index]!.notification.id,
      reason,
    });
  }
  for (const [index, reason] of refusedJobs) {
    refused.add(jobs[index]!.i);
    log.warn('the jobs queue refused a job', { kind: jobs[index]!.job.kind, reason });
  }
  return refused;
}

export const consumeOutbox = async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
  const pending: { index: number; item: Outgoing }[] = [];
  // Throws when the table cannot be read now: the whole batch is delivered again.
  const uncommitted = await uncommittedUploads(event.Records);
  let failedAt: number | undefined;
  for (const [index, record] of event.Records.entries()) {
    try {
      for (const item of await outgoingOf(record, uncommitted)) pending.push({ index, item });
    } catch (error) {
      log.warn('outbox record could not be prepared; retried from here', { event_id: record.eventID, error });
      failedAt = index;
      break;
    }
  }
  const refused = await send(pending.map((p) => p.item));
  for (const i of refused) failedAt = Math.min(failedAt ?? Infinity, pending[i]!.index);
  if (failedAt === undefined) return { batchItemFailures: [] };
  return { batchItemFailures: [{ itemIdentifier: event.Records[failedAt]!.dynamodb!.SequenceNumber! }] };
};
