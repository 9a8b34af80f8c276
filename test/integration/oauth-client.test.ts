import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  adminConsentUrl,
  authorizationUrl,
  callbackCode,
  clearDiscoveryCache,
  clientCredentialsToken,
  exchangeCode,
  IdTokenError,
  InvalidGrantError,
  pkcePair,
  ProviderConfigurationError,
  ProviderOAuthError,
  ProviderUnavailableError,
  refreshTokens,
  revokeToken,
  serviceAccountToken,
  type AuthorizationServer,
  type OAuthClient,
  type ProviderTokens,
} from '#shared/oauth/client';
import { authorizationServer, DEFAULT_SCOPES, MICROSOFT_APP_SCOPE } from '#shared/providers/oauth';
import {
  LOCAL_TENANT_ID,
  startOidcServer,
  subjectFor,
  type LocalOidcServer,
} from '../../scripts/local-stack/oidc-local';
import { followLogin } from '../support/oidc-login';
import { rememberSecret } from '../support/secrets';

/**
 * shared/oauth against the real local OpenID Connect server (scripts/local-stack/oidc-local.ts:
 * oidc-provider playing provider A at /google and provider B at /microsoft), in local mode
 * (http to loopback allowed). The browser is test/support/oidc-login.ts.
 */

let oidc: LocalOidcServer;
let google: AuthorizationServer;
let microsoft: AuthorizationServer;
/** The application's redirect target: followLogin must stop before it, so it must never be hit. */
let target: Server;
let targetHits = 0;
let REDIRECT: string;

const SECRET = `secret-${randomBytes(8).toString('hex')}`;
rememberSecret(SECRET, 'client_secret of the local OpenID Connect clients (oauth-client.test.ts)');
const app: OAuthClient = { client_id: 'app-post', client_secret: SECRET };
const basicApp: OAuthClient = {
  client_id: 'app-basic',
  client_secret: SECRET,
  token_endpoint_auth_method: 'client_secret_basic',
};

beforeAll(async () => {
  target = createServer((_req, res) => {
    targetHits++;
    res.end('ok');
  });
  target.listen(0, '127.0.0.1');
  await once(target, 'listening');
  REDIRECT = `http://127.0.0.1:${(target.address() as AddressInfo).port}/oauth/callback`;
  oidc = await startOidcServer({
    onIssue: ({ issuer, kind, value }) =>
      rememberSecret(value, `${kind} issued by the local ${issuer} issuer (oauth-client.test.ts)`),
    clients: [
      { client_id: app.client_id, client_secret: SECRET, redirect_uris: [REDIRECT] },
      {
        client_id: basicApp.client_id,
        client_secret: SECRET,
        redirect_uris: [REDIRECT],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
  });
  google = await authorizationServer('google', { issuer: oidc.issuers.google });
  microsoft = await authorizationServer('microsoft', { issuer: oidc.issuers.microsoft });
});

afterAll(async () => {
  expect(targetHits).toBe(0);
  await oidc?.stop();
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
});

beforeEach(() => {
  expect(oidc.pending()).toBe(0);
});

const atRedirect = (url: URL) => url.href.startsWith(REDIRECT);

/** The whole browser part of a code flow; returns what the callback needs. */
async function authorize(
  server: AuthorizationServer,
  options: { client?: OAuthClient; login?: string; scope?: string[]; nonce?: string; consent?: boolean } = {},
) {
  const { code_verifier, code_challenge } = pkcePair();
  const state = randomBytes(8).toString('hex');
  const nonce = options.nonce ?? randomBytes(8).toString('hex');
  const scope = options.scope ?? [...(server.conventions?.appScope ? DEFAULT_SCOPES.microsoft : DEFAULT_SCOPES.google)];
  const url = authorizationUrl(server, {
    client_id: (options.client ?? app).client_id,
    redirect_uri: REDIRECT,
    scope,
    state,
    nonce,
    code_challenge,
  });
  const back = await followLogin(url.href, {
    login: options.login ?? 'ann.lee@example.com',
    stopAt: atRedirect,
    ...(options.consent !== undefined ? { consent: options.consent } : {}),
  });
  return { back, state, nonce, code_verifier };
}

async function signIn(
  server: AuthorizationServer,
  options: { client?: OAuthClient; login?: string; scope?: string[] } = {},
) {
  const { back, state, nonce, code_verifier } = await authorize(server, options);
  const code = callbackCode(server, back.searchParams, state);
  return exchangeCode(server, options.client ?? app, { code, redirect_uri: REDIRECT, code_verifier, nonce });
}

async function caught(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Error);
  return error as Error;
}

/** Asserts an error says nothing secret, in its message or anything it carries. */
function expectNoSecrets(error: Error, secrets: string[]) {
  const everything = `${error.message} ${JSON.stringify(error)} ${String(error.cause ?? '')}`;
  for (const secret of [...secrets, SECRET]) expect(everything).not.toContain(secret);
}

async function userinfo(server: AuthorizationServer, accessToken: string) {
  const response = await fetch(server.userinfo_endpoint!, { headers: { authorization: `Bearer ${accessToken}` } });
  return {
    status: response.status,
    body: response.status === 200 ? ((await response.json()) as Record<string, unknown>) : undefined,
  };
}

describe('Function: authorizationServer (discovery)', () => {
  it('reads the configured issuer’s metadata, with the admin consent endpoint beside provider B’s issuer', async () => {
    expect(google).toEqual({
      provider: 'google',
      conventions: expect.objectContaining({ offline: 'access_type' }),
      issuer: oidc.issuers.google,
      authorization_endpoint: `${oidc.issuers.google}/auth`,
      token_endpoint: `${oidc.issuers.google}/token`,
      jwks_uri: `${oidc.issuers.google}/jwks`,
      userinfo_endpoint: `${oidc.issuers.google}/me`,
      revocation_endpoint: `${oidc.issuers.google}/token/revocation`,
      token_endpoint_auth_methods_supported: expect.arrayContaining(['client_secret_post', 'client_secret_basic']),
      id_token_signing_alg_values_supported: ['RS256'],
    });
    expect(microsoft.admin_consent_endpoint).toBe(`${oidc.issuers.microsoft}/adminconsent`);
    expect(microsoft.revocation_endpoint).toBeUndefined();
    const metadata = (await (await fetch(`${oidc.issuers.google}/.well-known/openid-configuration`)).json()) as {
      grant_types_supported: string[];
    };
    expect(metadata.grant_types_supported).toEqual(
      expect.arrayContaining([
        'authorization_code',
        'refresh_token',
        'client_credentials',
        'urn:ietf:params:oauth:grant-type:jwt-bearer',
      ]),
    );
  });

  it('caches a discovered configuration: a second call makes no request', async () => {
    clearDiscoveryCache();
    const first = await authorizationServer('google', { issuer: oidc.issuers.google });
    // Sentinel: a discovery request now would fail.
    oidc.failNext({ issuer: 'google', endpoint: 'discovery', status: 503 });
    expect(await authorizationServer('google', { issuer: oidc.issuers.google })).toBe(first);
    expect(oidc.pending()).toBe(1);
    clearDiscoveryCache();
    await expect(authorizationServer('google', { issuer: oidc.issuers.google })).rejects.toBeInstanceOf(
      ProviderUnavailableError,
    );
    // A failure is not cached.
    expect(await authorizationServer('google', { issuer: oidc.issuers.google })).toEqual(first);
  });

  it('refuses metadata whose issuer is not the configured one', async () => {
    // The same server under another name: its metadata names http://127.0.0.1:…/google.
    const other = oidc.issuers.google.replace('127.0.0.1', 'localhost');
    const error = await caught(authorizationServer('google', { issuer: other }));
    expect(error).toBeInstanceOf(ProviderConfigurationError);
    expect(error.message).toMatch(/names another issuer/);
  });

  it('refuses an issuer without a discovery document', async () => {
    const error = await caught(authorizationServer('microsoft', { issuer: `${oidc.origin}/nowhere` }));
    expect(error).toBeInstanceOf(ProviderConfigurationError);
  });
});

describe('Function: exchangeCode', () => {
  it('runs the code flow with PKCE at provider A: tokens, a refresh token, and the identity from the ID token', async () => {
    const { tokens, identity } = await signIn(google, { login: 'Ann.Lee@Example.com' });
    expect(identity).toEqual({
      sub: subjectFor('ann.lee@example.com'),
      email: 'ann.lee@example.com',
      email_verified: true,
      name: 'Ann Lee',
    });
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.expires_in).toBe(3600);
    expect(tokens.refresh_token).toEqual(expect.any(String));
    expect(tokens.scope!.split(' ')).toEqual(expect.arrayContaining([...DEFAULT_SCOPES.google]));
    const claims = decodeJwt(tokens.id_token!);
    expect(claims).toMatchObject({ iss: oidc.issuers.google, aud: app.client_id, email: 'ann.lee@example.com' });
    expect((await userinfo(google, tokens.access_token)).body).toMatchObject({ email: 'ann.lee@example.com' });
  });

  it('reads provider B’s email from userinfo when its ID token has none', async () => {
    const { tokens, identity } = await signIn(microsoft, { login: 'bo@contoso.example' });
    expect(decodeJwt(tokens.id_token!).email).toBeUndefined();
    expect(identity).toEqual({
      sub: subjectFor('bo@contoso.example'),
      email: 'bo@contoso.example',
      email_verified: true,
      name: 'Bo',
    });
    expect(tokens.refresh_token).toEqual(expect.any(String));
    expect(tokens.scope).toContain('https://graph.microsoft.com/Mail.ReadWrite');
  });

  it('reports a userinfo outage as ProviderUnavailableError when the ID token has no email', async () => {
    oidc.failNext({ issuer: 'microsoft', endpoint: 'userinfo', status: 503 });
    const error = await caught(signIn(microsoft));
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect(oidc.pending()).toBe(0);
  });

  it('signs in only with an email address', async () => {
    const { code_challenge } = pkcePair();
    const url = authorizationUrl(google, {
      client_id: app.client_id,
      redirect_uri: REDIRECT,
      scope: ['openid', 'email'],
      state: 's',
      nonce: 'n',
      code_challenge,
    });
    await expect(followLogin(url.href, { login: 'not-an-email', stopAt: atRedirect })).rejects.toThrow(
      /answered 400.*Sign in with an email address/s,
    );
  });

  it('authenticates with client_secret_basic when the client is registered so', async () => {
    const { identity } = await signIn(google, { client: basicApp });
    expect(identity.email).toBe('ann.lee@example.com');
  });

  it('sends the secret as the metadata allows: in the body (post) by default, in the header (basic) otherwise', async () => {
    // oidc-provider accepts either method from a secret client: a capturing endpoint shows which one is sent.
    const seen: { authorization?: string; body: URLSearchParams }[] = [];
    const capture = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      seen.push({
        ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
        body: new URLSearchParams(Buffer.concat(chunks).toString()),
      });
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ access_token: 'at', token_type: 'Bearer', expires_in: 60 }));
    });
    capture.listen(0, '127.0.0.1');
    await once(capture, 'listening');
    try {
      const endpoint = `http://127.0.0.1:${(capture.address() as AddressInfo).port}/token`;
      const both: AuthorizationServer = {
        issuer: 'http://127.0.0.1/x',
        authorization_endpoint: endpoint,
        token_endpoint: endpoint,
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      };
      await refreshTokens(both, app, 'rt-1');
      await refreshTokens({ ...both, token_endpoint_auth_methods_supported: ['client_secret_basic'] }, app, 'rt-2');
      await refreshTokens(both, basicApp, 'rt-3');
      await refreshTokens(both, { client_id: 'public-app' }, 'rt-4');
      // RFC 6749 2.3.1: id and secret are form-encoded before Basic.
      const basic = (authorization?: string) =>
        authorization?.startsWith('Basic ')
          ? Buffer.from(authorization.slice(6), 'base64').toString().split(':').map(decodeURIComponent)
          : authorization;
      expect(
        seen.map((r) => [
          basic(r.authorization),
          r.body.get('client_id'),
          r.body.get('client_secret'),
          r.body.get('refresh_token'),
        ]),
      ).toEqual([
        [undefined, app.client_id, SECRET, 'rt-1'],
        [[app.client_id, SECRET], null, null, 'rt-2'],
        [[basicApp.client_id, SECRET], null, null, 'rt-3'],
        [undefined, 'public-app', null, 'rt-4'],
      ]);
    } finally {
      capture.closeAllConnections();
      await new Promise((resolve) => capture.close(resolve));
    }
  });

  it('refuses a wrong PKCE verifier, a used code and a wrong secret', async () => {
    const first = await authorize(google);
    const code = callbackCode(google, first.back.searchParams, first.state);
    const wrongVerifier = await caught(
      exchangeCode(google, app, {
        code,
        redirect_uri: REDIRECT,
        code_verifier: pkcePair().code_verifier,
        nonce: first.nonce,
      }),
    );
    expect(wrongVerifier).toBeInstanceOf(InvalidGrantError);
    expectNoSecrets(wrongVerifier, [code]);

    const second = await authorize(google);
    const code2 = callbackCode(google, second.back.searchParams, second.state);
    const wrongSecret = await caught(
      exchangeCode(
        google,
        { ...app, client_secret: 'nope' },
        { code: code2, redirect_uri: REDIRECT, code_verifier: second.code_verifier, nonce: second.nonce },
      ),
    );
    expect(wrongSecret).toBeInstanceOf(ProviderOAuthError);
    expect(wrongSecret).not.toBeInstanceOf(InvalidGrantError);
    expect((wrongSecret as ProviderOAuthError).error).toBe('invalid_client');
    expectNoSecrets(wrongSecret, [code2, 'nope']);

    await exchangeCode(google, app, {
      code: code2,
      redirect_uri: REDIRECT,
      code_verifier: second.code_verifier,
      nonce: second.nonce,
    });
    const reused = await caught(
      exchangeCode(google, app, {
        code: code2,
        redirect_uri: REDIRECT,
        code_verifier: second.code_verifier,
        nonce: second.nonce,
      }),
    );
    expect(reused).toBeInstanceOf(InvalidGrantError);
  });

  it('reports a user who declined as access_denied at the callback', async () => {
    const { back, state } = await authorize(google, { consent: false });
    const error = (() => {
      try {
        callbackCode(google, back.searchParams, state);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ProviderOAuthError);
    expect((error as ProviderOAuthError).error).toBe('access_denied');
  });

  it('refuses an ID token for another nonce', async () => {
    const { back, state, code_verifier } = await authorize(google);
    const error = await caught(
      exchangeCode(google, app, {
        code: callbackCode(google, back.searchParams, state),
        redirect_uri: REDIRECT,
        code_verifier,
        nonce: 'another-nonce',
      }),
    );
    expect(error).toBeInstanceOf(IdTokenError);
    expect(error.message).toMatch(/nonce/);
  });

  describe('ID token verification (the next ID token rewritten by the server)', () => {
    /**
     * A code flow at the local server whose next ID token is rewritten; the code is then redeemed
     * through `as` (the local server under another issuer name, for the providers' issuer rules).
     */
    async function withTamper(
      local: AuthorizationServer,
      tamper: Parameters<LocalOidcServer['tamperNextIdToken']>[0],
      as: AuthorizationServer = local,
    ) {
      const { back, state, nonce, code_verifier } = await authorize(local);
      const code = callbackCode(local, back.searchParams, state);
      oidc.tamperNextIdToken(tamper);
      return exchangeCode(as, app, { code, redirect_uri: REDIRECT, code_verifier, nonce }).finally(() =>
        expect(oidc.pending()).toBe(0),
      );
    }

    it('accepts a re-signed token whose claims still hold (the control for the refusals below)', async () => {
      const { tokens } = await withTamper(google, { claims: { extra: 'x' } });
      expect(decodeJwt(tokens.id_token!).extra).toBe('x');
    });

    it.each([
      ['another audience', { claims: { aud: 'someone-else' } }, /aud/],
      ['a signature by a key outside the JWKS', { signWith: 'foreign' as const }, /signature/],
      ['another issuer', { claims: { iss: 'http://127.0.0.1:1/evil' } }, /iss/],
      ['an expired token', { claims: { exp: Math.floor(Date.now() / 1000) - 3600 } }, /exp/],
      ['no iat', { claims: { iat: undefined } }, /iat/],
      ['no nonce', { claims: { nonce: undefined } }, /nonce/],
    ])('refuses %s', async (_what, tamper, message) => {
      const error = await caught(withTamper(google, tamper));
      expect(error).toBeInstanceOf(IdTokenError);
      expect(error.message).toMatch(message);
    });

    it('accepts provider A’s scheme-less issuer only when the server is provider A’s', async () => {
      const asGoogle: AuthorizationServer = { ...google, issuer: 'https://accounts.google.com' };
      const { identity } = await withTamper(google, { claims: { iss: 'accounts.google.com' } }, asGoogle);
      expect(identity.email).toBe('ann.lee@example.com');
      expect(
        (await withTamper(google, { claims: { iss: 'https://accounts.google.com' } }, asGoogle)).identity.email,
      ).toBe('ann.lee@example.com');
      expect(await caught(withTamper(google, { claims: { iss: 'https://evil.example' } }, asGoogle))).toBeInstanceOf(
        IdTokenError,
      );
      expect(await caught(withTamper(google, { claims: { iss: 'accounts.google.com' } }))).toBeInstanceOf(IdTokenError);
    });

    it('accepts provider B’s multi-tenant issuer for the tenant the token names, and no other', async () => {
      const tid = '72f988bf-86f1-41af-91ab-2d7cd011db47';
      const common: AuthorizationServer = { ...microsoft, issuer: 'https://login.microsoftonline.com/common/v2.0' };
      const { identity } = await withTamper(
        microsoft,
        { claims: { iss: `https://login.microsoftonline.com/${tid}/v2.0`, tid } },
        common,
      );
      expect(identity.email).toBe('ann.lee@example.com');
      const mismatch = await caught(
        withTamper(
          microsoft,
          { claims: { iss: `https://login.microsoftonline.com/${tid}/v2.0`, tid: LOCAL_TENANT_ID } },
          common,
        ),
      );
      expect(mismatch).toBeInstanceOf(IdTokenError);
      const single: AuthorizationServer = {
        ...microsoft,
        issuer: `https://login.microsoftonline.com/${LOCAL_TENANT_ID}/v2.0`,
      };
      expect(
        await caught(
          withTamper(microsoft, { claims: { iss: `https://login.microsoftonline.com/${tid}/v2.0`, tid } }, single),
        ),
      ).toBeInstanceOf(IdTokenError);
    });
  });
});

describe('Function: refreshTokens', () => {
  let tokens: ProviderTokens;
  beforeEach(async () => {
    ({ tokens } = await signIn(google));
  });

  it('rotates the refresh token: the new one works, the old one is dead, and reusing it kills the whole grant', async () => {
    const refreshed = await refreshTokens(google, app, tokens.refresh_token!);
    expect(refreshed.refresh_token).toEqual(expect.any(String));
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect((await userinfo(google, refreshed.access_token)).status).toBe(200);
    const again = await refreshTokens(google, app, refreshed.refresh_token!);
    expect(again.refresh_token).not.toBe(refreshed.refresh_token);
    const old = await caught(refreshTokens(google, app, tokens.refresh_token!));
    expect(old).toBeInstanceOf(InvalidGrantError);
    expectNoSecrets(old, [tokens.refresh_token!, refreshed.refresh_token!]);
    // oidc-provider's reuse detection: a rotated-out token coming back revokes the grant (so refreshes must not race).
    expect(await caught(refreshTokens(google, app, again.refresh_token!))).toBeInstanceOf(InvalidGrantError);
  });

  it('reports invalid_grant as InvalidGrantError, without the token', async () => {
    oidc.failNext({
      issuer: 'google',
      endpoint: 'token',
      grantType: 'refresh_token',
      error: 'invalid_grant',
      error_description: 'Token has been expired or revoked.',
    });
    const error = await caught(refreshTokens(google, app, tokens.refresh_token!));
    expect(error).toBeInstanceOf(InvalidGrantError);
    expect(error).toMatchObject({
      error: 'invalid_grant',
      error_description: 'Token has been expired or revoked.',
      status: 400,
    });
    expectNoSecrets(error, [tokens.refresh_token!]);
    // The fault fired once and consumed nothing: the token still works.
    expect((await refreshTokens(google, app, tokens.refresh_token!)).refresh_token).toEqual(expect.any(String));
  });

  it('reports a 503 as ProviderUnavailableError (transient), never as a dead grant', async () => {
    oidc.failNext({ issuer: 'google', endpoint: 'token', status: 503 });
    const error = await caught(refreshTokens(google, app, tokens.refresh_token!));
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect(error).not.toBeInstanceOf(ProviderOAuthError);
    expect((error as ProviderUnavailableError).status).toBe(503);
    expectNoSecrets(error, [tokens.refresh_token!]);
    expect((await refreshTokens(google, app, tokens.refresh_token!)).access_token).toEqual(expect.any(String));
  });

  it('reports an unreachable server as ProviderUnavailableError', async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const gone: AuthorizationServer = { ...google, token_endpoint: `http://127.0.0.1:${port}/token` };
    expect(await caught(refreshTokens(gone, app, tokens.refresh_token!))).toBeInstanceOf(ProviderUnavailableError);
  });
});

describe('Function: revokeToken', () => {
  it('revokes at provider A: the refresh token is dead afterwards', async () => {
    const { tokens } = await signIn(google);
    await revokeToken(google, app, tokens.refresh_token!);
    expect(await caught(refreshTokens(google, app, tokens.refresh_token!))).toBeInstanceOf(InvalidGrantError);
    expect((await userinfo(google, tokens.access_token)).status).toBe(401);
  });

  it('treats invalid_token (already dead) as revoked, and reports other errors', async () => {
    oidc.failNext({
      issuer: 'google',
      endpoint: 'revocation',
      error: 'invalid_token',
      error_description: 'Token expired or revoked',
    });
    await revokeToken(google, app, 'some-dead-token');
    expect(oidc.pending()).toBe(0);
    oidc.failNext({ issuer: 'google', endpoint: 'revocation', error: 'unsupported_token_type' });
    const error = await caught(revokeToken(google, app, 'some-token'));
    expect(error).toBeInstanceOf(ProviderOAuthError);
    expect((error as ProviderOAuthError).error).toBe('unsupported_token_type');
  });

  it('does nothing where the server has no revocation endpoint (provider B)', async () => {
    const { tokens } = await signIn(microsoft);
    await revokeToken(microsoft, app, tokens.refresh_token!);
    expect((await refreshTokens(microsoft, app, tokens.refresh_token!)).access_token).toEqual(expect.any(String));
  });
});

describe('Function: serviceAccountToken (provider A bulk)', () => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const account = {
    client_email: 'bulk@project.iam.gserviceaccount.example',
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    private_key_id: 'key-2026-1',
  };
  rememberSecret(account.private_key, 'private_key of a service account (oauth-client.test.ts)');
  const scope = ['https://www.googleapis.com/auth/gmail.modify', 'openid', 'email'];

  beforeAll(() => {
    oidc.addServiceAccount({
      client_email: account.client_email,
      public_key: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      private_key_id: account.private_key_id,
    });
  });

  it('gets a token for the user the assertion names', async () => {
    const tokens = await serviceAccountToken(google, account, { subject: 'cy@workspace.example', scope });
    expect(tokens).toMatchObject({
      token_type: expect.stringMatching(/^bearer$/i),
      expires_in: 3600,
      scope: scope.join(' '),
    });
    expect(tokens.refresh_token).toBeUndefined();
    expect((await userinfo(google, tokens.access_token)).body).toMatchObject({
      sub: subjectFor('cy@workspace.example'),
      email: 'cy@workspace.example',
    });
  });

  it('is refused with another key id, another key, or an unknown account', async () => {
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    for (const wrong of [
      { ...account, private_key_id: 'key-old' },
      { ...account, private_key: other },
      { ...account, client_email: 'stranger@project.iam.gserviceaccount.example' },
    ]) {
      const error = await caught(serviceAccountToken(google, wrong, { subject: 'cy@workspace.example', scope }));
      expect(error).toBeInstanceOf(InvalidGrantError);
      expectNoSecrets(error, [wrong.private_key.slice(40, 80)]);
    }
  });

  it('is refused when the assertion names another audience', async () => {
    const elsewhere: AuthorizationServer = { ...google, token_endpoint: `${google.token_endpoint}?x=1` };
    const error = await caught(serviceAccountToken(elsewhere, account, { subject: 'cy@workspace.example', scope }));
    expect(error).toBeInstanceOf(InvalidGrantError);
    expect((error as InvalidGrantError).error_description).toMatch(/aud/);
  });
});

describe('Function: clientCredentialsToken (provider B bulk)', () => {
  it('gets an application token for the configured permissions', async () => {
    const tokens = await clientCredentialsToken(
      microsoft,
      { client_id: app.client_id, client_secret: SECRET },
      { scope: [MICROSOFT_APP_SCOPE] },
    );
    expect(tokens.access_token).toEqual(expect.any(String));
    expect(tokens.refresh_token).toBeUndefined();
    const introspection = await fetch(`${oidc.issuers.microsoft}/token/introspection`, {
      method: 'POST',
      body: new URLSearchParams({ token: tokens.access_token, client_id: app.client_id, client_secret: SECRET }),
    });
    expect(await introspection.json()).toMatchObject({
      active: true,
      client_id: app.client_id,
      scope: MICROSOFT_APP_SCOPE,
    });
  });

  it('is refused with a wrong secret', async () => {
    const error = await caught(
      clientCredentialsToken(
        microsoft,
        { client_id: app.client_id, client_secret: 'wrong' },
        { scope: [MICROSOFT_APP_SCOPE] },
      ),
    );
    expect((error as ProviderOAuthError).error).toBe('invalid_client');
    expectNoSecrets(error, ['wrong']);
  });
});

describe('Function: adminConsentUrl against the local provider B', () => {
  async function visit(url: URL) {
    const response = await fetch(url, { redirect: 'manual' });
    return { status: response.status, location: response.headers.get('location'), text: await response.text() };
  }

  it('comes back to the redirect URI with admin_consent, the tenant and the state', async () => {
    const { status, location } = await visit(
      adminConsentUrl(microsoft, { client_id: app.client_id, redirect_uri: REDIRECT, state: 'st-9' }),
    );
    expect(status).toBe(302);
    const back = new URL(location!);
    expect(back.href.startsWith(REDIRECT)).toBe(true);
    expect(Object.fromEntries(back.searchParams)).toEqual({
      admin_consent: 'True',
      tenant: LOCAL_TENANT_ID,
      scope: MICROSOFT_APP_SCOPE,
      state: 'st-9',
    });
  });

  it('comes back with error and error_description when the administrator declines', async () => {
    oidc.failNext({
      issuer: 'microsoft',
      endpoint: 'adminconsent',
      error: 'access_denied',
      error_description: 'declined',
    });
    const back = new URL(
      (await visit(adminConsentUrl(microsoft, { client_id: app.client_id, redirect_uri: REDIRECT, state: 'st-9' })))
        .location!,
    );
    expect(Object.fromEntries(back.searchParams)).toEqual({
      error: 'access_denied',
      error_description: 'declined',
      state: 'st-9',
    });
  });

  it('never redirects for an unknown client or an unregistered redirect URI', async () => {
    const unknown = await visit(
      adminConsentUrl(microsoft, { client_id: 'nobody', redirect_uri: REDIRECT, state: 's' }),
    );
    expect(unknown).toMatchObject({ status: 400, location: null });
    expect(unknown.text).toMatch(/unauthorized_client/);
    const elsewhere = await visit(
      adminConsentUrl(microsoft, { client_id: app.client_id, redirect_uri: 'https://evil.example/cb', state: 's' }),
    );
    expect(elsewhere).toMatchObject({ status: 400, location: null });
    expect(elsewhere.text).toMatch(/redirect_uri is not registered/);
  });
});
