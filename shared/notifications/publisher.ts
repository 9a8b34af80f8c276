import { sendMessages } from '#shared/aws/sqs';
import { env } from '#shared/config';
import { fitForDelivery, type Notification } from '#shared/notifications/notification';

/**
 * Puts notifications on the fan-out queue, where the webhooks fan-out worker turns each into one
 * delivery per subscribed destination. Only the outbox consumer (functions/outbox) calls this: a
 * request commits its notifications with its change (shared/db/outbox.ts) and never publishes.
 * Payloads over 1 MB go out `.truncated` (shared/notifications/notification.ts).
 *
 * Returns why each notification the queue did not take was refused, by index (empty: all sent).
 */
const QUEUE_URL = env.fanoutQueueUrl();

export async function publishNotifications(notifications: readonly Notification[]): Promise<Map<number, string>> {
  if (!notifications.length) return new Map();
  return sendMessages(
    QUEUE_URL,
    notifications.map((n) => {
      const { notification, body } = fitForDelivery(n);
      return { body, attributes: { type: notification.type, application_id: notification.data.application_id } };
    }),
  );
}
