import { consumeMailSyncQueue } from '#shared/services/mail-sync';

/** Sync runs of grants whose mail lives on another server (IMAP): one bounded run per queue message (shared/services/mail-sync.ts). */
export const handler = consumeMailSyncQueue;
