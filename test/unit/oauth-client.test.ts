import { generateKeyPairSync, verify } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';

// Sentinel: nothing in this file may make a request. The guarded client throws if it is ever called.
const { guardedRequest } = vi.hoisted(() => ({
  guardedRequest: vi.fn(async () => Promise.reject(new Error('no network in unit tests'))),
}));
vi.mock('#shared/net/request', async (importOriginal) => ({ ...(await importOriginal<object>()), guardedRequest }));

const {
  adminConsentUrl,
  authorizationUrl,
  callbackCode,
  codeChallengeS256,
  expectedIdTokenIssuer,
  pkcePair,
  ProviderConfigurationError,
  ProviderOAuthError,
  serviceAccountAssertion,
} = await import('#shared/oauth/client');
const { authorizationServer, DEFAULT_SCOPES, defaultScopes } = await import('#shared/providers/oauth');
const { clock } = await import('#shared/time');

/**
 * The pure parts of shared/oauth: built-in servers, authorization and admin consent URLs, callback
 * checks, ID token issuer rules, the service account assertion. No network (checked: the guarded
 * HTTP client is replaced by one that fails, and must never be called).
 */

const CHALLENGE = codeChallengeS256('a-verifier-of-sufficient-length-0123456789abcdef');
const base = {
  client_id: 'client-1',
  redirect_uri: 'https://api.example.com/v3/connect/callback',
  state: 'st-1',
  nonce: 'no-1',
  code_challenge: CHALLENGE,
};

afterEach(() => {
  expect(guardedRequest).not.toHaveBeenCalled();
});

describe('Function: authorizationServer (built in)', () => {
  it('gives provider A its real endpoints without any request', async () => {
    const server = await authorizationServer('google', {});
    expect(server).toMatchObject({
      provider: 'google',
      issuer: 'https://accounts.google.com',
      authorization_endpoint: 'https://accounts.google.com/o/oauth2/v2/auth',
      token_endpoint: 'https://oauth2.googleapis.com/token',
      jwks_uri: 'https://www.googleapis.com/oauth2/v3/certs',
      userinfo_endpoint: 'https://openidconnect.googleapis.com/v1/userinfo',
      revocation_endpoint: 'https://oauth2.googleapis.com/revoke',
    });
    expect(server.admin_consent_endpoint).toBeUndefined();
    expect(Object.isFrozen(server)).toBe(true);
  });

  it('gives provider B the common tenant by default, a named tenant when asked, and no revocation endpoint', async () => {
    const common = await authorizationServer('microsoft', {});
    expect(common).toMatchObject({
      issuer: 'https://login.microsoftonline.com/common/v2.0',
      authorization_endpoint: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
      token_endpoint: 'https://login.microsoftonline.com/common/oauth2/v2.0/token',
      jwks_uri: 'https://login.microsoftonline.com/common/discovery/v2.0/keys',
      admin_consent_endpoint: 'https://login.microsoftonline.com/common/v2.0/adminconsent',
    });
    expect(common.revocation_endpoint).toBeUndefined();
    const tenant = await authorizationServer('microsoft', { tenant: 'contoso.onmicrosoft.com' });
    expect(tenant.issuer).toBe('https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0');
    expect(tenant.admin_consent_endpoint).toBe(
      'https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0/adminconsent',
    );
  });

  it.each(['../evil', 'a/b', 'x?y', '', 'tenant#'])('refuses the tenant %j', async (tenant) => {
    await expect(authorizationServer('microsoft', { tenant })).rejects.toBeInstanceOf(ProviderConfigurationError);
  });

  it('refuses an unknown provider', async () => {
    await expect(authorizationServer('imap' as never, {})).rejects.toBeInstanceOf(ProviderConfigurationError);
  });
});

describe('Function: authorizationUrl', () => {
  it('asks provider A for offline access with consent, PKCE S256 and the nonce', async () => {
    const server = await authorizationServer('google', {});
    const url = authorizationUrl(server, { ...base, scope: [...DEFAULT_SCOPES.google], login_hint: 'ann@example.com' });
    expect(url.origin + url.pathname).toBe('https://accounts.google.com/o/oauth2/v2/auth');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: 'code',
      client_id: 'client-1',
      redirect_uri: base.redirect_uri,
      scope:
        'openid email profile https://www.googleapis.com/auth/gmail.modify https://www.googleapis.com/auth/gmail.compose https://www.googleapis.com/auth/gmail.send https://www.googleapis.com/auth/calendar',
      state: 'st-1',
      nonce: 'no-1',
      code_challenge: CHALLENGE,
      code_challenge_method: 'S256',
      login_hint: 'ann@example.com',
      access_type: 'offline',
      prompt: 'consent',
    });
  });

  it('keeps provider A online when asked, and a prompt the caller chose', async () => {
    const server = await authorizationServer('google', {});
    const url = authorizationUrl(server, {
      ...base,
      scope: ['openid', 'email'],
      access_type: 'online',
      prompt: 'select_account',
    });
    expect(url.searchParams.get('access_type')).toBe('online');
    expect(url.searchParams.get('prompt')).toBe('select_account');
  });

  it('adds offline_access to provider B scopes once, and never access_type', async () => {
    const server = await authorizationServer('microsoft', {});
    const url = authorizationUrl(server, {
      ...base,
      scope: ['openid', 'https://graph.microsoft.com/Mail.Read', 'openid'],
    });
    expect(url.searchParams.get('scope')).toBe('openid https://graph.microsoft.com/Mail.Read offline_access');
    expect(url.searchParams.has('access_type')).toBe(false);
    expect(url.searchParams.has('prompt')).toBe(false);
    expect(
      authorizationUrl(server, { ...base, scope: [...DEFAULT_SCOPES.microsoft] })
        .searchParams.get('scope')!
        .split(' ')
        .filter((s) => s === 'offline_access'),
    ).toHaveLength(1);
    expect(
      authorizationUrl(server, {
        ...base,
        scope: [...DEFAULT_SCOPES.microsoft],
        access_type: 'online',
      }).searchParams.get('scope'),
    ).not.toContain('offline_access');
  });

  it('passes extra parameters but never lets them replace its own', async () => {
    const server = await authorizationServer('microsoft', {});
    expect(
      authorizationUrl(server, { ...base, scope: ['openid'], extra: { domain_hint: 'contoso.com' } }).searchParams.get(
        'domain_hint',
      ),
    ).toBe('contoso.com');
    for (const name of ['redirect_uri', 'state', 'code_challenge_method', 'nonce']) {
      expect(() => authorizationUrl(server, { ...base, scope: ['openid'], extra: { [name]: 'x' } })).toThrow(
        /set by authorizationUrl/,
      );
    }
  });

  it('refuses a verifier passed as the challenge, and a missing state or nonce', async () => {
    const server = await authorizationServer('google', {});
    expect(() =>
      authorizationUrl(server, { ...base, scope: ['openid'], code_challenge: 'too-short-verifier' }),
    ).toThrow(/S256 challenge/);
    expect(() => authorizationUrl(server, { ...base, scope: ['openid'], state: '' })).toThrow(/state and a nonce/);
    expect(() => authorizationUrl(server, { ...base, scope: ['openid'], nonce: '' })).toThrow(/state and a nonce/);
  });

  it('makes PKCE pairs whose challenge is the S256 of the verifier', () => {
    const { code_verifier, code_challenge } = pkcePair();
    expect(code_verifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(code_challenge).toBe(codeChallengeS256(code_verifier));
    // RFC 7636 appendix B
    expect(codeChallengeS256('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe(
      'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    );
    expect(pkcePair().code_verifier).not.toBe(code_verifier);
  });
});

describe('Function: adminConsentUrl', () => {
  it("builds provider B's v2.0 admin consent URL with the app's configured permissions by default", async () => {
    const server = await authorizationServer('microsoft', { tenant: 'organizations' });
    const url = adminConsentUrl(server, { client_id: 'c', redirect_uri: 'https://app.example.com/done', state: 's' });
    expect(url.href).toBe(
      'https://login.microsoftonline.com/organizations/v2.0/adminconsent?client_id=c&redirect_uri=https%3A%2F%2Fapp.example.com%2Fdone&state=s&scope=https%3A%2F%2Fgraph.microsoft.com%2F.default',
    );
    expect(
      adminConsentUrl(server, {
        client_id: 'c',
        redirect_uri: 'https://a/',
        state: 's',
        scope: ['https://graph.microsoft.com/Mail.Read'],
      }).searchParams.get('scope'),
    ).toBe('https://graph.microsoft.com/Mail.Read');
  });

  it('refuses a server without an admin consent endpoint', async () => {
    const server = await authorizationServer('google', {});
    expect(() => adminConsentUrl(server, { client_id: 'c', redirect_uri: 'https://a/', state: 's' })).toThrow(
      ProviderConfigurationError,
    );
  });
});

describe('Function: callbackCode', () => {
  const server = {
    issuer: 'https://issuer.example',
    authorization_endpoint: 'https://issuer.example/a',
    token_endpoint: 'https://issuer.example/t',
  };

  it('returns the code when state (and iss, when sent) match', () => {
    expect(callbackCode(server, new URLSearchParams({ code: 'c1', state: 's1' }), 's1')).toBe('c1');
    expect(
      callbackCode(server, new URLSearchParams({ code: 'c1', state: 's1', iss: 'https://issuer.example' }), 's1'),
    ).toBe('c1');
  });

  it('refuses another state, another issuer, and turns an error into ProviderOAuthError', () => {
    expect(() => callbackCode(server, new URLSearchParams({ code: 'c1', state: 's2' }), 's1')).toThrow(
      expect.objectContaining({ error: 'invalid_state' }),
    );
    expect(() =>
      callbackCode(server, new URLSearchParams({ code: 'c1', state: 's1', iss: 'https://other.example' }), 's1'),
    ).toThrow(expect.objectContaining({ error: 'invalid_issuer' }));
    const denied = (() => {
      try {
        callbackCode(
          server,
          new URLSearchParams({ error: 'access_denied', error_description: 'no', state: 's1' }),
          's1',
        );
      } catch (error) {
        return error;
      }
    })();
    expect(denied).toBeInstanceOf(ProviderOAuthError);
    expect(denied).toMatchObject({ error: 'access_denied', error_description: 'no' });
    expect(() => callbackCode(server, new URLSearchParams({ state: 's1' }), 's1')).toThrow(
      expect.objectContaining({ error: 'invalid_request' }),
    );
  });
});

describe('Function: expectedIdTokenIssuer', () => {
  const tid = '9188040d-6c67-4c5b-b112-36a304b66dad';

  it("expects provider B's multi-tenant tokens under the user's tenant", async () => {
    for (const tenant of ['common', 'organizations', 'consumers']) {
      const server = await authorizationServer('microsoft', { tenant });
      expect(expectedIdTokenIssuer(server, { tid })).toBe(`https://login.microsoftonline.com/${tid}/v2.0`);
      expect(expectedIdTokenIssuer(server, { tid: '../x' })).toBe(server.issuer);
      expect(expectedIdTokenIssuer(server, {})).toBe(server.issuer);
    }
  });

  it('expects a single-tenant issuer as configured, whatever tid says', async () => {
    const server = await authorizationServer('microsoft', { tenant: tid });
    expect(expectedIdTokenIssuer(server, { tid: '11111111-2222-3333-4444-555555555555' })).toBe(server.issuer);
  });

  it("accepts provider A's scheme-less issuer only for provider A", async () => {
    const google = await authorizationServer('google', {});
    expect(expectedIdTokenIssuer(google, { iss: 'accounts.google.com' })).toBe('accounts.google.com');
    expect(expectedIdTokenIssuer(google, { iss: 'https://evil.example' })).toBe('https://accounts.google.com');
    const yahoo = await authorizationServer('yahoo', {});
    expect(expectedIdTokenIssuer(yahoo, { iss: 'accounts.google.com' })).toBe('https://api.login.yahoo.com');
  });
});

describe('Function: defaultScopes', () => {
  it("names the mail and calendar scopes of the spec's table with the providers' prefixes", () => {
    expect(defaultScopes('google')).toEqual([
      'openid',
      'email',
      'profile',
      'https://www.googleapis.com/auth/gmail.modify',
      'https://www.googleapis.com/auth/gmail.compose',
      'https://www.googleapis.com/auth/gmail.send',
      'https://www.googleapis.com/auth/calendar',
    ]);
    expect(defaultScopes('microsoft')).toEqual([
      'openid',
      'email',
      'profile',
      'offline_access',
      'https://graph.microsoft.com/Mail.ReadWrite',
      'https://graph.microsoft.com/Mail.Send',
      'https://graph.microsoft.com/Calendars.ReadWrite',
    ]);
    // A copy: changing it cannot change the defaults.
    defaultScopes('google').push('x');
    expect(defaultScopes('google')).not.toContain('x');
  });
});

describe('Function: serviceAccountAssertion', () => {
  it('signs an RS256 JWT for the subject with kid, iss, scope, aud = token endpoint and a one-hour life', async () => {
    const restore = clock.set(() => 1_800_000_000_000);
    try {
      const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const server = await authorizationServer('google', {});
      const account = {
        client_email: 'sa@project.iam.gserviceaccount.com',
        private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        private_key_id: 'key-1',
      };
      const jwt = serviceAccountAssertion(server, account, {
        subject: 'ann@example.com',
        scope: ['https://www.googleapis.com/auth/gmail.modify', 'https://www.googleapis.com/auth/calendar'],
      });
      const [header, payload, signature] = jwt.split('.') as [string, string, string];
      expect(JSON.parse(Buffer.from(header, 'base64url').toString())).toEqual({
        alg: 'RS256',
        typ: 'JWT',
        kid: 'key-1',
      });
      expect(JSON.parse(Buffer.from(payload, 'base64url').toString())).toEqual({
        iss: 'sa@project.iam.gserviceaccount.com',
        sub: 'ann@example.com',
        scope: 'https://www.googleapis.com/auth/gmail.modify https://www.googleapis.com/auth/calendar',
        aud: 'https://oauth2.googleapis.com/token',
        iat: 1_800_000_000,
        exp: 1_800_003_600,
      });
      expect(
        verify('sha256', Buffer.from(`${header}.${payload}`), publicKey, Buffer.from(signature, 'base64url')),
      ).toBe(true);
      const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey;
      expect(verify('sha256', Buffer.from(`${header}.${payload}`), other, Buffer.from(signature, 'base64url'))).toBe(
        false,
      );
    } finally {
      restore();
    }
  });

  it('refuses a key that is not an RSA private key, without echoing it', async () => {
    const server = await authorizationServer('google', {});
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    for (const private_key of ['-----BEGIN PRIVATE KEY-----\nnot-a-key\n-----END PRIVATE KEY-----', ec]) {
      const error = (() => {
        try {
          serviceAccountAssertion(
            server,
            { client_email: 'sa@x', private_key, private_key_id: 'k' },
            { subject: 'a@b.c', scope: ['s'] },
          );
        } catch (e) {
          return e as Error;
        }
      })();
      expect(error).toBeInstanceOf(ProviderConfigurationError);
      expect(error!.message).not.toContain(private_key.slice(30, 60));
    }
  });
});
