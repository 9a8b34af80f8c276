import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication, uniqueEmail } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { clock } from '#shared/time';

let gateway: Gateway;
let api: ApiClient;

beforeAll(async () => {
  gateway = await startGateway();
  const app = await makeApplication();
  api = apiClient(gateway.url, app.apiKey);
});

afterAll(async () => {
  await gateway?.close();
});

describe('POST /v3/connect/custom (Agent Accounts)', () => {
  it('creates a valid agent grant with every Grant field', async () => {
    // Prepare
    const email = uniqueEmail().toUpperCase();

    // Act
    const response = await api.post(
      '/v3/connect/custom',
      { provider: 'agent', settings: { email_address: email } },
      { 'user-agent': 'acme-sdk/1.2' },
    );

    // Assess
    expect(response.status).toBe(201);
    expect(response.headers.get('x-request-id')).toBe(response.body.request_id);
    const grant = response.body.data;
    expect(grant).toMatchObject({
      grant_status: 'valid',
      provider: 'nylas',
      email: email.toLowerCase(),
      blocked: false,
      settings: {},
      ip: '127.0.0.1',
    });
    expect(grant.id).toMatch(/^grant_[0-9a-z]{26}$/);
    expect(grant.user_agent).not.toBe('acme-sdk/1.2');
    expect(grant.user_agent.startsWith('acme')).toBe(true);
    expect(Array.isArray(grant.scope)).toBe(true);
    expect(grant.created_at).toBeGreaterThan(1_700_000_000);
    expect(grant.updated_at).toBe(grant.created_at);
    expect(grant).not.toHaveProperty('application_id');
  });

  it("creates an Agent Account in the published contract's form, named, and finds it by either provider name", async () => {
    const email = uniqueEmail('named');
    const response = await api.post('/v3/connect/custom', {
      provider: 'nylas',
      name: 'Sales Agent',
      settings: { email },
    });
    expect(response.status, response.text).toBe(201);
    expect(response.body.data).toMatchObject({ provider: 'nylas', name: 'Sales Agent', email });
    for (const provider of ['nylas', 'agent']) {
      const listed = await api.get(`/v3/grants?provider=${provider}&email=${encodeURIComponent(email)}`);
      expect(
        listed.body.data.map((g: { id: string }) => g.id),
        provider,
      ).toEqual([response.body.data.id]);
    }
    expect((await api.get(`/v3/grants?provider=google&email=${encodeURIComponent(email)}`)).body.data).toEqual([]);
    // The name is the default From display name of what the account sends.
    const sent = await api.post(`/v3/grants/${response.body.data.id}/messages/send`, {
      to: [{ email: 'someone@example.net' }],
      subject: 'Hello',
    });
    expect(sent.status, sent.text).toBe(200);
    expect(sent.body.data.from).toEqual([{ name: 'Sales Agent', email }]);
    // The send answer names its grant beside data, as the contract shows.
    expect(sent.body.grant_id).toBe(response.body.data.id);
  });

  it("refuses the contract's settings and scope on PATCH with a 400 saying why, changing nothing", async () => {
    const grant = await makeAgentGrant(api);
    const scope = await api.patch(`/v3/grants/${grant.id}`, { scope: ['Mail.Read'] });
    expect(scope.status).toBe(400);
    expect(scope.body.error.message).toContain("'scope' cannot change for an Agent Account");
    const settings = await api.patch(`/v3/grants/${grant.id}`, {
      settings: { app_password: 'Abcdefghijklmnop1234' },
      blocked: true,
    });
    expect(settings.status).toBe(400);
    expect(settings.body.error.message).toContain('no IMAP or SMTP client access');
    expect((await api.get(`/v3/grants/${grant.id}`)).body.data.blocked).toBe(false);
  });

  it('answers 404 for an unknown grant before looking at the body', async () => {
    const response = await api.patch('/v3/grants/grant_01jzzzzzzzzzzzzzzzzzzzzzzz', { colour: 'red' });
    expect(response.status, response.text).toBe(404);
    expect(response.body.error.type).toBe('not_found_error');
  });

  it('answers 409 when the address is already used by a grant of the application (any case)', async () => {
    const email = uniqueEmail();
    await makeAgentGrant(api, { email });
    const again = await api.post('/v3/connect/custom', {
      provider: 'agent',
      settings: { email_address: email.toUpperCase() },
    });
    expect(again.status).toBe(409);
    expect(again.body.error.type).toBe('conflict_error');
    expect(again.body.error.message).toContain(email);
  });

  it('answers 409 when another application already hosts the Agent Account address', async () => {
    const email = uniqueEmail();
    await makeAgentGrant(api, { email });
    const other = apiClient(gateway.url, (await makeApplication('other')).apiKey);
    const response = await other.post('/v3/connect/custom', { provider: 'agent', settings: { email_address: email } });
    expect(response.status).toBe(409);
    expect(response.body.error.message).toMatch(/another Agent Account/);
  });

  it('stores external_id and refuses a duplicate one with 409, creating nothing', async () => {
    const externalId = `user-${Date.now()}`;
    const first = await makeAgentGrant(api, { external_id: externalId });
    expect(first.external_id).toBe(externalId);
    const email = uniqueEmail();
    const dup = await api.post('/v3/connect/custom', {
      provider: 'agent',
      settings: { email_address: email },
      external_id: externalId,
    });
    expect(dup.status).toBe(409);
    expect(dup.body.error.message).toContain('external_id');
    // The transaction rolled back: the address is still free.
    expect((await api.get(`/v3/grants/${email}`)).status).toBe(404);
    expect((await makeAgentGrant(api, { email })).email).toBe(email);
  });

  it.each([
    [{ provider: 'agent', settings: {} }, "'settings.email' is required"],
    [
      { provider: 'nylas', settings: { email: 'a@b.io' }, workspace_id: 'ws_1' },
      "'workspace_id': workspace 'ws_1' not found",
    ],
    [
      { provider: 'nylas', settings: { email: 'a@b.io', policy_id: 'p_1' } },
      "'settings.policy_id' is not accepted here",
    ],
    [
      { provider: 'nylas', settings: { email: 'a@b.io', app_password: 'Abcdefghijklmnop1234' } },
      "'settings.app_password' is not available",
    ],
    [{ provider: 'nylas', settings: { email: 'a@b.io', email_address: 'c@d.io' } }, 'name different addresses'],
    [{ provider: 'nylas', settings: { email: 'a@b.io' }, name: '' }, "'name' must not be empty"],
    [
      { provider: 'agent', settings: { email_address: 'not-an-email' } },
      "'settings.email_address' must be a valid email address",
    ],
    [
      { provider: 'agent', settings: { email_address: `${'a'.repeat(250)}@x.io` } },
      "'settings.email_address' must be at most 254 characters",
    ],
    [{ provider: 'ews', settings: { email_address: 'a@b.io' } }, "'provider' must be one of: nylas, agent"],
    [{ provider: 'imap', settings: { email_address: 'a@b.io' } }, "'settings.imap_password' is required"],
    [
      { provider: 'agent', settings: { email_address: 'a@b.io', imap_host: 'imap.b.io' } },
      "'settings.imap_host' does not apply to provider 'agent'",
    ],
    [
      { provider: 'imap', settings: { imap_username: 'a@b.io', imap_password: 'x', credential_id: 'c' } },
      "'settings.credential_id' does not apply to provider 'imap'",
    ],
    [
      { provider: 'imap', settings: { imap_username: 'a@unknown-domain.example', imap_password: 'x' } },
      "'settings.imap_host' is required: unknown-domain.example is not a mail domain",
    ],
    [
      {
        provider: 'imap',
        settings: {
          imap_username: 'a@b.io',
          imap_password: 'x',
          imap_host: 'http://imap.b.io',
          smtp_host: 'smtp.b.io',
        },
      },
      "'settings.imap_host' must be a host name",
    ],
    [{ provider: 'agent', settings: { email_address: 'a@b.io', credential_id: 'c' } }, 'do not apply'],
    [{ provider: 'agent', settings: { email_address: 'a@b.io' }, colour: 'red' }, "unknown field 'colour'"],
    [{ provider: 'agent', settings: { email_address: 42 } }, "'settings.email_address' must be of type string"],
    [{ settings: { email_address: 'a@b.io' } }, "'provider' is required"],
    [{ provider: 'agent', settings: { email_address: 'a@b.io' }, external_id: '' }, "'external_id' must not be empty"],
    [
      { provider: 'agent', settings: { email_address: 'a@b.io' }, external_id: 'a/b' },
      "'external_id' must match the pattern",
    ],
  ])('rejects %j with 400 naming the field', async (body, message) => {
    const response = await api.post('/v3/connect/custom', body);
    expect(response.status).toBe(400);
    expect(response.body.error.type).toBe('invalid_request_error');
    expect(response.body.error.message).toContain(message);
  });
});

describe('GET /v3/grants/{grant_id}', () => {
  it('resolves the grant by every pattern in the spec', async () => {
    const externalId = `ext:${Date.now()}@x #1`;
    const grant = await makeAgentGrant(api, { external_id: externalId });
    const refs = [
      grant.id,
      `grant:${grant.id}`,
      encodeURIComponent(`grant:${grant.id}`),
      grant.email,
      encodeURIComponent(grant.email),
      grant.email.toUpperCase(),
      `email:${grant.email}`,
      encodeURIComponent(`email:${grant.email}`),
      `external:${encodeURIComponent(externalId)}`,
      encodeURIComponent(`external:${externalId}`),
    ];
    for (const ref of refs) {
      const response = await api.get(`/v3/grants/${ref}`);
      expect({ ref, status: response.status, id: response.body?.data?.id }).toEqual({ ref, status: 200, id: grant.id });
    }
  });

  it('answers 404 in the envelope for unknown references', async () => {
    for (const ref of [
      'grant_01jzzzzzzzzzzzzzzzzzzzzzzz',
      'nonsense',
      'nobody%40nowhere.test',
      'external:missing',
      'email:x%40y.z',
      'grant%3A',
    ]) {
      const response = await api.get(`/v3/grants/${ref}`);
      expect(response.status).toBe(404);
      expect(response.body.error.type).toBe('not_found_error');
      expect(response.body.request_id).toBe(response.headers.get('x-request-id'));
    }
  });

  it("answers 400 for 'me' with an API key, saying why", async () => {
    const response = await api.get('/v3/grants/me');
    expect(response.status).toBe(400);
    expect(response.body.error.message).toMatch(/access token/);
  });

  it('projects top-level fields with select', async () => {
    const grant = await makeAgentGrant(api);
    const response = await api.get(`/v3/grants/${grant.id}?select=id,email`);
    expect(response.body.data).toEqual({ id: grant.id, email: grant.email });
    expect((await api.get(`/v3/grants/${grant.id}?select=settings.app_permission`)).status).toBe(400);
    const unknown = await api.get(`/v3/grants/${grant.id}?select=id,colour`);
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toContain('colour');
  });
});

describe('GET /v3/grants', () => {
  it('filters by creation time and IP, orders either way, and refuses what this deployment cannot filter by', async () => {
    const own = apiClient(gateway.url, (await makeApplication('filters')).apiKey);
    const t0 = 1_900_000_000;
    const ids: string[] = [];
    for (const offset of [0, 100, 200]) {
      const restore = clock.set(() => (t0 + offset) * 1000);
      try {
        ids.push((await makeAgentGrant(own)).id);
      } finally {
        restore();
      }
    }
    const list = async (query: string) =>
      (await own.get(`/v3/grants?${query}`)).body.data.map((g: { id: string }) => g.id);
    expect(await list('')).toEqual([...ids].reverse());
    expect(await list('order_by=asc&sort_by=created_at')).toEqual(ids);
    expect(await list(`since=${t0 + 100}`)).toEqual([ids[2], ids[1]]);
    expect(await list(`before=${t0 + 100}&order_by=asc`)).toEqual([ids[0], ids[1]]);
    expect(await list(`since=${t0 + 50}&before=${t0 + 150}`)).toEqual([ids[1]]);
    expect(await list('ip=127.0.0.1&limit=1')).toEqual([ids[2]]);
    expect(await list('ip=10.9.9.9')).toEqual([]);
    for (const [query, message] of [
      ['account_id=abc', "'account_id' and 'account_ids'"],
      ['workspace_id=ws', "'workspace_id' is not a filter"],
      ['sort_by=updated_at', "'sort_by=updated_at' is not available"],
      ['order_by=up', "'order_by' must be one of: asc, desc"],
    ]) {
      const response = await own.get(`/v3/grants?${query}`);
      expect(response.status, query).toBe(400);
      expect(response.body.error.message, query).toContain(message);
    }
  });

  it('lists newest first with limit, page_token and offset', async () => {
    const app = await makeApplication('listing');
    const client = apiClient(gateway.url, app.apiKey);
    const created = [];
    for (let i = 0; i < 5; i++) created.push(await makeAgentGrant(client));
    const newestFirst = created.map((g) => g.id).reverse();

    const all = await client.get('/v3/grants');
    expect(all.body.data.map((g: { id: string }) => g.id)).toEqual(newestFirst);
    expect(all.body).not.toHaveProperty('next_cursor');

    const first = await client.get('/v3/grants?limit=2');
    expect(first.body.data.map((g: { id: string }) => g.id)).toEqual(newestFirst.slice(0, 2));
    expect(typeof first.body.next_cursor).toBe('string');
    const second = await client.get(`/v3/grants?limit=2&page_token=${first.body.next_cursor}`);
    expect(second.body.data.map((g: { id: string }) => g.id)).toEqual(newestFirst.slice(2, 4));
    const third = await client.get(`/v3/grants?limit=2&page_token=${second.body.next_cursor}`);
    expect(third.body.data.map((g: { id: string }) => g.id)).toEqual(newestFirst.slice(4));
    expect(third.body).not.toHaveProperty('next_cursor');

    const offset = await client.get('/v3/grants?offset=3&limit=10');
    expect(offset.body.data.map((g: { id: string }) => g.id)).toEqual(newestFirst.slice(3));
  });

  it('filters by email, provider and grant_status', async () => {
    const app = await makeApplication('filters');
    const client = apiClient(gateway.url, app.apiKey);
    const a = await makeAgentGrant(client);
    await makeAgentGrant(client);
    const byEmail = await client.get(`/v3/grants?email=${encodeURIComponent(a.email.toUpperCase())}`);
    expect(byEmail.body.data.map((g: { id: string }) => g.id)).toEqual([a.id]);
    expect((await client.get('/v3/grants?provider=agent')).body.data).toHaveLength(2);
    expect((await client.get('/v3/grants?provider=imap')).body.data).toHaveLength(0);
    expect((await client.get('/v3/grants?grant_status=valid&limit=1')).body.data).toHaveLength(1);
    expect((await client.get('/v3/grants?grant_status=invalid')).body.data).toHaveLength(0);
  });

  it('treats limit above 200 as 200 and rejects bad list parameters', async () => {
    expect((await api.get('/v3/grants?limit=100000')).status).toBe(200);
    for (const query of [
      'limit=0',
      'limit=abc',
      'limit=-1',
      'offset=-1',
      'offset=10001',
      'page_token=garbage',
      'colour=red',
      'page_token=eyJwayI6ImFwcCNhcHBfMDFqIiwic2siOiJncmFudCN4In0',
    ]) {
      const response = await api.get(`/v3/grants?${query}`);
      expect({ query, status: response.status }).toEqual({ query, status: 400 });
      expect(response.body.error.type).toBe('invalid_request_error');
    }
  });
});

describe('PATCH /v3/grants/{grant_id}', () => {
  it('updates blocked and external_id, keeps other fields, and frees the old external_id', async () => {
    const grant = await makeAgentGrant(api, { external_id: `old-${Date.now()}` });
    const response = await api.patch(`/v3/grants/${grant.id}`, { blocked: true, external_id: `new-${grant.id}` });
    expect(response.status).toBe(200);
    expect(response.body.data).toMatchObject({
      id: grant.id,
      blocked: true,
      external_id: `new-${grant.id}`,
      email: grant.email,
    });
    expect((await api.get(`/v3/grants/external:new-${grant.id}`)).body.data.id).toBe(grant.id);
    expect((await api.get(`/v3/grants/external:${grant.external_id}`)).status).toBe(404);
    // The old external ID can be reused by another grant.
    expect((await makeAgentGrant(api, { external_id: grant.external_id })).external_id).toBe(grant.external_id);

    const cleared = await api.patch(`/v3/grants/${grant.id}`, { external_id: null });
    expect(cleared.body.data).not.toHaveProperty('external_id');
    expect(cleared.body.data.blocked).toBe(true);
    expect((await api.get(`/v3/grants/external:new-${grant.id}`)).status).toBe(404);
  });

  it('answers 409 when the external_id belongs to another grant, changing nothing', async () => {
    const a = await makeAgentGrant(api, { external_id: `taken-${Date.now()}` });
    const b = await makeAgentGrant(api);
    const response = await api.patch(`/v3/grants/${b.id}`, { external_id: a.external_id, blocked: true });
    expect(response.status).toBe(409);
    expect((await api.get(`/v3/grants/${b.id}`)).body.data.blocked).toBe(false);
  });

  it('rejects empty, unknown and read-only fields', async () => {
    const grant = await makeAgentGrant(api);
    for (const body of [{}, { email: 'x@y.z' }, { blocked: 'yes' }, { external_id: 5 }]) {
      const response = await api.patch(`/v3/grants/${grant.id}`, body);
      expect({ body, status: response.status }).toEqual({ body, status: 400 });
    }
  });
});

describe('DELETE /v3/grants/{grant_id}', () => {
  it('removes the grant and its email and external ID, answering a JSON body', async () => {
    const email = uniqueEmail();
    const grant = await makeAgentGrant(api, { email, external_id: `del-${Date.now()}` });
    const response = await api.delete(`/v3/grants/email:${email}`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ request_id: response.headers.get('x-request-id') });
    expect((await api.get(`/v3/grants/${grant.id}`)).status).toBe(404);
    expect((await api.delete(`/v3/grants/${grant.id}`)).status).toBe(404);
    // Address and external ID are free again.
    const again = await makeAgentGrant(api, { email, external_id: grant.external_id });
    expect(again.id).not.toBe(grant.id);
  });

  it('refuses select on DELETE', async () => {
    const grant = await makeAgentGrant(api);
    expect((await api.delete(`/v3/grants/${grant.id}?select=id`)).status).toBe(400);
  });
});
