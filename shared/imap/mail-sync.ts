import type { SyncSource } from '#shared/providers/contract';
import { withImap } from '#shared/imap/session';
import { runImapSync } from '#shared/imap/sync';

/** IMAP grants' sync (shared/imap/sync.ts), one connection per run. */
export const imapMailSync: SyncSource = {
  run: (grant, run) => withImap(grant, (client) => runImapSync(grant, client, run)),
};
