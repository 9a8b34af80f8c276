import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { InvalidRequestError } from '#shared/errors';
import { webhookRequest, WebhookRequestError } from '#shared/webhooks/http';
import {
  allowedAddresses,
  BlockedAddressError,
  checkWebhookUrl,
  classifyAddress,
  pinnedLookup,
  type Resolver,
} from '#shared/webhooks/urls';
import { freePort } from '../../scripts/local-stack/index';

/**
 * shared/webhooks/urls.ts and the webhook HTTP client. No real DNS: every hostname goes through an
 * injected fake resolver, and the only server contacted is a local one on 127.0.0.1.
 */

const LOCAL = { local: true };
const DEPLOYED = { local: false };

/** A resolver backed by a fixed table; counts calls per hostname. */
function fakeResolver(table: Record<string, string[]>) {
  const calls: string[] = [];
  const resolver: Resolver = async (hostname) => {
    calls.push(hostname);
    const found = table[hostname];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found;
  };
  return { resolver, calls };
}

/** Calls a pinnedLookup function and returns what it passed to its callback. */
function lookupOnce(
  lookup: ReturnType<typeof pinnedLookup>,
  hostname: string,
  options: { all?: boolean; family?: number } = {},
) {
  return new Promise<{ error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>(
    (resolve) => lookup(hostname, options, (error, address, family) => resolve({ error, address, family })),
  );
}

describe('classifyAddress', () => {
  it.each(['8.8.8.8', '1.1.1.1', '2606:4700::1111'])('%s is public', (address) => {
    expect(classifyAddress(address)).toBe('public');
  });

  it.each(['127.0.0.1', '127.255.0.1', '::1'])('%s is loopback', (address) => {
    expect(classifyAddress(address)).toBe('loopback');
  });

  it.each([
    '10.0.0.1',
    '10.255.255.254',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    'fc00::1',
    'fd00:ec2::254',
    'fe80::1',
    '::ffff:10.0.0.1',
    'not-an-ip',
  ])('%s is private', (address) => {
    expect(classifyAddress(address)).toBe('private');
  });

  it('judges an IPv4-mapped IPv6 address as the IPv4 address it maps', () => {
    expect(classifyAddress('::ffff:127.0.0.1')).toBe('loopback');
    expect(classifyAddress('::ffff:192.168.0.10')).toBe('private');
  });

  it.each([
    // IPv4-compatible (::/96), e.g. 169.254.169.254, 127.0.0.1 and 8.8.8.8 in that deprecated form
    '::a9fe:a9fe',
    '::169.254.169.254',
    '::7f00:1',
    '::808:808',
    '::',
    '0:0:0:0:0:0:0:0',
    // IPv4-mapped, every spelling, judged as the IPv4 address inside
    '::ffff:a9fe:a9fe',
    '0:0:0:0:0:FFFF:169.254.169.254',
    '::ffff:0a00:0001',
    // IPv4-translated (::ffff:0:0:0/96)
    '::ffff:0:808:808',
    // NAT64: well-known and local-use prefixes, whatever they embed
    '64:ff9b::a9fe:a9fe',
    '64:ff9b::808:808',
    '64:ff9b:1::a9fe:a9fe',
    '64:ff9b:1:2::1',
    // 6to4 (2002::/16), embedding 10.0.0.1 or even a public address
    '2002:a00:1::1',
    '2002:808:808::1',
    // Teredo, ORCHID, benchmarking (2001::/23)
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    '2001:2::1',
    '2001:10::1',
    // site-local (deprecated), unique local, link-local (with a zone ID), multicast, discard, documentation
    'fec0::1',
    'FEFF::1',
    'fd12:3456::1',
    'fe80::1%eth0',
    'ff02::1',
    '100::1',
    '2001:db8::1',
    '3fff::1',
    // outside global unicast altogether
    '4000::1',
    '5f00::1',
    'c000::1',
  ])(
    '%s is private (every IPv6 form that embeds or routes to a non-public IPv4, every non-global range)',
    (address) => {
      expect(classifyAddress(address)).toBe('private');
    },
  );

  it.each([
    '2606:4700:4700::1111',
    '2a00:1450:4001:81b::200e',
    '2001:4860:4860::8888',
    '2001:200::1',
    '2003::1',
    '3ffe::1',
    '::ffff:8.8.8.8',
    '::FFFF:808:808',
  ])('%s is public (global unicast, or IPv4-mapped public IPv4)', (address) => {
    expect(classifyAddress(address)).toBe('public');
  });

  it('judges the IPv4-mapped form of loopback in every spelling as loopback, and nothing else in ::/96', () => {
    for (const address of ['::ffff:127.0.0.1', '::ffff:7f00:1', '0:0:0:0:0:ffff:7f00:0001'])
      expect(classifyAddress(address)).toBe('loopback');
    expect(classifyAddress('::1')).toBe('loopback');
    expect(classifyAddress('0:0:0:0:0:0:0:1')).toBe('loopback');
    expect(classifyAddress('::7f00:1')).toBe('private');
  });

  it('does not stretch private ranges past their prefix (172.15.x and 172.32.x are outside 172.16.0.0/12)', () => {
    expect(classifyAddress('172.15.255.255')).toBe('public');
    expect(classifyAddress('172.32.0.1')).toBe('public');
  });
});

describe('checkWebhookUrl', () => {
  it.each(['https://hooks.example.com/in', 'https://hooks.example.com:8443/in?x=1', 'https://10.0.0.1/h'])(
    'accepts the form of %s in both modes (where it resolves is checked later)',
    (raw) => {
      expect(checkWebhookUrl(raw, LOCAL).href).toBe(new URL(raw).href);
      expect(checkWebhookUrl(raw, DEPLOYED).href).toBe(new URL(raw).href);
    },
  );

  it.each([
    'http://127.0.0.1:8080/hook',
    'http://127.9.9.9/hook',
    'http://localhost:3000/hook',
    'http://[::1]:8080/hook',
  ])('accepts plain http to loopback %s only in local mode', (raw) => {
    expect(checkWebhookUrl(raw, LOCAL).href).toBe(new URL(raw).href);
    expect(() => checkWebhookUrl(raw, DEPLOYED)).toThrow("'webhook_url' must use https");
  });

  it.each(['http://10.0.0.1/x', 'http://192.168.1.1/x', 'http://hooks.example.com/x'])(
    'refuses plain http to non-loopback %s even in local mode',
    (raw) => {
      expect(() => checkWebhookUrl(raw, LOCAL)).toThrow(InvalidRequestError);
      expect(() => checkWebhookUrl(raw, LOCAL)).toThrow(
        'plain http is accepted only for 127.0.0.1 or localhost in local mode',
      );
    },
  );

  it.each(['ftp://127.0.0.1/x', 'ws://127.0.0.1/x', 'file:///etc/passwd', 'javascript:alert(1)'])(
    'refuses the scheme of %s in both modes',
    (raw) => {
      expect(() => checkWebhookUrl(raw, LOCAL)).toThrow(/must use https/);
      expect(() => checkWebhookUrl(raw, DEPLOYED)).toThrow(/must use https/);
    },
  );

  it.each(['not a url', '', '/relative/path', 'hooks.example.com/in'])('refuses %j as not an absolute URL', (raw) => {
    expect(() => checkWebhookUrl(raw, DEPLOYED)).toThrow("'webhook_url' must be an absolute URL");
  });

  it.each(['https://user:pass@hooks.example.com/x', 'https://user@hooks.example.com/x', 'http://u:p@127.0.0.1/x'])(
    'refuses credentials in %s',
    (raw) => {
      expect(() => checkWebhookUrl(raw, LOCAL)).toThrow("'webhook_url' must not contain credentials");
    },
  );

  it.each([
    'https://abc.ngrok-free.app/x',
    'https://x.ngrok.io/y',
    'https://A.NGROK.APP/y',
    'https://x.ngrok.dev/',
    'https://x.ngrok-free.dev/',
    'https://x.ngrok.pizza/',
  ])('refuses the ngrok tunnel %s in both modes', (raw) => {
    expect(() => checkWebhookUrl(raw, LOCAL)).toThrow(/ngrok/);
    expect(() => checkWebhookUrl(raw, DEPLOYED)).toThrow(/ngrok/);
  });

  it.each([
    'https://abc.ngrok.io./',
    'https://abc.ngrok.io%2e/',
    'https://abc.ngrok%2eio/',
    'https://ABC.NGROK-FREE.APP../x',
    'https://a.b.ngrok.app./x',
  ])('refuses the ngrok tunnel %s however its hostname is spelt (trailing dot, escapes, case)', (raw) => {
    expect(() => checkWebhookUrl(raw, DEPLOYED)).toThrow(/ngrok/);
  });

  it('refuses IPv4 literals spelt as numbers or octal/hex parts as the address they are', async () => {
    for (const raw of ['https://2130706433/x', 'https://0x7f.1/x', 'https://0177.0.0.1/x', 'https://0xa9fea9fe/x']) {
      const url = checkWebhookUrl(raw, DEPLOYED);
      await expect(allowedAddresses(url.hostname, DEPLOYED, fakeResolver({}).resolver)).rejects.toThrow(
        BlockedAddressError,
      );
    }
  });

  it('does not mistake a host that merely contains ngrok for a tunnel', () => {
    expect(checkWebhookUrl('https://notngrok.io.example.com/x', DEPLOYED).hostname).toBe('notngrok.io.example.com');
  });
});

describe('allowedAddresses', () => {
  it.each([['8.8.8.8'], ['2606:4700::1111']])('lets a hostname resolving to public %s through', async (address) => {
    const { resolver, calls } = fakeResolver({ 'hooks.test': [address] });
    await expect(allowedAddresses('hooks.test', DEPLOYED, resolver)).resolves.toEqual([address]);
    expect(calls).toEqual(['hooks.test']);
  });

  it.each([
    [['2606:4700::1111', '10.0.0.7'], '10.0.0.7'],
    [['169.254.169.254'], '169.254.169.254'],
    [['2606:4700::1111', 'fd00:ec2::254'], 'fd00:ec2::254'],
    [['192.168.0.1', '2606:4700::1111'], '192.168.0.1'],
  ])('refuses a hostname when any of its addresses %j is private, in both modes', async (addresses, blocked) => {
    const { resolver } = fakeResolver({ 'hooks.test': addresses });
    for (const policy of [LOCAL, DEPLOYED]) {
      const error = await allowedAddresses('hooks.test', policy, resolver).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BlockedAddressError);
      expect((error as BlockedAddressError).address).toBe(blocked);
      expect((error as BlockedAddressError).hostname).toBe('hooks.test');
    }
  });

  it('allows loopback addresses only in local mode', async () => {
    const { resolver } = fakeResolver({ 'receiver.test': ['127.0.0.1', '::1'] });
    await expect(allowedAddresses('receiver.test', LOCAL, resolver)).resolves.toEqual(['127.0.0.1', '::1']);
    await expect(allowedAddresses('receiver.test', DEPLOYED, resolver)).rejects.toThrow(BlockedAddressError);
    await expect(allowedAddresses('receiver.test', DEPLOYED, resolver)).rejects.toThrow(
      'receiver.test resolves to 127.0.0.1, which is not a public address',
    );
  });

  it('judges IP literals (bracketed IPv6 too) without calling the resolver', async () => {
    const { resolver, calls } = fakeResolver({});
    await expect(allowedAddresses('[::1]', LOCAL, resolver)).resolves.toEqual(['::1']);
    await expect(allowedAddresses('[::1]', DEPLOYED, resolver)).rejects.toThrow(BlockedAddressError);
    await expect(allowedAddresses('10.0.0.1', LOCAL, resolver)).rejects.toThrow(BlockedAddressError);
    await expect(allowedAddresses('2606:4700::1111', DEPLOYED, resolver)).resolves.toEqual(['2606:4700::1111']);
    expect(calls).toEqual([]);
  });

  it.each(['::a9fe:a9fe', '64:ff9b:1::a9fe:a9fe', '2002:a9fe:a9fe::1', 'fec0::1', '::ffff:a9fe:a9fe'])(
    'refuses %s as a literal and as a DNS answer',
    async (address) => {
      await expect(allowedAddresses(`[${address}]`, DEPLOYED, fakeResolver({}).resolver)).rejects.toThrow(
        BlockedAddressError,
      );
      const { resolver } = fakeResolver({ 'hooks.test': ['2606:4700::1111', address] });
      await expect(allowedAddresses('hooks.test', DEPLOYED, resolver)).rejects.toThrow(
        `hooks.test resolves to ${address}`,
      );
    },
  );

  it('refuses a hostname with no address, and passes resolver errors on', async () => {
    const { resolver } = fakeResolver({ 'empty.test': [] });
    await expect(allowedAddresses('empty.test', DEPLOYED, resolver)).rejects.toThrow(BlockedAddressError);
    const error = await allowedAddresses('missing.test', DEPLOYED, resolver).catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(BlockedAddressError);
    expect((error as NodeJS.ErrnoException).code).toBe('ENOTFOUND');
  });
});

describe('pinnedLookup', () => {
  it('resolves and checks again at every lookup, so a rebinding resolver cannot get a private address connected', async () => {
    // Prepare: a public address at the first lookup, the metadata address at the next one.
    const answers = [['2606:4700::1111'], ['169.254.169.254']];
    const calls: string[] = [];
    const resolver: Resolver = async (hostname) => {
      calls.push(hostname);
      return answers.shift() ?? [];
    };
    const lookup = pinnedLookup(DEPLOYED, resolver);

    // Act
    const first = await lookupOnce(lookup, 'rebind.test');
    const second = await lookupOnce(lookup, 'rebind.test');

    // Assess
    expect(first).toEqual({ error: null, address: '2606:4700::1111', family: 6 });
    expect(second.error).toBeInstanceOf(BlockedAddressError);
    expect((second.error as unknown as BlockedAddressError).address).toBe('169.254.169.254');
    expect(second.address).toBe('');
    expect(calls).toEqual(['rebind.test', 'rebind.test']);
  });

  it('a rebinding resolver that answers public IPv4 first then private is refused on the rebound lookup', async () => {
    const answers = [['93.184.216.34'], ['10.0.0.1']];
    const lookup = pinnedLookup(DEPLOYED, async () => answers.shift() ?? []);
    const first = await lookupOnce(lookup, 'rebind.test');
    const second = await lookupOnce(lookup, 'rebind.test');
    expect(first).toEqual({ error: null, address: '93.184.216.34', family: 4 });
    expect(second.error).toBeInstanceOf(BlockedAddressError);
  });

  it('with {all: true} returns every allowed address with its family', async () => {
    const { resolver } = fakeResolver({
      'receiver.test': ['127.0.0.1', '::1'],
      'hooks.test': ['2606:4700::1111', '2606:4700::1001'],
    });
    expect(await lookupOnce(pinnedLookup(LOCAL, resolver), 'receiver.test', { all: true })).toEqual({
      error: null,
      address: [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ],
      family: undefined,
    });
    expect((await lookupOnce(pinnedLookup(DEPLOYED, resolver), 'hooks.test', { all: true })).address).toEqual([
      { address: '2606:4700::1111', family: 6 },
      { address: '2606:4700::1001', family: 6 },
    ]);
  });

  it('without all, answers the first allowed address and its family', async () => {
    const { resolver } = fakeResolver({ 'receiver.test': ['127.0.0.1', '::1'] });
    expect(await lookupOnce(pinnedLookup(LOCAL, resolver), 'receiver.test')).toEqual({
      error: null,
      address: '127.0.0.1',
      family: 4,
    });
  });
});

describe('webhookRequest', () => {
  let server: Server;
  let port: number;
  let connections = 0;
  let requests: { method: string; url: string; headers: Record<string, unknown>; body: string }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        requests.push({
          method: req.method!,
          url: req.url!,
          headers: req.headers,
          body: Buffer.concat(chunks).toString(),
        });
        const url = new URL(req.url!, 'http://x');
        if (url.pathname === '/hang') return;
        if (url.pathname === '/stall') {
          // Headers and half of the announced body, then nothing.
          res.writeHead(200, { 'content-length': '64' });
          res.write('a'.repeat(32));
          return;
        }
        if (url.pathname === '/big') {
          res.writeHead(200, { 'content-type': 'application/octet-stream' });
          // Several writes, so the limit falls inside a chunk rather than on a boundary.
          for (let i = 0; i < 5; i++) res.write(Buffer.alloc(700, 97 + i));
          res.end();
          return;
        }
        res
          .writeHead(202, { 'content-type': 'text/plain', 'x-answer': 'yes' })
          .end(`got ${req.method} ${url.pathname}`);
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  beforeEach(() => {
    connections = 0;
    requests = [];
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const { resolver } = fakeResolver({ 'receiver.test': ['127.0.0.1'] });
  const at = (path: string) => new URL(`http://receiver.test:${port}${path}`);

  it('reaches a made-up hostname through the injected resolver in local mode, and sends the body with its length', async () => {
    // Act
    const response = await webhookRequest({
      method: 'POST',
      url: at('/in'),
      headers: { 'content-type': 'application/json', 'x-service-signature': 'abc' },
      body: Buffer.from('{"a":1}'),
      timeoutMs: 2000,
      maxResponseBytes: 1024,
      policy: LOCAL,
      resolver,
    });

    // Assess
    expect(response.status).toBe(202);
    expect(response.body.toString()).toBe('got POST /in');
    expect(response.headers['x-answer']).toBe('yes');
    expect(response.durationMs).toBeGreaterThanOrEqual(0);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.body).toBe('{"a":1}');
    expect(requests[0]!.headers).toMatchObject({
      host: `receiver.test:${port}`,
      'content-length': '7',
      'content-type': 'application/json',
      'x-service-signature': 'abc',
      'user-agent': 'Switchboard-Webhooks/1.0',
    });
  });

  it('the same hostname in deployed mode is refused as blocked and the receiver gets nothing', async () => {
    const error = await webhookRequest({
      method: 'POST',
      url: at('/in'),
      body: Buffer.from('{}'),
      timeoutMs: 2000,
      maxResponseBytes: 1024,
      policy: DEPLOYED,
      resolver,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WebhookRequestError);
    expect((error as WebhookRequestError).kind).toBe('blocked');
    expect((error as WebhookRequestError).message).toBe(
      'receiver.test resolves to 127.0.0.1, which is not a public address',
    );
    // Sentinel: a request the policy allows, made after the refusal, is the only one the receiver sees.
    await webhookRequest({
      method: 'GET',
      url: at('/sentinel'),
      timeoutMs: 2000,
      maxResponseBytes: 1024,
      policy: LOCAL,
      resolver,
    });
    expect(connections).toBe(1);
    expect(requests.map((r) => r.url)).toEqual(['/sentinel']);
  });

  it('connects only to addresses the policy allows, IP literals included: 127.0.0.1 in deployed mode is blocked', async () => {
    // The client's contract (shared/webhooks/http.ts): it connects only to addresses the URL policy allows.
    const error = await webhookRequest({
      method: 'GET',
      url: new URL(`http://127.0.0.1:${port}/in`),
      timeoutMs: 2000,
      maxResponseBytes: 1024,
      policy: DEPLOYED,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WebhookRequestError);
    expect((error as WebhookRequestError).kind).toBe('blocked');
    expect(connections).toBe(0);
  });

  it('gives up with kind timeout when no answer comes in time', async () => {
    const started = Date.now();
    const error = await webhookRequest({
      method: 'GET',
      url: at('/hang'),
      timeoutMs: 300,
      maxResponseBytes: 1024,
      policy: LOCAL,
      resolver,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WebhookRequestError);
    expect((error as WebhookRequestError).kind).toBe('timeout');
    expect((error as WebhookRequestError).message).toBe('no response within 300 ms');
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('times out as well when the headers came but the body stalls', async () => {
    const error = await webhookRequest({
      method: 'GET',
      url: at('/stall'),
      timeoutMs: 300,
      maxResponseBytes: 1024,
      policy: LOCAL,
      resolver,
    }).catch((e: unknown) => e);
    expect((error as WebhookRequestError).kind).toBe('timeout');
  });

  it('cuts an answer over maxResponseBytes to exactly maxResponseBytes', async () => {
    const response = await webhookRequest({
      method: 'GET',
      url: at('/big'),
      timeoutMs: 2000,
      maxResponseBytes: 1000,
      policy: LOCAL,
      resolver,
    });
    expect(response.status).toBe(200);
    expect(response.body.length).toBe(1000);
    expect(response.body.toString()).toBe('a'.repeat(700) + 'b'.repeat(300));
  });

  it('reports a refused connection as kind network', async () => {
    const port = await freePort();
    const error = await webhookRequest({
      method: 'GET',
      url: new URL(`http://127.0.0.1:${port}/`),
      timeoutMs: 2000,
      maxResponseBytes: 1024,
      policy: LOCAL,
    }).catch((e: unknown) => e);
    expect((error as WebhookRequestError).kind).toBe('network');
    expect((error as WebhookRequestError).message).toMatch(/^ECONNREFUSED: /);
  });
});
