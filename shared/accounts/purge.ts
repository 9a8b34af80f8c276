import { unsealJson } from '#shared/crypto/sealed';
import * as db from '#shared/db/oauth';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { GrantId } from '#shared/ids';
import { logger } from '#shared/logger';
import { revokeToken } from '#shared/oauth/client';
import { providerClient } from '#shared/accounts/provider-client';
import { providerTokensContext } from '#shared/accounts/connected';
import { revokeGrantTokens } from '#shared/accounts/issued-tokens';
import { clock } from '#shared/time';

/**
 * What a deleted connected grant leaves behind, removed by the jobs worker: its tokens at the
 * provider (revoked there too, as a courtesy to the account's owner: best effort, an unreachable
 * provider does not keep the purge waiting) and every access and refresh token Switchboard issued
 * for it. Idempotent: a second run finds nothing.
 */
export async function purgeConnectedGrant(grantId: GrantId): Promise<'done' | 'more'> {
  const record = await db.getProviderTokens(grantId, true);
  if (record) {
    try {
      const sealed = await unsealJson<{ access_token: string; refresh_token?: string }>(
        record.sealed,
        'provider-tokens',
        providerTokensContext(grantId),
      );
      if (record.source === 'oauth') {
        const { server, client } = await providerClient(record.application_id, record.provider);
        await revokeToken(server, client, sealed.refresh_token ?? sealed.access_token);
      }
    } catch (error) {
      // Never the token itself: only what failed.
      logger.warn('provider token not revoked at the provider', {
        grant_id: grantId,
        provider: record.provider,
        reason: (error as Error).name,
      });
    }
    await db.deleteProviderTokens(grantId);
  }
  await revokeGrantTokens(grantId);
  return 'done';
}

/**
 * A deleted grant as its provider client needs it, from the tokens it left (the grant record is gone):
 * what identifies the account and its tokens. For the purge's calls that stop what it asked the
 * provider for (watches, channels, subscriptions) while its tokens still work.
 */
export function formerGrant(grantId: GrantId, tokens: db.ProviderTokensRecord, provider: Provider): GrantRecord {
  const now = clock.nowSeconds();
  return {
    id: grantId,
    application_id: tokens.application_id,
    provider,
    grant_status: 'valid',
    email: '',
    scope: tokens.scope,
    settings: {},
    created_at: now,
    updated_at: now,
    blocked: false,
  };
}
