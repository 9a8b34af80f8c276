import { consumeScheduledSendQueue } from '#shared/scheduled-send/queue';

/** The scheduled-send worker (firings of scheduled messages and booking reminders): shared/scheduled-send/queue.ts. */
export const handler = consumeScheduledSendQueue;
