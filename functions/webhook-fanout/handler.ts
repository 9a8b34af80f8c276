import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { sqs } from '#shared/aws/sqs';
import { env } from '#shared/config';
import { listWebhooks, type WebhookRecord } from '#shared/db/webhooks';
import type { ApplicationId } from '#shared/ids';
import { logger } from '#shared/logger';
import type { Notification } from '#shared/notifications/publisher';
import type { DeliveryJob } from '#shared/webhooks/deliver';
import { subscribed } from '#shared/webhooks/triggers';

/**
 * Fan-out worker (fan-out queue): one delivery job per destination of the application that is active
 * or failing and subscribed to the notification's base trigger. A batch reads each application's
 * destinations once and packs the jobs of all its notifications into full SendMessageBatch requests.
 * A notification any of whose jobs could not be enqueued is reported as failed and fanned out again
 * (SQS, then the DLQ after 3 receives); jobs enqueued twice share the notification `id`, which is how
 * receivers deduplicate.
 */
const DELIVERY_QUEUE_URL = env.deliveryQueueUrl();
const SQS_BATCH = 10;

const isTarget = (notification: Notification) => (w: WebhookRecord) =>
  (w.status === 'active' || w.status === 'failing') && subscribed(w.trigger_types, notification.type);

export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const failed = new Set<string>();
  const fail = (messageId: string, message: string, error: unknown) => {
    logger.error(message, { message_id: messageId, error });
    failed.add(messageId);
  };

  const notifications: { messageId: string; notification: Notification }[] = [];
  for (const record of event.Records) {
    try {
      notifications.push({ messageId: record.messageId, notification: JSON.parse(record.body) as Notification });
    } catch (error) {
      fail(record.messageId, 'fan-out: unreadable notification', error);
    }
  }

  const destinations = new Map<ApplicationId, Promise<WebhookRecord[]>>();
  for (const { notification } of notifications) {
    const app = notification.data.application_id;
    if (!destinations.has(app)) destinations.set(app, listWebhooks(app));
  }
  const entries: { messageId: string; job: DeliveryJob }[] = [];
  for (const { messageId, notification } of notifications) {
    let targets: WebhookRecord[];
    try {
      targets = (await destinations.get(notification.data.application_id)!).filter(isTarget(notification));
    } catch (error) {
      fail(messageId, 'fan-out: destinations could not be read', error);
      continue;
    }
    for (const w of targets) entries.push({ messageId, job: { application_id: w.application_id, webhook_id: w.id, notification, attempt: 1 } });
    logger.debug('fan-out', { notification_id: notification.id, type: notification.type, destinations: targets.length });
  }

  const chunks: (typeof entries)[] = [];
  for (let i = 0; i < entries.length; i += SQS_BATCH) chunks.push(entries.slice(i, i + SQS_BATCH));
  await Promise.all(
    chunks.map(async (chunk) => {
      try {
        const result = await sqs.send(
          new SendMessageBatchCommand({ QueueUrl: DELIVERY_QUEUE_URL, Entries: chunk.map((e, j) => ({ Id: String(j), MessageBody: JSON.stringify(e.job) })) }),
        );
        for (const f of result.Failed ?? []) fail(chunk[Number(f.Id)]!.messageId, 'fan-out: delivery job not enqueued', f.Message);
      } catch (error) {
        for (const e of chunk) fail(e.messageId, 'fan-out: delivery jobs not enqueued', error);
      }
    }),
  );
  return { batchItemFailures: [...failed].map((itemIdentifier) => ({ itemIdentifier })) };
};
