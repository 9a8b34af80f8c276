/**
 * Types of notification the service publishes (the one list: the publisher and the webhook trigger
 * types are built from it).
 */
export const NOTIFICATION_TYPES = [
  'grant.created',
  'grant.deleted',
  'grant.expired',
  'message.created',
  'message.updated',
  'message.send_success',
  'message.send_failed',
  'message.bounce_detected',
  'event.created',
  'event.updated',
  'booking.created',
  'booking.pending',
] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];
