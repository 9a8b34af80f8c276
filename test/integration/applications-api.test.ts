import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { redirectUriRegistered } from '#shared/applications/redirect-uris';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { applicationKey, redirectLoopbackKey, redirectUriKey, redirectUrlKey } from '#shared/db/keys';
import { newId, type ApplicationId } from '#shared/ids';
import { apiClient } from '../support/api';
import { expectError, expectInvalid } from '../support/expect-error';
import { makeApplication } from '../support/factories';
import { useApi } from '../support/harness';

/**
 * The application's settings (GET/PATCH /v3/applications) and its redirect URIs, over HTTP: every
 * rule a request can break answers 400 naming the field and changes nothing, a URL is registered
 * once per application (409), another application's redirect URIs are 404, and the OAuth flow's
 * lookup (redirectUriRegistered, and GET /v3/connect/auth over HTTP) compares the URI as written,
 * character for character, any port for desktop loopback.
 */
const { api, applicationId, otherApi, gateway } = useApi();

const RURI = /^ruri_[0-9a-hjkmnp-tv-z]{26}$/;
const DOT_SEGMENTS =
  "'url' must not contain dot segments in its path ('/./' or '/../', also percent-encoded as %2e): browsers resolve them, so they would follow another URL than the one registered; register the URL they lead to";
const BACKSLASH =
  "'url' must not contain a backslash (\\): browsers read it as '/', so they would follow another URL than the one registered; write '/'";
/** What the security probe sent for http://127.0.0.1:4999/a-cb: the same URL once parsed, another string. */
const PROBES = [
  'http://127.0.0.1:4999/x/../a-cb',
  'http://127.0.0.1:4999/x/%2e%2e/a-cb',
  'http://127.0.0.1:4999\\a-cb',
];
const UNKNOWN_ID = 'ruri_01jd6abcdefghjkmnpqrstvwxy';

/** A client of a new application, with its ID. */
async function freshApplication(name = 'Fresh') {
  const app = await makeApplication(name);
  return { id: app.applicationId as ApplicationId, api: apiClient(gateway().url, app.apiKey) };
}

async function createUri(body: object, client = api) {
  const r = await client.post('/v3/applications/redirect-uris', body);
  expect(r.status, r.text).toBe(200);
  return r.body.data as {
    id: string;
    url: string;
    platform: string;
    settings: Record<string, string>;
    created_at: number;
    updated_at: number;
  };
}

describe('Function: applications, settings', () => {
  it('answers the calling application with default branding and no callback URIs', async () => {
    // Prepare
    const fresh = await freshApplication('Acme Mail');
    // Act
    const r = await fresh.api.get('/v3/applications');
    // Assess
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toEqual({
      application_id: fresh.id,
      branding: { name: 'Acme Mail' },
      hosted_authentication: {},
      callback_uris: [],
      // The deployment's limits: this run's settings (test/support/setup-env.ts; rate-limit.test.ts runs with the default values).
      rate_limit: {
        requests_per_second: Number(process.env.RATE_LIMIT_PER_SECOND),
        burst: Number(process.env.RATE_LIMIT_BURST),
      },
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
    });
  });

  it('changes branding and the hosted authentication page; each object sent replaces the stored one', async () => {
    // Prepare
    const fresh = await freshApplication('Acme Mail');
    const hosted = {
      background_image_url: 'https://cdn.example.com/bg.jpg',
      alignment: 'center',
      color_primary: '#1a73e8',
      color_secondary: '#fff',
      background_color: '#000000',
      title: 'Sign in',
      subtitle: 'to Acme',
      spacing: 8,
      terms_of_service_url: 'https://acme.example/tos',
      privacy_policy_url: 'https://acme.example/privacy',
    };
    // Act
    const first = await fresh.api.patch('/v3/applications', {
      branding: {
        name: 'Acme',
        icon_url: 'https://cdn.example.com/icon.png',
        website_url: 'https://acme.example',
        description: 'Mail for teams',
      },
      hosted_authentication: hosted,
    });
    const second = await fresh.api.patch('/v3/applications', {
      branding: { icon_url: 'https://cdn.example.com/icon2.png' },
    });
    const read = await fresh.api.get('/v3/applications');
    // Assess
    expect(first.status, first.text).toBe(200);
    expect(first.body.data.branding).toEqual({
      name: 'Acme',
      icon_url: 'https://cdn.example.com/icon.png',
      website_url: 'https://acme.example',
      description: 'Mail for teams',
    });
    expect(first.body.data.hosted_authentication).toEqual(hosted);
    // The second PATCH replaced branding as a whole (the name falls back to the application's) and left hosted_authentication alone.
    expect(second.body.data.branding).toEqual({ name: 'Acme Mail', icon_url: 'https://cdn.example.com/icon2.png' });
    expect(read.body.data.hosted_authentication).toEqual(hosted);
    expect(read.body.data.branding).toEqual(second.body.data.branding);
  });

  it.each([
    [{ callback_uris: [] }, "Invalid request body: unknown field 'callback_uris'"],
    [{ application_id: 'app_x' }, "Invalid request body: unknown field 'application_id'"],
    [
      { branding: { name: 'x', logo: 'https://a.example/x.png' } },
      "Invalid request body: unknown field 'branding.logo'",
    ],
    [{}, 'Invalid request body: the request body must set at least one field'],
    [
      { branding: { icon_url: 'http://cdn.example.com/icon.png' } },
      "'branding.icon_url' must be an https URL, e.g. https://example.com/logo.png",
    ],
    [
      { branding: { icon_url: 'javascript:alert(1)' } },
      "'branding.icon_url' must be an https URL, e.g. https://example.com/logo.png",
    ],
    [
      { branding: { website_url: 'acme.example' } },
      "'branding.website_url' must be an https URL, e.g. https://example.com/logo.png",
    ],
    [{ branding: { name: '' } }, "Invalid request body: 'branding.name' must not be empty"],
    [{ branding: { name: 'two\nlines' } }, /^Invalid request body: 'branding.name' must match the pattern/],
    [
      { hosted_authentication: { background_image_url: 'https://u:p@cdn.example.com/bg.jpg' } },
      "'hosted_authentication.background_image_url' must be an https URL, e.g. https://example.com/logo.png",
    ],
    [
      { hosted_authentication: { privacy_policy_url: 'data:text/html,x' } },
      "'hosted_authentication.privacy_policy_url' must be an https URL, e.g. https://example.com/logo.png",
    ],
    [
      { hosted_authentication: { color_primary: 'red; background:url(x)' } },
      /^Invalid request body: 'hosted_authentication.color_primary' must match the pattern/,
    ],
    [
      { hosted_authentication: { alignment: 'top' } },
      "Invalid request body: 'hosted_authentication.alignment' must be one of: left, center, right",
    ],
    [
      { hosted_authentication: { spacing: 101 } },
      "Invalid request body: 'hosted_authentication.spacing' must be <= 100",
    ],
    [
      { hosted_authentication: { spacing: 1.5 } },
      "Invalid request body: 'hosted_authentication.spacing' must be of type integer",
    ],
  ])('refuses %j and changes nothing', async (body, message) => {
    // Prepare
    await api.patch('/v3/applications', { branding: { name: 'Kept' } });
    const before = await api.get('/v3/applications');
    // Act
    const r = await api.patch('/v3/applications', body);
    // Assess
    expectInvalid(r, message);
    expect((await api.get('/v3/applications')).body.data).toEqual(before.body.data);
  });

  it('lists the redirect URIs as callback_uris', async () => {
    // Prepare
    const fresh = await freshApplication();
    const uri = await createUri({ url: 'https://acme.example/callback' }, fresh.api);
    // Act
    const r = await fresh.api.get('/v3/applications');
    // Assess
    expect(r.body.data.callback_uris).toEqual([uri]);
  });
});

describe('Function: applications, redirect URIs', () => {
  it('creates, reads, lists, changes (PATCH and PUT) and deletes a redirect URI', async () => {
    // Prepare
    const fresh = await freshApplication();
    // Act
    const created = await createUri({ url: 'https://acme.example/callback' }, fresh.api);
    const got = await fresh.api.get(`/v3/applications/redirect-uris/${created.id}`);
    const patched = await fresh.api.patch(`/v3/applications/redirect-uris/${created.id}`, {
      url: 'https://acme.example/oauth/callback',
    });
    const put = await fresh.api.put(`/v3/applications/redirect-uris/${created.id}`, {
      platform: 'js',
      settings: { origin: 'https://acme.example' },
    });
    const listed = await fresh.api.get('/v3/applications/redirect-uris');
    const deleted = await fresh.api.delete(`/v3/applications/redirect-uris/${created.id}`);
    const after = await fresh.api.get(`/v3/applications/redirect-uris/${created.id}`);
    // Assess
    expect(created).toEqual({
      id: expect.stringMatching(RURI),
      url: 'https://acme.example/callback',
      platform: 'web',
      settings: {},
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
    });
    expect(got.body.data).toEqual(created);
    expect(patched.body.data).toMatchObject({
      id: created.id,
      url: 'https://acme.example/oauth/callback',
      platform: 'web',
      settings: {},
    });
    expect(put.body.data).toMatchObject({
      id: created.id,
      url: 'https://acme.example/oauth/callback',
      platform: 'js',
      settings: { origin: 'https://acme.example' },
    });
    expect(listed.body.data).toEqual([put.body.data]);
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({ request_id: expect.stringMatching(/^req_/) });
    expectError(after, 404, 'not_found_error', `Redirect URI '${created.id}' not found`);
    expect((await fresh.api.get('/v3/applications/redirect-uris')).body.data).toEqual([]);
  });

  it('accepts each platform with its settings', async () => {
    // Prepare
    const fresh = await freshApplication();
    const bodies = [
      { url: 'http://localhost:3000/callback' },
      { url: 'https://app.acme.example/cb', platform: 'js', settings: { origin: 'http://localhost:3000' } },
      { url: 'http://127.0.0.1/callback', platform: 'desktop' },
      { url: 'com.acme.mail:/oauth2redirect', platform: 'desktop' },
      {
        url: 'com.acme.mail://auth',
        platform: 'ios',
        settings: { bundle_id: 'com.acme.mail', app_store_id: '1234567890', team_id: 'ABCDE12345' },
      },
      {
        url: 'acme-mail://auth',
        platform: 'android',
        settings: {
          package_name: 'com.acme.mail',
          sha1_certificate_fingerprint: 'AB:CD:EF:12:34:56:78:90:AB:CD:EF:12:34:56:78:90:AB:CD:EF:12',
        },
      },
    ];
    // Act
    const created = [];
    for (const body of bodies) created.push(await createUri(body, fresh.api));
    // Assess
    expect(created.map((c) => [c.url, c.platform, c.settings])).toEqual(
      bodies.map((b) => [b.url, b.platform ?? 'web', b.settings ?? {}]),
    );
    const listed = await fresh.api.get('/v3/applications/redirect-uris?limit=4');
    expect(listed.body.data).toHaveLength(4);
    const rest = await fresh.api.get(`/v3/applications/redirect-uris?limit=4&page_token=${listed.body.next_cursor}`);
    expect(rest.body.next_cursor).toBeUndefined();
    expect([...listed.body.data, ...rest.body.data].map((u: { id: string }) => u.id).sort()).toEqual(
      created.map((c) => c.id).sort(),
    );
  });

  it.each([
    [
      { url: 'http://acme.example/callback' },
      "'url' must use https; http is allowed only to localhost, 127.0.0.1 or [::1]",
    ],
    [
      { url: 'https://acme.example/callback#done' },
      "'url' must not contain a fragment (#…): the authorization code is returned in the query",
    ],
    [{ url: 'https://me:secret@acme.example/callback' }, "'url' must not contain user information (user:password@)"],
    [{ url: 'acme.example/callback' }, "'url' must be an absolute URL, e.g. https://app.example.com/callback"],
    [
      { url: 'localhost:3000/callback' },
      /^'url' must use https; http is allowed only to localhost, 127.0.0.1 or \[::1\] \(custom schemes are for platforms desktop, ios and android\)$/,
    ],
    [{ url: '/callback' }, "'url' must be an absolute URL, e.g. https://app.example.com/callback"],
    [
      { url: 'https://acme.example/ call' },
      "'url' must be printable ASCII without spaces (percent-encode other characters)",
    ],
    [
      { url: `https://acme.example/${'x'.repeat(2100)}` },
      "Invalid request body: 'url' must be at most 2048 characters",
    ],
    [{ url: 'com.acme.mail:/cb' }, /custom schemes are for platforms desktop, ios and android/],
    [
      { url: 'javascript:alert(1)//', platform: 'desktop' },
      "'url' must not use the scheme 'javascript': use https or your app's own scheme (e.g. com.example.app:/callback)",
    ],
    [
      { url: 'http://10.0.0.2:8080/cb', platform: 'desktop' },
      "'url' must use https; http is allowed only to localhost, 127.0.0.1 or [::1]",
    ],
    [
      { url: 'https://acme.example/cb', platform: 'tv' },
      "Invalid request body: 'platform' must be one of: web, desktop, js, ios, android",
    ],
    [{ url: 'https://acme.example/cb', platform: 'js' }, "'settings.origin' is required for platform js"],
    [
      { url: 'https://acme.example/cb', platform: 'js', settings: { origin: 'https://acme.example/app' } },
      /^'settings.origin' must be an origin such as https:\/\/app.example.com/,
    ],
    [
      { url: 'https://acme.example/cb', settings: { origin: 'https://acme.example' } },
      "'settings.origin' does not apply to platform web; it takes no settings",
    ],
    [{ url: 'acme://cb', platform: 'ios' }, "'settings.bundle_id' is required for platform ios"],
    [
      { url: 'acme://cb', platform: 'ios', settings: { bundle_id: 'acme' } },
      /^Invalid request body: 'settings.bundle_id' must match the pattern/,
    ],
    [
      {
        url: 'acme://cb',
        platform: 'android',
        settings: { package_name: 'com.acme.mail', sha1_certificate_fingerprint: 'ABCD' },
      },
      /^Invalid request body: 'settings.sha1_certificate_fingerprint' must match the pattern/,
    ],
    [
      { url: 'acme://cb', platform: 'android', settings: { package_name: 'com.acme.mail' } },
      "'settings.sha1_certificate_fingerprint' is required for platform android",
    ],
    [
      { url: 'https://acme.example/cb', id: '0556d035-6cb6-4262-a035-6b77e11cf8fc' },
      "Invalid request body: unknown field 'id'",
    ],
    [{ platform: 'web' }, "Invalid request body: 'url' is required"],
    [{ url: 'http://127.0.0.1:4999/x/../a-cb' }, `${DOT_SEGMENTS} (http://127.0.0.1:4999/a-cb)`],
    [{ url: 'http://127.0.0.1:4999/x/%2e%2e/a-cb' }, `${DOT_SEGMENTS} (http://127.0.0.1:4999/a-cb)`],
    [{ url: 'https://acme.example/cb/.%2E' }, `${DOT_SEGMENTS} (https://acme.example/)`],
    [{ url: 'https://acme.example/./cb?x=1' }, `${DOT_SEGMENTS} (https://acme.example/cb?x=1)`],
    [{ url: 'acme://cb/%2E/done', platform: 'desktop' }, `${DOT_SEGMENTS} (acme://cb/done)`],
    [{ url: 'http://127.0.0.1:4999\\a-cb' }, BACKSLASH],
    [{ url: 'http://127.0.0.1:4999/a\\cb', platform: 'desktop' }, BACKSLASH],
  ])('refuses %j, and stores nothing', async (body, message) => {
    // Prepare
    const fresh = await freshApplication();
    // Act
    const r = await fresh.api.post('/v3/applications/redirect-uris', body);
    // Assess
    expectInvalid(r, message);
    expect((await fresh.api.get('/v3/applications/redirect-uris')).body.data).toEqual([]);
  });

  it('refuses an update that breaks a rule, and keeps the stored URI', async () => {
    // Prepare
    const uri = await createUri({ url: 'https://acme.example/keep' });
    // Act
    const badUrl = await api.patch(`/v3/applications/redirect-uris/${uri.id}`, { url: 'http://acme.example/keep' });
    const badPlatform = await api.put(`/v3/applications/redirect-uris/${uri.id}`, { platform: 'ios' });
    const empty = await api.patch(`/v3/applications/redirect-uris/${uri.id}`, {});
    // Assess
    expectInvalid(badUrl, "'url' must use https; http is allowed only to localhost, 127.0.0.1 or [::1]");
    expectInvalid(badPlatform, "'settings.bundle_id' is required for platform ios");
    expectInvalid(empty, 'Invalid request body: the request body must set at least one field');
    expect((await api.get(`/v3/applications/redirect-uris/${uri.id}`)).body.data).toEqual(uri);
  });

  it('registers a URL once per application (409), compared as written; desktop loopback URIs once whatever their port', async () => {
    // Prepare
    const fresh = await freshApplication();
    const web = await createUri({ url: 'https://acme.example/cb' }, fresh.api);
    const desktop = await createUri({ url: 'http://127.0.0.1:8080/cb', platform: 'desktop' }, fresh.api);
    const other = await createUri({ url: 'https://acme.example/other' }, fresh.api);
    // Act
    const same = await fresh.api.post('/v3/applications/redirect-uris', { url: 'https://acme.example/cb' });
    const otherString = await fresh.api.post('/v3/applications/redirect-uris', {
      url: 'HTTPS://ACME.example:443/cb',
      platform: 'android',
      settings: {
        package_name: 'com.acme.mail',
        sha1_certificate_fingerprint: 'AB:CD:EF:12:34:56:78:90:AB:CD:EF:12:34:56:78:90:AB:CD:EF:12',
      },
    });
    const otherPort = await fresh.api.post('/v3/applications/redirect-uris', {
      url: 'http://127.0.0.1:9090/cb',
      platform: 'desktop',
    });
    const moved = await fresh.api.patch(`/v3/applications/redirect-uris/${other.id}`, {
      url: 'https://acme.example/cb',
    });
    // Assess
    expectError(
      same,
      409,
      'conflict_error',
      `This URL is already registered as a redirect URI of this application (${web.id})`,
    );
    expectError(
      otherPort,
      409,
      'conflict_error',
      `A desktop redirect URI on this loopback address and path is already registered (${desktop.id}); loopback URIs of platform desktop match any port`,
    );
    expectError(
      moved,
      409,
      'conflict_error',
      `This URL is already registered as a redirect URI of this application (${web.id})`,
    );
    expect((await fresh.api.get(`/v3/applications/redirect-uris/${other.id}`)).body.data.url).toBe(
      'https://acme.example/other',
    );
    // The same URL once parsed is another string: another redirect URI, which only that string matches.
    expect(otherString.status, otherString.text).toBe(200);
    expect(otherString.body.data.url).toBe('HTTPS://ACME.example:443/cb');
    expect((await fresh.api.get('/v3/applications/redirect-uris')).body.data).toHaveLength(4);
    // A URL freed by a change or a deletion can be registered again; another application may register it anyway.
    await fresh.api.patch(`/v3/applications/redirect-uris/${web.id}`, { url: 'https://acme.example/cb2' });
    expect((await fresh.api.post('/v3/applications/redirect-uris', { url: 'https://acme.example/cb' })).status).toBe(
      200,
    );
    await fresh.api.delete(`/v3/applications/redirect-uris/${desktop.id}`);
    expect(
      (await fresh.api.post('/v3/applications/redirect-uris', { url: 'http://127.0.0.1:9090/cb', platform: 'desktop' }))
        .status,
    ).toBe(200);
    expect((await api.post('/v3/applications/redirect-uris', { url: 'https://acme.example/cb' })).status).toBe(200);
  });

  it('refuses more than 100 redirect URIs per application', async () => {
    // Prepare: the application's count at the limit, as 100 registrations would leave it.
    const fresh = await freshApplication();
    await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: applicationKey(fresh.id),
        UpdateExpression: 'SET redirect_uri_count = :n',
        ExpressionAttributeValues: { ':n': 100 },
      }),
    );
    // Act
    const r = await fresh.api.post('/v3/applications/redirect-uris', { url: 'https://acme.example/101' });
    // Assess
    expectError(r, 409, 'conflict_error', 'An application can have at most 100 redirect URIs; delete one first');
    expect(
      (
        await dynamo.send(
          new GetCommand({ TableName: TABLE_NAME, Key: redirectUrlKey(fresh.id, 'https://acme.example/101') }),
        )
      ).Item,
    ).toBeUndefined();
    // Deleting one makes room (the count follows every create and delete).
    await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: applicationKey(fresh.id),
        UpdateExpression: 'SET redirect_uri_count = :n',
        ExpressionAttributeValues: { ':n': 99 },
      }),
    );
    const made = await createUri({ url: 'https://acme.example/100' }, fresh.api);
    expect(
      (await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: applicationKey(fresh.id) }))).Item!
        .redirect_uri_count,
    ).toBe(100);
    await fresh.api.delete(`/v3/applications/redirect-uris/${made.id}`);
    expect(
      (await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: applicationKey(fresh.id) }))).Item!
        .redirect_uri_count,
    ).toBe(99);
  });

  it("answers 404 for another application's redirect URIs, and for IDs that name none", async () => {
    // Prepare
    const mine = await createUri({ url: 'https://acme.example/mine' });
    const other = await otherApi();
    // Act
    const answers = [
      await other.get(`/v3/applications/redirect-uris/${mine.id}`),
      await other.patch(`/v3/applications/redirect-uris/${mine.id}`, { url: 'https://evil.example/cb' }),
      await other.put(`/v3/applications/redirect-uris/${mine.id}`, { url: 'https://evil.example/cb' }),
      await other.delete(`/v3/applications/redirect-uris/${mine.id}`),
    ];
    // Assess
    for (const r of answers) expectError(r, 404, 'not_found_error', `Redirect URI '${mine.id}' not found`);
    expect((await other.get('/v3/applications/redirect-uris')).body.data).toEqual([]);
    expect((await api.get(`/v3/applications/redirect-uris/${mine.id}`)).body.data).toEqual(mine);
    expectError(
      await api.get(`/v3/applications/redirect-uris/${UNKNOWN_ID}`),
      404,
      'not_found_error',
      `Redirect URI '${UNKNOWN_ID}' not found`,
    );
    expectError(
      await api.delete('/v3/applications/redirect-uris/not-an-id'),
      404,
      'not_found_error',
      "Redirect URI 'not-an-id' not found",
    );
  });
});

describe('Function: redirectUriRegistered', () => {
  it('matches the string registered, character for character; a desktop loopback URI with any port; nothing of another application', async () => {
    // Prepare
    const fresh = await freshApplication();
    const other = await freshApplication();
    await createUri({ url: 'https://acme.example/callback?x=1' }, fresh.api);
    await createUri({ url: 'http://localhost:3000/callback' }, fresh.api);
    await createUri({ url: 'http://127.0.0.1/desktop', platform: 'desktop' }, fresh.api);
    const custom = await createUri({ url: 'com.acme.mail:/oauth2redirect', platform: 'desktop' }, fresh.api);
    // Act
    const check = (url: string, appId = fresh.id) => redirectUriRegistered(appId, url);
    // Assess
    expect(await check('https://acme.example/callback?x=1')).toBe(true);
    expect(await check('HTTPS://acme.EXAMPLE:443/callback?x=1')).toBe(false);
    expect(await check('https://acme.example/x/../callback?x=1')).toBe(false);
    expect(await check('https://acme.example/x/%2E%2e/callback?x=1')).toBe(false);
    expect(await check('https://acme.example\\callback?x=1')).toBe(false);
    expect(await check('https://acme.example/callback/?x=1')).toBe(false);
    expect(await check('https://acme.example/callback')).toBe(false);
    expect(await check('https://acme.example/callback?x=1&y=2')).toBe(false);
    expect(await check('https://acme.example/Callback?x=1')).toBe(false);
    expect(await check('https://acme.example/callback?x=1#frag')).toBe(false);
    expect(await check('http://localhost:3000/callback')).toBe(true);
    // Platform web: the port is part of the URL.
    expect(await check('http://localhost:3001/callback')).toBe(false);
    // Platform desktop on loopback: any port (RFC 8252), same host and path.
    expect(await check('http://127.0.0.1:53123/desktop')).toBe(true);
    expect(await check('http://127.0.0.1/desktop')).toBe(true);
    expect(await check('http://localhost:53123/desktop')).toBe(false);
    expect(await check('http://127.0.0.1:53123/desktop/x')).toBe(false);
    expect(await check('http://127.0.0.1:53123/x/../desktop')).toBe(false);
    expect(await check('HTTP://127.0.0.1:53123/desktop')).toBe(false);
    expect(await check('com.acme.mail:/oauth2redirect')).toBe(true);
    expect(await check('not a url')).toBe(false);
    expect(await check('https://acme.example/callback?x=1', other.id)).toBe(false);
    await fresh.api.delete(`/v3/applications/redirect-uris/${custom.id}`);
    expect(await check('com.acme.mail:/oauth2redirect')).toBe(false);
  });

  it('follows a change of URL or platform', async () => {
    // Prepare
    const fresh = await freshApplication();
    const uri = await createUri({ url: 'http://127.0.0.1/cb', platform: 'desktop' }, fresh.api);
    expect(await redirectUriRegistered(fresh.id, 'http://127.0.0.1:4000/cb')).toBe(true);
    // Act
    await fresh.api.patch(`/v3/applications/redirect-uris/${uri.id}`, { platform: 'web' });
    // Assess
    expect(await redirectUriRegistered(fresh.id, 'http://127.0.0.1:4000/cb')).toBe(false);
    expect(await redirectUriRegistered(fresh.id, 'http://127.0.0.1/cb')).toBe(true);
    await fresh.api.patch(`/v3/applications/redirect-uris/${uri.id}`, { url: 'https://acme.example/moved' });
    expect(await redirectUriRegistered(fresh.id, 'http://127.0.0.1/cb')).toBe(false);
    expect(await redirectUriRegistered(fresh.id, 'https://acme.example/moved')).toBe(true);
  });

  it('is scoped by the application ID the caller passes (the test application sees its own)', async () => {
    await createUri({ url: 'https://acme.example/scoped' });
    expect(await redirectUriRegistered(applicationId() as ApplicationId, 'https://acme.example/scoped')).toBe(true);
  });
});

describe('GET /v3/connect/auth: the redirect_uri, compared as written', () => {
  /** The authorization request of the IMAP credential page (a 200 page once client and redirect URI are known good). */
  const authorize = (clientId: string, redirectUri: string) =>
    fetch(
      `${gateway().url}/v3/connect/auth?${new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri, response_type: 'code', provider: 'imap' })}`,
      { redirect: 'manual' },
    );
  const NOT_REGISTERED = (uri: string) =>
    `redirect_uri '${uri}' is not registered for this application: add it with POST /v3/applications/redirect-uris (it must match exactly)`;

  async function expectUnregistered(response: Response, uri: string) {
    expect(response.status, uri).toBe(400);
    expect(response.headers.get('location'), uri).toBeNull();
    expect(response.headers.get('x-request-id'), uri).toMatch(/^req_/);
    expect(await response.json(), uri).toEqual({
      request_id: expect.stringMatching(/^req_/),
      error: { type: 'invalid_request_error', message: NOT_REGISTERED(uri) },
    });
  }

  it("refuses the probe's URIs as it refuses any unregistered URI, and serves the exact one", async () => {
    // Prepare
    const fresh = await freshApplication();
    expect((await fresh.api.post('/v3/connectors', { provider: 'imap' })).status).toBe(201);
    await createUri({ url: 'http://127.0.0.1:4999/a-cb' }, fresh.api);
    // Act
    const exact = await authorize(fresh.id, 'http://127.0.0.1:4999/a-cb');
    // Assess
    expect(exact.status, await exact.text()).toBe(200);
    expect(exact.headers.get('content-type')).toMatch(/^text\/html/);
    for (const uri of [
      ...PROBES,
      'http://127.0.0.1:4999/never-registered',
      'http://127.0.0.1:4999/a-cb/',
      'HTTP://127.0.0.1:4999/a-cb',
      'http://127.0.0.1:4999/./a-cb',
    ]) {
      await expectUnregistered(await authorize(fresh.id, uri), uri);
    }
  });

  it('matches a desktop loopback URI with another port, and a web one only with its own', async () => {
    // Prepare
    const fresh = await freshApplication();
    expect((await fresh.api.post('/v3/connectors', { provider: 'imap' })).status).toBe(201);
    await createUri({ url: 'http://127.0.0.1:4999/a-cb' }, fresh.api);
    await createUri({ url: 'http://127.0.0.1:4999/d-cb', platform: 'desktop' }, fresh.api);
    // Act
    const desktopOtherPort = await authorize(fresh.id, 'http://127.0.0.1:51234/d-cb');
    const desktopNoPort = await authorize(fresh.id, 'http://127.0.0.1/d-cb');
    // Assess
    expect(desktopOtherPort.status, await desktopOtherPort.text()).toBe(200);
    expect(desktopNoPort.status, await desktopNoPort.text()).toBe(200);
    for (const uri of [
      'http://127.0.0.1:51234/a-cb',
      'http://127.0.0.1:51234/x/../d-cb',
      'http://127.0.0.1:51234\\d-cb',
      'http://localhost:51234/d-cb',
    ]) {
      await expectUnregistered(await authorize(fresh.id, uri), uri);
    }
  });

  it("refuses to register or move a URI to the probe's URIs (400), and stores nothing", async () => {
    // Prepare
    const fresh = await freshApplication();
    const kept = await createUri({ url: 'https://acme.example/keep' }, fresh.api);
    for (const url of PROBES) {
      // Act
      const created = await fresh.api.post('/v3/applications/redirect-uris', { url });
      const moved = await fresh.api.put(`/v3/applications/redirect-uris/${kept.id}`, { url, platform: 'desktop' });
      // Assess
      const rule = url.includes('\\') ? BACKSLASH : `${DOT_SEGMENTS} (http://127.0.0.1:4999/a-cb)`;
      expectInvalid(created, rule);
      expectInvalid(moved, rule);
      for (const key of [
        redirectUrlKey(fresh.id, url),
        redirectUrlKey(fresh.id, 'http://127.0.0.1:4999/a-cb'),
        redirectLoopbackKey(fresh.id, 'http://127.0.0.1/a-cb'),
      ]) {
        expect((await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: key }))).Item, url).toBeUndefined();
      }
    }
    expect((await fresh.api.get('/v3/applications/redirect-uris')).body.data).toEqual([kept]);
    expect(await redirectUriRegistered(fresh.id, 'https://acme.example/keep')).toBe(true);
  });
});

describe('Function: redirectUriRegistered, registrations made before exact matching', () => {
  /** A redirect URI as it was stored before: its guards keyed by its parsed URL (`href`) and that href without its port. */
  async function storeLegacy(appId: ApplicationId, url: string, platform: 'web' | 'desktop') {
    const id = newId('redirectUri');
    const href = new URL(url).href;
    const portless = new URL(href);
    portless.port = '';
    const loopback = platform === 'desktop' && portless.protocol === 'http:' ? portless.href : undefined;
    const record = {
      id,
      application_id: appId,
      url,
      href,
      ...(loopback ? { loopback } : {}),
      platform,
      settings: {},
      created_at: 1_700_000_000,
      updated_at: 1_700_000_000,
      version: 1,
    };
    await dynamo.send(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: { ...redirectUriKey(appId, id), entity: 'redirect_uri', ...record },
      }),
    );
    await dynamo.send(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: { ...redirectUrlKey(appId, href), entity: 'redirect_url', redirect_uri_id: id },
      }),
    );
    if (loopback)
      await dynamo.send(
        new PutCommand({
          TableName: TABLE_NAME,
          Item: { ...redirectLoopbackKey(appId, loopback), entity: 'redirect_url', redirect_uri_id: id },
        }),
      );
    return { id, href };
  }

  it('keep matching the string they were registered as, and nothing else', async () => {
    // Prepare
    const fresh = await freshApplication();
    await storeLegacy(fresh.id, 'https://acme.example/plain', 'web');
    await storeLegacy(fresh.id, 'HTTPS://Acme.Example:443/legacy', 'web');
    await storeLegacy(fresh.id, 'https://acme.example/x/../dots', 'web');
    await storeLegacy(fresh.id, 'HTTP://127.0.0.1:7000/legacy-desktop', 'desktop');
    // Act
    const check = (url: string) => redirectUriRegistered(fresh.id, url);
    // Assess
    expect(await check('https://acme.example/plain')).toBe(true);
    expect(await check('HTTPS://Acme.Example:443/legacy')).toBe(true);
    expect(await check('https://acme.example/legacy')).toBe(false);
    expect(await check('https://acme.example/x/../legacy')).toBe(false);
    expect(await check('https://acme.example/x/../dots')).toBe(true);
    expect(await check('https://acme.example/dots')).toBe(false);
    expect(await check('https://acme.example/y/../dots')).toBe(false);
    expect(await check('HTTP://127.0.0.1:7000/legacy-desktop')).toBe(true);
    expect(await check('HTTP://127.0.0.1:7100/legacy-desktop')).toBe(true);
    expect(await check('http://127.0.0.1:7100/legacy-desktop')).toBe(false);
  });

  it('are keyed by their URL once rewritten', async () => {
    // Prepare
    const fresh = await freshApplication();
    const legacy = await storeLegacy(fresh.id, 'HTTPS://Acme.Example:443/legacy', 'web');
    // Act
    const rewritten = await fresh.api.patch(`/v3/applications/redirect-uris/${legacy.id}`, {
      platform: 'android',
      settings: {
        package_name: 'com.acme.mail',
        sha1_certificate_fingerprint: 'AB:CD:EF:12:34:56:78:90:AB:CD:EF:12:34:56:78:90:AB:CD:EF:12',
      },
    });
    // Assess
    expect(rewritten.status, rewritten.text).toBe(200);
    expect(
      (await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: redirectUrlKey(fresh.id, legacy.href) }))).Item,
    ).toBeUndefined();
    expect(
      (
        await dynamo.send(
          new GetCommand({ TableName: TABLE_NAME, Key: redirectUrlKey(fresh.id, 'HTTPS://Acme.Example:443/legacy') }),
        )
      ).Item?.redirect_uri_id,
    ).toBe(legacy.id);
    expect(
      (await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: redirectUriKey(fresh.id, legacy.id) }))).Item,
    ).not.toHaveProperty('href');
    expect(await redirectUriRegistered(fresh.id, 'HTTPS://Acme.Example:443/legacy')).toBe(true);
    expect(await redirectUriRegistered(fresh.id, 'https://acme.example/legacy')).toBe(false);
    // The parsed form is free: another registration, of that very string.
    await createUri({ url: 'https://acme.example/legacy' }, fresh.api);
    expect(await redirectUriRegistered(fresh.id, 'https://acme.example/legacy')).toBe(true);
  });
});
