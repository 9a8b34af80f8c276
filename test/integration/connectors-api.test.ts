import { generateKeyPairSync } from 'node:crypto';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import Nylas from 'nylas';
import { afterEach, describe, expect, it } from 'vitest';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { connectorForAuth, credentialForAuth } from '#shared/connectors/service';
import { connectorKey, credentialKey } from '#shared/db/keys';
import type { ApplicationId, CredentialId } from '#shared/ids';
import { apiClient, clientOf, type ApiClient, type ApiResponse } from '../support/api';
import { expectError, expectInvalid } from '../support/expect-error';
import { makeApplication } from '../support/factories';
import { useApi } from '../support/harness';
import { rememberSecret } from '../support/secrets';

/**
 * Connectors, their credentials and provider detection, over HTTP. Secrets are write-only: every
 * answer of this file is checked for the secret sentinels it sends, and the stored items are read
 * raw to show no plaintext secret or private key is stored. Every rule a request can break answers
 * 400 naming the field and changes nothing; another application's connectors and credentials are 404.
 */
const { gateway } = useApi();

const CLIENT_SECRET = 'SENTINEL-client-secret-7f3a';
const NEW_SECRET = 'SENTINEL-rotated-secret-91bc';
const CREDENTIAL_SECRET = 'SENTINEL-credential-secret-44d0';
const CRED = /^cred_[0-9a-hjkmnp-tv-z]{26}$/;
const UNKNOWN_CRED = 'cred_01jd6abcdefghjkmnpqrstvwxy';

/** One RSA key for the file: generating one takes a moment. */
const RSA_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
/** What of the private key must never show: a line from its middle. */
const KEY_LINE = RSA_KEY.split('\n')[5]!;
const SENTINELS = [CLIENT_SECRET, NEW_SECRET, CREDENTIAL_SECRET, KEY_LINE];
// Also for the end-of-run scan of every log line and the whole table (test/final/secrets-scan.test.ts).
for (const [value, what] of [
  [CLIENT_SECRET, 'connector client_secret'],
  [NEW_SECRET, 'rotated connector client_secret'],
  [CREDENTIAL_SECRET, 'credential_data client_secret'],
  [RSA_KEY, 'credential_data private_key'],
] as const) {
  rememberSecret(value, `${what} (connectors-api.test.ts)`);
}

const serviceAccount = (overrides: Record<string, string> = {}) => ({
  type: 'service_account',
  project_id: 'acme-mail',
  private_key_id: '0123456789abcdef',
  private_key: RSA_KEY,
  client_email: 'robot@acme-mail.iam.gserviceaccount.com',
  client_id: '1234567890',
  token_uri: 'https://oauth2.googleapis.com/token',
  ...overrides,
});

/** Every answer this file receives, checked for secrets once each test is done. */
const answers: ApiResponse[] = [];
afterEach(() => {
  for (const r of answers.splice(0))
    for (const sentinel of SENTINELS)
      expect(r.text, `an answer carried a secret: ${r.text.slice(0, 200)}`).not.toContain(sentinel);
});

/** A client whose every answer is kept for the secret check. */
function recording(client: ApiClient): ApiClient {
  const request: ApiClient['request'] = async (method, path, options) => {
    const r = await client.request(method, path, options);
    answers.push(r);
    return r;
  };
  return clientOf(request);
}

async function freshApplication(name = 'Connectors') {
  const app = await makeApplication(name);
  return {
    id: app.applicationId as ApplicationId,
    apiKey: app.apiKey,
    api: recording(apiClient(gateway().url, app.apiKey)),
  };
}

async function createConnector(api: ApiClient, body: object) {
  const r = await api.post('/v3/connectors', body);
  expect(r.status, r.text).toBe(201);
  return r.body.data;
}

async function createCredential(api: ApiClient, provider: string, body: object) {
  const r = await api.post(`/v3/connectors/${provider}/creds`, body);
  expect(r.status, r.text).toBe(201);
  return r.body.data as { id: string; name: string; credential_type: string; created_at: number; updated_at: number };
}

const google = {
  provider: 'google',
  settings: { client_id: 'acme.apps.googleusercontent.com', client_secret: CLIENT_SECRET },
  scope: ['openid', 'email'],
};

describe('Function: connectors', () => {
  it('creates a connector (201), one per provider (409), and answers it without its secret', async () => {
    // Prepare
    const app = await freshApplication();
    // Act
    const created = await app.api.post('/v3/connectors', google);
    const again = await app.api.post('/v3/connectors', { ...google, name: 'Second' });
    const got = await app.api.get('/v3/connectors/google');
    const listed = await app.api.get('/v3/connectors');
    // Assess
    expect(created.status, created.text).toBe(201);
    expect(created.body.data).toEqual({
      name: 'Google connector',
      provider: 'google',
      settings: { client_id: 'acme.apps.googleusercontent.com' },
      client_secret_set: true,
      scope: ['openid', 'email'],
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
    });
    expectError(
      again,
      409,
      'conflict_error',
      'This application already has a google connector (one per provider); change it with PATCH /v3/connectors/google',
    );
    expect(got.body.data).toEqual(created.body.data);
    expect(listed.body.data).toEqual([created.body.data]);
    // The OAuth flow reads it decrypted.
    expect(await connectorForAuth(app.id, 'google')).toEqual({
      provider: 'google',
      client_id: 'acme.apps.googleusercontent.com',
      client_secret: CLIENT_SECRET,
      scope: ['openid', 'email'],
    });
  });

  it('stores the client secret sealed, never in plaintext', async () => {
    // Prepare
    const app = await freshApplication();
    await createConnector(app.api, google);
    // Act
    const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: connectorKey(app.id, 'google') }));
    // Assess
    expect(Item).toBeDefined();
    expect(JSON.stringify(Item)).not.toContain(CLIENT_SECRET);
    expect(Item!.client_secret_sealed).toMatch(/^s1:[\w-]+:[\w-]+:[\w-]+$/);
  });

  it('creates the connectors of every provider with what each takes', async () => {
    // Prepare
    const app = await freshApplication();
    const bodies = [
      {
        provider: 'microsoft',
        name: 'Outlook',
        settings: {
          client_id: 'ms-client',
          client_secret: CLIENT_SECRET,
          tenant: 'common',
          issuer: 'https://login.example.com/tenant/v2.0',
        },
        scope: ['Mail.Read', 'offline_access'],
      },
      { provider: 'yahoo', settings: { client_id: 'y-client', client_secret: CLIENT_SECRET } },
      {
        provider: 'zoom',
        settings: { client_id: 'z-client', client_secret: CLIENT_SECRET, issuer: 'http://127.0.0.1:9999' },
      },
      { provider: 'imap' },
      { provider: 'icloud', settings: {} },
      { provider: 'ews', scope: ['ews.messages', 'ews.calendar'] },
    ];
    // Act
    for (const body of bodies) await createConnector(app.api, body);
    const listed = await app.api.get('/v3/connectors');
    // Assess
    expect(listed.body.data.map((c: { provider: string }) => c.provider)).toEqual([
      'ews',
      'icloud',
      'imap',
      'microsoft',
      'yahoo',
      'zoom',
    ]);
    const byProvider = Object.fromEntries(listed.body.data.map((c: { provider: string }) => [c.provider, c]));
    expect(byProvider.microsoft).toMatchObject({
      name: 'Outlook',
      settings: { client_id: 'ms-client', tenant: 'common', issuer: 'https://login.example.com/tenant/v2.0' },
      client_secret_set: true,
    });
    expect(byProvider.imap).toEqual({
      name: 'IMAP connector',
      provider: 'imap',
      settings: {},
      scope: [],
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
    });
    expect(byProvider.ews.scope).toEqual(['ews.messages', 'ews.calendar']);
    const page = await app.api.get('/v3/connectors?limit=4');
    expect(page.body.data).toHaveLength(4);
    const rest = await app.api.get(`/v3/connectors?limit=4&page_token=${page.body.next_cursor}`);
    expect([...page.body.data, ...rest.body.data]).toEqual(listed.body.data);
    expect(await connectorForAuth(app.id, 'microsoft')).toEqual({
      provider: 'microsoft',
      client_id: 'ms-client',
      client_secret: CLIENT_SECRET,
      tenant: 'common',
      issuer: 'https://login.example.com/tenant/v2.0',
      scope: ['Mail.Read', 'offline_access'],
    });
  });

  it.each([
    [
      { provider: 'outlook' },
      "Invalid request body: 'provider' must be one of: google, microsoft, yahoo, imap, icloud, ews, zoom",
    ],
    [
      { provider: 'nylas' },
      "Invalid request body: 'provider' must be one of: google, microsoft, yahoo, imap, icloud, ews, zoom",
    ],
    [{}, "Invalid request body: 'provider' is required"],
    [{ provider: 'google' }, "'settings.client_id', 'settings.client_secret' are required for a google connector"],
    [
      { provider: 'google', settings: { client_id: 'x' } },
      "'settings.client_secret' is required for a google connector",
    ],
    [
      { provider: 'google', settings: { client_id: 'x', client_secret: 'y', tenant: 'common' } },
      /^'settings.tenant' does not apply to a google connector; it takes settings.client_id/,
    ],
    [
      { provider: 'google', settings: { client_id: 'x', client_secret: 'y', password: 'z' } },
      "Invalid request body: unknown field 'settings.password'",
    ],
    [
      { provider: 'imap', settings: { client_id: 'x' } },
      "'settings.client_id' does not apply to a imap connector; it takes no settings",
    ],
    [
      { provider: 'microsoft', settings: { client_id: 'x', client_secret: 'y', tenant: 'contoso tenant' } },
      /^'settings.tenant' must be common, organizations, consumers, a tenant ID \(GUID\) or a tenant domain name$/,
    ],
    [
      { provider: 'google', settings: { client_id: 'x', client_secret: 'y', issuer: 'http://accounts.example.com' } },
      /^'settings.issuer' must be an https URL \(or http to localhost, 127.0.0.1 or \[::1\]\) naming an OpenID Connect issuer/,
    ],
    [
      {
        provider: 'google',
        settings: { client_id: 'x', client_secret: 'y', issuer: 'https://accounts.example.com/?tenant=1' },
      },
      /^'settings.issuer' must be an https URL/,
    ],
    [
      { provider: 'zoom', settings: { client_id: 'x', client_secret: 'y' }, scope: ['meeting:write'] },
      "'scope' does not apply to a zoom connector: set the scopes on the zoom app itself",
    ],
    [
      { provider: 'ews', scope: ['Mail.Read'] },
      "'scope' of a ews connector may only contain: ews.messages, ews.calendar, ews.contacts",
    ],
    [
      { provider: 'google', settings: { client_id: 'x', client_secret: 'y' }, scope: ['a b'] },
      /^Invalid request body: 'scope\[0\]' must match the pattern/,
    ],
    [
      { provider: 'google', settings: { client_id: 'x', client_secret: 'y' }, scope: ['a', 'a'] },
      /^Invalid request body: 'scope' must not contain duplicates/,
    ],
    [
      { provider: 'google', settings: { client_id: 'x', client_secret: 'y' }, active_credential_id: UNKNOWN_CRED },
      "Invalid request body: unknown field 'active_credential_id'",
    ],
    [
      { provider: 'google', settings: { client_id: 'x', client_secret: 7 } },
      "Invalid request body: 'settings.client_secret' must be of type string",
    ],
  ])('refuses %j, and stores nothing', async (body, message) => {
    // Prepare
    const app = await freshApplication();
    // Act
    const r = await app.api.post('/v3/connectors', body);
    // Assess
    expectInvalid(r, message);
    expect((await app.api.get('/v3/connectors')).body.data).toEqual([]);
  });

  it("takes provider A's push settings: a Pub/Sub topic, the service account and audience of its pushes", async () => {
    const app = await freshApplication();
    const base = { client_id: 'g-client', client_secret: CLIENT_SECRET };
    const refusals: [Record<string, unknown>, RegExp][] = [
      [{ topic_name: 'my-topic' }, /'settings.topic_name'/],
      [
        { pubsub_service_account: 'push@p.iam.gserviceaccount.com' },
        /'settings.pubsub_service_account' needs 'settings.topic_name'/,
      ],
      [{ pubsub_audience: 'https://api.example.com/push' }, /'settings.pubsub_audience' needs 'settings.topic_name'/],
    ];
    for (const [settings, why] of refusals) {
      const refused = await app.api.post('/v3/connectors', { provider: 'google', settings: { ...base, ...settings } });
      expect(refused.status, refused.text).toBe(400);
      expect(refused.body.error.message).toMatch(why);
    }
    const push = {
      topic_name: 'projects/my-project-1/topics/gmail-changes',
      pubsub_service_account: 'push@my-project-1.iam.gserviceaccount.com',
      pubsub_audience: 'https://api.example.com/v3/push/google/app',
    };
    const created = await app.api.post('/v3/connectors', { provider: 'google', settings: { ...base, ...push } });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data.settings).toEqual({ client_id: 'g-client', ...push });
    // Only google takes them.
    const elsewhere = await app.api.post('/v3/connectors', {
      provider: 'yahoo',
      settings: { client_id: 'y', client_secret: CLIENT_SECRET, topic_name: push.topic_name },
    });
    expect(elsewhere.status, elsewhere.text).toBe(400);
  });

  it('answers 400 for a path that names no provider, 404 for a provider without connector', async () => {
    // Prepare
    const app = await freshApplication();
    // Act
    const unknown = await app.api.get('/v3/connectors/hotmail');
    const missing = await app.api.get('/v3/connectors/yahoo');
    const missingCreds = await app.api.get('/v3/connectors/yahoo/creds');
    // Assess
    expectInvalid(unknown, "'provider' must be one of: google, microsoft, yahoo, imap, icloud, ews, zoom");
    expectError(
      missing,
      404,
      'not_found_error',
      'This application has no yahoo connector; create it with POST /v3/connectors',
    );
    expectError(
      missingCreds,
      404,
      'not_found_error',
      'This application has no yahoo connector; create it with POST /v3/connectors',
    );
  });

  it('changes settings (replaced as a whole), keeping the stored secret while client_id stays', async () => {
    // Prepare
    const app = await freshApplication();
    await createConnector(app.api, {
      provider: 'microsoft',
      settings: { client_id: 'ms-1', client_secret: CLIENT_SECRET, tenant: 'common' },
      scope: ['Mail.Read'],
    });
    // Act
    const kept = await app.api.patch('/v3/connectors/microsoft', {
      name: 'Renamed',
      settings: { client_id: 'ms-1', tenant: 'organizations' },
    });
    const afterKept = await connectorForAuth(app.id, 'microsoft');
    const newId = await app.api.patch('/v3/connectors/microsoft', { settings: { client_id: 'ms-2' } });
    const rotated = await app.api.patch('/v3/connectors/microsoft', {
      settings: { client_id: 'ms-2', client_secret: NEW_SECRET },
      scope: ['Mail.Send'],
    });
    // Assess
    expect(kept.status, kept.text).toBe(200);
    expect(kept.body.data).toMatchObject({
      name: 'Renamed',
      settings: { client_id: 'ms-1', tenant: 'organizations' },
      client_secret_set: true,
      scope: ['Mail.Read'],
    });
    expect(afterKept).toMatchObject({ client_id: 'ms-1', client_secret: CLIENT_SECRET, tenant: 'organizations' });
    expectInvalid(
      newId,
      "'settings.client_secret' is required when 'settings.client_id' changes: the stored secret belongs to the previous client ID",
    );
    expect(rotated.body.data).toMatchObject({ settings: { client_id: 'ms-2' }, scope: ['Mail.Send'] });
    expect(rotated.body.data.settings.tenant).toBeUndefined();
    expect(await connectorForAuth(app.id, 'microsoft')).toEqual({
      provider: 'microsoft',
      client_id: 'ms-2',
      client_secret: NEW_SECRET,
      scope: ['Mail.Send'],
    });
  });

  it.each([
    [{}, 'Invalid request body: the request body must set at least one field'],
    [{ settings: {} }, "'settings.client_id', 'settings.client_secret' are required for a google connector"],
    [
      { settings: { client_id: 'acme.apps.googleusercontent.com', tenant: 'common' } },
      /^'settings.tenant' does not apply to a google connector/,
    ],
    [{ provider: 'microsoft' }, "Invalid request body: unknown field 'provider'"],
    [{ scope: 'openid' }, "Invalid request body: 'scope' must be of type array"],
    [
      { active_credential_id: 'nope' },
      "'active_credential_id' must name a credential of this google connector (an ID such as cred_…)",
    ],
    [
      { active_credential_id: UNKNOWN_CRED },
      `'active_credential_id' must name a credential of this google connector: '${UNKNOWN_CRED}' is not one`,
    ],
    [{ name: '' }, "Invalid request body: 'name' must not be empty"],
  ])('refuses the change %j, and keeps the connector', async (body, message) => {
    // Prepare
    const app = await freshApplication();
    const before = await createConnector(app.api, google);
    // Act
    const r = await app.api.patch('/v3/connectors/google', body);
    // Assess
    expectInvalid(r, message);
    expect((await app.api.get('/v3/connectors/google')).body.data).toEqual(before);
    expect((await connectorForAuth(app.id, 'google'))?.client_secret).toBe(CLIENT_SECRET);
  });

  it("answers 404 for another application's connectors, and hands the OAuth flow nothing of them", async () => {
    // Prepare
    const mine = await freshApplication();
    const other = await freshApplication('Other');
    await createConnector(mine.api, google);
    const cred = await createCredential(mine.api, 'google', {
      name: 'SA',
      credential_type: 'serviceaccount',
      credential_data: serviceAccount(),
    });
    await createConnector(other.api, { ...google, settings: { client_id: 'other', client_secret: 'other-secret' } });
    // Act
    const answers = [
      await other.api.get(`/v3/connectors/google/creds/${cred.id}`),
      await other.api.patch(`/v3/connectors/google/creds/${cred.id}`, { name: 'Stolen' }),
      await other.api.delete(`/v3/connectors/google/creds/${cred.id}`),
    ];
    const otherActive = await other.api.patch('/v3/connectors/google', { active_credential_id: cred.id });
    const third = await freshApplication('Third');
    // Assess
    for (const r of answers)
      expectError(r, 404, 'not_found_error', `Credential '${cred.id}' not found for the google connector`);
    expectInvalid(
      otherActive,
      `'active_credential_id' must name a credential of this google connector: '${cred.id}' is not one`,
    );
    expectError(
      await third.api.get('/v3/connectors/google'),
      404,
      'not_found_error',
      'This application has no google connector; create it with POST /v3/connectors',
    );
    expectError(
      await third.api.delete('/v3/connectors/google'),
      404,
      'not_found_error',
      'This application has no google connector; create it with POST /v3/connectors',
    );
    expectError(
      await third.api.patch('/v3/connectors/google', { name: 'x' }),
      404,
      'not_found_error',
      'This application has no google connector; create it with POST /v3/connectors',
    );
    expect((await other.api.get('/v3/connectors/google/creds')).body.data).toEqual([]);
    expect(await credentialForAuth(other.id, 'google', cred.id)).toBeUndefined();
    expect(await connectorForAuth(third.id, 'google')).toBeUndefined();
    expect((await mine.api.get(`/v3/connectors/google/creds/${cred.id}`)).body.data.name).toBe('SA');
    expect((await connectorForAuth(other.id, 'google'))?.client_secret).toBe('other-secret');
  });
});

describe('Function: connector credentials', () => {
  it('creates a credential of each type where it fits, answers it without its data, and hands the OAuth flow its data', async () => {
    // Prepare
    const app = await freshApplication();
    await createConnector(app.api, google);
    await createConnector(app.api, {
      provider: 'microsoft',
      settings: { client_id: 'ms', client_secret: CLIENT_SECRET },
    });
    // Act
    const sa = await createCredential(app.api, 'google', {
      name: 'Workspace robot',
      credential_type: 'serviceaccount',
      credential_data: serviceAccount(),
    });
    const consent = await createCredential(app.api, 'microsoft', {
      name: 'Contoso',
      credential_type: 'adminconsent',
      credential_data: { client_id: 'ms-admin', client_secret: CREDENTIAL_SECRET, tenant: 'contoso.onmicrosoft.com' },
    });
    const override = await createCredential(app.api, 'google', {
      name: 'Second app',
      credential_type: 'connector',
      credential_data: { client_id: 'g-2', client_secret: CREDENTIAL_SECRET },
    });
    const got = await app.api.get(`/v3/connectors/google/creds/${sa.id}`);
    const listed = await app.api.get('/v3/connectors/google/creds');
    // Assess
    expect(sa).toEqual({
      id: expect.stringMatching(CRED),
      name: 'Workspace robot',
      credential_type: 'serviceaccount',
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
    });
    expect(consent.credential_type).toBe('adminconsent');
    expect(got.body.data).toEqual(sa);
    expect(listed.body.data).toEqual([override, sa]);
    expect(await credentialForAuth(app.id, 'google', sa.id)).toEqual({
      id: sa.id,
      provider: 'google',
      name: 'Workspace robot',
      credential_type: 'serviceaccount',
      data: serviceAccount(),
    });
    expect(await credentialForAuth(app.id, 'microsoft', consent.id)).toEqual({
      id: consent.id,
      provider: 'microsoft',
      name: 'Contoso',
      credential_type: 'adminconsent',
      data: { client_id: 'ms-admin', client_secret: CREDENTIAL_SECRET, tenant: 'contoso.onmicrosoft.com' },
    });
    // Scoped by provider: the ID under another provider is nothing.
    expect(await credentialForAuth(app.id, 'microsoft', sa.id)).toBeUndefined();
    expectError(
      await app.api.get(`/v3/connectors/microsoft/creds/${sa.id}`),
      404,
      'not_found_error',
      `Credential '${sa.id}' not found for the microsoft connector`,
    );
  });

  it('stores credential data sealed: no private key, no secret in plaintext', async () => {
    // Prepare
    const app = await freshApplication();
    await createConnector(app.api, google);
    const sa = await createCredential(app.api, 'google', {
      name: 'SA',
      credential_type: 'serviceaccount',
      credential_data: serviceAccount(),
    });
    const over = await createCredential(app.api, 'google', {
      name: 'Override',
      credential_type: 'connector',
      credential_data: { client_id: 'g-2', client_secret: CREDENTIAL_SECRET },
    });
    // Act
    const items = await Promise.all(
      [sa.id, over.id].map(
        async (id) =>
          (
            await dynamo.send(
              new GetCommand({ TableName: TABLE_NAME, Key: credentialKey(app.id, 'google', id as CredentialId) }),
            )
          ).Item,
      ),
    );
    // Assess
    for (const item of items) {
      expect(item).toBeDefined();
      const raw = JSON.stringify(item);
      for (const sentinel of [CREDENTIAL_SECRET, KEY_LINE, 'BEGIN PRIVATE KEY', 'robot@acme-mail'])
        expect(raw).not.toContain(sentinel);
      expect(item!.data_sealed).toMatch(/^s1:[\w-]+:[\w-]+:[\w-]+$/);
    }
  });

  it('refuses a credential for a provider without connector, saying to create the connector first', async () => {
    // Prepare
    const app = await freshApplication();
    // Act
    const r = await app.api.post('/v3/connectors/google/creds', {
      name: 'SA',
      credential_type: 'serviceaccount',
      credential_data: serviceAccount(),
    });
    // Assess
    expectError(
      r,
      404,
      'not_found_error',
      'This application has no google connector; create it with POST /v3/connectors',
    );
  });

  it.each([
    [
      'microsoft',
      { name: 'x', credential_type: 'serviceaccount', credential_data: serviceAccount() },
      /^credential_type 'serviceaccount' does not fit provider microsoft: serviceaccount is for google, adminconsent for microsoft, connector for OAuth providers/,
    ],
    [
      'google',
      {
        name: 'x',
        credential_type: 'adminconsent',
        credential_data: { client_id: 'a', client_secret: 'b', tenant: 'common' },
      },
      /^credential_type 'adminconsent' does not fit provider google/,
    ],
    [
      'imap',
      { name: 'x', credential_type: 'connector', credential_data: { client_id: 'a', client_secret: 'b' } },
      /^credential_type 'connector' does not fit provider imap/,
    ],
    [
      'google',
      { name: 'x', credential_type: 'oauth', credential_data: {} },
      "Invalid request body: 'credential_type' must be one of: serviceaccount, adminconsent, connector",
    ],
    [
      'google',
      {
        name: 'x',
        credential_type: 'serviceaccount',
        credential_data: serviceAccount({ private_key: 'SENTINEL-garbage' }),
      },
      "'credential_data.private_key' must be a PEM private key (-----BEGIN PRIVATE KEY----- …), as in the service account key file",
    ],
    [
      'google',
      {
        name: 'x',
        credential_type: 'serviceaccount',
        credential_data: serviceAccount({
          private_key: `-----BEGIN PRIVATE KEY-----\n${KEY_LINE}\n-----END PRIVATE KEY-----\n`,
        }),
      },
      /^'credential_data.private_key' is not a readable PEM private key/,
    ],
    [
      'google',
      { name: 'x', credential_type: 'serviceaccount', credential_data: serviceAccount({ type: 'authorized_user' }) },
      "'credential_data.type' must be service_account, as in the service account key file",
    ],
    [
      'google',
      { name: 'x', credential_type: 'serviceaccount', credential_data: serviceAccount({ client_email: 'robot' }) },
      "'credential_data.client_email' must be the service account's email address",
    ],
    [
      'google',
      { name: 'x', credential_type: 'serviceaccount', credential_data: serviceAccount({ password: 'x' }) },
      /^'credential_data.password' is not part of a serviceaccount credential; it takes type, project_id/,
    ],
    [
      'google',
      {
        name: 'x',
        credential_type: 'serviceaccount',
        credential_data: { type: 'service_account', private_key: RSA_KEY },
      },
      "'credential_data.project_id', 'credential_data.private_key_id', 'credential_data.client_email' are required for credential_type serviceaccount",
    ],
    [
      'google',
      { name: 'x', credential_type: 'connector', credential_data: { client_id: 'a', client_secret: '' } },
      "'credential_data.client_secret' must not be empty",
    ],
    [
      'microsoft',
      {
        name: 'x',
        credential_type: 'adminconsent',
        credential_data: { client_id: 'a', client_secret: 'b', tenant: 'bad tenant' },
      },
      /^'credential_data.tenant' must be common, organizations, consumers/,
    ],
    [
      'google',
      { name: 'x', credential_type: 'connector', credential_data: { client_id: 'a', client_secret: { nested: true } } },
      "Invalid request body: 'credential_data.client_secret' must be of type string",
    ],
    [
      'google',
      { name: 'x', credential_type: 'connector', credential_data: 'client_id=a' },
      "Invalid request body: 'credential_data' must be of type object",
    ],
    [
      'google',
      { credential_type: 'connector', credential_data: { client_id: 'a', client_secret: 'b' } },
      "Invalid request body: 'name' is required",
    ],
    [
      'google',
      {
        name: 'x',
        credential_type: 'connector',
        credential_data: { client_id: 'a', client_secret: 'b' },
        id: UNKNOWN_CRED,
      },
      "Invalid request body: unknown field 'id'",
    ],
  ])(
    'refuses a %s credential (case %#: the body is not printed, it holds a private key), and stores nothing',
    async (provider, body, message) => {
      // Prepare
      const app = await freshApplication();
      await createConnector(app.api, google);
      await createConnector(app.api, {
        provider: 'microsoft',
        settings: { client_id: 'ms', client_secret: CLIENT_SECRET },
      });
      await createConnector(app.api, { provider: 'imap' });
      // Act
      const r = await app.api.post(`/v3/connectors/${provider}/creds`, body);
      // Assess
      expectInvalid(r, message);
      expect(r.text).not.toContain('SENTINEL-garbage');
      for (const p of ['google', 'microsoft', 'imap'])
        expect((await app.api.get(`/v3/connectors/${p}/creds`)).body.data).toEqual([]);
    },
  );

  it('keeps names unique per connector (case-insensitive, 409), renames and replaces data', async () => {
    // Prepare
    const app = await freshApplication();
    await createConnector(app.api, google);
    await createConnector(app.api, { provider: 'yahoo', settings: { client_id: 'y', client_secret: CLIENT_SECRET } });
    const first = await createCredential(app.api, 'google', {
      name: 'Primary',
      credential_type: 'connector',
      credential_data: { client_id: 'g-1', client_secret: CREDENTIAL_SECRET },
    });
    const second = await createCredential(app.api, 'google', {
      name: 'Secondary',
      credential_type: 'connector',
      credential_data: { client_id: 'g-2', client_secret: CREDENTIAL_SECRET },
    });
    // Act
    const dup = await app.api.post('/v3/connectors/google/creds', {
      name: 'PRIMARY',
      credential_type: 'connector',
      credential_data: { client_id: 'g-3', client_secret: 'x' },
    });
    const otherConnector = await app.api.post('/v3/connectors/yahoo/creds', {
      name: 'Primary',
      credential_type: 'connector',
      credential_data: { client_id: 'y-3', client_secret: 'x' },
    });
    const renameTaken = await app.api.patch(`/v3/connectors/google/creds/${second.id}`, { name: 'primary' });
    const renamed = await app.api.patch(`/v3/connectors/google/creds/${first.id}`, {
      name: 'Main',
      credential_data: { client_id: 'g-1b', client_secret: NEW_SECRET },
    });
    const reuseOld = await app.api.patch(`/v3/connectors/google/creds/${second.id}`, { name: 'Primary' });
    const badData = await app.api.patch(`/v3/connectors/google/creds/${second.id}`, {
      credential_data: { client_id: 'only' },
    });
    const typeChange = await app.api.patch(`/v3/connectors/google/creds/${second.id}`, {
      credential_type: 'serviceaccount',
    });
    // Assess
    expectError(
      dup,
      409,
      'conflict_error',
      "The google connector already has a credential named 'PRIMARY'; names are unique (case-insensitive)",
    );
    expect(otherConnector.status, otherConnector.text).toBe(201);
    expectError(
      renameTaken,
      409,
      'conflict_error',
      "The google connector already has a credential named 'primary'; names are unique (case-insensitive)",
    );
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.data).toMatchObject({ id: first.id, name: 'Main', credential_type: 'connector' });
    expect(reuseOld.body.data.name).toBe('Primary');
    expectInvalid(badData, "'credential_data.client_secret' is required for credential_type connector");
    expectInvalid(typeChange, "Invalid request body: unknown field 'credential_type'");
    expect((await credentialForAuth(app.id, 'google', first.id))?.data).toEqual({
      client_id: 'g-1b',
      client_secret: NEW_SECRET,
    });
    expect((await credentialForAuth(app.id, 'google', second.id))?.data).toEqual({
      client_id: 'g-2',
      client_secret: CREDENTIAL_SECRET,
    });
    expect((await app.api.get('/v3/connectors/google/creds')).body.data.map((c: { name: string }) => c.name)).toEqual([
      'Primary',
      'Main',
    ]);
  });

  it('sets active_credential_id to a credential of the connector only, and refuses to delete the active one (409)', async () => {
    // Prepare
    const app = await freshApplication();
    await createConnector(app.api, google);
    await createConnector(app.api, {
      provider: 'microsoft',
      settings: { client_id: 'ms', client_secret: CLIENT_SECRET },
    });
    const cred = await createCredential(app.api, 'google', {
      name: 'SA',
      credential_type: 'serviceaccount',
      credential_data: serviceAccount(),
    });
    const msCred = await createCredential(app.api, 'microsoft', {
      name: 'MS',
      credential_type: 'connector',
      credential_data: { client_id: 'a', client_secret: 'b' },
    });
    // Act
    const wrongConnector = await app.api.patch('/v3/connectors/google', { active_credential_id: msCred.id });
    const set = await app.api.patch('/v3/connectors/google', { active_credential_id: cred.id });
    const forAuth = await connectorForAuth(app.id, 'google');
    const deleteActive = await app.api.delete(`/v3/connectors/google/creds/${cred.id}`);
    const cleared = await app.api.patch('/v3/connectors/google', { active_credential_id: null });
    const deleted = await app.api.delete(`/v3/connectors/google/creds/${cred.id}`);
    const again = await app.api.delete(`/v3/connectors/google/creds/${cred.id}`);
    const setDeleted = await app.api.patch('/v3/connectors/google', { active_credential_id: cred.id });
    // Assess
    expectInvalid(
      wrongConnector,
      `'active_credential_id' must name a credential of this google connector: '${msCred.id}' is not one`,
    );
    expect(set.body.data.active_credential_id).toBe(cred.id);
    expect(forAuth?.active_credential_id).toBe(cred.id);
    expectError(
      deleteActive,
      409,
      'conflict_error',
      `Credential '${cred.id}' is the google connector's active_credential_id; set another one (or null) with PATCH /v3/connectors/google first`,
    );
    expect(cleared.body.data.active_credential_id).toBeUndefined();
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({ request_id: expect.stringMatching(/^req_/) });
    expectError(again, 404, 'not_found_error', `Credential '${cred.id}' not found for the google connector`);
    expectInvalid(
      setDeleted,
      `'active_credential_id' must name a credential of this google connector: '${cred.id}' is not one`,
    );
    expect(await credentialForAuth(app.id, 'google', cred.id)).toBeUndefined();
  });

  it('deletes a connector with its credentials; a new connector of the provider starts without them', async () => {
    // Prepare
    const app = await freshApplication();
    await createConnector(app.api, google);
    const cred = await createCredential(app.api, 'google', {
      name: 'SA',
      credential_type: 'serviceaccount',
      credential_data: serviceAccount(),
    });
    await app.api.patch('/v3/connectors/google', { active_credential_id: cred.id });
    // Act
    const deleted = await app.api.delete('/v3/connectors/google');
    const gone = await app.api.get('/v3/connectors/google');
    const credsGone = await app.api.get(`/v3/connectors/google/creds/${cred.id}`);
    await createConnector(app.api, google);
    const fresh = await app.api.get('/v3/connectors/google/creds');
    const sameName = await app.api.post('/v3/connectors/google/creds', {
      name: 'SA',
      credential_type: 'serviceaccount',
      credential_data: serviceAccount(),
    });
    // Assess
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({ request_id: expect.stringMatching(/^req_/) });
    expectError(
      gone,
      404,
      'not_found_error',
      'This application has no google connector; create it with POST /v3/connectors',
    );
    expectError(
      credsGone,
      404,
      'not_found_error',
      'This application has no google connector; create it with POST /v3/connectors',
    );
    expect(fresh.body.data).toEqual([]);
    expect(sameName.status, sameName.text).toBe(201);
    expect(await credentialForAuth(app.id, 'google', cred.id)).toBeUndefined();
    expect((await connectorForAuth(app.id, 'google'))?.active_credential_id).toBeUndefined();
    // The deleted connector's credential items are removed, not only unreachable.
    const { Items = [] } = await dynamo.send(
      new QueryCommand({
        TableName: TABLE_NAME,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
        ExpressionAttributeValues: { ':pk': `app#${app.id}`, ':p': 'cred' },
      }),
    );
    expect(Items.map((i) => i.sk).filter((sk: string) => sk.includes(cred.id))).toEqual([]);
    expect(Items.filter((i) => i.sk.startsWith('cred#'))).toHaveLength(1);
  });

  it('answers 404 for credential IDs that name nothing', async () => {
    // Prepare
    const app = await freshApplication();
    await createConnector(app.api, google);
    // Act + Assess
    for (const id of [UNKNOWN_CRED, 'not-a-credential']) {
      expectError(
        await app.api.get(`/v3/connectors/google/creds/${id}`),
        404,
        'not_found_error',
        `Credential '${id}' not found for the google connector`,
      );
      expectError(
        await app.api.patch(`/v3/connectors/google/creds/${id}`, { name: 'x' }),
        404,
        'not_found_error',
        `Credential '${id}' not found for the google connector`,
      );
      expectError(
        await app.api.delete(`/v3/connectors/google/creds/${id}`),
        404,
        'not_found_error',
        `Credential '${id}' not found for the google connector`,
      );
    }
    expect(await credentialForAuth(app.id, 'google', 'not-a-credential')).toBeUndefined();
    expect(await credentialForAuth(app.id, 'nope', UNKNOWN_CRED)).toBeUndefined();
  });
});

describe('Function: providers/detect', () => {
  it('detects providers the application has a connector for, or every provider with all_provider_types', async () => {
    // Prepare
    const app = await freshApplication();
    await createConnector(app.api, google);
    // Act
    const gmail = await app.api.post('/v3/providers/detect?email=ann%40gmail.com');
    const outlook = await app.api.post('/v3/providers/detect?email=bob%40outlook.com');
    const outlookAll = await app.api.post('/v3/providers/detect?email=bob%40outlook.com&all_provider_types=true');
    const aol = await app.api.post('/v3/providers/detect', { email: 'cy@aol.com', all_provider_types: true });
    const yahoo = await app.api.post('/v3/providers/detect', { email: 'di@yahoo.co.uk', all_provider_types: true });
    const icloud = await app.api.post('/v3/providers/detect', { email: 'ed@me.com', all_provider_types: true });
    const company = await app.api.post('/v3/providers/detect?email=fay%40company.example&all_provider_types=true');
    // Assess
    expect(gmail.status, gmail.text).toBe(200);
    expect(gmail.body.data).toEqual({ email_address: 'ann@gmail.com', detected: true, provider: 'google' });
    expect(outlook.body.data).toEqual({ email_address: 'bob@outlook.com', detected: false });
    expect(outlookAll.body.data).toEqual({ email_address: 'bob@outlook.com', detected: true, provider: 'microsoft' });
    expect(aol.body.data).toEqual({ email_address: 'cy@aol.com', detected: true, provider: 'imap', type: 'aol' });
    expect(yahoo.body.data).toEqual({ email_address: 'di@yahoo.co.uk', detected: true, provider: 'yahoo' });
    expect(icloud.body.data).toEqual({ email_address: 'ed@me.com', detected: true, provider: 'icloud' });
    expect(company.body.data).toEqual({ email_address: 'fay@company.example', detected: false });
  });

  it.each([
    ['', undefined, "'email' is required (as a query parameter or in the JSON body)"],
    ['?email=not-an-address', undefined, "Invalid query: 'email' must be a valid email address"],
    ['', { email: 'nope' }, "Invalid request body: 'email' must be a valid email address"],
    [
      '?email=a%40gmail.com',
      { email: 'a@gmail.com' },
      'Send email and all_provider_types either in the query or in the JSON body, not both',
    ],
    [
      '?email=a%40gmail.com&all_provider_types=maybe',
      undefined,
      "Invalid query: 'all_provider_types' must be of type boolean",
    ],
    ['', { email: 'a@gmail.com', provider: 'google' }, "Invalid request body: unknown field 'provider'"],
  ])('refuses %s %j', async (query, body, message) => {
    // Prepare
    const app = await freshApplication();
    // Act
    const r = await app.api.post(`/v3/providers/detect${query}`, body);
    // Assess
    expectInvalid(r, message);
  });
});

describe('Published SDK', () => {
  it('manages redirect URIs, connectors and credentials, and detects providers, with the official Node SDK unchanged', async () => {
    // Prepare
    const app = await freshApplication('SDK');
    const nylas = new Nylas({ apiKey: app.apiKey, apiUri: gateway().url });
    // Act
    const uri = await nylas.applications.redirectUris.create({
      requestBody: { url: 'https://acme.example/sdk', platform: 'web' },
    });
    const updatedUri = await nylas.applications.redirectUris.update({
      redirectUriId: uri.data.id,
      requestBody: { url: 'https://acme.example/sdk2' },
    });
    const details = await nylas.applications.getDetails();
    const connector = await nylas.connectors.create({
      requestBody: {
        name: 'Google',
        provider: 'google',
        settings: { clientId: 'sdk-client', clientSecret: CLIENT_SECRET },
        scope: ['openid'],
      },
    });
    const credential = await nylas.connectors.credentials.create({
      provider: 'google',
      requestBody: {
        name: 'Override',
        credentialType: 'connector' as never,
        credentialData: { clientId: 'sdk-2', clientSecret: CREDENTIAL_SECRET },
      },
    });
    const updated = await nylas.connectors.update({
      provider: 'google',
      requestBody: { activeCredentialId: credential.data.id },
    });
    const credentials = await nylas.connectors.credentials.list({ provider: 'google' });
    const detected = await nylas.auth.detectProvider({ email: 'ann@gmail.com' });
    await nylas.applications.redirectUris.destroy({ redirectUriId: uri.data.id });
    // Assess
    expect(updatedUri.data.url).toBe('https://acme.example/sdk2');
    expect(details.data.applicationId).toBe(app.id);
    expect(details.data.callbackUris?.map((u) => u.id)).toEqual([uri.data.id]);
    expect(connector.data).toMatchObject({ provider: 'google', settings: { clientId: 'sdk-client' } });
    expect(JSON.stringify(connector.data)).not.toContain(CLIENT_SECRET);
    expect(updated.data.activeCredentialId).toBe(credential.data.id);
    expect(credentials.data.map((c) => c.id)).toEqual([credential.data.id]);
    expect(detected.data).toMatchObject({ emailAddress: 'ann@gmail.com', detected: true, provider: 'google' });
    expect((await credentialForAuth(app.id, 'google', credential.data.id))?.data).toEqual({
      client_id: 'sdk-2',
      client_secret: CREDENTIAL_SECRET,
    });
    expect((await nylas.applications.redirectUris.list()).data).toEqual([]);
  });
});
