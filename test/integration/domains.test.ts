import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { startDnsServer, type DnsServer, type ServedRecord } from '../support/dns-server';
import { makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';

/**
 * Domains (`/v3/admin/domains`): registered by an application, proven by DNS records read through
 * the resolver the deployment names (DNS_RESOLVERS: here a real DNS server on loopback), one verified
 * name per deployment, and the Agent Accounts rule that follows.
 */
let dns: DnsServer;
let gateway: Gateway;

beforeAll(async () => {
  dns = await startDnsServer();
  // Read when the domains functions load, like the rest of the configuration: before the first request.
  process.env.DNS_RESOLVERS = dns.address;
  gateway = await startGateway();
});

afterAll(async () => {
  await gateway?.close();
  await dns?.close();
});

interface Domain {
  id: string;
  name: string;
  domain_address: string;
  organization_id: string;
  verified_ownership: boolean;
  verified_dkim: boolean;
  verified_spf: boolean;
  verified_mx: boolean;
  verified_feedback: boolean;
  updated_at: number;
}

interface Verification {
  domain_id: string;
  attempt: { type: string; options: { host: string; type: string; value: string; priority?: number } };
  status: 'done' | 'failed' | 'pending';
  message: string;
  found?: string[];
}

/** The error envelope with this status and type, its message containing `fragment` (or matching it). */
function expectError(r: ApiResponse, status: number, type: string, fragment: string | RegExp) {
  expect(r.status, r.text).toBe(status);
  expect(r.body.error.type).toBe(type);
  if (typeof fragment === 'string') expect(r.body.error.message).toContain(fragment);
  else expect(r.body.error.message).toMatch(fragment);
}

let seq = 0;
/** A domain name no other test (or earlier run against the same table) uses. */
const uniqueDomain = () => `d${Date.now().toString(36)}${(seq++).toString(36)}.example.test`;

async function freshApplication(name = 'Domains') {
  const app = await makeApplication(name);
  return { api: apiClient(gateway.url, app.apiKey), applicationId: app.applicationId };
}

async function createDomain(api: ApiClient, address = uniqueDomain(), name = 'Transactional'): Promise<Domain> {
  const response = await api.post('/v3/admin/domains', { name, domain_address: address });
  if (response.status !== 200) throw new Error(`createDomain: ${response.status} ${response.text}`);
  return response.body.data as Domain;
}

async function info(api: ApiClient, id: string, type: string): Promise<Verification> {
  const response = await api.post(`/v3/admin/domains/${id}/info`, { type });
  expect(response.status, response.text).toBe(200);
  return response.body.data as Verification;
}

async function verify(api: ApiClient, id: string, type: string): Promise<Verification> {
  const response = await api.post(`/v3/admin/domains/${id}/verify`, { type });
  expect(response.status, response.text).toBe(200);
  return response.body.data as Verification;
}

/** The full DNS name of a record `info` describes (host relative to the domain, `@` the domain itself). */
const fqdn = (domain: Domain, host: string) =>
  host === '@' ? domain.domain_address : `${host}.${domain.domain_address}`;

/** Serves the record `info` says to publish, exactly as it says. */
async function publish(api: ApiClient, domain: Domain, type: string, extra: ServedRecord[] = []): Promise<void> {
  const { options } = (await info(api, domain.id, type)).attempt;
  const record: ServedRecord =
    options.type === 'MX'
      ? { type: 'MX', exchange: options.value, priority: options.priority }
      : { type: 'TXT', value: options.value };
  dns.set(fqdn(domain, options.host), [...extra, record]);
}

describe('Function: domains — registration', () => {
  it('creates, lists, reads, renames and deletes a domain of the calling application', async () => {
    const { api, applicationId } = await freshApplication();
    const address = uniqueDomain();
    const created = await createDomain(api, address.toUpperCase(), 'Receipts');
    expect(created).toMatchObject({
      name: 'Receipts',
      domain_address: address,
      branded: false,
      organization_id: applicationId,
      verified_ownership: false,
      verified_dkim: false,
      verified_spf: false,
      verified_mx: false,
      verified_feedback: false,
      verified_dmarc: false,
      verified_arc: false,
    });
    expect(created.id).toMatch(/^dom_/);
    const second = await createDomain(api);

    const listed = await api.get('/v3/admin/domains?limit=1');
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((d: Domain) => d.id)).toEqual([second.id]);
    const next = await api.get(`/v3/admin/domains?limit=1&page_token=${listed.body.next_cursor}`);
    expect(next.body.data.map((d: Domain) => d.id)).toEqual([created.id]);
    expect(next.body.next_cursor).toBeUndefined();

    expect((await api.get(`/v3/admin/domains/${created.id}`)).body.data).toEqual(created);
    const renamed = await api.put(`/v3/admin/domains/${created.id}`, { name: 'Invoices' });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.data).toMatchObject({ id: created.id, name: 'Invoices', domain_address: address });

    expect((await api.delete(`/v3/admin/domains/${created.id}`)).status).toBe(200);
    expectError(
      await api.get(`/v3/admin/domains/${created.id}`),
      404,
      'not_found_error',
      `Domain '${created.id}' not found`,
    );
    // The name is free again within the application.
    expect((await createDomain(api, address)).domain_address).toBe(address);
  });

  it('refuses bad input with a 400 naming the field, and a second registration of a name with a 409', async () => {
    const { api } = await freshApplication();
    expectError(
      await api.post('/v3/admin/domains', { name: 'x', domain_address: 'https://example.com/' }),
      400,
      'invalid_request_error',
      /domain_address/,
    );
    expectError(
      await api.post('/v3/admin/domains', { domain_address: uniqueDomain() }),
      400,
      'invalid_request_error',
      /name/,
    );
    const domain = await createDomain(api);
    expectError(
      await api.put(`/v3/admin/domains/${domain.id}`, { domain_address: uniqueDomain() }),
      400,
      'invalid_request_error',
      /domain_address/,
    );
    expectError(
      await api.post(`/v3/admin/domains/${domain.id}/info`, { type: 'dmarc' }),
      400,
      'invalid_request_error',
      /type/,
    );
    expectError(
      await api.post('/v3/admin/domains', { name: 'again', domain_address: domain.domain_address }),
      409,
      'conflict_error',
      `already registered the domain ${domain.domain_address} (${domain.id})`,
    );
    expect((await api.get('/v3/admin/domains')).body.data).toHaveLength(1);
  });

  it("never finds another application's domain", async () => {
    const { api } = await freshApplication();
    const { api: other } = await freshApplication('Other');
    const domain = await createDomain(api);
    const message = `Domain '${domain.id}' not found`;
    expectError(await other.get(`/v3/admin/domains/${domain.id}`), 404, 'not_found_error', message);
    expectError(await other.put(`/v3/admin/domains/${domain.id}`, { name: 'mine' }), 404, 'not_found_error', message);
    expectError(
      await other.post(`/v3/admin/domains/${domain.id}/info`, { type: 'ownership' }),
      404,
      'not_found_error',
      message,
    );
    expectError(
      await other.post(`/v3/admin/domains/${domain.id}/verify`, { type: 'ownership' }),
      404,
      'not_found_error',
      message,
    );
    expectError(await other.delete(`/v3/admin/domains/${domain.id}`), 404, 'not_found_error', message);
    expect((await other.get('/v3/admin/domains')).body.data).toEqual([]);
    expect((await api.get(`/v3/admin/domains/${domain.id}`)).body.data.name).toBe('Transactional');
  });
});

describe('Function: domains — DNS records and verification', () => {
  it('describes the record of each type to publish, from the domain and the deployment', async () => {
    const { api } = await freshApplication();
    const domain = await createDomain(api);
    const other = await createDomain(api);
    const ownership = await info(api, domain.id, 'ownership');
    expect(ownership).toMatchObject({ domain_id: domain.id, status: 'pending', attempt: { type: 'ownership' } });
    expect(ownership.attempt.options).toMatchObject({ host: '@', type: 'TXT' });
    expect(ownership.attempt.options.value).toMatch(/^switchboard-verification=[\w-]{32}$/);
    expect(ownership.message).toContain(`Publish a TXT record at ${domain.domain_address}`);
    // Tokens and DKIM keys are the domain's own.
    expect((await info(api, other.id, 'ownership')).attempt.options.value).not.toBe(ownership.attempt.options.value);
    const dkim = (await info(api, domain.id, 'dkim')).attempt.options;
    expect(dkim).toMatchObject({ host: 'switchboard._domainkey', type: 'TXT' });
    expect(dkim.value).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/]{300,}={0,2}$/);
    expect((await info(api, other.id, 'dkim')).attempt.options.value).not.toBe(dkim.value);
    expect((await info(api, domain.id, 'mx')).attempt.options).toMatchObject({
      host: '@',
      type: 'MX',
      value: expect.stringMatching(/^inbound-smtp\.[a-z0-9-]+\.amazonaws\.com$/),
      priority: 10,
    });
    expect((await info(api, domain.id, 'spf')).attempt.options).toEqual({
      host: '@',
      type: 'TXT',
      value: 'v=spf1 include:amazonses.com ~all',
    });
    expect((await info(api, domain.id, 'feedback')).attempt.options).toMatchObject({ host: 'bounces', type: 'MX' });
  });

  it('verifies ownership for real: NXDOMAIN, a missing record and a wrong value fail; the published value passes', async () => {
    const { api } = await freshApplication();
    const domain = await createDomain(api);
    const required = (await info(api, domain.id, 'ownership')).attempt.options.value;

    const nxdomain = await verify(api, domain.id, 'ownership');
    expect(nxdomain).toMatchObject({ status: 'failed', found: [] });
    expect(nxdomain.message).toContain(`${domain.domain_address} does not exist in DNS (NXDOMAIN)`);
    expect(dns.queries).toContain(`${domain.domain_address} TXT`);

    dns.set(domain.domain_address, [{ type: 'MX', exchange: 'mx.elsewhere.test' }]);
    const missing = await verify(api, domain.id, 'ownership');
    expect(missing).toMatchObject({ status: 'failed', found: [] });
    expect(missing.message).toContain(
      `${domain.domain_address} has no TXT record: publish one with the value ${required}`,
    );

    const wrong = `switchboard-verification=${'x'.repeat(32)}`;
    dns.set(domain.domain_address, [
      { type: 'TXT', value: wrong },
      { type: 'TXT', value: 'v=spf1 -all' },
    ]);
    const mismatch = await verify(api, domain.id, 'ownership');
    expect(mismatch.status).toBe('failed');
    expect(mismatch.found?.sort()).toEqual([wrong, 'v=spf1 -all'].sort());
    expect(mismatch.message).toContain('2 TXT records, none with the required value');
    expect((await api.get(`/v3/admin/domains/${domain.id}`)).body.data.verified_ownership).toBe(false);
    const failedInfo = await info(api, domain.id, 'ownership');
    expect(failedInfo.status).toBe('failed');
    expect(failedInfo.message).toContain('none with the required value');

    await publish(api, domain, 'ownership', [{ type: 'TXT', value: 'google-site-verification=abc' }]);
    const done = await verify(api, domain.id, 'ownership');
    expect(done).toMatchObject({ domain_id: domain.id, status: 'done', attempt: { type: 'ownership' } });
    expect(done.found).toContain(required);
    const verified = (await api.get(`/v3/admin/domains/${domain.id}`)).body.data as Domain;
    expect(verified).toMatchObject({ verified_ownership: true, verified_dkim: false });
    expect((await info(api, domain.id, 'ownership')).status).toBe('done');
  });

  it('verifies the DKIM (a long TXT record in several strings), SPF, MX and feedback records', async () => {
    const { api } = await freshApplication();
    const domain = await createDomain(api);
    // SPF: another include before ours is fine; an SPF record without it is not.
    dns.set(domain.domain_address, [{ type: 'TXT', value: 'v=spf1 include:_spf.other.test -all' }]);
    expect((await verify(api, domain.id, 'spf')).status).toBe('failed');
    dns.set(domain.domain_address, [
      { type: 'TXT', value: 'v=spf1 include:_spf.other.test include:amazonses.com -all' },
    ]);
    expect((await verify(api, domain.id, 'spf')).status).toBe('done');

    // DKIM: a record whose p= differs fails; the published key passes, split into 255-octet strings.
    const dkim = (await info(api, domain.id, 'dkim')).attempt.options;
    const dkimName = fqdn(domain, dkim.host);
    dns.set(dkimName, [{ type: 'TXT', value: dkim.value.replace(/p=.{8}/, 'p=AAAAAAAA') }]);
    expect((await verify(api, domain.id, 'dkim')).status).toBe('failed');
    expect(dkim.value.length).toBeGreaterThan(255);
    await publish(api, domain, 'dkim');
    expect((await verify(api, domain.id, 'dkim')).status).toBe('done');

    // MX: a record naming another host fails and says what it found.
    dns.set(domain.domain_address, [{ type: 'MX', exchange: 'mx.other.test' }]);
    const wrongMx = await verify(api, domain.id, 'mx');
    expect(wrongMx).toMatchObject({ status: 'failed', found: ['mx.other.test'] });
    await publish(api, domain, 'mx');
    expect((await verify(api, domain.id, 'mx')).status).toBe('done');
    await publish(api, domain, 'feedback');
    expect((await verify(api, domain.id, 'feedback')).status).toBe('done');

    expect((await api.get(`/v3/admin/domains/${domain.id}`)).body.data).toMatchObject({
      verified_ownership: false,
      verified_dkim: true,
      verified_spf: true,
      verified_mx: true,
      verified_feedback: true,
    });
    // A record removed later does not unverify it: the check is answered as failed, the flag stays.
    dns.set(domain.domain_address, []);
    expect((await verify(api, domain.id, 'mx')).status).toBe('failed');
    expect((await api.get(`/v3/admin/domains/${domain.id}`)).body.data.verified_mx).toBe(true);
  });
});

describe('Function: domains — one application per verified name', () => {
  it('refuses another application the name once verified (409 on create and verify), until the domain is deleted', async () => {
    const { api } = await freshApplication();
    const { api: other } = await freshApplication('Other');
    const domain = await createDomain(api);
    // The other application registered the name before it was verified: allowed then.
    const early = await createDomain(other, domain.domain_address);
    await publish(api, domain, 'ownership');
    expect((await verify(api, domain.id, 'ownership')).status).toBe('done');

    const conflict = `The domain ${domain.domain_address} is verified by another application`;
    expectError(
      await other.post('/v3/admin/domains', { name: 'mine', domain_address: domain.domain_address }),
      409,
      'conflict_error',
      conflict,
    );
    expectError(
      await other.post(`/v3/admin/domains/${early.id}/verify`, { type: 'ownership' }),
      409,
      'conflict_error',
      conflict,
    );
    expect((await other.get(`/v3/admin/domains/${early.id}`)).body.data.verified_ownership).toBe(false);
    // Verifying it again is the holder's right.
    expect((await verify(api, domain.id, 'ownership')).status).toBe('done');

    expect((await api.delete(`/v3/admin/domains/${domain.id}`)).status).toBe(200);
    await publish(other, early, 'ownership');
    expect((await verify(other, early.id, 'ownership')).status).toBe('done');
  });

  it('lets exactly one of two applications verifying the same name at once win', async () => {
    const { api: first } = await freshApplication('First');
    const { api: second } = await freshApplication('Second');
    const address = uniqueDomain();
    const [a, b] = [await createDomain(first, address), await createDomain(second, address)];
    const tokens = await Promise.all([info(first, a.id, 'ownership'), info(second, b.id, 'ownership')]);
    dns.set(
      address,
      tokens.map((t) => ({ type: 'TXT', value: t.attempt.options.value })),
    );
    const answers = await Promise.all([
      first.post(`/v3/admin/domains/${a.id}/verify`, { type: 'ownership' }),
      second.post(`/v3/admin/domains/${b.id}/verify`, { type: 'ownership' }),
    ]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    const winner = answers[0]!.status === 200 ? 0 : 1;
    const loser = answers[1 - winner]!;
    expect(loser.body.error.message).toContain(`The domain ${address} is verified by another application`);
    const states = [
      (await first.get(`/v3/admin/domains/${a.id}`)).body.data.verified_ownership,
      (await second.get(`/v3/admin/domains/${b.id}`)).body.data.verified_ownership,
    ];
    expect(states).toEqual(winner === 0 ? [true, false] : [false, true]);
  });
});

describe('Function: domains — Agent Accounts', () => {
  const agent = (api: ApiClient, email: string) =>
    api.post('/v3/connect/custom', { provider: 'nylas', settings: { email } });

  it('keeps Agent Accounts anywhere for an application without domains', async () => {
    const { api } = await freshApplication();
    const created = await agent(api, `bot@${uniqueDomain()}`);
    expect(created.status, created.text).toBe(201);
  });

  it('puts the Agent Accounts of an application with domains on its verified ones only', async () => {
    const { api } = await freshApplication();
    const domain = await createDomain(api);
    const address = `bot@${domain.domain_address}`;
    expectError(
      await agent(api, address),
      400,
      'invalid_request_error',
      `The domain ${domain.domain_address} (${domain.id}) is registered but its ownership is not verified yet`,
    );
    expectError(
      await agent(api, `bot@${uniqueDomain()}`),
      400,
      'invalid_request_error',
      "is not one of this application's domains",
    );
    expect((await api.get('/v3/grants')).body.data).toEqual([]);

    await publish(api, domain, 'ownership');
    expect((await verify(api, domain.id, 'ownership')).status).toBe('done');
    // The refused address was not reserved: it is created now.
    const created = await agent(api, address.toUpperCase());
    expect(created.status, created.text).toBe(201);
    expect(created.body.data.email).toBe(address);
  });
});

describe('Function: domains — resolver down', () => {
  it('answers a verification it could not make as pending, changing nothing (never a 5xx)', async () => {
    const { api } = await freshApplication();
    const domain = await createDomain(api);
    await publish(api, domain, 'ownership');
    await dns.close();
    const started = Date.now();
    const answer = await verify(api, domain.id, 'ownership');
    expect(answer.status).toBe('pending');
    expect(answer.message).toContain('The ownership record could not be checked: the DNS resolver');
    expect(answer.found).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(10_000);
    expect((await api.get(`/v3/admin/domains/${domain.id}`)).body.data.verified_ownership).toBe(false);
    expect((await info(api, domain.id, 'ownership')).status).toBe('pending');
  });
});
