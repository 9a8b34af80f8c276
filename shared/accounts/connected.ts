import * as grants from '#shared/db/grants';
import { StaleWriteError, UniquenessConflictError, type GrantRecord, type Provider } from '#shared/db/grants';
import { getProviderTokens, providerTokensPut, type ProviderTokensRecord } from '#shared/db/oauth';
import { sealJson } from '#shared/crypto/sealed';
import { ConflictError } from '#shared/errors';
import { obscureUserAgent, toGrantResource } from '#shared/accounts/grant-resource';
import { newId, type ApplicationId, type GrantId } from '#shared/ids';
import type { OutboxEntry } from '#shared/db/outbox';
import { newNotification } from '#shared/notifications/notification';
import { MAIL_SYNCED_PROVIDERS, publicProviderName } from '#shared/providers/names';
import { clock } from '#shared/time';

/**
 * Creating a connected grant, or re-authenticating one: the hosted OAuth callback and bulk
 * authentication both end here. The grant of the same application, provider and address keeps its
 * ID: it is valid again, with the new scopes and provider tokens (`grant.updated`); otherwise a new
 * grant is created with its tokens (`grant.created`). Grant and sealed tokens commit together, with
 * their notification.
 */
export interface Connection {
  applicationId: ApplicationId;
  provider: Provider;
  email: string;
  name?: string;
  providerUserId: string;
  scope: string[];
  settings: Record<string, unknown>;
  tokens:
    | {
        source: Exclude<ProviderTokensRecord['source'], 'password'>;
        credential_id?: string;
        access_token: string;
        refresh_token?: string;
        expires_in?: number;
      }
    /** An IMAP account's passwords (shared/connect/custom-account.ts). */
    | { source: 'password'; passwords: { imap_password: string; smtp_password: string } };
  ip?: string;
  userAgent?: string;
}

/** A grant whose mail is synced from its server starts (or restarts) its sync once it is committed (shared/services/mail-sync.ts). */
const syncStart = (provider: Provider, grant: { id: GrantId; application_id: ApplicationId }): OutboxEntry[] =>
  MAIL_SYNCED_PROVIDERS.includes(provider)
    ? [
        {
          job: { kind: 'start-mail-sync', application_id: grant.application_id, grant_id: grant.id },
          id: newId('job'),
          applicationId: grant.application_id,
        },
      ]
    : [];

/** Where a grant's provider tokens are sealed (the record they belong to). */
export const providerTokensContext = (grantId: string) => `grant#${grantId}/provider_tokens`;

async function tokensItem(
  grantId: GrantRecord['id'],
  c: Connection,
  now: number,
  version: number,
): Promise<ProviderTokensRecord> {
  const base = {
    grant_id: grantId,
    application_id: c.applicationId,
    provider: c.provider,
    scope: c.scope,
    version,
    updated_at: now,
  };
  if (c.tokens.source === 'password') {
    return {
      ...base,
      source: 'password',
      sealed: await sealJson(c.tokens.passwords, 'provider-tokens', providerTokensContext(grantId)),
    };
  }
  const { source, credential_id, access_token, refresh_token, expires_in } = c.tokens;
  return {
    ...base,
    source,
    ...(credential_id ? { credential_id } : {}),
    sealed: await sealJson(
      { access_token, ...(refresh_token ? { refresh_token } : {}) },
      'provider-tokens',
      providerTokensContext(grantId),
    ),
    ...(expires_in ? { access_expires_at: now + expires_in } : {}),
  };
}

export async function connectGrant(c: Connection): Promise<{ grant: GrantRecord; created: boolean }> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const existing = await grants.getGrantByEmail(c.applicationId, c.email);
    if (existing) return { grant: await reconnect(existing, c), created: false };
    try {
      return { grant: await create(c), created: true };
    } catch (error) {
      // Two callbacks for one address at once: the other created it; re-authenticate it instead.
      if (error instanceof UniquenessConflictError && error.constraint === 'email') continue;
      throw error;
    }
  }
  throw new ConflictError(`The grant for ${c.email} kept changing; try again`);
}

async function create(c: Connection): Promise<GrantRecord> {
  const now = clock.nowSeconds();
  const record: GrantRecord = {
    id: newId('grant'),
    application_id: c.applicationId,
    provider: c.provider,
    grant_status: 'valid',
    email: c.email,
    ...(c.name ? { name: c.name } : {}),
    scope: c.scope,
    settings: c.settings,
    ...(c.ip ? { ip: c.ip } : {}),
    ...(c.userAgent ? { user_agent: obscureUserAgent(c.userAgent) } : {}),
    created_at: now,
    updated_at: now,
    provider_user_id: c.providerUserId,
    blocked: false,
  };
  const tokens = await tokensItem(record.id, c, now, 1);
  await grants.insertGrant(
    record,
    [['provider_tokens', providerTokensPut(tokens)]],
    [
      {
        notification: newNotification({
          type: 'grant.created',
          applicationId: c.applicationId,
          grantId: record.id,
          object: toGrantResource(record),
        }),
      },
      ...syncStart(c.provider, record),
    ],
  );
  return record;
}

async function reconnect(existing: GrantRecord, c: Connection): Promise<GrantRecord> {
  if (existing.provider !== c.provider) {
    throw new ConflictError(
      `${c.email} already has a grant of provider '${publicProviderName(existing.provider)}' in this application (${existing.id}); delete it before connecting the address through '${publicProviderName(c.provider)}'`,
    );
  }
  const now = clock.nowSeconds();
  const previous = await getProviderTokens(existing.id, true);
  const tokens = await tokensItem(existing.id, c, now, (previous?.version ?? 0) + 1);
  try {
    return await grants.reconnectGrant(
      existing,
      {
        grant_status: 'valid',
        scope: c.scope,
        settings: c.settings,
        provider_user_id: c.providerUserId,
        ...(c.name ? { name: c.name } : {}),
        updated_at: now,
      },
      [['provider_tokens', providerTokensPut(tokens)]],
      (next) => [
        {
          notification: newNotification({
            type: 'grant.updated',
            applicationId: c.applicationId,
            grantId: existing.id,
            object: toGrantResource(next),
          }),
        },
        ...syncStart(c.provider, existing),
      ],
    );
  } catch (error) {
    if (error instanceof StaleWriteError)
      throw new ConflictError(`The grant for ${c.email} was deleted meanwhile; authenticate again`);
    throw error;
  }
}
