import { gunzipSync, gzipSync } from 'node:zlib';
import { TABLE_NAME, type TransactItem } from '#shared/aws/dynamodb';
import { OUTBOX_PK_PREFIX, outboxKey } from '#shared/db/keys';
import type { JobId } from '#shared/ids';
import type { Job } from '#shared/jobs/job';
import type { Notification } from '#shared/notifications/notification';
import { clock } from '#shared/time';

/**
 * The transactional outbox. A repository that commits a change a webhook can report puts one
 * outbox item per notification in the same transaction (`outboxPut`), so a change is never stored
 * without its notification and a request that does not commit announces nothing. Background jobs a
 * change needs (purging a deleted grant's data) travel the same way. The table's stream carries
 * each item to the outbox consumer (functions/outbox), which sends it to the fan-out or the jobs
 * queue; TTL removes it two days later, well after the stream (24 h of retention) has let go of it.
 *
 * DynamoDB items hold at most 400 KB: payloads over 64 KB are stored gzipped, and a payload still
 * too large keeps its object without body content plus the S3 key of that content (`body_key`:
 * bodies in S3 are written once and never changed), which the consumer reads back before
 * publishing. Nothing is cut that the consumer cannot restore.
 */
const OUTBOX_TTL_SECONDS = 2 * 24 * 3600;
const PLAIN_MAX_BYTES = 64 * 1024;
const ITEM_MAX_BYTES = 350 * 1024;

export type OutboxEntry =
  | {
      notification: Notification;
      /** Where the object's `body` lives in S3, when it does: lets a large payload leave its body out. */
      bodyKey?: string;
    }
  | { job: Job; id: JobId; applicationId?: string };

export type OutboxRecord =
  | {
      kind: 'notification';
      notification: Notification;
      /** Set when `data.object.body` was left out of the item: read it from this S3 key. */
      bodyKey?: string;
    }
  | { kind: 'job'; job: Job };

/** The transaction item that commits one notification (or job) with its change. */
export function outboxPut(entry: OutboxEntry): TransactItem {
  if ('job' in entry) {
    const now = clock.nowSeconds();
    return {
      Put: {
        TableName: TABLE_NAME,
        Item: {
          ...outboxKey(entry.id),
          entity: 'outbox',
          kind: 'job',
          ...(entry.applicationId ? { application_id: entry.applicationId } : {}),
          type: entry.job.kind,
          payload: JSON.stringify(entry.job),
          expires_at: now + OUTBOX_TTL_SECONDS,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    };
  }
  const { notification } = entry;
  let json = JSON.stringify(notification);
  let bodyKey: string | undefined;
  let payload: string | Uint8Array = json;
  if (Buffer.byteLength(json) > PLAIN_MAX_BYTES) {
    payload = gzipSync(json);
    if (payload.length > ITEM_MAX_BYTES && entry.bodyKey && 'body' in notification.data.object) {
      const { body: _body, ...object } = notification.data.object as { body: unknown };
      json = JSON.stringify({ ...notification, data: { ...notification.data, object } });
      payload = gzipSync(json);
      bodyKey = entry.bodyKey;
    }
  }
  return {
    Put: {
      TableName: TABLE_NAME,
      Item: {
        ...outboxKey(notification.id),
        entity: 'outbox',
        kind: 'notification',
        application_id: notification.data.application_id,
        type: notification.type,
        ...(typeof payload === 'string' ? { payload } : { payload_gz: payload }),
        ...(bodyKey ? { body_key: bodyKey } : {}),
        expires_at: notification.time + OUTBOX_TTL_SECONDS,
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
}

/** Named outbox items for a transaction (`outbox:0`, `outbox:1`, …). */
export const outboxItems = (entries: readonly OutboxEntry[]): [string, TransactItem][] =>
  entries.map((entry, i) => [`outbox:${i}`, outboxPut(entry)]);

/** The entity of message items, whose insertion is their own outbox entry (shared/db/messages.ts). */
export const MESSAGE_ENTITY = 'message';

/** Whether an item (a stream record's image, unmarshalled) is an outbox entry. */
export const isOutboxItem = (item: Record<string, unknown>) =>
  item.entity === 'outbox' && typeof item.pk === 'string' && item.pk.startsWith(OUTBOX_PK_PREFIX);

/** Reads an outbox item back (binary attributes arrive as bytes, or base64 text in a Lambda event). */
export function readOutboxItem(item: Record<string, unknown>): OutboxRecord {
  let json: string;
  if (typeof item.payload === 'string') json = item.payload;
  else if (item.payload_gz instanceof Uint8Array) json = gunzipSync(item.payload_gz).toString('utf8');
  else if (typeof item.payload_gz === 'string')
    json = gunzipSync(Buffer.from(item.payload_gz, 'base64')).toString('utf8');
  else throw new Error(`Outbox item ${String(item.pk)} has no payload`);
  if (item.kind === 'job') return { kind: 'job', job: JSON.parse(json) as Job };
  return {
    kind: 'notification',
    notification: JSON.parse(json) as Notification,
    ...(typeof item.body_key === 'string' ? { bodyKey: item.body_key } : {}),
  };
}
