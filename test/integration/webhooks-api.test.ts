import { createHmac } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TRIGGER_TYPES } from '#schemas/webhooks';
import { clock } from '#shared/time';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { expectError, expectInvalid } from '../support/expect-error';
import { makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { startReceiver, type Receiver } from '../support/receiver';
import { freePort } from '../../scripts/local-stack/index';

/**
 * The webhook destinations API in local mode (plain http to loopback allowed): creation with the
 * challenge verification and each way it can fail, input checks, list/get/update/delete, secret
 * rotation, example payloads, test events, egress addresses and routing. Every test works in a
 * fresh application, so "nothing was created" can be checked with an empty list.
 */
let gateway: Gateway;
let api: ApiClient;
let applicationId: string;
const receivers: Receiver[] = [];

const WEBHOOK_ID = /^wh_[0-9a-hjkmnp-tv-z]{26}$/;
const SECRET = /^[0-9a-f]{64}$/;
const UNKNOWN_ID = 'wh_01jd6abcdefghjkmnpqrstvwxy';
const VERIFICATION_RULE =
  'The endpoint must answer GET ?challenge=<value> with 200 within 1 s and exactly the challenge value as the whole body';

const hmac = (raw: Buffer, secret: string) => createHmac('sha256', secret).update(raw).digest('hex');
/** A whole second, for the injectable clock (the handlers run in this process and share it). */
const T0 = Date.UTC(2026, 10, 20, 9, 30, 0);

/** Runs `act` with the clock standing at `ms`, so the times the handlers record are known exactly. */
async function atTime<T>(ms: number, act: () => Promise<T>): Promise<T> {
  const restore = clock.set(() => ms);
  try {
    return await act();
  } finally {
    restore();
  }
}
const typeOf = (r: { raw: Buffer }) => JSON.parse(r.raw.toString()).type as string;

async function receiver() {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

/** A loopback port where nothing listens. */
type Webhook = {
  id: string;
  object: string;
  description: string;
  trigger_types: string[];
  webhook_url: string;
  status: string;
  notification_email_addresses: string[];
  compressed_delivery: boolean;
  status_updated_at: number;
  created_at: number;
  updated_at: number;
  webhook_secret?: string;
};

async function create(url: string, extra: object = {}, client = api): Promise<Webhook & { webhook_secret: string }> {
  const r = await client.post('/v3/webhooks', { webhook_url: url, trigger_types: ['message.created'], ...extra });
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}

async function expectNoWebhooks(client = api) {
  const list = await client.get('/v3/webhooks');
  expect(list.status).toBe(200);
  expect(list.body.data).toEqual([]);
}

/** Sends a test event to a destination's URL and returns what the receiver got and the API answered. */
async function testEvent(r: Receiver, triggerType = 'message.created') {
  const before = r.received.length;
  const answer = await api.post('/v3/webhooks/send-test-event', { trigger_type: triggerType, webhook_url: r.url });
  expect(answer.status, answer.text).toBe(200);
  const got = await r.waitFor(before + 1, 5000);
  expect(got).toHaveLength(before + 1);
  // `data` says what happened, in words; the details are in `delivery`.
  expect(typeof answer.body.data).toBe('string');
  expect(answer.body.data).toContain(triggerType);
  return { answer: answer.body.delivery, got: got[before]! };
}

beforeAll(async () => {
  // Read when the webhook modules load, which happens at the gateway's first webhook request.
  process.env.WEBHOOK_TIMEOUT_MS = '1000';
  process.env.WEBHOOK_EGRESS_IPS = '203.0.113.7, 203.0.113.8';
  process.env.WEBHOOK_EGRESS_IPS_UPDATED_AT = '1767225600';
  gateway = await startGateway();
});

beforeEach(async () => {
  const app = await makeApplication();
  applicationId = app.applicationId;
  api = apiClient(gateway.url, app.apiKey);
});

afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await gateway?.close();
});

describe('POST /v3/webhooks: verification', () => {
  it('verifies with a GET carrying a challenge, then returns the destination with its secret once', async () => {
    // Prepare
    const r = await receiver();
    const requests: { method?: string; url?: string }[] = [];
    r.onChallenge((challenge, res) => {
      const req = (res as ServerResponse & { req: IncomingMessage }).req;
      requests.push({ method: req.method, url: req.url });
      res
        .writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(challenge) })
        .end(challenge);
    });

    // Act
    const created = await atTime(T0, () =>
      api.post('/v3/webhooks', {
        webhook_url: r.url,
        trigger_types: ['grant.created', 'message.created'],
        description: 'Production hook',
        notification_email_addresses: ['Ops@Example.com'],
        compressed_delivery: true,
      }),
    );

    // Assess
    expect(created.status, created.text).toBe(200);
    expect(r.challenges).toHaveLength(1);
    expect(r.challenges[0]).toMatch(/^[0-9a-f]{32}$/);
    expect(requests).toEqual([{ method: 'GET', url: `/hook?challenge=${r.challenges[0]}` }]);
    const data = created.body.data as Webhook;
    expect(Object.keys(data).sort()).toEqual(
      [
        'compressed_delivery',
        'created_at',
        'description',
        'id',
        'notification_email_addresses',
        'object',
        'status',
        'status_updated_at',
        'trigger_types',
        'updated_at',
        'webhook_secret',
        'webhook_url',
      ].sort(),
    );
    expect(data).toMatchObject({
      object: 'webhook',
      description: 'Production hook',
      trigger_types: ['grant.created', 'message.created'],
      webhook_url: r.url,
      status: 'active',
      notification_email_addresses: ['ops@example.com'],
      compressed_delivery: true,
    });
    expect(data.id).toMatch(WEBHOOK_ID);
    expect(data.webhook_secret).toMatch(SECRET);
    expect(data.created_at).toBe(T0 / 1000);
    expect(data.updated_at).toBe(T0 / 1000);
    expect(data.status_updated_at).toBe(T0 / 1000);

    // The secret is never shown again.
    const { webhook_secret: _secret, ...withoutSecret } = data;
    const got = await api.get(`/v3/webhooks/${data.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(withoutSecret);
    const list = await api.get('/v3/webhooks');
    expect(list.body.data).toEqual([withoutSecret]);
    expect(list.text).not.toContain(data.webhook_secret!);
    expect(got.text).not.toContain(data.webhook_secret!);
  });

  it('fills defaults for the optional fields', async () => {
    const r = await receiver();
    const created = await create(r.url);
    expect(created).toMatchObject({
      description: '',
      notification_email_addresses: [],
      compressed_delivery: false,
      trigger_types: ['message.created'],
      status: 'active',
    });
  });

  it('keeps a query string the URL already has and adds the challenge to it', async () => {
    const r = await receiver();
    let seen = '';
    r.onChallenge((challenge, res) => {
      seen = (res as ServerResponse & { req: IncomingMessage }).req.url!;
      res.writeHead(200, { 'content-length': Buffer.byteLength(challenge) }).end(challenge);
    });
    const created = await create(`${r.url}?team=7`);
    expect(created.webhook_url).toBe(`${r.url}?team=7`);
    expect(seen).toBe(`/hook?team=7&challenge=${r.challenges[0]}`);
  });

  type ChallengeAnswer = (challenge: string, res: ServerResponse) => void;
  const answerWith =
    (status: number, body: (challenge: string) => string): ChallengeAnswer =>
    (challenge, res) => {
      const text = body(challenge);
      res.writeHead(status, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(text) }).end(text);
    };

  it.each<[string, ChallengeAnswer, string]>([
    ['a wrong body', answerWith(200, () => 'hello'), 'the body was not exactly the challenge value'],
    ['an empty body', answerWith(200, () => ''), 'the body was not exactly the challenge value'],
    ['the challenge in quotes', answerWith(200, (c) => `"${c}"`), 'the body was not exactly the challenge value'],
    [
      'the challenge with a trailing newline',
      answerWith(200, (c) => `${c}\n`),
      'the body was not exactly the challenge value',
    ],
    [
      'the challenge with surrounding spaces',
      answerWith(200, (c) => ` ${c} `),
      'the body was not exactly the challenge value',
    ],
    [
      'the challenge inside JSON',
      answerWith(200, (c) => JSON.stringify({ challenge: c })),
      'the body was not exactly the challenge value',
    ],
    [
      'the challenge in upper case',
      answerWith(200, (c) => c.toUpperCase()),
      'the body was not exactly the challenge value',
    ],
    ['HTTP 201 with the challenge', answerWith(201, (c) => c), 'it answered HTTP 201'],
    ['HTTP 204', (_c, res) => res.writeHead(204).end(), 'it answered HTTP 204'],
    ['HTTP 302 with the challenge', answerWith(302, (c) => c), 'it answered HTTP 302'],
    ['HTTP 500 with the challenge', answerWith(500, (c) => c), 'it answered HTTP 500'],
    [
      'chunked encoding',
      (c, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write(c);
        res.end();
      },
      'it answered with chunked encoding',
    ],
  ])('refuses %s with 400, once, and creates nothing', async (_name, answer, why) => {
    // Prepare
    const r = await receiver();
    r.onChallenge(answer);

    // Act
    const response = await api.post('/v3/webhooks', { webhook_url: r.url, trigger_types: ['message.created'] });

    // Assess
    expectInvalid(response, `Verification of webhook_url failed: ${why}. ${VERIFICATION_RULE}`);
    expect(r.challenges).toHaveLength(1);
    await expectNoWebhooks();
  });

  it('refuses an endpoint that does not answer within the timeout', async () => {
    // Prepare: the response is never written.
    const r = await receiver();
    r.onChallenge(() => undefined);
    const started = Date.now();

    // Act
    const response = await api.post('/v3/webhooks', { webhook_url: r.url, trigger_types: ['message.created'] });

    // Assess
    const took = Date.now() - started;
    expectInvalid(response, `Verification of webhook_url failed: no answer within 1 s. ${VERIFICATION_RULE}`);
    expect(took).toBeGreaterThanOrEqual(950);
    expect(r.challenges).toHaveLength(1);
    await expectNoWebhooks();
  });

  it('refuses an endpoint that resets the connection', async () => {
    const r = await receiver();
    r.onChallenge((_c, res) => res.socket?.destroy());
    const response = await api.post('/v3/webhooks', { webhook_url: r.url, trigger_types: ['message.created'] });
    expectInvalid(response, /^Verification of webhook_url failed: ECONNRESET: socket hang up\. /);
    expect(r.challenges).toHaveLength(1);
    await expectNoWebhooks();
  });

  it('refuses a port where nothing listens', async () => {
    const port = await freePort();
    const response = await api.post('/v3/webhooks', {
      webhook_url: `http://127.0.0.1:${port}/hook`,
      trigger_types: ['message.created'],
    });
    expectInvalid(
      response,
      new RegExp(`^Verification of webhook_url failed: ECONNREFUSED: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\. `),
    );
    await expectNoWebhooks();
  });
});

describe('POST /v3/webhooks: input checks', () => {
  let r: Receiver;
  beforeEach(async () => {
    r = await receiver();
  });

  it.each<[string, (url: string) => unknown, string | RegExp]>([
    ['missing trigger_types', (url) => ({ webhook_url: url }), "Invalid request body: 'trigger_types' is required"],
    [
      'missing webhook_url',
      () => ({ trigger_types: ['message.created'] }),
      "Invalid request body: 'webhook_url' is required",
    ],
    [
      'empty trigger_types',
      (url) => ({ webhook_url: url, trigger_types: [] }),
      "Invalid request body: 'trigger_types' must have at least 1 items",
    ],
    // The message must say what is wrong with the field (a duplicate), not only which field it is.
    [
      'duplicate trigger types',
      (url) => ({ webhook_url: url, trigger_types: ['message.created', 'message.created'] }),
      /^Invalid request body: 'trigger_types' .*duplicate/i,
    ],
    [
      'trigger_types not an array',
      (url) => ({ webhook_url: url, trigger_types: 'message.created' }),
      "Invalid request body: 'trigger_types' must be of type array",
    ],
    [
      'an unknown trigger type',
      (url) => ({ webhook_url: url, trigger_types: ['message.created', 'message.exploded'] }),
      `'trigger_types' has unknown trigger type(s) message.exploded; valid trigger types: ${TRIGGER_TYPES.join(', ')}`,
    ],
    [
      'a suffixed trigger type that is not a subscription',
      (url) => ({ webhook_url: url, trigger_types: ['message.created.truncated'] }),
      /^'trigger_types' has unknown trigger type\(s\) message\.created\.truncated; valid trigger types: /,
    ],
    [
      'an invalid URL',
      () => ({ webhook_url: 'not a url', trigger_types: ['message.created'] }),
      "'webhook_url' must be an absolute URL such as https://example.com/webhooks",
    ],
    [
      'an empty URL',
      () => ({ webhook_url: '', trigger_types: ['message.created'] }),
      "Invalid request body: 'webhook_url' must not be empty",
    ],
    [
      'an ftp URL',
      (url) => ({ webhook_url: url.replace('http:', 'ftp:'), trigger_types: ['message.created'] }),
      "'webhook_url' must use https (plain http is accepted only for 127.0.0.1 or localhost in local mode)",
    ],
    [
      'plain http to a non-loopback IP',
      () => ({ webhook_url: 'http://10.0.0.1/x', trigger_types: ['message.created'] }),
      "'webhook_url' must use https (plain http is accepted only for 127.0.0.1 or localhost in local mode)",
    ],
    [
      'https to a private IP',
      () => ({ webhook_url: 'https://10.0.0.1/x', trigger_types: ['message.created'] }),
      "'webhook_url' is not reachable as a public address: 10.0.0.1 resolves to 10.0.0.1, which is not a public address",
    ],
    [
      'https to the metadata address',
      () => ({ webhook_url: 'https://169.254.169.254/latest', trigger_types: ['message.created'] }),
      /^'webhook_url' is not reachable as a public address: 169\.254\.169\.254 /,
    ],
    [
      'credentials in the URL',
      (url) => ({ webhook_url: url.replace('http://', 'http://user:secret@'), trigger_types: ['message.created'] }),
      "'webhook_url' must not contain credentials",
    ],
    [
      'a user name in the URL',
      (url) => ({ webhook_url: url.replace('http://', 'http://user@'), trigger_types: ['message.created'] }),
      "'webhook_url' must not contain credentials",
    ],
    [
      'an ngrok-free.app URL',
      () => ({ webhook_url: 'https://abc.ngrok-free.app/x', trigger_types: ['message.created'] }),
      "'webhook_url' points at an ngrok tunnel; ngrok URLs are not accepted",
    ],
    [
      'an ngrok.io URL',
      () => ({ webhook_url: 'https://x.ngrok.io/y', trigger_types: ['message.created'] }),
      "'webhook_url' points at an ngrok tunnel; ngrok URLs are not accepted",
    ],
    [
      'a malformed notification address',
      (url) => ({
        webhook_url: url,
        trigger_types: ['message.created'],
        notification_email_addresses: ['ops@example.com', 'not-an-email'],
      }),
      "Invalid request body: 'notification_email_addresses[1]' must be a valid email address",
    ],
    [
      'notification addresses as a string',
      (url) => ({
        webhook_url: url,
        trigger_types: ['message.created'],
        notification_email_addresses: 'ops@example.com',
      }),
      "Invalid request body: 'notification_email_addresses' must be of type array",
    ],
    [
      'compressed_delivery as a string',
      (url) => ({ webhook_url: url, trigger_types: ['message.created'], compressed_delivery: 'yes' }),
      "Invalid request body: 'compressed_delivery' must be of type boolean",
    ],
    [
      'an unknown field',
      (url) => ({ webhook_url: url, trigger_types: ['message.created'], webhook_secret: 'mine' }),
      "Invalid request body: unknown field 'webhook_secret'",
    ],
    [
      'status on create',
      (url) => ({ webhook_url: url, trigger_types: ['message.created'], status: 'inactive' }),
      "Invalid request body: unknown field 'status'",
    ],
  ])('refuses %s with 400 naming it, before any verification', async (_name, body, message) => {
    // Act
    const response = await api.post('/v3/webhooks', body(r.url));

    // Assess
    expectInvalid(response, message);
    expect(r.challenges).toEqual([]);
    await expectNoWebhooks();
  });

  it('refuses an unknown trigger type and names every one of the valid ones', async () => {
    const response = await api.post('/v3/webhooks', { webhook_url: r.url, trigger_types: ['nope'] });
    expect(response.status).toBe(400);
    for (const type of TRIGGER_TYPES) expect(response.body.error.message).toContain(type);
  });

  it('does not store the same notification address twice when two entries differ only in case', async () => {
    // Addresses are stored lower-cased, so uniqueness has to hold after lower-casing too: each is kept once.
    const response = await api.post('/v3/webhooks', {
      webhook_url: r.url,
      trigger_types: ['message.created'],
      notification_email_addresses: ['Ops@Example.com', 'ops@example.com'],
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body.data.notification_email_addresses).toEqual(['ops@example.com']);
  });

  it('refuses a 101st destination with 409, before verifying it', async () => {
    // Prepare: sequentially, since the limit is checked by counting.
    for (let i = 0; i < 100; i++) await create(`${r.url}/${i}`);
    const challenges = r.challenges.length;

    // Act
    const response = await api.post('/v3/webhooks', {
      webhook_url: `${r.url}/101`,
      trigger_types: ['message.created'],
    });

    // Assess
    expectError(response, 409, 'conflict_error', 'An application can have at most 100 webhook destinations');
    expect(r.challenges).toHaveLength(challenges);
    expect(challenges).toBe(100);
  }, 60_000);

  it('refuses a body that is not JSON', async () => {
    const response = await api.request('POST', '/v3/webhooks', {
      rawBody: '{"webhook_url":',
      headers: { 'content-type': 'application/json' },
    });
    expectInvalid(response, /^The request body is not valid JSON/);
    await expectNoWebhooks();
  });
});

describe('GET /v3/webhooks and /v3/webhooks/{id}', () => {
  it('pages newest first with limit and next_cursor, and applies select', async () => {
    // Prepare
    const r = await receiver();
    const a = await create(`${r.url}/a`);
    const b = await create(`${r.url}/b`);
    const c = await create(`${r.url}/c`);

    // Act
    const first = await api.get('/v3/webhooks?limit=1');
    const second = await api.get(`/v3/webhooks?limit=1&page_token=${first.body.next_cursor}`);
    const third = await api.get(`/v3/webhooks?limit=1&page_token=${second.body.next_cursor}`);

    // Assess
    expect([first, second, third].map((p) => p.status)).toEqual([200, 200, 200]);
    expect([...first.body.data, ...second.body.data, ...third.body.data].map((w: Webhook) => w.id)).toEqual([
      c.id,
      b.id,
      a.id,
    ]);
    expect(typeof first.body.next_cursor).toBe('string');
    expect(typeof second.body.next_cursor).toBe('string');
    expect(third.body).not.toHaveProperty('next_cursor');
    const all = await api.get('/v3/webhooks?limit=2&select=id,status');
    expect(all.body.data).toEqual([
      { id: c.id, status: 'active' },
      { id: b.id, status: 'active' },
    ]);
    expect(all.body.next_cursor).toEqual(expect.any(String));
  });

  it('refuses a forged page_token and unknown query parameters', async () => {
    expectInvalid(
      await api.get('/v3/webhooks?page_token=garbage'),
      'page_token is not valid for this request; pass next_cursor from the previous page unchanged',
    );
    expectInvalid(await api.get('/v3/webhooks?status=active'), "Invalid query: unknown query parameter 'status'");
    expectInvalid(
      await api.get('/v3/webhooks?select=secret'),
      /^'select' names unknown field\(s\): secret; available: /,
    );
  });

  it('gets one destination, with select', async () => {
    const r = await receiver();
    const created = await create(r.url, { description: 'one' });
    const got = await api.get(`/v3/webhooks/${created.id}?select=id,webhook_url,description`);
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual({ id: created.id, webhook_url: r.url, description: 'one' });
  });

  it("lists only the calling application's destinations", async () => {
    const r = await receiver();
    const mine = await create(r.url);
    const other = await makeApplication();
    const otherApi = apiClient(gateway.url, other.apiKey);
    await create(`${r.url}/other`, {}, otherApi);
    const list = await api.get('/v3/webhooks');
    expect(list.body.data.map((w: Webhook) => w.id)).toEqual([mine.id]);
  });
});

describe('404 for unknown, malformed and foreign webhook ids', () => {
  let foreignId: string;
  let foreignBefore: Webhook;
  let foreignApi: ApiClient;
  let foreignReceiver: Receiver;

  beforeEach(async () => {
    const other = await makeApplication();
    foreignApi = apiClient(gateway.url, other.apiKey);
    foreignReceiver = await receiver();
    const created = await create(foreignReceiver.url, {}, foreignApi);
    foreignId = created.id;
    foreignBefore = (await foreignApi.get(`/v3/webhooks/${foreignId}`)).body.data;
  });

  const calls: [string, (id: string) => Promise<ApiResponse>][] = [
    ['GET', (id) => api.get(`/v3/webhooks/${id}`)],
    ['PUT', (id) => api.put(`/v3/webhooks/${id}`, { description: 'taken over' })],
    ['PUT status inactive', (id) => api.put(`/v3/webhooks/${id}`, { status: 'inactive' })],
    ['DELETE', (id) => api.delete(`/v3/webhooks/${id}`)],
    ['rotate-secret', (id) => api.post(`/v3/webhooks/rotate-secret/${id}`)],
    ['deliveries', (id) => api.get(`/v3/webhooks/${id}/deliveries`)],
  ];

  it.each(calls)("%s answers 404 for an unknown, a malformed and another application's id", async (_name, call) => {
    for (const id of [UNKNOWN_ID, 'nope', 'wh_NOTAVALIDULID', foreignId]) {
      const response = await call(id);
      expectError(response, 404, 'not_found_error', `Webhook '${id}' not found`);
    }
    // The other application's destination is untouched.
    const after = await foreignApi.get(`/v3/webhooks/${foreignId}`);
    expect(after.status).toBe(200);
    expect(after.body.data).toEqual(foreignBefore);
  });
});

describe('PUT /v3/webhooks/{id}', () => {
  it('changes description, trigger types, notification addresses and compression, keeping status and secret, without verifying again', async () => {
    // Prepare
    const r = await receiver();
    const created = await atTime(T0, () => create(r.url, { description: 'before' }));

    // Act: a minute later.
    const updated = await atTime(T0 + 60_000, () =>
      api.put(`/v3/webhooks/${created.id}`, {
        description: 'after',
        trigger_types: ['grant.created', 'message.updated'],
        notification_email_addresses: ['Team@Example.com', 'b@example.com'],
        compressed_delivery: true,
        webhook_url: r.url,
      }),
    );

    // Assess
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body.data).not.toHaveProperty('webhook_secret');
    expect(updated.body.data).toMatchObject({
      id: created.id,
      description: 'after',
      trigger_types: ['grant.created', 'message.updated'],
      notification_email_addresses: ['team@example.com', 'b@example.com'],
      compressed_delivery: true,
      status: 'active',
      webhook_url: r.url,
      created_at: T0 / 1000,
      status_updated_at: T0 / 1000,
      updated_at: T0 / 1000 + 60,
    });
    expect(r.challenges).toHaveLength(1);
    expect((await api.get(`/v3/webhooks/${created.id}`)).body.data).toEqual(updated.body.data);
    // Same secret, and compression now applies: the signature covers the gzip bytes sent.
    const { got } = await testEvent(r);
    expect(got.headers['content-encoding']).toBe('gzip');
    expect(got.headers['x-service-signature']).toBe(hmac(got.raw, created.webhook_secret));
    expect(JSON.parse(gunzipSync(got.raw).toString()).type).toBe('message.created');
  });

  it('switches off with status inactive without verification, and back on with a verification and a new secret', async () => {
    // Prepare
    const r = await receiver();
    const created = await create(r.url);

    // Act
    const off = await api.put(`/v3/webhooks/${created.id}`, { status: 'inactive' });
    const challengesWhileOff = r.challenges.length;
    const on = await api.put(`/v3/webhooks/${created.id}`, { status: 'active' });

    // Assess
    expect(off.status, off.text).toBe(200);
    expect(off.body.data.status).toBe('inactive');
    expect(off.body.data).not.toHaveProperty('webhook_secret');
    expect(challengesWhileOff).toBe(1);
    expect(on.status, on.text).toBe(200);
    expect(on.body.data.status).toBe('active');
    expect(r.challenges).toHaveLength(2);
    expect(on.body.data.webhook_secret).toMatch(SECRET);
    // The published contract's 'pause' is the same as inactive.
    const paused = await api.put(`/v3/webhooks/${created.id}`, { status: 'pause' });
    expect(paused.status, paused.text).toBe(200);
    expect(paused.body.data.status).toBe('inactive');
    expect(on.body.data.webhook_secret).not.toBe(created.webhook_secret);
    expect((await api.get(`/v3/webhooks/${created.id}`)).body.data).not.toHaveProperty('webhook_secret');
    const { got } = await testEvent(r);
    expect(got.headers['x-service-signature']).toBe(hmac(got.raw, on.body.data.webhook_secret));
  });

  it('setting an active destination to active again neither verifies nor issues a secret', async () => {
    const r = await receiver();
    const created = await create(r.url);
    const again = await api.put(`/v3/webhooks/${created.id}`, { status: 'active' });
    expect(again.status).toBe(200);
    expect(again.body.data.status).toBe('active');
    expect(again.body.data).not.toHaveProperty('webhook_secret');
    expect(r.challenges).toHaveLength(1);
  });

  it('keeps the destination inactive, with its secret, when the reactivation verification fails', async () => {
    // Prepare
    const r = await receiver();
    const created = await create(r.url);
    await api.put(`/v3/webhooks/${created.id}`, { status: 'inactive' });
    const inactive = (await api.get(`/v3/webhooks/${created.id}`)).body.data;
    r.onChallenge((_c, res) => res.writeHead(500, { 'content-length': '0' }).end());

    // Act
    const on = await api.put(`/v3/webhooks/${created.id}`, { status: 'active' });

    // Assess
    expectInvalid(on, `Verification of webhook_url failed: it answered HTTP 500. ${VERIFICATION_RULE}`);
    expect(r.challenges).toHaveLength(2);
    const after = await api.get(`/v3/webhooks/${created.id}`);
    expect(after.body.data).toEqual(inactive);
    expect(after.body.data.status).toBe('inactive');
    const { got } = await testEvent(r);
    expect(got.headers['x-service-signature']).toBe(hmac(got.raw, created.webhook_secret));
  });

  it('verifies a new webhook_url and issues a new secret; a failing new URL leaves the old one', async () => {
    // Prepare
    const first = await receiver();
    const second = await receiver();
    const broken = await receiver();
    broken.onChallenge((_c, res) => res.writeHead(200, { 'content-length': '2' }).end('no'));
    const created = await create(first.url);

    // Act
    const moved = await api.put(`/v3/webhooks/${created.id}`, { webhook_url: second.url });
    const refused = await api.put(`/v3/webhooks/${created.id}`, {
      webhook_url: broken.url,
      description: 'not applied',
    });

    // Assess
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.data.webhook_url).toBe(second.url);
    expect(moved.body.data.status).toBe('active');
    expect(second.challenges).toHaveLength(1);
    expect(moved.body.data.webhook_secret).toMatch(SECRET);
    expect(moved.body.data.webhook_secret).not.toBe(created.webhook_secret);
    expectInvalid(
      refused,
      `Verification of webhook_url failed: the body was not exactly the challenge value. ${VERIFICATION_RULE}`,
    );
    expect(broken.challenges).toHaveLength(1);
    const after = (await api.get(`/v3/webhooks/${created.id}`)).body.data;
    expect(after.webhook_url).toBe(second.url);
    expect(after.description).toBe('');
    const { got } = await testEvent(second);
    expect(got.headers['x-service-signature']).toBe(hmac(got.raw, moved.body.data.webhook_secret));
  });

  it('refuses a new webhook_url that breaks the URL rules, without verifying anything', async () => {
    const r = await receiver();
    const created = await create(r.url);
    expectInvalid(
      await api.put(`/v3/webhooks/${created.id}`, { webhook_url: 'http://10.0.0.1/x' }),
      /^'webhook_url' must use https/,
    );
    expectInvalid(
      await api.put(`/v3/webhooks/${created.id}`, { webhook_url: 'https://abc.ngrok-free.app/x' }),
      /ngrok/,
    );
    expectInvalid(
      await api.put(`/v3/webhooks/${created.id}`, { trigger_types: ['nope'] }),
      /^'trigger_types' has unknown trigger type\(s\) nope; valid trigger types: /,
    );
    expect(r.challenges).toHaveLength(1);
    expect((await api.get(`/v3/webhooks/${created.id}`)).body.data.webhook_url).toBe(r.url);
  });

  it.each(['failing', 'failed'])('refuses status %s (set only by the service)', async (status) => {
    const r = await receiver();
    const created = await create(r.url);
    expectInvalid(
      await api.put(`/v3/webhooks/${created.id}`, { status }),
      "Invalid request body: 'status' must be one of: active, inactive, pause",
    );
    expect((await api.get(`/v3/webhooks/${created.id}`)).body.data.status).toBe('active');
  });

  it('refuses an empty body, a missing body and unknown fields', async () => {
    const r = await receiver();
    const created = await create(r.url);
    expectInvalid(
      await api.put(`/v3/webhooks/${created.id}`, {}),
      'Invalid request body: the request body must set at least one field',
    );
    expectInvalid(await api.put(`/v3/webhooks/${created.id}`), 'A JSON request body is required');
    expectInvalid(
      await api.put(`/v3/webhooks/${created.id}`, { webhook_secret: 'x' }),
      "Invalid request body: unknown field 'webhook_secret'",
    );
  });
});

describe('POST /v3/webhooks/rotate-secret/{id}', () => {
  it('issues a new secret, returned once, that signs the next deliveries', async () => {
    // Prepare
    const r = await receiver();
    const created = await create(r.url);

    // Act
    const rotated = await api.post(`/v3/webhooks/rotate-secret/${created.id}`);

    // Assess
    expect(rotated.status, rotated.text).toBe(200);
    const secret = rotated.body.data.webhook_secret as string;
    expect(secret).toMatch(SECRET);
    expect(secret).not.toBe(created.webhook_secret);
    expect(rotated.body.data).toMatchObject({ id: created.id, status: 'active', webhook_url: r.url });
    expect(r.challenges).toHaveLength(1);
    const got = await api.get(`/v3/webhooks/${created.id}`);
    expect(got.body.data).not.toHaveProperty('webhook_secret');
    expect(got.text).not.toContain(secret);
    const { got: delivery } = await testEvent(r);
    expect(delivery.headers['x-service-signature']).toBe(hmac(delivery.raw, secret));
    expect(delivery.headers['x-service-signature']).not.toBe(hmac(delivery.raw, created.webhook_secret));
  });

  it('gives a different secret at each rotation', async () => {
    const r = await receiver();
    const created = await create(r.url);
    const secrets = new Set([created.webhook_secret]);
    for (let i = 0; i < 3; i++)
      secrets.add((await api.post(`/v3/webhooks/rotate-secret/${created.id}`)).body.data.webhook_secret);
    expect(secrets.size).toBe(4);
  });
});

describe('POST /v3/webhooks/mock-payload', () => {
  it.each([...TRIGGER_TYPES])('gives an example %s payload as delivered', async (triggerType) => {
    // The published contract's form also names a webhook_url.
    const response = await atTime(T0, () =>
      api.post('/v3/webhooks/mock-payload', { trigger_type: triggerType, webhook_url: 'https://hooks.example.com/in' }),
    );
    expect(response.status, response.text).toBe(200);
    const payload = response.body.data;
    expect(Object.keys(payload)).toEqual([
      'specversion',
      'type',
      'source',
      'id',
      'time',
      'webhook_delivery_attempt',
      'data',
    ]);
    expect(payload.specversion).toBe('1.0');
    expect(payload.type).toBe(triggerType);
    expect(payload.webhook_delivery_attempt).toBe(1);
    expect(payload.id).toMatch(/^ntf_/);
    expect(payload.time).toBe(T0 / 1000);
    expect(payload.data.application_id).toBe(applicationId);
    expect(typeof payload.data.object).toBe('object');
    expect(payload.data.object).not.toBeNull();
    expect(Array.isArray(payload.data.object)).toBe(false);
    expect(Object.keys(payload.data.object).length).toBeGreaterThan(0);
  });

  it('refuses an unknown trigger type, listing the valid ones', async () => {
    expectInvalid(
      await api.post('/v3/webhooks/mock-payload', { trigger_type: 'message.exploded' }),
      `'trigger_type' has unknown trigger type(s) message.exploded; valid trigger types: ${TRIGGER_TYPES.join(', ')}`,
    );
    expectInvalid(await api.post('/v3/webhooks/mock-payload', {}), "Invalid request body: 'trigger_type' is required");
  });
});

describe('POST /v3/webhooks/send-test-event', () => {
  it('delivers one signed payload to a registered destination', async () => {
    // Prepare
    const r = await receiver();
    const created = await create(r.url);

    // Act
    const { answer, got } = await testEvent(r, 'grant.created');

    // Assess
    expect(answer).toEqual({ delivered: true, status_code: 200, duration_ms: expect.any(Number) });
    expect(got.headers['x-service-signature']).toBe(hmac(got.raw, created.webhook_secret));
    expect(got.headers['content-type']).toBe('application/json');
    const payload = JSON.parse(got.raw.toString());
    expect(Object.keys(payload)).toEqual([
      'specversion',
      'type',
      'source',
      'id',
      'time',
      'webhook_delivery_attempt',
      'data',
    ]);
    expect(payload).toMatchObject({
      specversion: '1.0',
      type: 'grant.created',
      webhook_delivery_attempt: 1,
      data: { application_id: applicationId },
    });
    // Sentinel: a second test event, sent after the first was answered, arrives right after it.
    await testEvent(r, 'message.created');
    expect(r.received.map(typeOf)).toEqual(['grant.created', 'message.created']);
  });

  it('reports a receiver answering 500 as not delivered', async () => {
    const r = await receiver();
    await create(r.url);
    r.script({ status: 500, body: 'boom' });
    const { answer } = await testEvent(r);
    expect(answer).toEqual({ delivered: false, status_code: 500, duration_ms: expect.any(Number) });
  });

  it('reports a receiver that does not answer in time with no status code', async () => {
    const r = await receiver();
    await create(r.url);
    r.script({ hang: true });
    const { answer } = await testEvent(r);
    expect(answer).toEqual({
      delivered: false,
      status_code: null,
      duration_ms: expect.any(Number),
      error: 'no response within 1000 ms',
    });
  });

  it("refuses a URL that is not one of the application's destinations, sending nothing", async () => {
    // Prepare: one receiver never registered, one registered by another application.
    const stranger = await receiver();
    const foreign = await receiver();
    await create(foreign.url, {}, apiClient(gateway.url, (await makeApplication()).apiKey));
    const mine = await receiver();
    await create(mine.url);

    // Act
    const unknown = await api.post('/v3/webhooks/send-test-event', {
      trigger_type: 'message.created',
      webhook_url: stranger.url,
    });
    const other = await api.post('/v3/webhooks/send-test-event', {
      trigger_type: 'message.created',
      webhook_url: foreign.url,
    });

    // Assess
    const message =
      "'webhook_url' must be the URL of one of this application's webhook destinations: its secret signs the test event";
    expectInvalid(unknown, message);
    expectInvalid(other, message);
    // Sentinel: a test event to the application's own destination, sent after both refusals, arrives.
    await testEvent(mine);
    expect(stranger.received).toHaveLength(0);
    expect(foreign.received).toHaveLength(0);
  });

  it('refuses an unknown trigger type and a missing field', async () => {
    const r = await receiver();
    await create(r.url);
    expectInvalid(
      await api.post('/v3/webhooks/send-test-event', { trigger_type: 'nope', webhook_url: r.url }),
      /^'trigger_type' has unknown trigger type\(s\) nope; valid trigger types: /,
    );
    expectInvalid(
      await api.post('/v3/webhooks/send-test-event', { trigger_type: 'message.created' }),
      "Invalid request body: 'webhook_url' is required",
    );
    // Sentinel: a valid test event, sent after both refusals, is the only thing that arrives.
    await testEvent(r, 'grant.created');
    expect(r.received.map(typeOf)).toEqual(['grant.created']);
  });
});

describe('GET /v3/webhooks/ip-addresses', () => {
  it('lists the egress addresses from WEBHOOK_EGRESS_IPS, with when they last changed', async () => {
    const response = await api.get('/v3/webhooks/ip-addresses');
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toEqual({ ip_addresses: ['203.0.113.7', '203.0.113.8'], updated_at: 1767225600 });
  });
});

describe('DELETE /v3/webhooks/{id} and the delivery log', () => {
  it('deletes, answering data.status success as the contract does, then answers 404', async () => {
    // Prepare
    const r = await receiver();
    const keep = await create(`${r.url}/keep`);
    const created = await create(r.url);

    // Act
    const deleted = await api.delete(`/v3/webhooks/${created.id}`);

    // Assess
    expect(deleted.status, deleted.text).toBe(200);
    expect(Object.keys(deleted.body)).toEqual(['request_id', 'data']);
    expect(deleted.body.data).toEqual({ status: 'success' });
    expect(deleted.body.request_id).toMatch(/^req_/);
    expectError(
      await api.get(`/v3/webhooks/${created.id}`),
      404,
      'not_found_error',
      `Webhook '${created.id}' not found`,
    );
    expectError(
      await api.delete(`/v3/webhooks/${created.id}`),
      404,
      'not_found_error',
      `Webhook '${created.id}' not found`,
    );
    expectError(
      await api.get(`/v3/webhooks/${created.id}/deliveries`),
      404,
      'not_found_error',
      `Webhook '${created.id}' not found`,
    );
    expect((await api.get('/v3/webhooks')).body.data.map((w: Webhook) => w.id)).toEqual([keep.id]);
    // Its URL no longer takes test events.
    expectInvalid(
      await api.post('/v3/webhooks/send-test-event', { trigger_type: 'message.created', webhook_url: r.url }),
      /^'webhook_url' must be the URL of one of this application's webhook destinations/,
    );
  });

  it('lists no deliveries for a new destination, and test events are not recorded', async () => {
    // Prepare
    const r = await receiver();
    const created = await create(r.url);
    const empty = await api.get(`/v3/webhooks/${created.id}/deliveries`);

    // Act
    await testEvent(r);
    r.script({ status: 503 });
    await testEvent(r);

    // Assess
    expect(empty.status, empty.text).toBe(200);
    expect(empty.body.data).toEqual([]);
    expect(empty.body).not.toHaveProperty('next_cursor');
    // sendTestEvent (shared/webhooks/service.ts) posts the payload without recordAttempt.
    const after = await api.get(`/v3/webhooks/${created.id}/deliveries?limit=5`);
    expect(after.status).toBe(200);
    expect(after.body.data).toEqual([]);
  });

  it('refuses a forged deliveries page_token', async () => {
    const r = await receiver();
    const created = await create(r.url);
    expectInvalid(
      await api.get(`/v3/webhooks/${created.id}/deliveries?page_token=abc`),
      /^page_token is not valid for this request/,
    );
  });
});

describe('routing', () => {
  it('does not take ip-addresses, mock-payload or send-test-event for a webhook id', async () => {
    expect((await api.get('/v3/webhooks/ip-addresses')).body.data.ip_addresses).toEqual(['203.0.113.7', '203.0.113.8']);
    expect((await api.post('/v3/webhooks/mock-payload', { trigger_type: 'grant.created' })).body.data.type).toBe(
      'grant.created',
    );
    // send-test-event reaches sendTestEvent: the registered destination gets the test payload.
    const r = await receiver();
    await create(r.url);
    const { answer, got } = await testEvent(r);
    expect(answer).toEqual({ delivered: true, status_code: 200, duration_ms: expect.any(Number) });
    expect(JSON.parse(got.raw.toString()).type).toBe('message.created');
  });

  it('answers 405 with Allow for PATCH on a destination and GET on rotate-secret', async () => {
    const r = await receiver();
    const created = await create(r.url);
    const patch = await api.patch(`/v3/webhooks/${created.id}`, { description: 'x' });
    expectError(
      patch,
      405,
      'method_not_allowed_error',
      `PATCH is not allowed on /v3/webhooks/${created.id}; allowed methods: GET, PUT, DELETE`,
    );
    expect(patch.headers.get('allow')).toBe('GET, PUT, DELETE');
    const get = await api.get(`/v3/webhooks/rotate-secret/${created.id}`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const del = await api.delete('/v3/webhooks');
    expect(del.status).toBe(405);
    expect(del.headers.get('allow')).toBe('GET, POST');
    expect((await api.get(`/v3/webhooks/${created.id}`)).body.data.description).toBe('');
  });

  it('requires an API key', async () => {
    const anonymous = apiClient(gateway.url);
    expectError(await anonymous.get('/v3/webhooks'), 401, 'authentication_error', /.+/);
    expectError(
      await anonymous.post('/v3/webhooks/mock-payload', { trigger_type: 'grant.created' }),
      401,
      'authentication_error',
      /.+/,
    );
  });
});
