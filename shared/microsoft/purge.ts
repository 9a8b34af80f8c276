import type { GrantRecord } from '#shared/db/grants';
import { getSyncState } from '#shared/db/mail-sync';
import { getProviderTokens } from '#shared/db/oauth';
import type { GrantId } from '#shared/ids';
import { logger } from '#shared/logger';
import { graphClientOf } from '#shared/microsoft/client';
import { deleteSubscription } from '#shared/microsoft/subscriptions';
import { clock } from '#shared/time';

/**
 * The first step of a deleted provider B grant's purge (shared/registries/purge.ts): its Graph
 * subscriptions deleted with its tokens while they still work, best effort (Graph ends them within
 * 4,230 minutes anyway, and a notification for a grant that is gone is refused and changes nothing).
 */
export async function stopGraphPushes(grantId: GrantId): Promise<void> {
  const [state, tokens] = await Promise.all([getSyncState(grantId), getProviderTokens(grantId, true)]);
  const ids = Object.values(state?.graph_push?.subscriptions ?? {}).flatMap((s) => (s.id ? [s.id] : []));
  if (!state || !tokens || !ids.length) return;
  // The grant record is gone: its client needs only what identifies the account and its tokens.
  const now = clock.nowSeconds();
  const grant: GrantRecord = {
    id: grantId,
    application_id: tokens.application_id,
    provider: 'microsoft',
    grant_status: 'valid',
    email: '',
    scope: tokens.scope,
    settings: {},
    created_at: now,
    updated_at: now,
    blocked: false,
  };
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
