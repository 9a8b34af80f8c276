import { createHash, timingSafeEqual } from 'node:crypto';
import type { TokenBody, TokenInfoQuery } from '#schemas/connect';
import { authenticate } from '#shared/applications/authenticate';
import { getGrant } from '#shared/db/grants';
import * as db from '#shared/db/oauth';
import { ApiError, OAuthError } from '#shared/errors';
import { parseId, type ApplicationId } from '#shared/ids';
import { publicProviderName } from '#shared/providers/names';
import { clock } from '#shared/time';
import {
  accessTokenRecord,
  issueTokens,
  isAccessToken,
  isRefreshToken,
  RefreshRejectedError,
  revokeFamily,
  revokeToken,
  rotateRefreshToken,
  tokenHash,
} from '#shared/accounts/issued-tokens';
import { signIdToken, verifyIdToken } from '#shared/connect/id-tokens';

/**
 * The token endpoints of hosted OAuth: `POST /v3/connect/token` (an authorization code, a refresh
 * token, or client credentials for one grant, exchanged for Switchboard tokens), `POST
 * /v3/connect/revoke` and `GET /v3/connect/tokeninfo`. The client is the application (`client_id` =
 * its ID); it proves itself with its API key as `client_secret`, or, for a public client that began
 * the flow with a PKCE challenge, with the `code_verifier`.
 */
export interface TokenAnswer {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  id_token: string;
  refresh_token?: string;
  scope: string;
  grant_id: string;
  email: string;
  provider: string;
}

/** The application `client_id` names, with `client_secret` (an API key) proving it when sent. */
async function client(
  body: Pick<TokenBody, 'client_id' | 'client_secret'>,
): Promise<{ appId: ApplicationId; authenticated: boolean }> {
  const appId = parseId('application', body.client_id);
  if (!appId)
    throw new OAuthError(
      'invalid_client',
      `Unknown client_id '${body.client_id.slice(0, 64)}': it is the application ID (app_…)`,
    );
  if (body.client_secret === undefined) return { appId, authenticated: false };
  let app: Awaited<ReturnType<typeof authenticate>>;
  try {
    app = await authenticate(`Bearer ${body.client_secret}`);
  } catch (error) {
    if (error instanceof ApiError)
      throw new OAuthError('invalid_client', 'client_secret is not an API key of this client');
    throw error;
  }
  if (app.credential !== 'api_key' || app.applicationId !== appId)
    throw new OAuthError('invalid_client', 'client_secret is not an API key of this client');
  return { appId, authenticated: true };
}

const same = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * RFC 7636: S256 is base64url(SHA-256(verifier)). The official SDKs send base64 of the hex digest
 * (padding removed) instead; both are the verifier's SHA-256, so both are accepted.
 */
function pkceMatches(challenge: string, method: 'plain' | 'S256', verifier: string): boolean {
  if (method === 'plain') return same(challenge, verifier);
  const digest = createHash('sha256').update(verifier).digest();
  return (
    same(challenge, digest.toString('base64url')) ||
    same(challenge, Buffer.from(digest.toString('hex')).toString('base64').replace(/=+$/, ''))
  );
}

async function answer(
  appId: ApplicationId,
  grantId: string,
  scope: string[],
  issued: { access_token: string; expires_in: number; refresh_token?: string },
): Promise<TokenAnswer> {
  const grant = await getGrant(appId, grantId as never);
  if (!grant) throw new OAuthError('invalid_grant', 'The grant no longer exists');
  const provider = publicProviderName(grant.provider);
  return {
    access_token: issued.access_token,
    token_type: 'Bearer',
    expires_in: issued.expires_in,
    id_token: await signIdToken({
      iss: 'switchboard',
      aud: appId,
      sub: grant.id,
      email: grant.email,
      provider,
      grant_id: grant.id,
    }),
    ...(issued.refresh_token ? { refresh_token: issued.refresh_token } : {}),
    scope: scope.join(' '),
    grant_id: grant.id,
    email: grant.email,
    provider,
  };
}

export async function exchangeToken(body: TokenBody): Promise<TokenAnswer> {
  switch (body.grant_type) {
    case 'authorization_code':
      return exchangeCode(body);
    case 'refresh_token':
      return exchangeRefresh(body);
    case 'client_credentials':
      return exchangeClientCredentials(body);
    default: {
      const exhaustive: never = body.grant_type;
      throw new OAuthError('unsupported_grant_type', `grant_type '${String(exhaustive)}' is not supported`);
    }
  }
}

async function exchangeCode(body: TokenBody): Promise<TokenAnswer> {
  if (!body.code) throw new OAuthError('invalid_request', "grant_type=authorization_code needs 'code'");
  if (!body.redirect_uri)
    throw new OAuthError(
      'invalid_request',
      "grant_type=authorization_code needs 'redirect_uri' (the one of the authorization request)",
    );
  const { appId, authenticated } = await client(body);
  const hash = tokenHash(body.code);
  const used = await db.useCode(hash, clock.nowSeconds());
  if (!used || used.record.application_id !== appId)
    throw new OAuthError('invalid_grant', 'The code is unknown, or was issued to another client');
  const code = used.record;
  if (used.replayed) {
    // A code is used once; its second use revokes what the first one got (RFC 6749 §4.1.2).
    await revokeFamily(code.grant_id, hash);
    throw new OAuthError('invalid_grant', 'The code was already used; the tokens issued from it are revoked');
  }
  if (code.expires_at <= clock.nowSeconds())
    throw new OAuthError('invalid_grant', 'The code has expired (codes are valid for 10 minutes)');
  if (body.redirect_uri !== code.redirect_uri)
    throw new OAuthError('invalid_grant', "redirect_uri differs from the authorization request's");
  if (code.code_challenge) {
    if (!body.code_verifier)
      throw new OAuthError('invalid_grant', "The authorization request had a code_challenge: send its 'code_verifier'");
    if (!pkceMatches(code.code_challenge, code.code_challenge_method ?? 'plain', body.code_verifier))
      throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
  } else if (!authenticated) {
    throw new OAuthError(
      'invalid_client',
      "Send the application's API key as 'client_secret' (or begin the flow with a PKCE code_challenge)",
    );
  }
  const issued = await issueTokens({
    applicationId: appId,
    grantId: code.grant_id,
    scope: code.scope,
    family: hash,
    refresh: code.access_type === 'offline',
  });
  return answer(appId, code.grant_id, code.scope, issued);
}

async function exchangeRefresh(body: TokenBody): Promise<TokenAnswer> {
  if (!body.refresh_token) throw new OAuthError('invalid_request', "grant_type=refresh_token needs 'refresh_token'");
  const { appId } = await client(body);
  try {
    const { record, tokens } = await rotateRefreshToken(appId, body.refresh_token);
    return answer(appId, record.grant_id, record.scope, tokens);
  } catch (error) {
    if (error instanceof RefreshRejectedError) throw new OAuthError('invalid_grant', error.message);
    throw error;
  }
}

/** An access token for one grant of the application, asked with its API key (no user present). */
async function exchangeClientCredentials(body: TokenBody): Promise<TokenAnswer> {
  if (!body.grant_id) throw new OAuthError('invalid_request', "grant_type=client_credentials needs 'grant_id'");
  if (!body.client_secret)
    throw new OAuthError(
      'invalid_client',
      "grant_type=client_credentials needs the application's API key as 'client_secret'",
    );
  const { appId } = await client(body);
  const grantId = parseId('grant', body.grant_id);
  const grant = grantId ? await getGrant(appId, grantId) : undefined;
  if (!grant)
    throw new OAuthError('invalid_grant', `Grant '${body.grant_id.slice(0, 64)}' is not a grant of this client`);
  const issued = await issueTokens({
    applicationId: appId,
    grantId: grant.id,
    scope: grant.scope,
    family: `cc#${grant.id}#${clock.nowMs()}`,
    refresh: false,
  });
  return answer(appId, grant.id, grant.scope, issued);
}

/** Revokes an access or refresh token and every token of its family; an unknown token is an `invalid_token` error. */
export async function revoke(token: string): Promise<void> {
  if (!isAccessToken(token) && !isRefreshToken(token))
    throw new OAuthError('invalid_token', 'The token is not one Switchboard issued');
  const revoked = await revokeToken(token);
  if (!revoked) throw new OAuthError('invalid_token', 'The token is unknown, expired or already revoked');
}

/**
 * What a Switchboard ID token or access token says, if it is valid. Its errors are OAuth errors, as
 * the published contract answers them: `invalid_request` for the query, `invalid_token` (400, as for
 * revocation) for a token that is not valid.
 */
export async function tokenInfo(query: TokenInfoQuery): Promise<Record<string, unknown>> {
  if ((query.id_token === undefined) === (query.access_token === undefined))
    throw new OAuthError('invalid_request', "Send exactly one of 'id_token' and 'access_token'");
  if (query.id_token !== undefined) {
    const claims = await verifyIdToken(query.id_token);
    if (!claims) throw new OAuthError('invalid_token', 'The ID token is not valid (signature or expiry)');
    return { ...claims };
  }
  const record = await accessTokenRecord(query.access_token!);
  if (!record) throw new OAuthError('invalid_token', 'The access token is unknown, revoked or expired');
  const grant = await getGrant(record.application_id, record.grant_id);
  if (!grant) throw new OAuthError('invalid_token', 'The grant of this access token no longer exists');
  return {
    iss: 'switchboard',
    aud: record.application_id,
    sub: grant.id,
    grant_id: grant.id,
    email: grant.email,
    provider: publicProviderName(grant.provider),
    scope: record.scope.join(' '),
    iat: record.created_at,
    exp: record.expires_at,
  };
}
