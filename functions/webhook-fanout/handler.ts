import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { sendMessages } from '#shared/aws/sqs';
import { env } from '#shared/config';
import type { ApplicationId } from '#shared/ids';
import { BatchFailures, readBodies } from '#shared/jobs/batch';
import { readNotification } from '#shared/jobs/payloads';
import { logger } from '#shared/logger';
import type { DeliveryJob } from '#shared/webhooks/deliver';
import { destinationsOf, isTarget, type WebhookTarget } from '#shared/webhooks/fanout';

/**
 * Fan-out worker (fan-out queue): one delivery job per destination of the application that is active
 * or failing and subscribed to the notification's base trigger. A batch reads each application's
 * destinations once and packs the jobs of all its notifications into full SendMessageBatch requests.
 * A notification any of whose jobs could not be enqueued is reported as failed and fanned out again
 * (SQS, then the DLQ after 3 receives); jobs enqueued twice share the notification `id`, which is how
 * receivers deduplicate.
 */
const DELIVERY_QUEUE_URL = env.deliveryQueueUrl();

export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const failures = new BatchFailures();
  const fail = (messageId: string, message: string, error: unknown) => failures.fail(messageId, message, error);
  const notifications = readBodies(event, failures, 'fan-out: unreadable notification', readNotification).map(
    ({ record, body }) => ({ messageId: record.messageId, notification: body }),
  );

  // Each application's destinations, read once for the batch (a failed read fails its notifications only).
  const apps = [...new Set(notifications.map((n) => n.notification.data.application_id))];
  const reads = await Promise.allSettled(apps.map((app) => destinationsOf(app)));
  const destinations = new Map<ApplicationId, PromiseSettledResult<WebhookTarget[]>>(
    apps.map((app, i) => [app, reads[i]!]),
  );
  const entries: { messageId: string; job: DeliveryJob }[] = [];
  for (const { messageId, notification } of notifications) {
    const read = destinations.get(notification.data.application_id)!;
    if (read.status === 'rejected') {
      fail(messageId, 'fan-out: destinations could not be read', read.reason);
      continue;
    }
    const targets = read.value.filter(isTarget(notification));
    for (const w of targets)
      entries.push({
        messageId,
        job: { application_id: w.application_id, webhook_id: w.id, notification, attempt: 1 },
      });
    logger.debug('fan-out', {
      notification_id: notification.id,
      type: notification.type,
      destinations: targets.length,
    });
  }

  const refused = await sendMessages(
    DELIVERY_QUEUE_URL,
    entries.map((e) => ({ body: JSON.stringify(e.job) })),
  );
  for (const [index, reason] of refused) fail(entries[index]!.messageId, 'fan-out: delivery job not enqueued', reason);
  return failures.response;
};
