import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundaryOf, startFrontDoor, type FrontDoor } from '../../scripts/local-stack/front-door';

/**
 * The local API Gateway stand-in of `npm start` (scripts/local-stack/front-door.ts), in front of a
 * plain HTTP server playing serverless offline: what it answers by itself, always in the envelope.
 */
type Upstream = (path: string) => { status: number; headers: Record<string, string>; body: string };

let upstream: Server;
let upstreamAnswer: Upstream = () => ({
  status: 200,
  headers: { 'x-request-id': 'req_upstream' },
  body: '{"ok":true}',
});
let door: FrontDoor;
let base: string;
const failures: { status: number; body: string }[] = [];

beforeAll(async () => {
  upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const { status, headers, body } = upstreamAnswer(req.url ?? '/');
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body);
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', () => resolve()));
  door = await startFrontDoor({
    port: 0,
    target: { host: '127.0.0.1', port: (upstream.address() as AddressInfo).port },
    starting: true,
    onFailure: (failure) => failures.push(failure),
  });
  base = `http://127.0.0.1:${door.port}`;
});

afterAll(async () => {
  await door?.close();
  await new Promise((resolve) => upstream?.close(resolve));
});

async function expectEnvelope(
  response: Response,
  status: number,
  type: string,
): Promise<{ request_id: string; error: { type: string; message: string } }> {
  const body = (await response.json()) as { request_id: string; error: { type: string; message: string } };
  expect(response.status, JSON.stringify(body)).toBe(status);
  expect(body.error.type).toBe(type);
  expect(body.error.message.length).toBeGreaterThan(10);
  expect(body.request_id).toMatch(/^req_/);
  expect(response.headers.get('x-request-id')).toBe(body.request_id);
  return body;
}

/** One request written as raw bytes (what fetch refuses to send), and its answer. */
function rawRequest(port: number, text: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let raw = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (raw += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', ...rest] = raw.split('\r\n\r\n');
      resolve({ status: Number(head.split(' ')[1]), body: rest.join('\r\n\r\n') });
    });
  });
}

describe('Front door: while npm start is starting', () => {
  it('answers 503 service_unavailable "starting" with Retry-After, for every method, until ready', async () => {
    for (const [method, path] of [
      ['GET', '/v3/grants'],
      ['POST', '/v3/connect/custom'],
      ['DELETE', '/v3/grants/x'],
    ]) {
      const response = await fetch(base + path, {
        method,
        headers: { 'content-type': 'application/json' },
        body: method === 'GET' ? undefined : '{}',
      });
      const body = await expectEnvelope(response, 503, 'service_unavailable');
      expect(body.error.message).toMatch(/^starting/);
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    // What is refused anyway is refused for what it is, starting or not.
    await expectEnvelope(
      await fetch(`${base}/v3/x`, {
        method: 'POST',
        headers: { 'content-type': 'multipart/form-data; boundary=' },
        body: 'x',
      }),
      415,
      'unsupported_media_type_error',
    );
    door.ready();
    const served = await fetch(`${base}/v3/grants`);
    expect(served.status).toBe(200);
    expect(await served.json()).toEqual({ ok: true });
  });
});

describe('Front door: answers that did not come from a function', () => {
  it('turns a failed invocation answered as 200 (a Lambda error body) into a 502 envelope, and tells the console', async () => {
    upstreamAnswer = () => ({
      status: 200,
      headers: {},
      body: JSON.stringify({
        errorMessage: "Cannot find module '.switchboard/build/1/functions/grants/handler'",
        errorType: 'Error',
        stackTrace: ['at x'],
      }),
    });
    const body = await expectEnvelope(await fetch(`${base}/v3/grants`), 502, 'internal_error');
    // Internals (paths, stack traces) stay on the console.
    expect(body.error.message).not.toContain('Cannot find module');
    expect(failures.at(-1)).toMatchObject({ status: 200 });
    expect(failures.at(-1)!.body).toContain('Cannot find module');
  });

  it('turns serverless offline’s own 502 and 500 into the 502 envelope', async () => {
    for (const status of [500, 502]) {
      upstreamAnswer = () => ({ status, headers: {}, body: '{"errorMessage":"boom","errorType":"Error"}' });
      await expectEnvelope(await fetch(`${base}/v3/grants`), 502, 'internal_error');
    }
  });

  it('puts a refusal of the local server itself (hapi) in the envelope with its status', async () => {
    upstreamAnswer = () => ({
      status: 400,
      headers: {},
      body: '{"statusCode":400,"error":"Bad Request","message":"Invalid cookie value"}',
    });
    const body = await expectEnvelope(await fetch(`${base}/v3/grants`), 400, 'invalid_request_error');
    expect(body.error.message).toContain('Invalid cookie value');
  });

  it('passes answers of the functions through unchanged, errors included', async () => {
    upstreamAnswer = () => ({
      status: 404,
      headers: { 'x-request-id': 'req_fn' },
      body: '{"request_id":"req_fn","error":{"type":"not_found_error","message":"nope"}}',
    });
    const response = await fetch(`${base}/v3/grants/x`);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({
      request_id: 'req_fn',
      error: { type: 'not_found_error', message: 'nope' },
    });
    upstreamAnswer = () => ({ status: 200, headers: { 'x-request-id': 'req_upstream' }, body: '{"ok":true}' });
  });
});

describe('Front door: requests it refuses by itself', () => {
  it('refuses empty and malformed multipart boundaries with 415', async () => {
    for (const contentType of [
      'multipart/form-data; boundary=',
      'multipart/form-data; boundary=""',
      'multipart/form-data; boundary= ',
      `multipart/form-data; boundary=${'a'.repeat(71)}`,
      'multipart/form-data; boundary="ends with space "',
      'multipart/form-data; boundary=a{b}',
      'multipart/form-data',
    ]) {
      const body = await expectEnvelope(
        await fetch(`${base}/v3/grants/g/messages/send`, {
          method: 'POST',
          headers: { 'content-type': contentType },
          body: 'x',
        }),
        415,
        'unsupported_media_type_error',
      );
      expect(body.error.message, contentType).toMatch(/boundary/);
    }
    // Valid boundaries pass: curl's, a quoted one with a space, 70 characters.
    for (const contentType of [
      'multipart/form-data; boundary=------------------------a1b2c3',
      'multipart/form-data; boundary="a b"',
      `multipart/form-data; boundary=${'a'.repeat(70)}`,
    ]) {
      expect(
        (
          await fetch(`${base}/v3/grants/g/messages/send`, {
            method: 'POST',
            headers: { 'content-type': contentType },
            body: 'x',
          })
        ).status,
        contentType,
      ).toBe(200);
    }
  });

  it('reads boundary parameters as RFC 2045 writes them', () => {
    expect(boundaryOf('multipart/form-data; boundary=abc')).toBe('abc');
    expect(boundaryOf('multipart/form-data; charset=utf-8; boundary="a b"; x=y')).toBe('a b');
    expect(boundaryOf('multipart/form-data; BOUNDARY=abc;')).toBe('abc');
    expect(boundaryOf('multipart/form-data; boundary=')).toBe('');
    expect(boundaryOf('multipart/form-data')).toBeUndefined();
  });

  it('answers 404 to a trailing slash, which API Gateway matches as another path (serverless offline would not)', async () => {
    for (const [method, path] of [
      ['DELETE', '/v3/grants/grant_1/'],
      ['GET', '/v3/grants/'],
      ['DELETE', '/v3/grants/grant_1/calendars/../'],
    ]) {
      const body = await expectEnvelope(await fetch(base + path, { method }), 404, 'not_found_error');
      expect(body.error.message).toContain('No endpoint');
    }
  });

  it('refuses request targets that are not paths with 400 in the envelope', async () => {
    for (const target of ['*', 'http://127.0.0.1/v3/grants', 'v3/grants']) {
      const reply = await rawRequest(
        door.port,
        `OPTIONS ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
      );
      expect(reply.status, target).toBe(400);
      const body = JSON.parse(reply.body);
      expect(body.error.type).toBe('invalid_request_error');
      expect(body.error.message).toContain('request target');
    }
  });

  it('answers 413 that Node’s fetch can read, whether the length is declared or the body is streamed', async () => {
    const declared = await fetch(`${base}/v3/connect/custom`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `"${'x'.repeat(11 * 1024 * 1024)}"`,
    });
    const body = await expectEnvelope(declared, 413, 'payload_too_large');
    expect(body.error.message).toContain('10 MiB');
    const streamed = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 12; i++) controller.enqueue(new Uint8Array(1024 * 1024));
        controller.close();
      },
    });
    await expectEnvelope(
      await fetch(`${base}/v3/connect/custom`, { method: 'POST', body: streamed, duplex: 'half' } as RequestInit),
      413,
      'payload_too_large',
    );
    // The connection still serves the next request.
    expect((await fetch(`${base}/v3/grants`)).status).toBe(200);
  });

  it('answers a 413 at once to a client that declared too much and sends nothing more', async () => {
    const reply = await rawRequest(
      door.port,
      `POST /v3/connect/custom HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${11 * 1024 * 1024}\r\n\r\n{`,
    );
    expect(reply.status).toBe(413);
    expect(JSON.parse(reply.body).error.type).toBe('payload_too_large');
  });
});
