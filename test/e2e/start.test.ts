import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/local-stack/index';
import { ROOT } from '../../scripts/local-stack/serverless-config';
import { apiClient } from '../support/api';
import { LOOPBACK_LISTENERS, listeners } from '../support/listeners';
import { cleanEnv, ctrlC, groupAlive, npmStart, type Started } from '../support/npm-start';
import { startReceiver } from '../support/receiver';

/**
 * The README's first command, for real: `npm start` brings up the emulators and serverless offline,
 * serves /v3 with the seeded key, works with the admin CLI, stops every child on Ctrl-C (SIGINT to
 * the process group, as a terminal sends it) and starts again on the same ports.
 */
const run = promisify(execFile);

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** One request written as raw bytes (what fetch would refuse to send), and its answer. */
function rawRequest(
  port: number,
  text: string,
): Promise<{ status: number; headers: Record<string, string>; body: string; raw: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let raw = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (raw += chunk));
    socket.on('error', (error: NodeJS.ErrnoException) =>
      error.code === 'ECONNRESET' || error.code === 'EPIPE' ? undefined : reject(error),
    );
    socket.on('close', () => {
      const answer = raw.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '');
      const [head = '', ...rest] = answer.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      let body = rest.join('\r\n\r\n');
      if (headers['transfer-encoding'] === 'chunked')
        body = body.replace(/^[0-9a-f]+\r\n/, '').replace(/\r\n0\r\n\r\n$/, '');
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body, raw });
    });
  });
}

interface Seen {
  status: number;
  body: { request_id?: string; error?: { type: string; message: string } };
  requestId: string | null;
  retryAfter: string | null;
}

/** Asks GET /v3/grants every 100 ms (a refused connection, before anything listens, is not an answer). */
function pollWhileStarting(baseUrl: string, key: string): { stop(): Promise<Seen[]> } {
  const seen: Seen[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        const response = await fetch(`${baseUrl}/v3/grants`, { headers: { authorization: `Bearer ${key}` } });
        seen.push({
          status: response.status,
          body: (await response.json()) as Seen['body'],
          requestId: response.headers.get('x-request-id'),
          retryAfter: response.headers.get('retry-after'),
        });
      } catch {
        /* not listening yet */
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return seen;
    },
  };
}

/**
 * What a client meets on `port` after `command`: the server's greeting, then (with a command) the first
 * line that answers it (`a OK …`, or an SMTP reply). Empty when nothing answers within 5 s.
 */
function lineExchange(port: number, command: string | undefined, answered: RegExp): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    let sent = false;
    const done = () => {
      socket.destroy();
      resolve(received);
    };
    socket.setTimeout(5000, done);
    socket.on('error', done);
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (!received.includes('\r\n')) return;
      if (command === undefined) return done();
      if (!sent) {
        sent = true;
        socket.write(`${command}\r\n`);
      } else if (answered.test(received)) done();
    });
  });
}

/** The IMAP sandbox npm start printed (scripts/local-stack/imap-sandbox.ts), or undefined when it says it is off. */
function sandboxOf(
  started: Started,
): { imapPort: number; smtpPort: number; username: string; password: string } | undefined {
  const ports = /IMAP sandbox {4}host 127\.0\.0\.1, IMAP port (\d+), SMTP port (\d+)/.exec(started.output());
  const login = /username (\S+), password (\S+)/.exec(started.output());
  if (!ports || !login) return undefined;
  return { imapPort: Number(ports[1]), smtpPort: Number(ports[2]), username: login[1]!, password: login[2]! };
}

/** npm start's IMAP sandbox answers: an IMAP login with the printed credentials, and SMTP submission's greeting. */
async function expectSandboxServes(started: Started): Promise<void> {
  const sandbox = sandboxOf(started);
  expect(sandbox, started.output().slice(-1500)).toBeDefined();
  const login = await lineExchange(
    sandbox!.imapPort,
    `a LOGIN "${sandbox!.username}" "${sandbox!.password}"`,
    /^a (OK|NO|BAD)/m,
  );
  expect(login).toMatch(/^a OK/m);
  const refused = await lineExchange(
    sandbox!.imapPort,
    `a LOGIN "${sandbox!.username}" "not-the-password"`,
    /^a (OK|NO|BAD)/m,
  );
  expect(refused).toMatch(/^a NO/m);
  expect(await lineExchange(sandbox!.smtpPort, undefined, /./)).toMatch(/^220 /);
}

/** The build folders of running instances (scripts/start.ts: `.switchboard/build/<pid>`). */
function buildFolders(): string[] {
  try {
    return readdirSync(join(ROOT, '.switchboard', 'build'));
  } catch {
    return [];
  }
}

const running: Started[] = [];
afterAll(async () => {
  for (const started of running) if (groupAlive(started.child.pid!)) process.kill(-started.child.pid!, 'SIGKILL');
});

describe('npm start', () => {
  it('serves the API with the seeded key, isolates applications, stops cleanly and starts again', async () => {
    const ports = {
      PORT: await freePort(),
      LAMBDA_PORT: await freePort(),
      DYNAMODB_PORT: await freePort(),
      SQS_PORT: await freePort(),
      SMTP_PORT: await freePort(),
      SANDBOX_IMAP_PORT: await freePort(),
      SANDBOX_SMTP_PORT: await freePort(),
    };
    const env = Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)]));
    const baseUrl = `http://127.0.0.1:${ports.PORT}`;

    // First start, with a client asking all along: before it is ready the port answers 503 "starting"
    // in the envelope, never a 5xx that reads like a crash; once it printed "ready" a request succeeds.
    const whileStarting = pollWhileStarting(baseUrl, 'e2e-local-key');
    const first = await npmStart({ ...env, API_KEY: 'e2e-local-key' });
    running.push(first);
    const seen = await whileStarting.stop();
    expect(
      seen.filter((s) => s.status !== 503 && s.status !== 200),
      JSON.stringify(seen.slice(0, 5)),
    ).toEqual([]);
    const starting = seen.find((s) => s.status === 503);
    expect(starting, 'a 503 while starting').toBeDefined();
    expect(starting!.body.error).toMatchObject({ type: 'service_unavailable' });
    expect(starting!.body.error?.message).toMatch(/^starting/);
    expect(starting!.body.request_id).toBe(starting!.requestId);
    expect(Number(starting!.retryAfter)).toBeGreaterThan(0);
    // Everything it started listens on loopback only.
    if (process.platform === 'linux') {
      for (const [name, port] of Object.entries(ports)) {
        expect(listeners(port).length, `${name} ${port} listens`).toBeGreaterThan(0);
        expect(
          listeners(port).filter((a) => !LOOPBACK_LISTENERS.includes(a)),
          `${name} ${port} also listens on`,
        ).toEqual([]);
      }
    }
    expect(first.output()).toContain(`Base URL        ${baseUrl}`);
    // The IMAP sandbox (Dovecot) on the ports asked for, with the credentials it printed.
    expect(sandboxOf(first)).toMatchObject({
      imapPort: ports.SANDBOX_IMAP_PORT,
      smtpPort: ports.SANDBOX_SMTP_PORT,
      username: 'sandbox@imap.localhost',
    });
    await expectSandboxServes(first);
    const local = apiClient(baseUrl, 'e2e-local-key');
    expect((await local.get('/v3/grants')).status).toBe(200);
    expect((await apiClient(baseUrl).get('/v3/grants')).status).toBe(401);

    // What the local HTTP layer answers by itself is in the envelope too, and bodies it hands over parsed are refused.
    const auth = 'Authorization: Bearer e2e-local-key\r\n';
    const cases: [string, string, number][] = [
      ['invalid path escape', `GET /v3/grants/%E0%A4%A HTTP/1.1\r\n${auth}`, 400],
      ['unknown method token', `FOO /v3/grants HTTP/1.1\r\n${auth}`, 405],
      ['lower-case method', `get /v3/grants HTTP/1.1\r\n${auth}`, 405],
      ['known method, no route', `PROPFIND /v3/grants HTTP/1.1\r\n${auth}`, 405],
      [
        'Content-Type: json',
        `POST /v3/connect/custom HTTP/1.1\r\n${auth}Content-Type: json\r\nContent-Length: 2\r\n\r\n{}`,
        415,
      ],
      [
        'multipart without a boundary',
        `POST /v3/grants/x/messages/send HTTP/1.1\r\n${auth}Content-Type: multipart/form-data\r\nContent-Length: 1\r\n\r\nx`,
        415,
      ],
      [
        'multipart with an empty boundary',
        `POST /v3/grants/x/messages/send HTTP/1.1\r\n${auth}Content-Type: multipart/form-data; boundary=\r\nContent-Length: 1\r\n\r\nx`,
        415,
      ],
      ['a * request target', `OPTIONS * HTTP/1.1\r\n${auth}`, 400],
      ['an absolute request target', `GET http://127.0.0.1/v3/grants HTTP/1.1\r\n${auth}`, 400],
      ['16 KB page token', `GET /v3/grants?page_token=${'a'.repeat(16 * 1024)} HTTP/1.1\r\n${auth}`, 431],
      ['64 KB page token', `GET /v3/grants?page_token=${'a'.repeat(64 * 1024)} HTTP/1.1\r\n${auth}`, 431],
      ['200 KB of headers', `GET /v3/grants HTTP/1.1\r\n${auth}X-Filler: ${'b'.repeat(200 * 1024)}\r\n`, 431],
      [
        'body over 10 MiB',
        `POST /v3/connect/custom HTTP/1.1\r\n${auth}Content-Type: application/json\r\nContent-Length: ${11 * 1024 * 1024}\r\n\r\n{`,
        413,
      ],
      ['two Authorization headers', `GET /v3/grants HTTP/1.1\r\nAuthorization: Bearer nope\r\n${auth}`, 400],
      [
        'JSON body 0',
        `POST /v3/connect/custom HTTP/1.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 1\r\n\r\n0`,
        400,
      ],
      [
        'JSON body false',
        `POST /v3/connect/custom HTTP/1.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 5\r\n\r\nfalse`,
        400,
      ],
      [
        'JSON body null',
        `POST /v3/connect/custom HTTP/1.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 4\r\n\r\nnull`,
        400,
      ],
      [
        'JSON body ""',
        `POST /v3/connect/custom HTTP/1.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 2\r\n\r\n""`,
        400,
      ],
    ];
    for (const [what, request, status] of cases) {
      const text = (request.includes('\r\n\r\n') ? request : `${request}\r\n`).replace(
        'HTTP/1.1\r\n',
        'HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n',
      );
      const reply = await rawRequest(ports.PORT, text);
      expect(reply.status, `${what}: ${reply.raw.slice(0, 300)}`).toBe(status);
      const body = JSON.parse(reply.body);
      expect(body.request_id, what).toBe(reply.headers['x-request-id']);
      expect(typeof body.error.message, what).toBe('string');
    }

    // A body over the limit, sent whole by Node's fetch before it reads: the 413 is what it reads.
    const oversized = await fetch(`${baseUrl}/v3/connect/custom`, {
      method: 'POST',
      headers: { authorization: 'Bearer e2e-local-key', 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'agent', name: 'x'.repeat(10 * 1024 * 1024) }),
    });
    expect(oversized.status).toBe(413);
    expect(((await oversized.json()) as { error: { type: string } }).error.type).toBe('payload_too_large');

    // An Agent Account of the seeded application, created through serverless offline.
    const created = await local.post('/v3/connect/custom', {
      provider: 'agent',
      settings: { email_address: 'e2e@agents.test' },
    });
    expect(created.status).toBe(201);
    const grant = created.body.data;
    expect((await local.get(`/v3/grants/${encodeURIComponent('email:e2e@agents.test')}`)).body.data.id).toBe(grant.id);
    // A trailing slash is another path, as API Gateway matches it: 404, and the grant stays.
    const slashed = await local.delete(`/v3/grants/${grant.id}/`);
    expect(slashed.status).toBe(404);
    expect(slashed.body.error.type).toBe('not_found_error');
    expect((await local.get(`/v3/grants/${grant.id}`)).status).toBe(200);

    // A second application made with the admin CLI sees none of it. The CLI is pointed at this
    // instance: other end-to-end files may run their own npm start at the same time.
    const { stdout } = await run(
      'npm',
      ['run', '--silent', 'admin', '--', 'create-app', '--name', 'Second app', '--port', String(ports.PORT)],
      { cwd: ROOT, env: cleanEnv({}) },
    );
    const second = JSON.parse(stdout) as { application_id: string; api_key: string };
    expect(second.application_id).toMatch(/^app_/);
    const other = apiClient(baseUrl, second.api_key);
    expect((await other.get('/v3/grants')).body.data).toEqual([]);
    for (const ref of [grant.id, `grant:${grant.id}`, 'e2e@agents.test', 'email:e2e@agents.test']) {
      expect((await other.get(`/v3/grants/${encodeURIComponent(ref)}`)).status).toBe(404);
      expect((await other.patch(`/v3/grants/${encodeURIComponent(ref)}`, { blocked: true })).status).toBe(404);
      expect((await other.delete(`/v3/grants/${encodeURIComponent(ref)}`)).status).toBe(404);
    }
    expect((await local.get(`/v3/grants/${grant.id}`)).body.data.blocked).toBe(false);

    // Webhooks through serverless-offline-sqs: the fan-out and delivery workers run locally.
    const receiver = await startReceiver();
    try {
      const hook = await local.post('/v3/webhooks', { webhook_url: receiver.url, trigger_types: ['grant.created'] });
      expect(hook.status, hook.text).toBe(200);
      const another = await local.post('/v3/connect/custom', {
        provider: 'agent',
        settings: { email_address: 'e2e-2@agents.test' },
      });
      const [delivered] = await receiver.waitFor(1, 30_000);
      expect(delivered, first.output().slice(-2000)).toBeDefined();
      expect(JSON.parse(delivered!.raw.toString())).toMatchObject({
        type: 'grant.created',
        data: { grant_id: another.body.data.id },
      });
    } finally {
      await receiver.close();
    }

    // Ctrl-C stops every child: nothing listens on any of the ports afterwards.
    await ctrlC(first);
    expect(first.output()).toContain('stopping');
    for (const port of Object.values(ports)) expect(await portOpen(port), `port ${port}`).toBe(false);

    // A second start on the same ports works (fresh in-memory state).
    const again = await npmStart({ ...env, API_KEY: 'e2e-local-key' });
    running.push(again);
    const list = await local.get('/v3/grants');
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([]);
    await ctrlC(again);
  }, 300_000);

  it('runs two instances from one checkout, started and stopped in any order', async () => {
    const ports = async () => ({ PORT: await freePort(), LAMBDA_PORT: await freePort(), SMTP_PORT: await freePort() });
    const asEnv = (p: Record<string, number>) => Object.fromEntries(Object.entries(p).map(([k, v]) => [k, String(v)]));
    const portsA = await ports();
    const portsB = await ports();
    const a = apiClient(`http://127.0.0.1:${portsA.PORT}`, 'key-a');
    const b = apiClient(`http://127.0.0.1:${portsB.PORT}`, 'key-b');
    // Every endpoint group answers from its own function: one that was never loaded must still load.
    // A failure shows the instance's console (the function's own error is logged there, not answered).
    let consoleOf: Record<string, Started> = {};
    const serves = async (client: typeof a, path: string) => {
      const response = await client.get(path);
      const tail = consoleOf[client === a ? 'a' : 'b']?.output().slice(-4000) ?? '';
      expect(
        response.status,
        `${path}: ${response.text.slice(0, 300)}\n--- npm start console (tail) ---\n${tail}`,
      ).toBe(200);
      expect(response.body.request_id).toBe(response.headers.get('x-request-id'));
    };

    const startA = await npmStart({ ...asEnv(portsA), API_KEY: 'key-a' });
    running.push(startA);
    const startB = await npmStart({ ...asEnv(portsB), API_KEY: 'key-b' });
    running.push(startB);
    consoleOf = { a: startA, b: startB };
    const folderOf = (started: Started) =>
      /functions built in [\d.]+ s \(\.switchboard\/build\/(\d+)\)/.exec(started.output())?.[1];
    expect(folderOf(startA)).toBeDefined();
    expect(folderOf(startB)).toBeDefined();
    expect(folderOf(startA)).not.toBe(folderOf(startB));
    expect(buildFolders()).toEqual(expect.arrayContaining([folderOf(startA), folderOf(startB)]));
    await serves(a, '/v3/grants');
    await serves(b, '/v3/grants');
    // Each has an IMAP sandbox of its own, on ports of its own.
    await expectSandboxServes(startA);
    await expectSandboxServes(startB);
    expect([sandboxOf(startA)!.imapPort, sandboxOf(startA)!.smtpPort]).not.toContain(sandboxOf(startB)!.imapPort);

    // A stops first: B's functions, loaded or not, still run.
    await ctrlC(startA);
    expect(await portOpen(sandboxOf(startA)!.imapPort)).toBe(false);
    await expectSandboxServes(startB);
    await serves(b, '/v3/webhooks');
    await serves(b, '/v3/lists');

    // A starts again while B runs; then B stops first.
    const againA = await npmStart({ ...asEnv(portsA), API_KEY: 'key-a' });
    running.push(againA);
    consoleOf = { a: againA, b: startB };
    await serves(a, '/v3/webhooks');
    await ctrlC(startB);
    await serves(a, '/v3/lists');
    await serves(a, '/v3/workspaces');
    await expectSandboxServes(againA);
    await ctrlC(againA);
    // Each removed its own build folder, and its IMAP sandbox's.
    for (const started of [startA, startB, againA]) {
      expect(buildFolders()).not.toContain(folderOf(started));
      expect(existsSync(join(ROOT, '.switchboard', 'imap', folderOf(started)!))).toBe(false);
    }
  }, 400_000);
});
