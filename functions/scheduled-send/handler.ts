import { consumeScheduledSendQueue } from '#shared/services/scheduled-send';

/** The scheduled-send worker (firings of scheduled messages and booking reminders): shared/services/scheduled-send.ts. */
export const handler = consumeScheduledSendQueue;
