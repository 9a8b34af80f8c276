import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { providerTokensKey } from '#shared/db/keys';
import { getGrant } from '#shared/db/grants';
import type { ApplicationId, GrantId } from '#shared/ids';
import { clock } from '#shared/time';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { startOidcServer, type LocalOidcServer } from '../../scripts/local-stack/oidc-local';
import { apiClient, type ApiClient } from '../support/api';
import { makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { followLogin } from '../support/oidc-login';
import { pipelineIdle } from '../support/pipeline';
import { createQueueWithDlq } from '../support/queues';
import { startReceiver, type Receiver } from '../support/receiver';
import { rememberSecret } from '../support/secrets';
import { startQueueWorker } from '../support/sqs-worker';

/**
 * Hosted OAuth end to end, against a real OpenID Connect server (scripts/local-stack/oidc-local.ts)
 * playing provider A (google) and provider B (microsoft), the browser's part played by followLogin:
 * the authorization request → the provider's login and consent → our callback → the application's
 * redirect URI (state intact) → the token exchange (PKCE S256, plain, or the API key) → the grant
 * through its access token → refresh → revoke. Then re-authentication, the provider token lifecycle
 * (50 concurrent callers, one refresh; invalid_grant → grant.expired delivered to a webhook), bulk
 * authentication (service account, admin consent) and every bad input of the issue.
 */
const APP_REDIRECT = 'http://localhost:9876/oauth/callback';
const cameBack = (url: URL) => url.href.startsWith(APP_REDIRECT);
/** APP_REDIRECT as a security probe wrote it: the same URL for a URL parser, other strings. */
const APP_REDIRECT_PROBES = [
  'http://localhost:9876/x/../oauth/callback',
  'http://localhost:9876/oauth/x/%2e%2e/callback',
  'http://localhost:9876\\oauth/callback',
  'HTTP://LOCALHOST:9876/oauth/callback',
  'http://localhost:9876/oauth/callback/',
];

let gateway: Gateway;
let oidc: LocalOidcServer;
let google: GoogleFake;
let api: ApiClient;
let appId: string;
let apiKey: string;
let anonymous: ApiClient;
let fanout: { queue: string };
let delivery: { queue: string };
let workers: { stop(): Promise<void> }[] = [];
let receiver: Receiver;
const clientSecret = `oidc-secret-${randomBytes(12).toString('hex')}`;

const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

function authUrl(params: Record<string, string>) {
  const query = new URLSearchParams({ client_id: appId, redirect_uri: APP_REDIRECT, response_type: 'code', ...params });
  return `${gateway.url}/v3/connect/auth?${query}`;
}

/** Signs in at the provider and answers the application's redirect (code, state or error). */
async function signIn(params: Record<string, string>, login: string, options: { consent?: boolean } = {}) {
  const back = await followLogin(authUrl(params), { login, stopAt: cameBack, ...options });
  return back.searchParams;
}

async function exchange(body: Record<string, string>) {
  return anonymous.post('/v3/connect/token', { client_id: appId, redirect_uri: APP_REDIRECT, ...body });
}

beforeAll(async () => {
  fanout = await createQueueWithDlq('fanout', { visibilityTimeout: 30 });
  delivery = await createQueueWithDlq('delivery', { visibilityTimeout: 30 });
  const deliveryDlq = await createQueueWithDlq('delivery-dlq', { visibilityTimeout: 30 });
  Object.assign(process.env, {
    FANOUT_QUEUE_URL: fanout.queue,
    DELIVERY_QUEUE_URL: delivery.queue,
    DELIVERY_DLQ_URL: deliveryDlq.queue,
    ADMIN_CONSENT_DELAY_SECONDS: '300',
  });
  gateway = await startGateway();
  const app = await makeApplication('hosted-oauth');
  appId = app.applicationId;
  apiKey = app.apiKey;
  api = apiClient(gateway.url, apiKey);
  anonymous = apiClient(gateway.url);
  rememberSecret(clientSecret, 'OIDC client secret');
  oidc = await startOidcServer({ onIssue: ({ kind, value }) => rememberSecret(value, `provider ${kind}`) });
  oidc.addClient({
    client_id: 'sb-test',
    client_secret: clientSecret,
    redirect_uris: [`${gateway.url}/v3/connect/callback`],
  });
  // Provider A's APIs: the local Google fake, which knows every token the local sign-in issues.
  google = await startGoogleFake({ userinfoUrl: `${oidc.issuers.google}/me` });
  for (const provider of ['google', 'microsoft'] as const) {
    const created = await api.post('/v3/connectors', {
      provider,
      settings: {
        client_id: 'sb-test',
        client_secret: clientSecret,
        issuer: oidc.issuers[provider],
        ...(provider === 'google' ? { api_base_url: google.url } : {}),
      },
    });
    expect(created.status, created.text).toBe(201);
  }
  expect((await api.post('/v3/applications/redirect-uris', { url: APP_REDIRECT, platform: 'web' })).status).toBe(200);
  const { handler: fanoutHandler } = await import('#functions/webhook-fanout/handler');
  const { handler: deliveryHandler } = await import('#functions/webhook-delivery/handler');
  workers = [
    startQueueWorker(fanout.queue, fanoutHandler, { batchSize: 10 }),
    startQueueWorker(delivery.queue, deliveryHandler, { batchSize: 10 }),
  ];
  receiver = await startReceiver();
  const hook = await api.post('/v3/webhooks', {
    webhook_url: receiver.url,
    trigger_types: ['grant.created', 'grant.updated', 'grant.expired'],
  });
  expect(hook.status, hook.text).toBe(200);
}, 120_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await receiver?.close();
  await oidc?.stop();
  await google?.close();
  await gateway?.close();
});

const delivered = (type: string, grantId: string) =>
  receiver.received
    .map(
      (r) => JSON.parse(r.raw.toString()) as { type: string; data: { object: { id: string; grant_status: string } } },
    )
    .filter((n) => n.type === type && n.data.object.id === grantId);

describe('hosted OAuth: the whole flow', () => {
  it('auth → provider → callback → redirect (state intact) → PKCE S256 exchange → me → refresh → revoke → 401', async () => {
    const { verifier, challenge } = pkce();
    const state = 'app state: ü & = / ?';
    const back = await signIn(
      {
        provider: 'google',
        state,
        access_type: 'offline',
        code_challenge: challenge,
        code_challenge_method: 'S256',
        login_hint: 'alice@example.com',
      },
      'alice@example.com',
    );
    expect(back.get('state')).toBe(state);
    expect(back.get('error')).toBeNull();
    const code = back.get('code')!;
    expect(code).toMatch(/^sbac_/);

    // A public client: the verifier alone proves it.
    const token = await exchange({ grant_type: 'authorization_code', code, code_verifier: verifier });
    expect(token.status, token.text).toBe(200);
    expect(token.body).toMatchObject({
      token_type: 'Bearer',
      expires_in: 3600,
      email: 'alice@example.com',
      provider: 'google',
    });
    expect(token.body.refresh_token).toMatch(/^sbrt_/);
    expect(token.body.scope).toContain('openid');
    const grantId = token.body.grant_id as string;

    const asAlice = apiClient(gateway.url, token.body.access_token);
    const me = await asAlice.get('/v3/grants/me');
    expect(me.status, me.text).toBe(200);
    expect(me.body.data).toMatchObject({
      id: grantId,
      provider: 'google',
      email: 'alice@example.com',
      grant_status: 'valid',
    });
    // Its mail is read from Gmail's API with its provider token (the fake's mailbox of this sign-in, empty
    // so far), with the application's own token for the grant.
    const messages = await asAlice.get('/v3/grants/me/messages');
    expect(messages.status, messages.text).toBe(200);
    expect(messages.body.data).toEqual([]);
    expect(google.requestViolations).toEqual([]);

    // Refresh: a new pair; the old refresh token is used up.
    const refreshed = await anonymous.post('/v3/connect/token', {
      grant_type: 'refresh_token',
      client_id: appId,
      refresh_token: token.body.refresh_token,
    });
    expect(refreshed.status, refreshed.text).toBe(200);
    expect(refreshed.body.grant_id).toBe(grantId);
    expect(refreshed.body.refresh_token).not.toBe(token.body.refresh_token);
    const reused = await anonymous.post('/v3/connect/token', {
      grant_type: 'refresh_token',
      client_id: appId,
      refresh_token: token.body.refresh_token,
    });
    expect(reused.status).toBe(400);
    expect(reused.body.error).toBe('invalid_grant');
    const asAliceAgain = apiClient(gateway.url, refreshed.body.access_token);
    expect((await asAliceAgain.get('/v3/grants/me')).status).toBe(200);

    // Revoke the access token: it and its family (the refresh token) stop working.
    expect(
      (await anonymous.post(`/v3/connect/revoke?token=${encodeURIComponent(refreshed.body.access_token)}`)).status,
    ).toBe(200);
    const after = await asAliceAgain.get('/v3/grants/me');
    expect(after.status).toBe(401);
    expect(after.body.error.type).toBe('authentication_error');
    const deadRefresh = await anonymous.post('/v3/connect/token', {
      grant_type: 'refresh_token',
      client_id: appId,
      refresh_token: refreshed.body.refresh_token,
    });
    expect(deadRefresh.body.error).toBe('invalid_grant');
    // The grant itself stays: revoking a token is not deleting the account's grant.
    expect((await api.get(`/v3/grants/${grantId}`)).body.data.grant_status).toBe('valid');
  });

  it('exchanges with PKCE plain, and with the API key as client_secret (a confidential client); online access has no refresh token', async () => {
    const plain = randomBytes(40).toString('base64url');
    const first = await signIn(
      { provider: 'microsoft', code_challenge: plain, code_challenge_method: 'plain' },
      'bob@example.org',
    );
    const byPlain = await exchange({
      grant_type: 'authorization_code',
      code: first.get('code')!,
      code_verifier: plain,
    });
    expect(byPlain.status, byPlain.text).toBe(200);
    // Provider B's ID token has no email: it came from userinfo.
    expect(byPlain.body).toMatchObject({ email: 'bob@example.org', provider: 'microsoft' });
    expect(byPlain.body.refresh_token).toBeUndefined();

    const second = await signIn({ provider: 'google' }, 'carol@example.com');
    const byKey = await exchange({
      grant_type: 'authorization_code',
      code: second.get('code')!,
      client_secret: apiKey,
    });
    expect(byKey.status, byKey.text).toBe(200);
    expect(byKey.body.email).toBe('carol@example.com');
    // Form-encoded, as OAuth clients send it.
    const third = await signIn({ provider: 'google' }, 'carol@example.com');
    const form = await anonymous.request('POST', '/v3/connect/token', {
      rawBody: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: appId,
        redirect_uri: APP_REDIRECT,
        code: third.get('code')!,
        client_secret: apiKey,
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status, form.text).toBe(200);
    expect(form.body.grant_id).toBe(byKey.body.grant_id);
  });

  it('re-authenticates the same account into the same grant (grant.updated), valid again', async () => {
    const first = await exchange({
      grant_type: 'authorization_code',
      code: (await signIn({ provider: 'google' }, 'dora@example.com')).get('code')!,
      client_secret: apiKey,
    });
    const grantId = first.body.grant_id as string;
    const grant = await getGrant(appId as ApplicationId, grantId as GrantId);
    await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: { pk: `app#${appId}`, sk: `grant#${grantId}` },
        UpdateExpression: 'SET grant_status = :s',
        ExpressionAttributeValues: { ':s': 'invalid' },
      }),
    );
    const again = await exchange({
      grant_type: 'authorization_code',
      code: (await signIn({ provider: 'google', access_type: 'offline' }, 'dora@example.com')).get('code')!,
      client_secret: apiKey,
    });
    expect(again.status, again.text).toBe(200);
    expect(again.body.grant_id).toBe(grantId);
    const now = await api.get(`/v3/grants/${grantId}`);
    expect(now.body.data.grant_status).toBe('valid');
    expect(now.body.data.created_at).toBe(grant!.created_at);
    // Only one grant for the address.
    expect((await api.get('/v3/grants?email=dora@example.com')).body.data).toHaveLength(1);
    await pipelineIdle([fanout.queue, delivery.queue]);
    expect(delivered('grant.created', grantId)).toHaveLength(1);
    expect(delivered('grant.updated', grantId).length).toBeGreaterThanOrEqual(1);
    // Another provider for the same address: refused, back at the application's redirect URI.
    const clash = await signIn({ provider: 'microsoft', state: 's1' }, 'dora@example.com');
    expect(clash.get('error')).toBe('access_denied');
    expect(clash.get('error_description')).toContain('google');
    expect(clash.get('state')).toBe('s1');
  });
});

describe('hosted OAuth: provider tokens', () => {
  async function grantWithRefresh(email: string) {
    const token = await exchange({
      grant_type: 'authorization_code',
      code: (await signIn({ provider: 'google', access_type: 'offline' }, email)).get('code')!,
      client_secret: apiKey,
    });
    expect(token.status, token.text).toBe(200);
    return (await getGrant(appId as ApplicationId, token.body.grant_id as GrantId))!;
  }
  const expire = (grantId: string) =>
    dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: providerTokensKey(grantId as GrantId),
        UpdateExpression: 'SET access_expires_at = :t',
        ExpressionAttributeValues: { ':t': clock.nowSeconds() + 10 },
      }),
    );
  const tokensItem = async (grantId: string) =>
    (
      await dynamo.send(
        new GetCommand({ TableName: TABLE_NAME, Key: providerTokensKey(grantId as GrantId), ConsistentRead: true }),
      )
    ).Item!;

  it('are sealed at rest, and 50 concurrent callers of a due grant make exactly one refresh', async () => {
    const { providerAccessToken } = await import('#shared/accounts/provider-tokens');
    const grant = await grantWithRefresh('erin@example.com');
    const before = await tokensItem(grant.id);
    expect(before.sealed).toMatch(/^s1:/);
    const first = await providerAccessToken(grant);
    expect(JSON.stringify(before)).not.toContain(first);
    await expire(grant.id);
    const tokens = await Promise.all(Array.from({ length: 50 }, () => providerAccessToken(grant)));
    // One refresh: one new access token for all, one version step. (The local server rotates refresh
    // tokens and kills the whole grant when a rotated one comes back: a second refresh would have
    // made the grant invalid.)
    expect(new Set(tokens).size).toBe(1);
    expect(tokens[0]).not.toBe(first);
    const after = await tokensItem(grant.id);
    expect(after.version).toBe(before.version + 1);
    expect(after.lease_id).toBeUndefined();
    expect((await getGrant(appId as ApplicationId, grant.id))!.grant_status).toBe('valid');
    // And the new refresh token works for the next round.
    await expire(grant.id);
    expect(await providerAccessToken(grant)).not.toBe(tokens[0]);
  });

  it('a transient provider failure backs off and never invalidates the grant', async () => {
    const { providerAccessToken } = await import('#shared/accounts/provider-tokens');
    const grant = await grantWithRefresh('fred@example.com');
    await expire(grant.id);
    oidc.failNext({ issuer: 'google', endpoint: 'token', grantType: 'refresh_token', status: 503 });
    // The old access token is still valid for a few seconds: it is answered meanwhile.
    const meanwhile = await providerAccessToken(grant);
    expect(typeof meanwhile).toBe('string');
    const item = await tokensItem(grant.id);
    expect(item.failures).toBe(1);
    expect(item.retry_at).toBeGreaterThan(clock.nowSeconds());
    expect((await getGrant(appId as ApplicationId, grant.id))!.grant_status).toBe('valid');
  });

  it('invalid_grant makes the grant invalid and delivers grant.expired; re-authentication makes it valid', async () => {
    const { providerAccessToken, GrantExpiredError } = await import('#shared/accounts/provider-tokens');
    const grant = await grantWithRefresh('gina@example.com');
    await expire(grant.id);
    oidc.failNext({
      issuer: 'google',
      endpoint: 'token',
      grantType: 'refresh_token',
      error: 'invalid_grant',
      error_description: 'Token has been expired or revoked.',
    });
    await expect(providerAccessToken(grant)).rejects.toBeInstanceOf(GrantExpiredError);
    const invalid = await api.get(`/v3/grants/${grant.id}`);
    expect(invalid.body.data.grant_status).toBe('invalid');
    await pipelineIdle([fanout.queue, delivery.queue]);
    const expired = delivered('grant.expired', grant.id);
    expect(expired).toHaveLength(1);
    expect(expired[0]!.data.object.grant_status).toBe('invalid');
    // A request that needs the provider now says so.
    await expect(providerAccessToken((await getGrant(appId as ApplicationId, grant.id))!)).rejects.toBeInstanceOf(
      GrantExpiredError,
    );
    await signIn({ provider: 'google', access_type: 'offline' }, 'gina@example.com');
    expect((await api.get(`/v3/grants/${grant.id}`)).body.data.grant_status).toBe('valid');
  });

  it('deleting a connected grant revokes its tokens: issued ones at once, provider ones by the purge', async () => {
    const token = await exchange({
      grant_type: 'authorization_code',
      code: (await signIn({ provider: 'google', access_type: 'offline' }, 'hank@example.com')).get('code')!,
      client_secret: apiKey,
    });
    const grantId = token.body.grant_id as string;
    expect((await api.delete(`/v3/grants/${grantId}`)).status).toBe(200);
    expect((await apiClient(gateway.url, token.body.access_token).get('/v3/grants/me')).status).toBe(404);
    const { purgeConnectedGrant } = await import('#shared/accounts/purge');
    expect(await purgeConnectedGrant(grantId as GrantId)).toBe('done');
    expect(
      (await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: providerTokensKey(grantId as GrantId) }))).Item,
    ).toBeUndefined();
    expect((await apiClient(gateway.url, token.body.access_token).get('/v3/grants/me')).status).toBe(401);
    const refresh = await anonymous.post('/v3/connect/token', {
      grant_type: 'refresh_token',
      client_id: appId,
      refresh_token: token.body.refresh_token,
    });
    expect(refresh.body.error).toBe('invalid_grant');
  });
});

describe('bulk authentication', () => {
  it('google: a service account credential creates a grant through the JWT bearer grant', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    rememberSecret(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), 'service account private key');
    const account = {
      client_email: 'robot@project.iam.example',
      private_key_id: `kid-${randomBytes(4).toString('hex')}`,
    };
    oidc.addServiceAccount({ ...account, public_key: publicKey.export({ type: 'spki', format: 'pem' }).toString() });
    const credential = await api.post('/v3/connectors/google/creds', {
      name: 'Domain-wide delegation',
      credential_type: 'serviceaccount',
      credential_data: {
        type: 'service_account',
        project_id: 'project',
        private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        ...account,
      },
    });
    expect(credential.status, credential.text).toBe(201);
    const scopes = ['https://www.googleapis.com/auth/gmail.modify'];
    const grant = await api.post('/v3/connect/custom', {
      provider: 'google',
      settings: { credential_id: credential.body.data.id, email_address: 'ivy@corp.example', scopes },
    });
    expect(grant.status, grant.text).toBe(201);
    expect(grant.body.data).toMatchObject({
      provider: 'google',
      email: 'ivy@corp.example',
      grant_status: 'valid',
      settings: { credential_id: credential.body.data.id, credential_type: 'serviceaccount', scopes },
    });
    // Its provider token is renewed by a new assertion, not a refresh token.
    const { providerAccessToken } = await import('#shared/accounts/provider-tokens');
    const record = (await getGrant(appId as ApplicationId, grant.body.data.id))!;
    const first = await providerAccessToken(record);
    await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: providerTokensKey(record.id),
        UpdateExpression: 'SET access_expires_at = :t',
        ExpressionAttributeValues: { ':t': clock.nowSeconds() },
      }),
    );
    expect(await providerAccessToken(record)).not.toBe(first);
    // Again for the same address: the same grant.
    const again = await api.post('/v3/connect/custom', {
      provider: 'google',
      settings: { credential_id: credential.body.data.id, email_address: 'ivy@corp.example', scopes },
    });
    expect(again.status).toBe(201);
    expect(again.body.data.id).toBe(grant.body.data.id);
  });

  it('microsoft: admin consent first, then at least 5 minutes, then client credentials', async () => {
    const credential = await api.post('/v3/connectors/microsoft/creds', {
      name: 'Contoso',
      credential_type: 'adminconsent',
      credential_data: { client_id: 'sb-test', client_secret: clientSecret, tenant: oidc.tenant },
    });
    expect(credential.status, credential.text).toBe(201);
    const credentialId = credential.body.data.id as string;
    const body = {
      provider: 'microsoft',
      settings: { credential_id: credentialId, email_address: 'jo@contoso.example' },
    };
    const before = await api.post('/v3/connect/custom', body);
    expect(before.status).toBe(400);
    expect(before.body.error.message).toContain('adminconsent');

    const consent = await followLogin(
      authUrl({
        provider: 'microsoft',
        response_type: 'adminconsent',
        credential_id: credentialId,
        state: 'consent-1',
      }),
      {
        login: 'admin@contoso.example',
        stopAt: cameBack,
      },
    );
    expect(consent.searchParams.get('admin_consent')).toBe('true');
    expect(consent.searchParams.get('tenant')).toBe(oidc.tenant);
    expect(consent.searchParams.get('state')).toBe('consent-1');

    const tooSoon = await api.post('/v3/connect/custom', body);
    expect(tooSoon.status).toBe(400);
    expect(tooSoon.body.error.message).toMatch(/s left/);
    expect(Number(tooSoon.headers.get('retry-after'))).toBeGreaterThan(200);

    const restore = clock.set(() => Date.now() + 301_000);
    try {
      const grant = await api.post('/v3/connect/custom', body);
      expect(grant.status, grant.text).toBe(201);
      expect(grant.body.data).toMatchObject({
        provider: 'microsoft',
        email: 'jo@contoso.example',
        settings: { credential_id: credentialId, credential_type: 'adminconsent', app_permission: true },
      });
      expect(grant.body.data.settings.app_permission_scopes.length).toBeGreaterThan(0);
    } finally {
      restore();
    }
  });

  it('refuses a missing credential, a credential of the wrong type, and a provider without a connector', async () => {
    const noCredential = await api.post('/v3/connect/custom', {
      provider: 'google',
      settings: { email_address: 'x@corp.example' },
    });
    expect(noCredential.status).toBe(400);
    expect(noCredential.body.error.message).toContain('credential_id');
    const connectorCred = await api.post('/v3/connectors/google/creds', {
      name: `plain-${randomBytes(3).toString('hex')}`,
      credential_type: 'connector',
      credential_data: { client_id: 'sb-test', client_secret: clientSecret },
    });
    const wrongType = await api.post('/v3/connect/custom', {
      provider: 'google',
      settings: { credential_id: connectorCred.body.data.id, email_address: 'x@corp.example', scopes: ['a'] },
    });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.error.message).toContain("'serviceaccount'");
    const other = await makeApplication('bulk-other');
    const noConnector = await apiClient(gateway.url, other.apiKey).post('/v3/connect/custom', {
      provider: 'google',
      settings: { credential_id: 'cred_x', email_address: 'x@corp.example' },
    });
    expect(noConnector.status).toBe(400);
    expect(noConnector.body.error.message).toContain('POST /v3/connectors');
    expect((await apiClient(gateway.url, other.apiKey).get('/v3/grants?email=x@corp.example')).body.data).toEqual([]);
  });
});

describe('hosted OAuth: bad input', () => {
  it('refuses an unknown client_id and an unregistered redirect_uri before any redirect', async () => {
    for (const [url, what] of [
      [authUrl({ provider: 'google', client_id: 'app_01unknown' }), 'client_id'],
      [authUrl({ provider: 'google', redirect_uri: 'https://evil.example/cb' }), 'redirect_uri'],
      [authUrl({ provider: 'google', redirect_uri: `${APP_REDIRECT}/more` }), 'redirect_uri'],
      // The registered URI once parsed, but not as written: compared as strings (RFC 6749 §3.1.2.3).
      ...APP_REDIRECT_PROBES.map(
        (uri) => [authUrl({ provider: 'google', redirect_uri: uri }), 'redirect_uri'] as const,
      ),
    ] as const) {
      const response = await fetch(url, { redirect: 'manual' });
      expect(response.status, what).toBe(400);
      expect(response.headers.get('location')).toBeNull();
      const body = (await response.json()) as { error: { type: string; message: string } };
      expect(body.error.type).toBe('invalid_request_error');
      expect(body.error.message).toContain(what);
    }
  });

  it('refuses a provider without a connector, a connector credential of the wrong type, and bad PKCE parameters', async () => {
    const cases: [Record<string, string>, string][] = [
      [{ provider: 'yahoo' }, 'POST /v3/connectors'],
      [{ provider: 'exchange-server' }, 'not available'],
      [{ provider: 'google', code_challenge_method: 'S256' }, 'code_challenge'],
      [{ provider: 'google', code_challenge: 'x'.repeat(50), code_challenge_method: 'S256' }, 'SHA-256'],
      [{ provider: 'google', credential_id: 'cred_unknown' }, 'cred_unknown'],
      [{ provider: 'google', response_type: 'adminconsent' }, 'microsoft'],
      [{ provider: 'google', state: 's'.repeat(257) }, 'state'],
    ];
    for (const [params, expected] of cases) {
      const response = await fetch(authUrl(params), { redirect: 'manual' });
      const body = (await response.json()) as { error: { message: string } };
      expect(response.status, JSON.stringify(params)).toBe(400);
      expect(body.error.message, JSON.stringify(params)).toContain(expected);
    }
  });

  it('refuses a missing, forged or replayed state at the callback', async () => {
    expect((await anonymous.get('/v3/connect/callback?code=abc')).status).toBe(400);
    const forged = await anonymous.get('/v3/connect/callback?code=abc&state=forged');
    expect(forged.status).toBe(400);
    expect(forged.body.error.message).toContain('state');
    // Stop at our callback, use it, then replay it.
    const atCallback = await followLogin(authUrl({ provider: 'google' }), {
      login: 'kim@example.com',
      stopAt: (url) => url.pathname === '/v3/connect/callback',
    });
    const first = await fetch(atCallback, { redirect: 'manual' });
    expect(first.status).toBe(302);
    expect(new URL(first.headers.get('location')!).searchParams.get('code')).toMatch(/^sbac_/);
    const replay = await fetch(atCallback, { redirect: 'manual' });
    expect(replay.status).toBe(400);
  });

  it('sends provider errors and a declined consent back to the application with error, description and state', async () => {
    const declined = await signIn({ provider: 'google', state: 'st-decline' }, 'lee@example.com', { consent: false });
    expect(declined.get('error')).toBe('access_denied');
    expect(declined.get('state')).toBe('st-decline');
    expect(declined.get('code')).toBeNull();
    oidc.failNext({
      issuer: 'google',
      endpoint: 'token',
      grantType: 'authorization_code',
      error: 'invalid_grant',
      error_description: 'Malformed auth code.',
    });
    const refused = await signIn({ provider: 'google', state: 'st-2' }, 'lee@example.com');
    expect(refused.get('error')).toBe('access_denied');
    expect(refused.get('state')).toBe('st-2');
    oidc.failNext({ issuer: 'google', endpoint: 'token', grantType: 'authorization_code', status: 503 });
    const down = await signIn({ provider: 'google', state: 'st-3' }, 'lee@example.com');
    expect(down.get('error')).toBe('temporarily_unavailable');
    // None of these created a grant.
    expect((await api.get('/v3/grants?email=lee@example.com')).body.data).toEqual([]);
  });

  it('refuses an ID token with a bad signature, another audience, issuer or nonce: no grant', async () => {
    for (const [tamper, login] of [
      [{ issuer: 'google', signWith: 'foreign' }, 'sig@example.com'],
      [{ issuer: 'google', claims: { aud: 'someone-else' } }, 'aud@example.com'],
      [{ issuer: 'google', claims: { iss: 'https://evil.example' } }, 'iss@example.com'],
      [{ issuer: 'google', claims: { nonce: 'replayed-nonce' } }, 'nonce@example.com'],
    ] as const) {
      oidc.tamperNextIdToken(tamper as never);
      const back = await signIn({ provider: 'google', state: 'st' }, login);
      expect(back.get('error'), JSON.stringify(tamper)).toBe('access_denied');
      expect(back.get('error_description')).toMatch(/ID token/);
      expect(back.get('state')).toBe('st');
      expect((await api.get(`/v3/grants?email=${login}`)).body.data, login).toEqual([]);
    }
    expect(oidc.pending()).toBe(0);
  });

  it('refuses wrong or missing code_verifier, an expired code, another redirect_uri, another client, and a replayed code (revoking what it got)', async () => {
    const { verifier, challenge } = pkce();
    const code = async () =>
      (
        await signIn(
          { provider: 'google', code_challenge: challenge, code_challenge_method: 'S256', access_type: 'offline' },
          'max@example.com',
        )
      ).get('code')!;
    const expectOAuth = (response: { status: number; body: Record<string, unknown> }, error: string, status = 400) => {
      expect(response.status).toBe(status);
      expect(response.body).toMatchObject({ error, error_code: String(status) });
      expect(typeof response.body.error_description).toBe('string');
      expect(typeof response.body.request_id).toBe('string');
    };
    expectOAuth(
      await exchange({ grant_type: 'authorization_code', code: await code(), code_verifier: pkce().verifier }),
      'invalid_grant',
    );
    expectOAuth(await exchange({ grant_type: 'authorization_code', code: await code() }), 'invalid_grant');
    expectOAuth(
      await exchange({
        grant_type: 'authorization_code',
        code: await code(),
        code_verifier: verifier,
        redirect_uri: 'http://localhost:9876/other',
      }),
      'invalid_grant',
    );
    for (const redirect_uri of APP_REDIRECT_PROBES)
      expectOAuth(
        await exchange({ grant_type: 'authorization_code', code: await code(), code_verifier: verifier, redirect_uri }),
        'invalid_grant',
      );
    expectOAuth(
      await exchange({ grant_type: 'authorization_code', code: 'sbac_forged', code_verifier: verifier }),
      'invalid_grant',
    );
    // Ten minutes later.
    const late = await code();
    const restore = clock.set(() => Date.now() + 601_000);
    try {
      expectOAuth(
        await exchange({ grant_type: 'authorization_code', code: late, code_verifier: verifier }),
        'invalid_grant',
      );
    } finally {
      restore();
    }
    // Another application presenting this application's code.
    const other = await makeApplication('oauth-other');
    expectOAuth(
      await anonymous.post('/v3/connect/token', {
        grant_type: 'authorization_code',
        client_id: other.applicationId,
        client_secret: other.apiKey,
        code: await code(),
        redirect_uri: APP_REDIRECT,
        code_verifier: verifier,
      }),
      'invalid_grant',
    );
    // A wrong API key is a client error, 401.
    expectOAuth(
      await exchange({ grant_type: 'authorization_code', code: await code(), client_secret: 'sbk_wrong' }),
      'invalid_client',
      401,
    );
    // Used twice: the second use fails and revokes the tokens of the first.
    const once = await code();
    const good = await exchange({ grant_type: 'authorization_code', code: once, code_verifier: verifier });
    expect(good.status).toBe(200);
    expectOAuth(
      await exchange({ grant_type: 'authorization_code', code: once, code_verifier: verifier }),
      'invalid_grant',
    );
    expect((await apiClient(gateway.url, good.body.access_token).get('/v3/grants/me')).status).toBe(401);
    expectOAuth(
      await anonymous.post('/v3/connect/token', {
        grant_type: 'refresh_token',
        client_id: appId,
        refresh_token: good.body.refresh_token,
      }),
      'invalid_grant',
    );
  });
});
