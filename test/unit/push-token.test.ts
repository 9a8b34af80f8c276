import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { clearPushKeys, verifyPushToken, type PushTokenRules } from '#shared/google/push-token';
import { AuthenticationError } from '#shared/errors';

/**
 * The token of a Pub/Sub push (shared/google/push-token.ts): signed by a key of the issuer's JWKS,
 * for this endpoint, from the subscription's service account, not expired. Tokens are signed here
 * with keys made for the test; the JWKS is served by the `fetch` the verifier is given.
 */
const rules: PushTokenRules = {
  issuers: ['https://accounts.google.com', 'accounts.google.com'],
  jwksUri: 'https://www.googleapis.com/oauth2/v3/certs',
  audience: 'https://api.example.com/v3/push/google/pubsub',
  email: 'push@project.iam.gserviceaccount.com',
};
let signer: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
let other: typeof signer;
let jwks: object[];
let fetches = 0;
const fetch = async (uri: string | URL) => {
  fetches++;
  expect(String(uri)).toBe(rules.jwksUri);
  return new Response(JSON.stringify({ keys: jwks }), { headers: { 'content-type': 'application/json' } });
};

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  signer = pair.privateKey;
  other = (await generateKeyPair('RS256')).privateKey;
  jwks = [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }];
});

beforeEach(() => {
  clearPushKeys();
  fetches = 0;
});

function token(claims: Record<string, unknown> = {}, key = signer, kid = 'k1') {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ email: rules.email, email_verified: true, ...claims })
    .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
    .setIssuer((claims.iss as string) ?? 'https://accounts.google.com')
    .setAudience((claims.aud as string) ?? rules.audience)
    .setIssuedAt(now)
    .setExpirationTime((claims.exp as number) ?? now + 3600)
    .sign(key);
}

const refusal = async (jwt: string) => {
  const error = await verifyPushToken(jwt, rules, { fetch }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(AuthenticationError);
  return (error as Error).message;
};

describe('the token of a Pub/Sub push', () => {
  it('is accepted when every rule holds, the keys read once', async () => {
    const claims = await verifyPushToken(await token(), rules, { fetch });
    expect(claims).toMatchObject({ email: rules.email, aud: rules.audience });
    await verifyPushToken(await token({ iss: 'accounts.google.com' }), rules, { fetch });
    expect(fetches).toBe(1);
  });

  it('is refused for each rule that fails, saying which', async () => {
    expect(await refusal('not.a.jwt.at.all')).toContain('not a JWT');
    expect(await refusal(await token({}, other))).toContain('signature');
    expect(await refusal(await token({ aud: 'https://elsewhere.example/push' }))).toContain('audience');
    expect(await refusal(await token({ iss: 'https://evil.example' }))).toContain('issuer');
    expect(await refusal(await token({ exp: Math.floor(Date.now() / 1000) - 3600 }))).toContain('expired');
    expect(await refusal(await token({ email: 'someone@else.example' }))).toContain('service account');
    expect(await refusal(await token({ email_verified: false }))).toContain('service account');
  });

  it('looks for an unknown key ID once more in a fresh copy of the keys (rotation)', async () => {
    await verifyPushToken(await token(), rules, { fetch });
    expect(await refusal(await token({}, signer, 'k2'))).toContain('not signed by a key');
    expect(fetches).toBe(2);
    jwks = [...jwks, { ...(jwks[0] as object), kid: 'k2' }];
    await verifyPushToken(await token({}, signer, 'k2'), rules, { fetch });
    expect(fetches).toBe(3);
  });
});
