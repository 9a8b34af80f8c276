import { purgeAgentMailbox } from '#shared/mailbox/purge';
import { purgeConnectedGrant } from '#shared/accounts/purge';
import { deleteSyncState } from '#shared/db/mail-sync';
import type { GrantId } from '#shared/ids';

/**
 * A deleted IMAP grant: what its sync stored (the mailbox store's messages, threads, folders, indexes
 * and locations), then its sync state, its sealed passwords and the tokens Switchboard issued for it.
 * Nothing is deleted on the server. Resumable: `more` when it stopped early.
 */
export async function purgeImapGrant(grantId: GrantId, shouldStop: () => boolean): Promise<'done' | 'more'> {
  if ((await purgeAgentMailbox(grantId, shouldStop)) === 'more') return 'more';
  await deleteSyncState(grantId);
  return purgeConnectedGrant(grantId);
}
