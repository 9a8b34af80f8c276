import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { generateApiKey, hashApiKey } from '#shared/applications/api-keys';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { apiKeyKey, applicationApiKeyKey, applicationKey, applicationPartition } from '#shared/db/keys';
import { newId, type ApiKeyId, type ApplicationId } from '#shared/ids';
import { clock } from '#shared/time';
import { apiClient, type ApiClient } from '../support/api';
import { expectError, expectInvalid } from '../support/expect-error';
import { makeApplication } from '../support/factories';
import { useApi } from '../support/harness';
import { rememberSecret } from '../support/secrets';

// This file runs with the API key cache on, as deployed (30 s, the default): the other files run
// with it off (test/support/setup-env.ts). Set before any module that reads it loads.
vi.hoisted(() => {
  process.env.API_KEY_CACHE_SECONDS = '30';
});

/**
 * An application's own API keys (/v3/admin/applications/{application_id}/api-keys), over HTTP: the
 * secret is answered once, by the create, and works at once; list and get never answer it; a key
 * past its expiry is refused (401 saying since when), cached or not; a deleted key is refused at once
 * by the instance that deleted it, and by another within the cache's lifetime; the last active key
 * cannot be deleted (409), the calling key can while another is active; another application's ID is
 * a 404 for every operation, whether it exists or not; keys the admin CLI made are listed, also those
 * stored before keys had IDs.
 */
const { gateway } = useApi();

const KEY_ID = /^key_[0-9a-hjkmnp-tv-z]{26}$/;
const OTHER_APPLICATION = (id: string) =>
  `Application '${id}' not found: an API key manages the API keys of its own application only`;
const LAST_KEY = /^API key 'key_\w+' is the application's last active API key: .*Create another first/;

let restoreClock: (() => void) | undefined;
afterEach(() => {
  restoreClock?.();
  restoreClock = undefined;
});
/** Moves this process's clock (every function of the gateway runs in it) `seconds` ahead. */
const later = (seconds: number) => {
  restoreClock?.();
  restoreClock = clock.set(() => Date.now() + seconds * 1000);
};

interface App {
  id: ApplicationId;
  api: ApiClient;
  keys: string;
}

/** A new application, as the admin CLI makes it, with a client that calls with its first key. */
async function freshApplication(name = 'Keys'): Promise<App> {
  const app = await makeApplication(name);
  const id = app.applicationId as ApplicationId;
  return { id, api: apiClient(gateway().url, app.apiKey), keys: `/v3/admin/applications/${id}/api-keys` };
}

async function createKey(app: App, body?: object, client = app.api) {
  const r = await client.post(app.keys, body);
  expect(r.status, r.text).toBe(200);
  return r.body.data as { id: string; api_key: string; [field: string]: unknown };
}

async function listKeys(app: App, client = app.api) {
  const r = await client.get(`${app.keys}?limit=200`);
  expect(r.status, r.text).toBe(200);
  return r.body.data as { id: string; name?: string; status: string; [field: string]: unknown }[];
}

/** Whether a request with `client` is served (200) or refused (its status and message). */
async function served(client: ApiClient) {
  const r = await client.get('/v3/applications');
  return r.status === 200 ? 'served' : `${r.status} ${r.body?.error?.message}`;
}

describe('Function: applications, API keys: create, list, get', () => {
  it('answers the secret once, stores only its hash, and the key works at once', async () => {
    // Prepare
    const app = await freshApplication();
    // Act
    const created = await createKey(app, { name: 'ci', expires_in: 3600 });
    const second = apiClient(gateway().url, created.api_key);
    const got = await app.api.get(`${app.keys}/${created.id}`);
    const listed = await app.api.get(app.keys);
    // Assess
    expect(created).toEqual({
      id: expect.stringMatching(KEY_ID),
      application_id: app.id,
      name: 'ci',
      status: 'active',
      permissions: ['all'],
      key_prefix: created.api_key.slice(0, 8),
      created_at: expect.any(Number),
      updated_at: created.created_at,
      expires_at: (created.created_at as number) + 3600,
      expires_in: 3600,
      api_key: expect.stringMatching(/^sbk_[A-Za-z0-9_-]{43}$/),
    });
    expect(await served(second)).toBe('served');
    const { api_key: secret, ...described } = created;
    expect(got.status, got.text).toBe(200);
    expect(got.body.data).toEqual(described);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data).toEqual([described, expect.objectContaining({ name: 'first key', status: 'active' })]);
    // Neither answer carries the secret, nor does the table: the key's item is keyed by its SHA-256.
    for (const text of [got.text, listed.text]) expect(text).not.toContain(secret);
    const stored = await dynamo.send(
      new QueryCommand({
        TableName: TABLE_NAME,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': applicationPartition(app.id) },
      }),
    );
    const byHash = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: apiKeyKey(hashApiKey(secret)) }));
    expect(byHash.Item).toMatchObject({
      application_id: app.id,
      key_id: created.id,
      key_expires_at: created.expires_at,
    });
    expect(JSON.stringify([stored.Items, byHash.Item])).not.toContain(secret);
  });

  it('creates a key without a body: no name, never expires', async () => {
    // Prepare
    const app = await freshApplication();
    // Act
    const r = await app.api.request('POST', app.keys);
    // Assess
    expect(r.status, r.text).toBe(200);
    expect(Object.keys(r.body.data).sort()).toEqual(
      ['api_key', 'application_id', 'created_at', 'id', 'key_prefix', 'permissions', 'status', 'updated_at'].sort(),
    );
    expect(await served(apiClient(gateway().url, r.body.data.api_key))).toBe('served');
  });

  it('lists the key the application was created with, newest first, a page at a time', async () => {
    // Prepare
    const app = await freshApplication();
    const first = (await listKeys(app))[0]!;
    const second = await createKey(app, { name: 'second' });
    const third = await createKey(app, { name: 'third' });
    // Act
    const page1 = await app.api.get(`${app.keys}?limit=2`);
    const page2 = await app.api.get(`${app.keys}?limit=2&page_token=${encodeURIComponent(page1.body.next_cursor)}`);
    // Assess
    expect(first).toMatchObject({ id: expect.stringMatching(KEY_ID), name: 'first key', status: 'active' });
    expect(first).not.toHaveProperty('expires_at');
    expect(page1.body.data.map((k: { id: string }) => k.id)).toEqual([third.id, second.id]);
    expect(page1.body.next_cursor).toEqual(expect.any(String));
    expect(page2.body.data.map((k: { id: string }) => k.id)).toEqual([first.id]);
    expect(page2.body).not.toHaveProperty('next_cursor');
  });

  it('lists a key the admin CLI stored before keys had IDs, and rotates it away', async () => {
    // Prepare: an application and key as the CLI stored them before: the key's item by hash only.
    const appId = newId('application');
    const legacySecret = generateApiKey();
    rememberSecret(legacySecret, `API key of application ${appId}`);
    const createdAt = clock.nowSeconds() - 86_400;
    await dynamo.send(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: { ...applicationKey(appId), entity: 'application', id: appId, name: 'Legacy', created_at: createdAt },
      }),
    );
    await dynamo.send(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: {
          ...apiKeyKey(hashApiKey(legacySecret)),
          entity: 'api_key',
          application_id: appId,
          key_prefix: legacySecret.slice(0, 8),
          created_at: createdAt,
        },
      }),
    );
    const app: App = {
      id: appId,
      api: apiClient(gateway().url, legacySecret),
      keys: `/v3/admin/applications/${appId}/api-keys`,
    };
    // Act
    const listed = await listKeys(app);
    const again = await listKeys(app);
    const next = await createKey(app, { name: 'next' });
    const nextApi = apiClient(gateway().url, next.api_key);
    const removed = await nextApi.delete(`${app.keys}/${listed[0]!.id}`);
    // Assess
    expect(listed).toEqual([
      {
        id: expect.stringMatching(KEY_ID),
        application_id: appId,
        name: 'first key',
        status: 'active',
        permissions: ['all'],
        key_prefix: legacySecret.slice(0, 8),
        created_at: createdAt,
        updated_at: createdAt,
      },
    ]);
    expect(again).toEqual(listed);
    expect(removed.status, removed.text).toBe(200);
    expect(await served(app.api)).toBe('401 Invalid API key');
    expect((await listKeys(app, nextApi)).map((k) => k.id)).toEqual([next.id]);
  });

  it('keeps at most 20 keys, expired ones included', async () => {
    // Prepare
    const app = await freshApplication();
    for (let i = 0; i < 19; i++) await createKey(app, { name: `k${i}` });
    // Act
    const r = await app.api.post(app.keys, { name: 'one too many' });
    // Assess
    expectError(
      r,
      409,
      'conflict_error',
      'An application can have at most 20 API keys, expired ones included; delete one first',
    );
    expect(await listKeys(app)).toHaveLength(20);
  });
});

describe('Function: applications, API keys: expiry', () => {
  it('refuses a key from its expires_at on, cached or not, saying since when, and lists it as expired', async () => {
    // Prepare
    const app = await freshApplication();
    const created = await createKey(app, { expires_in: 60 });
    const short = apiClient(gateway().url, created.api_key);
    // 45 s on, before its expiry: trusted from this instance's cache until 75 s on.
    later(45);
    expect(await served(short)).toBe('served');
    // Act: 61 s on, the cached key has expired.
    later(61);
    const refused = await short.get('/v3/applications');
    const listed = await listKeys(app);
    const got = await app.api.get(`${app.keys}/${created.id}`);
    // Assess
    const when = new Date((created.expires_at as number) * 1000).toISOString();
    expectError(
      refused,
      401,
      'authentication_error',
      `This API key expired at ${when} (Unix ${created.expires_at}); call with another API key of the application`,
    );
    expect(listed.find((k) => k.id === created.id)).toMatchObject({ status: 'expired', expires_in: 60 });
    expect(got.body.data.status).toBe('expired');
  });
});

describe('Function: applications, API keys: delete', () => {
  it('refuses a deleted key at once in the instance that deleted it', async () => {
    // Prepare
    const app = await freshApplication();
    const created = await createKey(app, { name: 'to revoke' });
    const revoked = apiClient(gateway().url, created.api_key);
    expect(await served(revoked)).toBe('served'); // now in this instance's cache
    // Act
    const r = await app.api.delete(`${app.keys}/${created.id}`);
    // Assess
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ request_id: expect.stringMatching(/^req_/) });
    expect(await served(revoked)).toBe('401 Invalid API key');
    expectError(
      await app.api.get(`${app.keys}/${created.id}`),
      404,
      'not_found_error',
      `API key '${created.id}' not found`,
    );
    expect((await listKeys(app)).map((k) => k.id)).not.toContain(created.id);
    expectError(
      await app.api.delete(`${app.keys}/${created.id}`),
      404,
      'not_found_error',
      `API key '${created.id}' not found`,
    );
  });

  it('trusts a key another instance deleted for at most API_KEY_CACHE_SECONDS', async () => {
    // Prepare
    const app = await freshApplication();
    const created = await createKey(app);
    const revoked = apiClient(gateway().url, created.api_key);
    expect(await served(revoked)).toBe('served');
    // Act: another instance's DELETE, which this instance's cache does not hear of.
    await dynamo.send(
      new DeleteCommand({ TableName: TABLE_NAME, Key: applicationApiKeyKey(app.id, created.id as ApiKeyId) }),
    );
    await dynamo.send(new DeleteCommand({ TableName: TABLE_NAME, Key: apiKeyKey(hashApiKey(created.api_key)) }));
    const within = await served(revoked);
    later(31);
    const after = await served(revoked);
    // Assess
    expect(within).toBe('served');
    expect(after).toBe('401 Invalid API key');
  });

  it('deletes the key the request is made with while another is active, never the last active one', async () => {
    // Prepare
    const app = await freshApplication();
    const [first] = await listKeys(app);
    const next = await createKey(app, { name: 'next' });
    const nextApi = apiClient(gateway().url, next.api_key);
    // Act
    const own = await app.api.delete(`${app.keys}/${first!.id}`);
    const last = await nextApi.delete(`${app.keys}/${next.id}`);
    // Assess
    expect(own.status, own.text).toBe(200);
    expect(await served(app.api)).toBe('401 Invalid API key');
    expectError(last, 409, 'conflict_error', LAST_KEY);
    expect(last.body.error.message).toContain(`POST /v3/admin/applications/${app.id}/api-keys`);
    expect(await served(nextApi)).toBe('served');
    expect((await listKeys(app, nextApi)).map((k) => k.id)).toEqual([next.id]);
  });

  it('counts only unexpired keys as active: an expired key is no replacement, and is deleted freely', async () => {
    // Prepare
    const app = await freshApplication();
    const [first] = await listKeys(app);
    const short = await createKey(app, { expires_in: 60 });
    later(61);
    // Act
    const refused = await app.api.delete(`${app.keys}/${first!.id}`);
    const expired = await app.api.delete(`${app.keys}/${short.id}`);
    // Assess
    expectError(refused, 409, 'conflict_error', LAST_KEY);
    expect(expired.status, expired.text).toBe(200);
    expect((await listKeys(app)).map((k) => k.id)).toEqual([first!.id]);
  });
});

describe('Function: applications, API keys: another application', () => {
  it("answers 404 for another application's ID on every operation, whether it exists or not, and changes nothing", async () => {
    // Prepare
    const owner = await freshApplication('Owner');
    const ownerKey = await createKey(owner, { name: 'owned' });
    const before = await listKeys(owner);
    const other = await freshApplication('Other');
    const unknown = newId('application');
    // Act and assess
    for (const appId of [owner.id, unknown]) {
      const keys = `/v3/admin/applications/${appId}/api-keys`;
      for (const r of [
        await other.api.post(keys, { name: 'intruder' }),
        await other.api.get(keys),
        await other.api.get(`${keys}/${ownerKey.id}`),
        await other.api.delete(`${keys}/${ownerKey.id}`),
      ])
        expectError(r, 404, 'not_found_error', OTHER_APPLICATION(appId));
    }
    // Another application's key ID under the caller's own application: not found there either.
    expectError(await other.api.get(`${other.keys}/${ownerKey.id}`), 404, 'not_found_error', /not found$/);
    expectError(await other.api.delete(`${other.keys}/${ownerKey.id}`), 404, 'not_found_error', /not found$/);
    expect(await listKeys(owner)).toEqual(before);
    expect(await served(apiClient(gateway().url, ownerKey.api_key))).toBe('served');
    expect(await listKeys(other)).toHaveLength(1);
  });
});

describe('Function: applications, API keys: authentication', () => {
  it("needs an API key of the application; the contract's service-account signature headers are not read", async () => {
    // Prepare
    const app = await freshApplication();
    const signed = {
      'x-nylas-signature': 'c2lnbmF0dXJlIG9mIG5vIHNlcnZpY2UgYWNjb3VudA==',
      'x-nylas-kid': 'service-account-key-1',
      'x-nylas-nonce': 'nonce-1',
      'x-nylas-timestamp': String(clock.nowSeconds()),
    };
    // Act
    const anonymous = await apiClient(gateway().url).get(app.keys, signed);
    const withKey = await app.api.get(app.keys, signed);
    // Assess
    expectError(anonymous, 401, 'authentication_error', /^Missing Authorization header/);
    expect(withKey.status, withKey.text).toBe(200);
  });
});

describe('Function: applications, API keys: bad input', () => {
  it.each([
    [{ expires_in: 59 }, "Invalid request body: 'expires_in' must be >= 60"],
    [{ expires_in: 315_360_001 }, "Invalid request body: 'expires_in' must be <= 315360000"],
    [{ expires_in: 3600.5 }, "Invalid request body: 'expires_in' must be of type integer"],
    [{ expires_in: '3600' }, "Invalid request body: 'expires_in' must be of type integer"],
    [{ name: '' }, "Invalid request body: 'name' must not be empty"],
    [{ name: 'x'.repeat(257) }, "Invalid request body: 'name' must be at most 256 characters"],
    [{ name: 'two\nlines' }, /^Invalid request body: 'name' must match the pattern/],
    [{ expires_at: 1_900_000_000 }, "Invalid request body: unknown field 'expires_at'"],
    [{ permissions: ['all'] }, "Invalid request body: unknown field 'permissions'"],
  ])('refuses %j and creates nothing', async (body, message) => {
    // Prepare
    const app = await freshApplication();
    // Act
    const r = await app.api.post(app.keys, body);
    // Assess
    expectInvalid(r, message);
    expect(await listKeys(app)).toHaveLength(1);
  });

  it('refuses a forged page token and unknown query parameters', async () => {
    // Prepare
    const app = await freshApplication();
    // Act
    const forged = await app.api.get(`${app.keys}?page_token=forged`);
    const unknown = await app.api.get(`${app.keys}?status=active`);
    // Assess
    expect(forged.status, forged.text).toBe(400);
    expect(forged.body.error.type).toBe('invalid_request_error');
    expectInvalid(unknown, /'status'/);
  });

  it('answers 404 for a key ID that is not one', async () => {
    // Prepare
    const app = await freshApplication();
    // Act and assess
    for (const id of ['nope', 'key_', 'ruri_01jd6abcdefghjkmnpqrstvwxy', newId('apiKey')])
      for (const r of [await app.api.get(`${app.keys}/${id}`), await app.api.delete(`${app.keys}/${id}`)])
        expectError(r, 404, 'not_found_error', `API key '${id}' not found`);
  });
});
