import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { sqs } from '#shared/aws/sqs';
import { env } from '#shared/config';
import { listWebhooks } from '#shared/db/webhooks';
import { logger } from '#shared/logger';
import type { Notification } from '#shared/notifications/publisher';
import type { DeliveryJob } from '#shared/webhooks/deliver';
import { subscribed } from '#shared/webhooks/triggers';

/**
 * Fan-out worker (fan-out queue): one delivery job per destination of the application that is active
 * or failing and subscribed to the notification's base trigger. A failure redelivers the whole
 * notification (SQS, then the DLQ after 3 receives); jobs enqueued twice share the notification
 * `id`, which is how receivers deduplicate.
 */
const DELIVERY_QUEUE_URL = env.deliveryQueueUrl();

async function fanOut(notification: Notification): Promise<number> {
  const destinations = (await listWebhooks(notification.data.application_id)).filter(
    (w) => (w.status === 'active' || w.status === 'failing') && subscribed(w.trigger_types, notification.type),
  );
  const jobs: DeliveryJob[] = destinations.map((w) => ({ application_id: w.application_id, webhook_id: w.id, notification, attempt: 1 }));
  for (let i = 0; i < jobs.length; i += 10) {
    const chunk = jobs.slice(i, i + 10);
    const result = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: DELIVERY_QUEUE_URL,
        Entries: chunk.map((job, j) => ({ Id: String(j), MessageBody: JSON.stringify(job) })),
      }),
    );
    if (result.Failed?.length) throw new Error(`${result.Failed.length} delivery job(s) could not be enqueued: ${result.Failed[0]!.Message}`);
  }
  return jobs.length;
}

export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const failures: SQSBatchResponse['batchItemFailures'] = [];
  await Promise.all(
    event.Records.map(async (record) => {
      try {
        const notification = JSON.parse(record.body) as Notification;
        const count = await fanOut(notification);
        logger.debug('fan-out', { notification_id: notification.id, type: notification.type, destinations: count });
      } catch (error) {
        logger.error('fan-out failed', { message_id: record.messageId, error });
        failures.push({ itemIdentifier: record.messageId });
      }
    }),
  );
  return { batchItemFailures: failures };
};
