import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Resolver, UrlPolicy } from '#shared/net/addresses';
import { guardedFetch, type GuardedFetchOptions } from '#shared/net/fetch';
import { GuardedRequestError } from '#shared/net/request';

/**
 * shared/net/fetch.ts, the fetch that OAuth requests go through. No real DNS: names resolve through
 * a fake resolver; the only servers contacted are local ones on 127.0.0.1, and a raw TCP listener
 * counts every connection attempt so that "refused before connecting" is checked, not assumed.
 */

const LOCAL: UrlPolicy = { local: true };
const DEPLOYED: UrlPolicy = { local: false };

let server: Server;
let port: number;
const hits: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[] = [];
let tcp: TcpServer;
let tcpPort: number;
let tcpConnections = 0;

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    hits.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() });
    const url = new URL(req.url!, 'http://x');
    const size = Number(url.searchParams.get('size') ?? '0');
    switch (url.pathname) {
      case '/json':
        res.writeHead(200, { 'content-type': 'application/json', 'x-multi': ['a', 'b'] });
        return res.end(JSON.stringify({ ok: true }));
      case '/bytes':
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        return res.end(Buffer.alloc(size, 0x61));
      case '/redirect':
        res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' });
        return res.end();
      case '/empty':
        res.writeHead(204);
        return res.end();
      case '/hang':
        return; // never answers
      default:
        res.writeHead(404);
        return res.end();
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
  tcp = createTcpServer((socket) => {
    tcpConnections++;
    socket.destroy();
  });
  tcp.listen(0, '127.0.0.1');
  await once(tcp, 'listening');
  tcpPort = (tcp.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await new Promise((resolve) => tcp.close(resolve));
});

beforeEach(() => {
  hits.length = 0;
  tcpConnections = 0;
});

function fetcher(policy: UrlPolicy, extra: Partial<GuardedFetchOptions> = {}) {
  return guardedFetch({ policy, timeoutMs: 5000, maxResponseBytes: 1000, userAgent: 'test-agent/1', ...extra });
}

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

async function failure(promise: Promise<unknown>): Promise<GuardedRequestError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GuardedRequestError);
  return error as GuardedRequestError;
}

describe('Function: guardedFetch, local mode', () => {
  it('fetches from loopback over http and returns a real Response', async () => {
    const response = await fetcher(LOCAL)(`http://127.0.0.1:${port}/json`, { headers: { accept: 'application/json' } });
    expect(response).toBeInstanceOf(Response);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('x-multi')).toBe('a, b');
    expect(await response.json()).toEqual({ ok: true });
    expect(hits[0]!.headers['user-agent']).toBe('test-agent/1');
    expect(hits[0]!.headers.accept).toBe('application/json');
  });

  it('sends a form body with its content type and length', async () => {
    const response = await fetcher(LOCAL)(`http://127.0.0.1:${port}/json`, {
      method: 'POST',
      body: new URLSearchParams({ a: '1', b: 'x y' }),
    });
    expect(response.status).toBe(200);
    expect(hits[0]).toMatchObject({ method: 'POST', body: 'a=1&b=x+y' });
    expect(hits[0]!.headers['content-type']).toBe('application/x-www-form-urlencoded;charset=UTF-8');
    expect(hits[0]!.headers['content-length']).toBe('9');
  });

  it('does not follow redirects, and gives a 204 a null body', async () => {
    const redirect = await fetcher(LOCAL)(`http://127.0.0.1:${port}/redirect`);
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe('http://127.0.0.1:1/elsewhere');
    expect(hits).toHaveLength(1);
    const empty = await fetcher(LOCAL)(`http://127.0.0.1:${port}/empty`);
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
  });

  it('accepts an answer of exactly the size limit and refuses one byte more', async () => {
    expect((await (await fetcher(LOCAL)(`http://127.0.0.1:${port}/bytes?size=1000`)).arrayBuffer()).byteLength).toBe(
      1000,
    );
    const error = await failure(fetcher(LOCAL)(`http://127.0.0.1:${port}/bytes?size=1001`));
    expect(error.kind).toBe('network');
    expect(error.message).toMatch(/more than 1000 bytes/);
    const big = await failure(fetcher(LOCAL)(`http://127.0.0.1:${port}/bytes?size=5000000`));
    expect(big.message).toMatch(/more than 1000 bytes/);
  });

  it('gives up on a server that does not answer', async () => {
    const error = await failure(fetcher(LOCAL, { timeoutMs: 200 })(`http://127.0.0.1:${port}/hang`));
    expect(error.kind).toBe('timeout');
  });

  it('rejects with the reason of an aborted signal', async () => {
    const controller = new AbortController();
    const pending = fetcher(LOCAL)(`http://127.0.0.1:${port}/hang`, { signal: controller.signal });
    const reason = new Error('stop');
    setImmediate(() => controller.abort(reason));
    await expect(pending).rejects.toBe(reason);
    const already = AbortSignal.abort(new Error('before'));
    await expect(fetcher(LOCAL)(`http://127.0.0.1:${port}/json`, { signal: already })).rejects.toThrow('before');
  });

  it('allows plain http only to loopback: a name is resolved and must be loopback too', async () => {
    const { resolver, calls } = fakeResolver({ localhost: ['93.184.216.34'], 'receiver.test': ['127.0.0.1'] });
    const toPublic = await failure(fetcher(LOCAL, { resolver })(`http://localhost:${tcpPort}/`));
    expect(toPublic.kind).toBe('blocked');
    expect(toPublic.message).toBe('localhost resolves to 93.184.216.34, which is not a loopback address');
    const named = await failure(fetcher(LOCAL, { resolver })(`http://receiver.test:${tcpPort}/`));
    expect(named.kind).toBe('blocked');
    expect(named.message).toMatch(/plain http is allowed only to loopback/);
    expect(calls).toEqual(['localhost']);
    const privateLiteral = await failure(fetcher(LOCAL)(`http://10.0.0.1:${tcpPort}/`));
    expect(privateLiteral.kind).toBe('blocked');
    expect(tcpConnections).toBe(0);
  });

  it('refuses other schemes and URLs with credentials', async () => {
    expect((await failure(fetcher(LOCAL)(`ftp://127.0.0.1:${tcpPort}/`))).kind).toBe('blocked');
    expect((await failure(fetcher(LOCAL)(`http://user:pw@127.0.0.1:${port}/json`))).kind).toBe('blocked');
    expect(hits).toHaveLength(0);
  });
});

describe('Function: guardedFetch, deployed', () => {
  it('refuses plain http, even to a public address, before connecting', async () => {
    const { resolver, calls } = fakeResolver({ 'as.example.com': ['93.184.216.34'] });
    const error = await failure(fetcher(DEPLOYED, { resolver })(`http://as.example.com:${tcpPort}/token`));
    expect(error.kind).toBe('blocked');
    expect(error.message).toBe(`only https URLs are fetched, not http://as.example.com:${tcpPort}`);
    expect(calls).toEqual([]);
    expect((await failure(fetcher(DEPLOYED)(`http://127.0.0.1:${tcpPort}/`))).kind).toBe('blocked');
    expect(tcpConnections).toBe(0);
  });

  it('refuses https to a name that resolves to a private or loopback address, and to such literals', async () => {
    const { resolver, calls } = fakeResolver({
      'internal.example.com': ['10.1.2.3'],
      'rebind.example.com': ['127.0.0.1'],
      'metadata.example.com': ['169.254.169.254'],
    });
    for (const host of ['internal.example.com', 'rebind.example.com', 'metadata.example.com']) {
      const error = await failure(
        fetcher(DEPLOYED, { resolver })(`https://${host}:${tcpPort}/.well-known/openid-configuration`),
      );
      expect(error.kind).toBe('blocked');
      expect(error.message).toMatch(
        new RegExp(`^${host.replace(/\./g, '\\.')} resolves to .*, which is not a public address$`),
      );
    }
    expect(calls).toEqual(['internal.example.com', 'rebind.example.com', 'metadata.example.com']);
    for (const literal of ['127.0.0.1', '[::1]', '10.0.0.1', '[::ffff:169.254.169.254]']) {
      expect((await failure(fetcher(DEPLOYED)(`https://${literal}:${tcpPort}/`))).kind).toBe('blocked');
    }
    expect(tcpConnections).toBe(0);
  });

  it('connects to a public address that passed the check (the TCP listener stands in for it)', async () => {
    // Control for the tests above: with local mode, the same https request does reach the listener,
    // so a zero count there means "refused", not "could not have connected anyway".
    const { resolver } = fakeResolver({ 'rebind.example.com': ['127.0.0.1'] });
    const error = await failure(fetcher(LOCAL, { resolver })(`https://rebind.example.com:${tcpPort}/`));
    expect(error.kind).toBe('network');
    expect(tcpConnections).toBe(1);
  });
});
