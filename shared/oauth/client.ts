import { createHash, createPrivateKey, randomBytes, sign, type KeyObject } from 'node:crypto';
import * as oauth from '#shared/lazy/oauth';
import { IdentityError, ProviderConfigurationError, ProviderOAuthError } from '#shared/oauth/errors';
import { requestOptions, translate } from '#shared/oauth/http';
import type { AuthorizationServer } from '#shared/oauth/server';
import { clock } from '#shared/time';

/**
 * The OAuth 2 / OpenID Connect client of connected accounts: authorization and admin consent URLs
 * (pure), and the token endpoint grants (authorization code with PKCE, refresh, JWT bearer for
 * provider A service accounts, client credentials for provider B), revocation, and the user's
 * identity from a verified ID token. Built on oauth4webapi; every request goes through the guarded
 * fetch (shared/oauth/http.ts). Errors are typed (shared/oauth/errors.ts) and never carry tokens.
 */

export * from '#shared/oauth/errors';
export { clearDiscoveryCache } from '#shared/oauth/server';
export type { AuthorizationServer, OAuthConventions } from '#shared/oauth/server';

export interface OAuthClient {
  client_id: string;
  /** Absent: a public client (PKCE only). */
  client_secret?: string;
  /** Default: client_secret_post when the server's metadata lists it, otherwise client_secret_basic. */
  token_endpoint_auth_method?: 'client_secret_post' | 'client_secret_basic';
}

export interface ProviderTokens {
  access_token: string;
  token_type: string;
  expires_in?: number;
  /** Absent on a refresh that did not rotate it (provider A never does): keep the one you have. */
  refresh_token?: string;
  scope?: string;
  id_token?: string;
}

export interface Identity {
  sub: string;
  email: string;
  email_verified?: boolean;
  name?: string;
}

// ---------------------------------------------------------------------------------------------
// URLs (no network)

const PKCE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** Parameters authorizationUrl sets itself; `extra` may not replace them. */
const RESERVED = new Set([
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'nonce',
  'code_challenge',
  'code_challenge_method',
  'access_type',
  'prompt',
  'login_hint',
]);

/** A PKCE pair: keep the verifier with the flow's state, send the challenge. */
export function pkcePair(): { code_verifier: string; code_challenge: string } {
  const code_verifier = randomBytes(32).toString('base64url');
  return { code_verifier, code_challenge: codeChallengeS256(code_verifier) };
}

export function codeChallengeS256(codeVerifier: string): string {
  return createHash('sha256').update(codeVerifier).digest('base64url');
}

/**
 * Where to send the user. Offline access unless `access_type: 'online'`: provider A gets
 * `access_type=offline` and `prompt=consent` (without consent it issues a refresh token only the
 * first time), provider B gets the `offline_access` scope.
 */
export function authorizationUrl(
  server: AuthorizationServer,
  p: {
    client_id: string;
    redirect_uri: string;
    scope: string[];
    state: string;
    nonce: string;
    code_challenge: string;
    login_hint?: string;
    prompt?: string;
    access_type?: 'online' | 'offline';
    extra?: Record<string, string>;
  },
): URL {
  if (!p.state || !p.nonce) throw new TypeError('authorizationUrl needs a state and a nonce');
  if (!PKCE_CHALLENGE.test(p.code_challenge))
    throw new TypeError('code_challenge must be the S256 challenge (43 base64url characters), not the verifier');
  const offline = p.access_type !== 'online';
  let scope = [...new Set(p.scope)];
  if (server.conventions?.offline === 'offline_access_scope')
    scope = offline ? [...new Set([...scope, 'offline_access'])] : scope.filter((s) => s !== 'offline_access');
  const url = new URL(server.authorization_endpoint);
  const set = (name: string, value: string | undefined) => value !== undefined && url.searchParams.set(name, value);
  set('response_type', 'code');
  set('client_id', p.client_id);
  set('redirect_uri', p.redirect_uri);
  set('scope', scope.join(' '));
  set('state', p.state);
  set('nonce', p.nonce);
  set('code_challenge', p.code_challenge);
  set('code_challenge_method', 'S256');
  set('login_hint', p.login_hint);
  if (server.conventions?.offline === 'access_type') {
    set('access_type', offline ? 'offline' : 'online');
    set('prompt', p.prompt ?? (offline ? 'consent' : undefined));
  } else {
    set('prompt', p.prompt);
  }
  for (const [name, value] of Object.entries(p.extra ?? {})) {
    if (RESERVED.has(name))
      throw new TypeError(`'${name}' is set by authorizationUrl itself; pass it as its own parameter`);
    set(name, value);
  }
  return url;
}

/**
 * Provider B's admin consent URL (an administrator grants the app's application permissions for
 * the whole tenant). The scope defaults to the app's configured permissions (`.default`).
 */
export function adminConsentUrl(
  server: AuthorizationServer,
  p: { client_id: string; redirect_uri: string; state: string; scope?: string[] },
): URL {
  if (!server.admin_consent_endpoint)
    throw new ProviderConfigurationError(`${server.issuer} has no admin consent endpoint`);
  if (!p.state) throw new TypeError('adminConsentUrl needs a state');
  const url = new URL(server.admin_consent_endpoint);
  url.searchParams.set('client_id', p.client_id);
  url.searchParams.set('redirect_uri', p.redirect_uri);
  url.searchParams.set('state', p.state);
  const scope = p.scope ?? (server.conventions?.appScope ? [server.conventions.appScope] : undefined);
  if (scope?.length) url.searchParams.set('scope', scope.join(' '));
  return url;
}

/**
 * The code from the provider's redirect to our callback, after checking it: `state` must be the
 * flow's (compare before trusting anything else), an `error` becomes ProviderOAuthError (e.g.
 * `access_denied` when the user declined), and an `iss` parameter (RFC 9207), when the server sends
 * one, must be this server's issuer (a mix-up between providers otherwise).
 */
export function callbackCode(server: AuthorizationServer, query: URLSearchParams, expectedState: string): string {
  if (query.get('state') !== expectedState)
    throw new ProviderOAuthError('invalid_state', undefined, {
      message: "the callback's state does not match the authorization request",
    });
  const iss = query.get('iss');
  if (iss !== null && iss !== server.issuer)
    throw new ProviderOAuthError('invalid_issuer', undefined, {
      message: `the callback came from issuer ${iss}, not ${server.issuer}`,
    });
  const error = query.get('error');
  if (error !== null) throw new ProviderOAuthError(error, query.get('error_description') ?? undefined);
  const code = query.get('code');
  if (!code)
    throw new ProviderOAuthError('invalid_request', undefined, {
      message: 'the callback carries neither a code nor an error',
    });
  return code;
}

// ---------------------------------------------------------------------------------------------
// Token endpoint

/**
 * The `iss` an ID token of this server must carry. Provider B's multi-tenant endpoints
 * (common, organizations, consumers) issue tokens under the user's own tenant
 * (`https://login.microsoftonline.com/{tid}/v2.0`); provider A may still write its issuer without
 * the scheme.
 */
export function expectedIdTokenIssuer(server: AuthorizationServer, claims: Record<string, unknown>): string {
  const tenant = server.conventions?.tenantIssuer;
  if (
    tenant &&
    new RegExp(tenant.multiTenantIssuer).test(server.issuer) &&
    typeof claims.tid === 'string' &&
    /^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$/i.test(claims.tid)
  ) {
    return tenant.issuerTemplate.replace('{tid}', claims.tid.toLowerCase());
  }
  const bare = server.conventions?.bareIssuer;
  if (bare && server.issuer === bare && claims.iss === bare.replace(/^https:\/\//, '')) return claims.iss;
  return server.issuer;
}

/**
 * oauth4webapi's hook for issuers that vary per token: exported (underscored) for openid-client,
 * which sets it for provider B's multi-tenant endpoints too. Checked on first use (the library is a
 * lazy chunk), so an upgrade that drops it fails loudly; without it those ID tokens would be
 * refused, never wrongly accepted.
 */
let expectedIssuerHook: symbol | undefined;
function expectedIssuer(): symbol {
  if (expectedIssuerHook) return expectedIssuerHook;
  const hook: unknown = oauth._expectedIssuer;
  if (typeof hook !== 'symbol')
    throw new Error(
      'oauth4webapi no longer exports _expectedIssuer: check shared/oauth/client.ts against its new version',
    );
  return (expectedIssuerHook = hook);
}

/** The library's view of a server (a fresh object per call: it keys nothing on it that we rely on). */
function libraryServer(server: AuthorizationServer): oauth.AuthorizationServer {
  const as: oauth.AuthorizationServer & { [key: symbol]: unknown } = {
    issuer: server.issuer,
    authorization_endpoint: server.authorization_endpoint,
    token_endpoint: server.token_endpoint,
    ...(server.jwks_uri ? { jwks_uri: server.jwks_uri } : {}),
    ...(server.userinfo_endpoint ? { userinfo_endpoint: server.userinfo_endpoint } : {}),
    ...(server.revocation_endpoint ? { revocation_endpoint: server.revocation_endpoint } : {}),
    ...(server.token_endpoint_auth_methods_supported
      ? { token_endpoint_auth_methods_supported: [...server.token_endpoint_auth_methods_supported] }
      : {}),
    ...(server.id_token_signing_alg_values_supported
      ? { id_token_signing_alg_values_supported: [...server.id_token_signing_alg_values_supported] }
      : {}),
  };
  as[expectedIssuer()] = (result: { claims: Record<string, unknown> }) => expectedIdTokenIssuer(server, result.claims);
  return as;
}

function clientAuthentication(server: AuthorizationServer, client: OAuthClient): oauth.ClientAuth {
  if (!client.client_secret) return oauth.None();
  const method =
    client.token_endpoint_auth_method ??
    (server.token_endpoint_auth_methods_supported?.includes('client_secret_post')
      ? 'client_secret_post'
      : 'client_secret_basic');
  return method === 'client_secret_post'
    ? oauth.ClientSecretPost(client.client_secret)
    : oauth.ClientSecretBasic(client.client_secret);
}

/** The grant authenticates by itself (the JWT bearer assertion): nothing added to the request. */
const assertionOnly: oauth.ClientAuth = () => {};

function providerTokens(result: oauth.TokenEndpointResponse): ProviderTokens {
  const tokens: ProviderTokens = { access_token: result.access_token, token_type: result.token_type };
  if (typeof result.expires_in === 'number') tokens.expires_in = result.expires_in;
  if (typeof result.refresh_token === 'string') tokens.refresh_token = result.refresh_token;
  if (typeof result.scope === 'string') tokens.scope = result.scope;
  if (typeof result.id_token === 'string') tokens.id_token = result.id_token;
  return tokens;
}

/** Per container: JWKS documents by URI, for oauth4webapi (which refreshes them after 5 minutes, or on an unknown `kid`). */
const jwksCaches = new Map<string, oauth.JWKSCacheInput>();
function jwksCacheFor(uri: string): oauth.JWKSCacheInput {
  let cache = jwksCaches.get(uri);
  if (!cache) jwksCaches.set(uri, (cache = {} as oauth.JWKSCacheInput));
  return cache;
}

/**
 * Redeems the code from our callback: PKCE verifier, client secret as the metadata allows. Then
 * verifies the ID token (RS256/ES256 signature against the server's JWKS, `iss`, `aud` = client_id,
 * `exp`/`iat`, `nonce`) and says who the user is, from the ID token or, when it has no email, from
 * userinfo. A server without `jwks_uri` (plain OAuth 2, e.g. zoom) gives no ID token: the identity
 * then comes from its userinfo endpoint alone.
 */
export async function exchangeCode(
  server: AuthorizationServer,
  client: OAuthClient,
  p: { code: string; redirect_uri: string; code_verifier: string; nonce: string },
): Promise<{ tokens: ProviderTokens; identity: Identity }> {
  const as = libraryServer(server);
  const c: oauth.Client = { client_id: client.client_id };
  const openid = server.jwks_uri !== undefined;
  let response: Response;
  let result: oauth.TokenEndpointResponse;
  try {
    response = await oauth.genericTokenEndpointRequest(
      as,
      c,
      clientAuthentication(server, client),
      'authorization_code',
      { code: p.code, redirect_uri: p.redirect_uri, code_verifier: p.code_verifier },
      requestOptions(),
    );
  } catch (error) {
    throw translate(error);
  }
  try {
    result = await oauth.processAuthorizationCodeResponse(
      as,
      c,
      response,
      openid ? { expectedNonce: p.nonce, requireIdToken: true } : {},
    );
  } catch (error) {
    throw translate(error, { idToken: openid });
  }
  const tokens = providerTokens(result);
  if (!openid) return { tokens, identity: await oauthIdentity(server, as, c, tokens.access_token) };

  try {
    await oauth.validateApplicationLevelSignature(as, response, {
      ...requestOptions(),
      [oauth.jwksCache]: jwksCacheFor(server.jwks_uri!),
    });
  } catch (error) {
    throw translate(error, { idToken: true });
  }
  const claims = oauth.getValidatedIdTokenClaims(result)!;
  let identity = identityFrom(claims);
  if (!identity.email && server.userinfo_endpoint) {
    let userinfo: oauth.UserInfoResponse;
    try {
      const answer = await oauth.userInfoRequest(as, c, tokens.access_token, requestOptions());
      // Refused unless its `sub` is the ID token's.
      userinfo = await oauth.processUserInfoResponse(as, c, claims.sub, answer);
    } catch (error) {
      throw translate(error);
    }
    const { email, email_verified, name } = identityFrom(userinfo);
    identity = {
      ...identity,
      ...(email ? { email } : {}),
      ...(email_verified !== undefined ? { email_verified } : {}),
      ...(!identity.name && name ? { name } : {}),
    };
  }
  if (!identity.email && server.conventions?.emailFromUsername) {
    // Work accounts without a mail attribute: the sign-in name is the mailbox address.
    const username = claims.preferred_username;
    if (typeof username === 'string' && EMAIL.test(username)) identity = { ...identity, email: username };
  }
  if (!identity.email)
    throw new IdentityError('the provider did not share the account’s email address (ask for the email scope)');
  return { tokens, identity: identity as Identity };
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

function identityFrom(claims: Record<string, unknown>): Partial<Identity> & { sub: string } {
  const identity: Partial<Identity> & { sub: string } = { sub: String(claims.sub) };
  if (typeof claims.email === 'string' && EMAIL.test(claims.email)) identity.email = claims.email;
  // Some providers send the boolean as a string.
  if (typeof claims.email_verified === 'boolean') identity.email_verified = claims.email_verified;
  else if (claims.email_verified === 'true' || claims.email_verified === 'false')
    identity.email_verified = claims.email_verified === 'true';
  if (typeof claims.name === 'string' && claims.name) identity.name = claims.name;
  return identity;
}

/** Plain OAuth 2 (no ID token): the user as the provider's "me" endpoint describes them (`sub` or `id`, `email`). */
async function oauthIdentity(
  server: AuthorizationServer,
  as: oauth.AuthorizationServer,
  c: oauth.Client,
  accessToken: string,
): Promise<Identity> {
  if (!server.userinfo_endpoint)
    throw new IdentityError(
      `${server.issuer} has neither a JWKS nor a userinfo endpoint: nothing says who the user is`,
    );
  let body: Record<string, unknown>;
  try {
    const answer = await oauth.userInfoRequest(as, c, accessToken, requestOptions());
    if (answer.status !== 200)
      throw new ProviderOAuthError('invalid_token', undefined, {
        status: answer.status,
        message: `the userinfo endpoint answered HTTP ${answer.status}`,
      });
    body = (await answer.json()) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof SyntaxError)
      throw new ProviderOAuthError('invalid_response', undefined, {
        message: 'the userinfo endpoint did not answer JSON',
      });
    throw translate(error);
  }
  const sub =
    typeof body.sub === 'string'
      ? body.sub
      : typeof body.id === 'string' || typeof body.id === 'number'
        ? String(body.id)
        : undefined;
  if (!sub) throw new IdentityError('the userinfo answer has no subject');
  const identity = identityFrom({ ...body, sub });
  if (!identity.name && typeof body.display_name === 'string') identity.name = body.display_name;
  if (!identity.email) throw new IdentityError('the provider did not share the account’s email address');
  return identity as Identity;
}

/** A new access token; a new refresh token too when the server rotates them. InvalidGrantError: the refresh token is dead. */
export async function refreshTokens(
  server: AuthorizationServer,
  client: OAuthClient,
  refresh_token: string,
): Promise<ProviderTokens> {
  const as = libraryServer(server);
  const c: oauth.Client = { client_id: client.client_id };
  try {
    const response = await oauth.refreshTokenGrantRequest(
      as,
      c,
      clientAuthentication(server, client),
      refresh_token,
      requestOptions(),
    );
    return providerTokens(await oauth.processRefreshTokenResponse(as, c, response));
  } catch (error) {
    throw translate(error);
  }
}

/**
 * Revokes a token (RFC 7009); a no-op when the server has no revocation endpoint (provider B). A
 * token the server already considers invalid counts as revoked.
 */
export async function revokeToken(server: AuthorizationServer, client: OAuthClient, token: string): Promise<void> {
  if (!server.revocation_endpoint) return;
  const as = libraryServer(server);
  const c: oauth.Client = { client_id: client.client_id };
  try {
    const response = await oauth.revocationRequest(
      as,
      c,
      clientAuthentication(server, client),
      token,
      requestOptions(),
    );
    await oauth.processRevocationResponse(response);
  } catch (error) {
    const translated = translate(error);
    if (translated instanceof ProviderOAuthError && translated.error === 'invalid_token') return;
    throw translated;
  }
}

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** Provider A accepts assertions valid for at most an hour. */
const ASSERTION_LIFETIME_SECONDS = 3600;

function privateKey(pem: string): KeyObject {
  try {
    const key = createPrivateKey(pem);
    if (key.asymmetricKeyType !== 'rsa') throw new Error('not RSA');
    return key;
  } catch {
    throw new ProviderConfigurationError("the service account's private_key is not an RSA private key in PEM form");
  }
}

/** The signed JWT bearer assertion of serviceAccountToken. */
export function serviceAccountAssertion(
  server: AuthorizationServer,
  account: { client_email: string; private_key: string; private_key_id: string },
  p: { subject: string; scope: string[] },
): string {
  const key = privateKey(account.private_key);
  const now = clock.nowSeconds();
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const signingInput = `${encode({ alg: 'RS256', typ: 'JWT', kid: account.private_key_id })}.${encode({
    iss: account.client_email,
    sub: p.subject,
    scope: p.scope.join(' '),
    aud: server.token_endpoint,
    iat: now,
    exp: now + ASSERTION_LIFETIME_SECONDS,
  })}`;
  return `${signingInput}.${sign('sha256', Buffer.from(signingInput), key).toString('base64url')}`;
}

/**
 * Provider A bulk access: a token for `subject` (a user of the workspace) through the service
 * account's domain-wide delegation, by the JWT bearer grant (RFC 7523). The assertion is RS256,
 * signed with the account's private key (`kid` = private_key_id), `iss` = client_email, `sub` = the
 * user, `aud` = the token endpoint, valid for an hour.
 */
export async function serviceAccountToken(
  server: AuthorizationServer,
  account: { client_email: string; private_key: string; private_key_id: string },
  p: { subject: string; scope: string[] },
): Promise<ProviderTokens> {
  const assertion = serviceAccountAssertion(server, account, p);
  const as = libraryServer(server);
  const c: oauth.Client = { client_id: account.client_email };
  try {
    const response = await oauth.genericTokenEndpointRequest(
      as,
      c,
      assertionOnly,
      JWT_BEARER,
      { assertion },
      requestOptions(),
    );
    return providerTokens(await oauth.processGenericTokenEndpointResponse(as, c, response));
  } catch (error) {
    throw translate(error);
  }
}

/** Provider B bulk access: an application token (client credentials), e.g. scope [MICROSOFT_APP_SCOPE]. */
export async function clientCredentialsToken(
  server: AuthorizationServer,
  client: { client_id: string; client_secret: string },
  p: { scope: string[] },
): Promise<ProviderTokens> {
  const as = libraryServer(server);
  const c: oauth.Client = { client_id: client.client_id };
  try {
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      c,
      clientAuthentication(server, client),
      { scope: p.scope.join(' ') },
      requestOptions(),
    );
    return providerTokens(await oauth.processClientCredentialsResponse(as, c, response));
  } catch (error) {
    throw translate(error);
  }
}
