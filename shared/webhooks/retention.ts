import { purgeWebhookLog } from '#shared/db/webhooks';
import type { WebhookId } from '#shared/ids';

/** Deletes the delivery log and counters of a deleted webhook destination (the purge-webhook job). Idempotent. */
export async function purgeDeletedWebhook(webhookId: WebhookId): Promise<void> {
  await purgeWebhookLog(webhookId);
}
