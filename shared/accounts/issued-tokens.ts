import { createHash, randomBytes } from 'node:crypto';
import * as db from '#shared/db/oauth';
import type { ApiTokenRecord } from '#shared/db/oauth';
import { transactWrite, TransactionConditionError } from '#shared/db/transact';
import type { ApplicationId, GrantId } from '#shared/ids';
import { clock } from '#shared/time';

/**
 * The tokens Switchboard issues to applications for one grant (hosted OAuth's token exchange):
 *
 * - access tokens (`sbat_…`, 256 random bits, one hour) open that grant's endpoints, `me` included;
 * - refresh tokens (`sbrt_…`, with `access_type=offline`) get a new pair once: each use rotates them,
 *   and a second use of a rotated one fails;
 * - ID tokens (shared/connect/id-tokens.ts) say who the grant is.
 *
 * Access and refresh tokens are stored as SHA-256 only. Every token descended from one authorization
 * code shares a family: revoking any of them revokes the family, and a replayed code revokes it too.
 */
export const ACCESS_PREFIX = 'sbat_';
export const REFRESH_PREFIX = 'sbrt_';
export const ACCESS_TOKEN_SECONDS = 3600;

export const tokenHash = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');
const newToken = (prefix: string) => `${prefix}${randomBytes(32).toString('base64url')}`;

export const isAccessToken = (token: string) => token.startsWith(ACCESS_PREFIX);
export const isRefreshToken = (token: string) => token.startsWith(REFRESH_PREFIX);

export interface IssuedTokens {
  access_token: string;
  expires_in: number;
  refresh_token?: string;
}

/** A new access token (and refresh token when asked) for a grant, in one transaction. */
export async function issueTokens(
  p: { applicationId: ApplicationId; grantId: GrantId; scope: string[]; family: string; refresh: boolean },
  extra: ReturnType<typeof db.tokenTake>[] = [],
): Promise<IssuedTokens> {
  const now = clock.nowSeconds();
  const access = newToken(ACCESS_PREFIX);
  const base = {
    application_id: p.applicationId,
    grant_id: p.grantId,
    scope: p.scope,
    family: p.family,
    created_at: now,
  };
  const items = [
    ...db.tokenPuts(tokenHash(access), { ...base, kind: 'access', expires_at: now + ACCESS_TOKEN_SECONDS }),
  ];
  const refresh = p.refresh ? newToken(REFRESH_PREFIX) : undefined;
  if (refresh) items.push(...db.tokenPuts(tokenHash(refresh), { ...base, kind: 'refresh' }));
  await transactWrite([...items, ...extra].map((item, i) => [`token:${i}`, item] as const));
  return { access_token: access, expires_in: ACCESS_TOKEN_SECONDS, ...(refresh ? { refresh_token: refresh } : {}) };
}

/** The live access token `token` is, or undefined (unknown, revoked, expired, or not an access token). */
export async function accessTokenRecord(token: string): Promise<ApiTokenRecord | undefined> {
  if (!isAccessToken(token) || token.length > 200) return undefined;
  const record = await db.getToken(tokenHash(token));
  if (!record || record.kind !== 'access' || (record.expires_at ?? 0) <= clock.nowSeconds()) return undefined;
  return record;
}

export class RefreshRejectedError extends Error {}

/**
 * Rotates a refresh token of `appId`: the old one is taken (deleted, conditionally: of two concurrent
 * uses one wins) and a new pair issued in the same transaction. A refresh token used a second time
 * (already rotated) revokes nothing more but is refused.
 */
export async function rotateRefreshToken(
  appId: ApplicationId,
  refreshToken: string,
): Promise<{ record: ApiTokenRecord; tokens: IssuedTokens }> {
  if (!isRefreshToken(refreshToken) || refreshToken.length > 200)
    throw new RefreshRejectedError('The refresh token is not one Switchboard issued');
  const hash = tokenHash(refreshToken);
  const record = await db.getToken(hash);
  if (!record || record.kind !== 'refresh')
    throw new RefreshRejectedError('The refresh token is unknown, revoked or already used');
  if (record.application_id !== appId) throw new RefreshRejectedError('The refresh token was issued to another client');
  try {
    const tokens = await issueTokens(
      { applicationId: appId, grantId: record.grant_id, scope: record.scope, family: record.family, refresh: true },
      [db.tokenTake(hash)],
    );
    // The copy under the grant goes too (outside the transaction: a leftover copy only points at nothing).
    await db.deleteTokens(record.grant_id, [hash]);
    return { record, tokens };
  } catch (error) {
    if (error instanceof TransactionConditionError)
      throw new RefreshRejectedError('The refresh token is unknown, revoked or already used');
    throw error;
  }
}

/**
 * Revokes the token's family (the access and refresh tokens from one authorization), whichever
 * token of it is given; false when the token is unknown.
 */
export async function revokeToken(token: string): Promise<ApiTokenRecord | undefined> {
  if (token.length > 200) return undefined;
  const record = await db.getToken(tokenHash(token));
  if (!record) return undefined;
  const family = await db.tokensOf(record.grant_id, record.family);
  await db.deleteTokens(record.grant_id, [...new Set([tokenHash(token), ...family.map((t) => t.hash)])]);
  return record;
}

/** Revokes every token issued for a grant (it is deleted, or its user revoked it). */
export async function revokeGrantTokens(grantId: GrantId): Promise<void> {
  const all = await db.tokensOf(grantId);
  await db.deleteTokens(
    grantId,
    all.map((t) => t.hash),
  );
}

/** Revokes the tokens issued from one authorization code (the code was replayed). */
export async function revokeFamily(grantId: GrantId, family: string): Promise<void> {
  const tokens = await db.tokensOf(grantId, family);
  await db.deleteTokens(
    grantId,
    tokens.map((t) => t.hash),
  );
}
