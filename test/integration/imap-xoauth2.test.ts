import { createHash, randomBytes } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ImapFlow } from 'imapflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { providerTokensKey } from '#shared/db/keys';
import type { GrantId } from '#shared/ids';
import { clock } from '#shared/time';
import { startOidcServer, type LocalOidcServer } from '../../scripts/local-stack/oidc-local';
import { apiClient, type ApiClient } from '../support/api';
import { useDovecot } from '../support/dovecot';
import { makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { followLogin } from '../support/oidc-login';
import { jobsDone } from '../support/outbox-relay';
import { createTestQueue, drainQueue, messagesIn } from '../support/queues';
import { rememberSecret } from '../support/secrets';

/**
 * Yahoo's grants created by hosted OAuth read and send their mail over IMAP and SMTP with their access
 * token (SASL XOAUTH2), against a real Dovecot whose `oauth2` passdb checks the token at a local
 * OpenID Connect server (the local issuer that otherwise plays provider B: any standard issuer does);
 * the connector's `issuer` points its authorization there, as `imap_host` / `smtp_host` point its mail.
 * (Providers A and B answer from their own APIs: test/integration/google-*.test.ts, microsoft-*.test.ts.) A token refreshed by the
 * grant's lifecycle keeps working; a refresh the provider refuses for good makes the grant invalid
 * with grant.expired.
 */
const APP_REDIRECT = 'http://localhost:9876/oauth/callback';
const CLIENT_SECRET = `oidc-secret-${randomBytes(12).toString('hex')}`;
const USER = 'olga@example.com';

let oidc: LocalOidcServer;
let gateway: Gateway;
let api: ApiClient;
let appId: string;
let apiKey: string;
let fanout: string;

beforeAll(async () => {
  rememberSecret(CLIENT_SECRET, 'OIDC client secret (XOAUTH2 test)');
  oidc = await startOidcServer({ onIssue: ({ kind, value }) => rememberSecret(value, `provider ${kind}`) });
});
afterAll(async () => {
  await gateway?.close();
  await oidc?.stop();
});
// Registered after the OIDC server's beforeAll: Dovecot introspects tokens at its userinfo endpoint.
const dovecot = useDovecot([], {
  oauth2: () => ({ introspectionUrl: `${oidc.issuers.microsoft}/me`, usernameAttribute: 'email' }),
});

beforeAll(async () => {
  fanout = await createTestQueue('xoauth2-fanout');
  Object.assign(process.env, { FANOUT_QUEUE_URL: fanout, MAIL_SYNC_QUEUE_URL: await createTestQueue('xoauth2-sync') });
  gateway = await startGateway();
  const app = await makeApplication('xoauth2');
  appId = app.applicationId;
  apiKey = app.apiKey;
  api = apiClient(gateway.url, apiKey);
  oidc.addClient({
    client_id: 'sb-test',
    client_secret: CLIENT_SECRET,
    redirect_uris: [`${gateway.url}/v3/connect/callback`, APP_REDIRECT],
  });
  const connector = await api.post('/v3/connectors', {
    provider: 'yahoo',
    settings: {
      client_id: 'sb-test',
      client_secret: CLIENT_SECRET,
      issuer: oidc.issuers.microsoft,
      imap_host: '127.0.0.1',
      imap_port: dovecot.imapPort,
      smtp_host: '127.0.0.1',
      smtp_port: dovecot.submissionPort,
    },
  });
  expect(connector.status, connector.text).toBe(201);
  expect(connector.body.data.settings).toMatchObject({ imap_host: '127.0.0.1', imap_port: dovecot.imapPort });
  expect((await api.post('/v3/applications/redirect-uris', { url: APP_REDIRECT, platform: 'web' })).status).toBe(200);
}, 120_000);

/** A Yahoo grant for `email`, through hosted OAuth (offline: with a refresh token). */
async function connectYahoo(email: string): Promise<string> {
  const query = new URLSearchParams({
    client_id: appId,
    redirect_uri: APP_REDIRECT,
    response_type: 'code',
    provider: 'yahoo',
    access_type: 'offline',
    scope: 'openid email offline_access mail-w',
  });
  const back = await followLogin(`${gateway.url}/v3/connect/auth?${query}`, {
    login: email,
    stopAt: (url) => url.href.startsWith(APP_REDIRECT),
  });
  const code = back.searchParams.get('code');
  expect(code, back.href).toBeTruthy();
  const token = await apiClient(gateway.url).post('/v3/connect/token', {
    client_id: appId,
    redirect_uri: APP_REDIRECT,
    grant_type: 'authorization_code',
    code,
    client_secret: apiKey,
  });
  expect(token.status, token.text).toBe(200);
  await jobsDone();
  return token.body.grant_id as string;
}

/** Another client of the mailbox, with its own token from the issuer (as a mail program would get one). */
async function otherClient(email: string): Promise<ImapFlow> {
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({
    client_id: 'sb-test',
    redirect_uri: APP_REDIRECT,
    response_type: 'code',
    scope: 'openid email offline_access mail-w',
    state: 'x',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  const back = await followLogin(`${oidc.issuers.microsoft}/auth?${query}`, {
    login: email,
    stopAt: (url) => url.href.startsWith(APP_REDIRECT),
  });
  const response = await fetch(`${oidc.issuers.microsoft}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: back.searchParams.get('code')!,
      redirect_uri: APP_REDIRECT,
      code_verifier: verifier,
      client_id: 'sb-test',
      client_secret: CLIENT_SECRET,
    }),
  });
  const { access_token: accessToken } = (await response.json()) as { access_token: string };
  const client = new ImapFlow({
    host: '127.0.0.1',
    port: dovecot.imapPort,
    secure: false,
    auth: { user: email, accessToken },
    logger: false,
  });
  await client.connect();
  return client;
}

async function syncRun(grantId: string) {
  const { runMailSync } = await import('#shared/services/mail-sync');
  await runMailSync({ application_id: appId, grant_id: grantId }, () => 300_000);
  await jobsDone();
}

async function notifications(grantId: string) {
  await jobsDone();
  return (await drainQueue(fanout, await messagesIn(fanout), 10_000))
    .map((m) => m.body as { type: string; data: { grant_id: string } })
    .filter((n) => n.data.grant_id === grantId);
}

/** Makes the grant's access token due for a refresh (as if an hour had passed). */
async function tokenDue(grantId: string) {
  await dynamo.send(
    new UpdateCommand({
      TableName: TABLE_NAME,
      Key: providerTokensKey(grantId as GrantId),
      UpdateExpression: 'SET access_expires_at = :past',
      ExpressionAttributeValues: { ':past': clock.nowSeconds() - 10 },
    }),
  );
}

describe('Yahoo grants over IMAP with XOAUTH2', () => {
  let grantId: string;

  it('syncs the mailbox with the grant’s access token, and sends over SMTP with it', async () => {
    const client = await otherClient(USER);
    try {
      for (let i = 0; i < 5; i++) {
        await client.append(
          'INBOX',
          Buffer.from(
            `From: Pat <pat@example.net>\r\nTo: ${USER}\r\nSubject: Token mail ${i}\r\nMessage-ID: <tok${i}@example.net>\r\nDate: ${new Date().toUTCString()}\r\n\r\nHello ${i}\r\n`,
          ),
        );
      }
    } finally {
      await client.logout();
    }
    grantId = await connectYahoo(USER);
    const grant = await api.get(`/v3/grants/${grantId}`);
    expect(grant.body.data).toMatchObject({ provider: 'yahoo', email: USER, grant_status: 'valid' });
    await syncRun(grantId);
    const messages = await api.get(`/v3/grants/${grantId}/messages?in=inbox`);
    expect(messages.status, messages.text).toBe(200);
    expect(messages.body.data.map((m: { subject: string }) => m.subject).sort()).toEqual([
      'Token mail 0',
      'Token mail 1',
      'Token mail 2',
      'Token mail 3',
      'Token mail 4',
    ]);
    expect((await notifications(grantId)).map((n) => n.type)).toContain('grant.imap_sync_completed');

    const sent = await api.post(`/v3/grants/${grantId}/messages/send`, {
      to: [{ email: 'quinn@example.net' }],
      subject: 'Sent with a token',
      body: 'via XOAUTH2',
    });
    expect(sent.status, sent.text).toBe(200);
    expect((await dovecot.sink.waitFor('quinn@example.net')).map((m) => m.subject)).toEqual(['Sent with a token']);
    expect((await notifications(grantId)).map((n) => n.type)).toEqual(['message.created']);
  });

  it('keeps working after the access token is refreshed by the grant’s lifecycle', async () => {
    await tokenDue(grantId);
    const client = await otherClient(USER);
    try {
      await client.append(
        'INBOX',
        Buffer.from(
          `From: Pat <pat@example.net>\r\nTo: ${USER}\r\nSubject: After refresh\r\nMessage-ID: <after@example.net>\r\n\r\nStill here\r\n`,
        ),
      );
    } finally {
      await client.logout();
    }
    await syncRun(grantId);
    expect((await notifications(grantId)).map((n) => n.type)).toEqual(['message.created']);

    expect((await api.get(`/v3/grants/${grantId}`)).body.data.grant_status).toBe('valid');
  });

  it('a refresh the provider refuses for good makes the grant invalid with grant.expired, and its sync stops', async () => {
    await tokenDue(grantId);
    oidc.failNext({
      issuer: 'microsoft',
      endpoint: 'token',
      grantType: 'refresh_token',
      error: 'invalid_grant',
      error_description: 'Token has been expired or revoked.',
    });
    await syncRun(grantId);
    expect((await api.get(`/v3/grants/${grantId}`)).body.data.grant_status).toBe('invalid');
    expect((await notifications(grantId)).map((n) => n.type)).toEqual(['grant.expired']);
    // Its runs end at once while it is invalid.
    await syncRun(grantId);
    expect(await notifications(grantId)).toEqual([]);
  });
});
