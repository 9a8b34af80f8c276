import { execFile } from 'node:child_process';
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
function rawRequest(port: number, text: string): Promise<{ status: number; headers: Record<string, string>; body: string; raw: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let raw = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (raw += chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' || error.code === 'EPIPE' ? undefined : reject(error)));
    socket.on('close', () => {
      const answer = raw.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '');
      const [head = '', ...rest] = answer.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      let body = rest.join('\r\n\r\n');
      if (headers['transfer-encoding'] === 'chunked') body = body.replace(/^[0-9a-f]+\r\n/, '').replace(/\r\n0\r\n\r\n$/, '');
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body, raw });
    });
  });
}

const running: Started[] = [];
afterAll(async () => {
  for (const started of running) if (groupAlive(started.child.pid!)) process.kill(-started.child.pid!, 'SIGKILL');
});

describe('npm start', () => {
  it('serves the API with the seeded key, isolates applications, stops cleanly and starts again', async () => {
    const ports = { PORT: await freePort(), LAMBDA_PORT: await freePort(), DYNAMODB_PORT: await freePort(), SQS_PORT: await freePort(), SMTP_PORT: await freePort() };
    const env = Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)]));
    const baseUrl = `http://127.0.0.1:${ports.PORT}`;

    // First start.
    const first = await npmStart({ ...env, API_KEY: 'e2e-local-key' });
    running.push(first);
    // Everything it started listens on loopback only.
    if (process.platform === 'linux') {
      for (const [name, port] of Object.entries(ports)) {
        expect(listeners(port).length, `${name} ${port} listens`).toBeGreaterThan(0);
        expect(listeners(port).filter((a) => !LOOPBACK_LISTENERS.includes(a)), `${name} ${port} also listens on`).toEqual([]);
      }
    }
    expect(first.output()).toContain(`Base URL        ${baseUrl}`);
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
      ['Content-Type: json', `POST /v3/connect/custom HTTP/1.1\r\n${auth}Content-Type: json\r\nContent-Length: 2\r\n\r\n{}`, 415],
      ['multipart without a boundary', `POST /v3/grants/x/messages/send HTTP/1.1\r\n${auth}Content-Type: multipart/form-data\r\nContent-Length: 1\r\n\r\nx`, 415],
      ['16 KB page token', `GET /v3/grants?page_token=${'a'.repeat(16 * 1024)} HTTP/1.1\r\n${auth}`, 431],
      ['64 KB page token', `GET /v3/grants?page_token=${'a'.repeat(64 * 1024)} HTTP/1.1\r\n${auth}`, 431],
      ['200 KB of headers', `GET /v3/grants HTTP/1.1\r\n${auth}X-Filler: ${'b'.repeat(200 * 1024)}\r\n`, 431],
      ['body over 10 MiB', `POST /v3/connect/custom HTTP/1.1\r\n${auth}Content-Type: application/json\r\nContent-Length: ${11 * 1024 * 1024}\r\n\r\n{`, 413],
      ['two Authorization headers', `GET /v3/grants HTTP/1.1\r\nAuthorization: Bearer nope\r\n${auth}`, 400],
      ['JSON body 0', `POST /v3/connect/custom HTTP/1.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 1\r\n\r\n0`, 400],
      ['JSON body false', `POST /v3/connect/custom HTTP/1.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 5\r\n\r\nfalse`, 400],
      ['JSON body null', `POST /v3/connect/custom HTTP/1.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 4\r\n\r\nnull`, 400],
      ['JSON body ""', `POST /v3/connect/custom HTTP/1.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 2\r\n\r\n""`, 400],
    ];
    for (const [what, request, status] of cases) {
      const text = (request.includes('\r\n\r\n') ? request : `${request}\r\n`).replace('HTTP/1.1\r\n', 'HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n');
      const reply = await rawRequest(ports.PORT, text);
      expect(reply.status, `${what}: ${reply.raw.slice(0, 300)}`).toBe(status);
      const body = JSON.parse(reply.body);
      expect(body.request_id, what).toBe(reply.headers['x-request-id']);
      expect(typeof body.error.message, what).toBe('string');
    }

    // An Agent Account of the seeded application, created through serverless offline.
    const created = await local.post('/v3/connect/custom', { provider: 'agent', settings: { email_address: 'e2e@agents.test' } });
    expect(created.status).toBe(201);
    const grant = created.body.data;
    expect((await local.get(`/v3/grants/${encodeURIComponent('email:e2e@agents.test')}`)).body.data.id).toBe(grant.id);

    // A second application made with the admin CLI sees none of it. The CLI is pointed at this
    // instance: other end-to-end files may run their own npm start at the same time.
    const { stdout } = await run('npm', ['run', '--silent', 'admin', '--', 'create-app', '--name', 'Second app', '--port', String(ports.PORT)], { cwd: ROOT, env: cleanEnv({}) });
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
      const another = await local.post('/v3/connect/custom', { provider: 'agent', settings: { email_address: 'e2e-2@agents.test' } });
      const [delivered] = await receiver.waitFor(1, 30_000);
      expect(delivered, first.output().slice(-2000)).toBeDefined();
      expect(JSON.parse(delivered!.raw.toString())).toMatchObject({ type: 'grant.created', data: { grant_id: another.body.data.id } });
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
});
