/**
 * Every trigger type of the published contract: what a webhook destination may name. Switchboard
 * emits those in NOTIFICATION_TYPES today; the others belong to features still to come, and
 * subscribing to them is refused as not yet available (the feature that emits one adds it there).
 */
export const CONTRACT_TRIGGER_TYPES = [
  'calendar.created',
  'calendar.updated',
  'calendar.deleted',
  'event.created',
  'event.updated',
  'event.deleted',
  'grant.created',
  'grant.updated',
  'grant.deleted',
  'grant.expired',
  'grant.imap_sync_completed',
  'message.send_success',
  'message.send_failed',
  'message.bounce_detected',
  'message.created',
  'message.created.cleaned',
  'message.opened',
  'message.opened.legacy',
  'message.updated',
  'message.link_clicked',
  'message.link_clicked.legacy',
  'thread.replied',
  'thread.replied.legacy',
  'contact.updated',
  'contact.deleted',
  'folder.created',
  'folder.updated',
  'folder.deleted',
  'booking.created',
  'booking.pending',
  'booking.rescheduled',
  'booking.cancelled',
  'booking.reminder',
  'message.deleted',
  'message.transactional.bounced',
  'message.transactional.complaint',
  'message.transactional.delivered',
  'message.transactional.rejected',
  'message.bounced',
  'message.complaint',
  'message.delivered',
  'message.rejected',
  'notetaker.created',
  'notetaker.updated',
  'notetaker.deleted',
  'notetaker.meeting_state',
  'notetaker.media',
] as const;

/**
 * The types Switchboard publishes today (the one list: the publisher and the webhook trigger types
 * are built from it). `grant.expired` never fires for Agent Accounts (they do not expire); it is
 * accepted because clients routinely subscribe to it with the other grant triggers.
 */
export const NOTIFICATION_TYPES = [
  'grant.created',
  'grant.updated',
  'grant.deleted',
  'grant.expired',
  'grant.imap_sync_completed',
  'message.created',
  'message.updated',
  'message.deleted',
  'message.send_success',
  'message.send_failed',
  'folder.created',
  'folder.updated',
  'folder.deleted',
  'calendar.created',
  'calendar.updated',
  'calendar.deleted',
  'event.created',
  'event.updated',
  'event.deleted',
  'booking.created',
  'booking.pending',
  'booking.rescheduled',
  'booking.cancelled',
  'booking.reminder',
] as const;
/** Any type a notification may carry (features still to come publish the contract's others). */
export type NotificationType = (typeof CONTRACT_TRIGGER_TYPES)[number];
