import { purgeAgentMailbox } from '#shared/mailbox/purge';
import { purgeConnectedGrant } from '#shared/accounts/purge';
import { purgeImapGrant } from '#shared/imap/purge';
import { stopGooglePushes } from '#shared/google/purge';
import { stopGraphPushes } from '#shared/microsoft/purge';
import type { Provider } from '#shared/db/grants';
import type { GrantId } from '#shared/ids';

/**
 * The other half of a provider's grant lifecycle (see shared/registries/accounts.ts): deleting what
 * it stored for a grant that was deleted, from the jobs worker. Idempotent and resumable: `'more'`
 * means the run stopped early (`shouldStop`) and the job must run again.
 */
export type PurgeGrant = (grantId: GrantId, shouldStop: () => boolean) => Promise<'done' | 'more'>;

const registry: Record<Provider, PurgeGrant> = {
  agent: purgeAgentMailbox,
  // Provider A's watch and channels stopped, its cursors (its mail is live; a grant connected before provider A's
  // own APIs served it may still have mail synced over IMAP: that goes too), then its tokens, revoked at the provider.
  google: async (grantId, shouldStop) => {
    await stopGooglePushes(grantId);
    return purgeImapGrant(grantId, shouldStop);
  },
  // Provider B's subscriptions deleted, its cursors and our metadata (its mail is live; a grant connected before
  // provider B's own API served it may still have mail synced over IMAP: that goes too), then its tokens.
  microsoft: async (grantId, shouldStop) => {
    await stopGraphPushes(grantId);
    return purgeImapGrant(grantId, shouldStop);
  },
  // Their synced mail (read over IMAP), then their tokens, revoked at the provider.
  yahoo: purgeImapGrant,
  zoom: purgeConnectedGrant,
  // Its synced mail and sync state, its sealed passwords and the tokens Switchboard issued for it (nothing to revoke at an IMAP server).
  imap: purgeImapGrant,
  icloud: purgeImapGrant,
};

/** The purge of a provider's grants; undefined for a provider that stores nothing of its own. */
export const purgeOf = (provider: string): PurgeGrant | undefined =>
  (registry as Record<string, PurgeGrant | undefined>)[provider];
