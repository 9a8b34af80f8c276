import { formerGrant } from '#shared/accounts/purge';
import { getSyncState } from '#shared/db/mail-sync';
import { getProviderTokens } from '#shared/db/oauth';
import { stopChannel } from '#shared/google/calendar-channels';
import { googleClientOf } from '#shared/google/client';
import type { GrantId } from '#shared/ids';
import { logger } from '#shared/logger';

/**
 * The first step of a deleted provider A grant's purge (shared/registries/purge.ts): what it asked
 * Google to push (Gmail's watch, its Calendar channels), stopped with its tokens while they still
 * work, best effort (a provider that does not answer does not keep the purge waiting: a watch lapses
 * in 7 days, and pushes for a grant that is gone change nothing).
 */
export async function stopGooglePushes(grantId: GrantId): Promise<void> {
  const [state, tokens] = await Promise.all([getSyncState(grantId), getProviderTokens(grantId, true)]);
  const channels = Object.values(state?.gcal?.calendars ?? {}).flatMap((c) => (c.channel ? [c.channel] : []));
  if (state && tokens && (state.gmail?.watch || channels.length)) {
    const grant = formerGrant(grantId, tokens, 'google');
    try {
      const client = await googleClientOf(grant);
      if (state.gmail?.watch) await client.call({ api: 'gmail', method: 'POST', path: '/gmail/v1/users/me/stop' });
      for (const channel of channels) await stopChannel(client, channel);
    } catch (error) {
      logger.warn('provider A: watch or channels not stopped', {
        grant_id: grantId,
        reason: error instanceof Error ? error.message : String(error),
      });
    }
  }
}
