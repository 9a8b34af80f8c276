import { formerGrant } from '#shared/accounts/purge';
import { getSyncState } from '#shared/db/mail-sync';
import { getProviderTokens } from '#shared/db/oauth';
import type { GrantId } from '#shared/ids';
import { logger } from '#shared/logger';
import { graphClientOf } from '#shared/microsoft/client';
import { deleteSubscription } from '#shared/microsoft/subscriptions';

/**
 * The first step of a deleted provider B grant's purge (shared/registries/purge.ts): its Graph
 * subscriptions deleted with its tokens while they still work, best effort (Graph ends them within
 * 4,230 minutes anyway, and a notification for a grant that is gone is refused and changes nothing).
 */
export async function stopGraphPushes(grantId: GrantId): Promise<void> {
  const [state, tokens] = await Promise.all([getSyncState(grantId), getProviderTokens(grantId, true)]);
  const ids = Object.values(state?.graph_push?.subscriptions ?? {}).flatMap((s) => (s.id ? [s.id] : []));
  if (!state || !tokens || !ids.length) return;
  const grant = formerGrant(grantId, tokens, 'microsoft');
  try {
    const client = await graphClientOf(grant);
    for (const id of ids) await deleteSubscription(client, id);
  } catch (error) {
    logger.warn('provider B: subscriptions not deleted', {
      grant_id: grantId,
      reason: error instanceof Error ? error.message : String(error),
    });
  }
}
