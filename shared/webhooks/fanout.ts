import { listWebhookTargets, type WebhookTarget } from '#shared/db/webhooks';
import type { ApplicationId } from '#shared/ids';
import type { Notification } from '#shared/notifications/notification';
import { subscribed } from '#shared/webhooks/triggers';

export type { WebhookTarget } from '#shared/db/webhooks';

/**
 * Which destinations a notification goes to: those of its application that are active or failing
 * (a failed or inactive destination receives nothing) and subscribed to its base trigger.
 */
export const destinationsOf = (applicationId: ApplicationId): Promise<WebhookTarget[]> =>
  listWebhookTargets(applicationId);

export const isTarget = (notification: Notification) => (w: WebhookTarget) =>
  (w.status === 'active' || w.status === 'failing') && subscribed(w.trigger_types, notification.type);
