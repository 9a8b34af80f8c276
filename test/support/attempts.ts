import type { AttemptRecord } from '#shared/db/webhooks';
import { newId, type WebhookId } from '#shared/ids';

/** A delivery attempt to `webhookId` at `time` (seconds): delivered (200) or retrying (503). */
export const attemptRecord = (
  webhookId: WebhookId,
  time: number,
  outcome: 'delivered' | 'retrying',
): AttemptRecord => ({
  id: newId('delivery'),
  webhook_id: webhookId,
  notification_id: 'ntf_x',
  trigger_type: 'grant.created',
  attempt: 1,
  time,
  outcome,
  status_code: outcome === 'delivered' ? 200 : 503,
  duration_ms: 1,
});
