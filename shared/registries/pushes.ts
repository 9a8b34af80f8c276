import { receiveCalendarPush } from '#shared/google/calendar-push';
import { receiveGmailPush } from '#shared/google/push';
import { receiveGraphPush } from '#shared/microsoft/push';

/**
 * Providers' push receivers, by the provider whose push endpoint a push reached (functions/push):
 * each verifies its provider's token and brings the account's next sync run forward.
 */
export const pushReceivers = {
  google: receiveGmailPush,
  googleCalendar: receiveCalendarPush,
  microsoft: receiveGraphPush,
} as const;
