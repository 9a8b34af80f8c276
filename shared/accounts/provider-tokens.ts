import { randomUUID } from 'node:crypto';
import { sealJson, unsealJson } from '#shared/crypto/sealed';
import * as grants from '#shared/db/grants';
import { StaleWriteError, type GrantRecord } from '#shared/db/grants';
import * as db from '#shared/db/oauth';
import type { ProviderTokensRecord } from '#shared/db/oauth';
import { ApiError, AuthenticationError } from '#shared/errors';
import { toGrantResource } from '#shared/accounts/grant-resource';
import { newNotification } from '#shared/notifications/notification';
import {
  clientCredentialsToken,
  InvalidGrantError,
  refreshTokens,
  serviceAccountToken,
  type ProviderTokens,
} from '#shared/oauth/client';
import { credentialOf, providerClient } from '#shared/accounts/provider-client';
import { providerTokensContext } from '#shared/accounts/connected';
import { clock } from '#shared/time';
import { providerTokensOf } from '#shared/accounts/early-reads';

/**
 * A connected grant's access token at its provider, refreshed before it expires (Nango's lessons,
 * with DynamoDB as the lock):
 *
 * - refreshed when it expires within REFRESH_MARGIN_SECONDS, by one caller at a time: the caller that
 *   takes the lease (a conditional write on the grant's provider tokens item) re-reads the item and
 *   refreshes only if nobody did meanwhile; the others wait for the new version (briefly) and read it;
 * - new tokens (and a rotated refresh token) are written with a version check, under the lease;
 * - `invalid_grant` from the provider marks the grant `invalid`, committed with `grant.expired` (the
 *   account must authenticate again); transient failures (network, 5xx, other OAuth errors) back off
 *   and never invalidate a grant.
 */
export const REFRESH_MARGIN_SECONDS = 300;
const LEASE_SECONDS = 30;
const WAIT_MS = 8_000;
const POLL_MS = 150;
const BACKOFF_SECONDS = [30, 60, 120, 300, 900];

interface Sealed {
  access_token: string;
  refresh_token?: string;
}

/** The grant must authenticate again: its provider refused the refresh. */
export class GrantExpiredError extends ApiError {
  constructor(grant: GrantRecord) {
    super(
      401,
      `Grant '${grant.id}' has expired: its provider no longer accepts its authorization; authenticate the account again (GET /v3/connect/auth)`,
    );
  }
}

/** The provider could not be reached or answered an error: nothing changed, try again later. */
export class ProviderRefreshUnavailableError extends ApiError {
  constructor(provider: string, retryAt?: number) {
    super(
      503,
      `${provider} could not refresh the grant's access token just now${retryAt ? `; next attempt after ${new Date(retryAt * 1000).toISOString()}` : ''}`,
      {
        expose: true,
        ...(retryAt ? { headers: { 'retry-after': String(Math.max(1, retryAt - clock.nowSeconds())) } } : {}),
      },
    );
  }
}

const open = (record: ProviderTokensRecord) =>
  unsealJson<Sealed>(record.sealed, 'provider-tokens', providerTokensContext(record.grant_id));
const fresh = (record: ProviderTokensRecord, now: number) =>
  record.access_expires_at === undefined || record.access_expires_at > now + REFRESH_MARGIN_SECONDS;
const usable = (record: ProviderTokensRecord, now: number) =>
  record.access_expires_at === undefined || record.access_expires_at > now;

/** The grant's usable access token at its provider (refreshed first when due). */
export async function providerAccessToken(grant: GrantRecord): Promise<string> {
  if (grant.grant_status === 'invalid') throw new GrantExpiredError(grant);
  const record = await providerTokensOf(grant);
  if (!record)
    throw new AuthenticationError(
      `Grant '${grant.id}' has no provider tokens; authenticate the account again (GET /v3/connect/auth)`,
    );
  const now = clock.nowSeconds();
  if (fresh(record, now)) return (await open(record)).access_token;
  if (record.retry_at !== undefined && record.retry_at > now) {
    if (usable(record, now)) return (await open(record)).access_token;
    throw new ProviderRefreshUnavailableError(grant.provider, record.retry_at);
  }
  const leaseId = randomUUID();
  const leased = await db.takeRefreshLease(grant.id, leaseId, now, LEASE_SECONDS);
  if (!leased) return waitForRefresh(grant, record);
  // Re-read under the lease: another caller may have refreshed just before we took it.
  if (leased.version !== record.version || fresh(leased, clock.nowSeconds())) {
    await db.releaseLease(grant.id, leaseId);
    return (await open(leased)).access_token;
  }
  return refreshUnderLease(grant, leased, leaseId);
}

/** Another caller holds the lease: wait for the version it writes, then read it. */
async function waitForRefresh(grant: GrantRecord, seen: ProviderTokensRecord): Promise<string> {
  const deadline = clock.nowMs() + WAIT_MS;
  while (clock.nowMs() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    const current = await db.getProviderTokens(grant.id, true);
    if (!current) break;
    const now = clock.nowSeconds();
    if (current.version !== seen.version && usable(current, now)) return (await open(current)).access_token;
    // The lease was given back without a new version (a transient failure): use what is still valid.
    if (current.lease_id === undefined) {
      if (usable(current, now)) return (await open(current)).access_token;
      if (current.retry_at !== undefined) throw new ProviderRefreshUnavailableError(grant.provider, current.retry_at);
      return providerAccessToken(grant);
    }
  }
  const last = await db.getProviderTokens(grant.id, true);
  if (last && usable(last, clock.nowSeconds())) return (await open(last)).access_token;
  throw new ProviderRefreshUnavailableError(grant.provider);
}

/** New tokens from the provider, as the grant's source obtains them. */
async function obtain(grant: GrantRecord, record: ProviderTokensRecord, sealed: Sealed): Promise<ProviderTokens> {
  const client = await providerClient(
    grant.application_id,
    grant.provider,
    record.source === 'oauth' ? undefined : record.credential_id,
  );
  switch (record.source) {
    case 'oauth':
      if (!sealed.refresh_token)
        throw new InvalidGrantError(
          'invalid_grant',
          'The grant has no refresh token (authorized with access_type=online)',
        );
      return refreshTokens(client.server, client.client, sealed.refresh_token);
    case 'serviceaccount': {
      const credential = await credentialOf(grant.application_id, grant.provider, record.credential_id!);
      const data = credential.data;
      return serviceAccountToken(
        client.server,
        { client_email: data.client_email!, private_key: data.private_key!, private_key_id: data.private_key_id! },
        { subject: grant.email, scope: record.scope },
      );
    }
    case 'adminconsent': {
      const credential = await credentialOf(grant.application_id, grant.provider, record.credential_id!);
      return clientCredentialsToken(
        client.server,
        { client_id: credential.data.client_id!, client_secret: credential.data.client_secret! },
        { scope: record.scope },
      );
    }
    case 'password':
      // An IMAP account's passwords: there is no token to obtain (its grant never asks for one).
      throw new InvalidGrantError('invalid_grant', 'The grant authenticates with a password, not with provider tokens');
    default: {
      const exhaustive: never = record.source;
      throw new Error(`Unknown token source ${String(exhaustive)}`);
    }
  }
}

async function refreshUnderLease(grant: GrantRecord, record: ProviderTokensRecord, leaseId: string): Promise<string> {
  const sealed = await open(record);
  let tokens: ProviderTokens;
  try {
    tokens = await obtain(grant, record, sealed);
  } catch (error) {
    if (error instanceof InvalidGrantError) {
      await markExpired(grant, leaseId);
      throw new GrantExpiredError(grant);
    }
    // Anything else is transient for the grant (an outage, a misconfigured connector being fixed).
    const failures = (record.failures ?? 0) + 1;
    const retryAt = clock.nowSeconds() + BACKOFF_SECONDS[Math.min(failures, BACKOFF_SECONDS.length) - 1]!;
    await db.recordRefreshFailure(grant.id, leaseId, failures, retryAt);
    if (usable(record, clock.nowSeconds())) return sealed.access_token;
    throw new ProviderRefreshUnavailableError(grant.provider, retryAt);
  }
  const now = clock.nowSeconds();
  const next: Sealed = {
    access_token: tokens.access_token,
    ...((tokens.refresh_token ?? sealed.refresh_token)
      ? { refresh_token: tokens.refresh_token ?? sealed.refresh_token }
      : {}),
  };
  const stored = await db.storeRefreshed(
    record,
    {
      sealed: await sealJson(next, 'provider-tokens', providerTokensContext(grant.id)),
      ...(tokens.expires_in ? { access_expires_at: now + tokens.expires_in } : {}),
      scope: tokens.scope ? tokens.scope.split(' ').filter(Boolean) : record.scope,
      updated_at: now,
    },
    leaseId,
  );
  // Lease lost (it lapsed while the provider was slow, and someone else refreshed): theirs is current.
  if (!stored) {
    const current = await db.getProviderTokens(grant.id, true);
    if (current && usable(current, now)) return (await open(current)).access_token;
  }
  return tokens.access_token;
}

/** `invalid_grant`: the grant is invalid until authenticated again, with grant.expired, while the lease is ours. */
async function markExpired(grant: GrantRecord, leaseId: string): Promise<void> {
  try {
    await grants.setGrantStatus(
      grant,
      'invalid',
      clock.nowSeconds(),
      [['lease', db.leaseHeld(grant.id, leaseId)]],
      (next) => [
        {
          notification: newNotification({
            type: 'grant.expired',
            applicationId: grant.application_id,
            grantId: grant.id,
            object: toGrantResource(next),
          }),
        },
      ],
    );
  } catch (error) {
    // The lease lapsed or the grant is gone: whoever holds it decides.
    if (!(error instanceof StaleWriteError)) throw error;
  }
}
