import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ROUTES } from '#functions/routes';
import { routeKey, type RouteSpec } from '#shared/http/route';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { makeAgentGrant, makeApplication, uniqueEmail } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { requiredQuery } from '../support/schema-fields';

/**
 * Client values that become DynamoDB key values, past what a key holds (2,048 bytes in a partition
 * key, 1,024 in a sort key). The probe: `GET /scheduling/<2,100 × "a">`, public, answered 500 because
 * DynamoDB refused the key. Now a path parameter longer than any name is a 404 before anything else;
 * a query or body value is bounded by its schema (test/unit/schema-strings.test.ts), and one within
 * its bound that still would not fit a key (four-byte characters) is stored and found under its
 * digest; a forged page token is a 400. Nothing answers 500, and nothing refused is stored.
 */
let gateway: Gateway;
let api: ApiClient;
let anonymous: ApiClient;
let applicationId: string;
let grantId: string;

beforeAll(async () => {
  gateway = await startGateway();
  const app = await makeApplication('key-bounds');
  applicationId = app.applicationId;
  api = apiClient(gateway.url, app.apiKey);
  anonymous = apiClient(gateway.url);
  grantId = (await makeAgentGrant(api)).id;
});

afterAll(async () => {
  await gateway?.close();
});

const FOUR_BYTES = '𝒜'; // four bytes of UTF-8
const LONG_VALUES: [string, string][] = [
  ['2,100 × a', 'a'.repeat(2100)],
  ['5,012 characters', 'x'.repeat(5012)],
  ['300 four-byte characters (1,200 bytes)', FOUR_BYTES.repeat(300)],
];
/** An ID of the right shape that names nothing. */
const MISSING_ID = 'zz_01jzzzzzzzzzzzzzzzzzzzzzzz';

function expectEnvelope(response: ApiResponse, status: number, type: string, label: string) {
  expect(response.status, `${label}: ${response.text.slice(0, 300)}`).toBe(status);
  expect(response.body.request_id, label).toBe(response.headers.get('x-request-id'));
  expect(response.body.error.type, label).toBe(type);
  expect(typeof response.body.error.message, label).toBe('string');
}

/** What a client would see stored: the lists a refused request could have added to or changed. */
async function snapshot() {
  const lists = [
    '/v3/grants?limit=200',
    `/v3/grants/${grantId}/folders`,
    `/v3/grants/${grantId}/drafts?limit=200`,
    `/v3/grants/${grantId}/scheduling/configurations?limit=200`,
    '/v3/lists?limit=200',
  ];
  const out: Record<string, unknown> = {};
  for (const list of lists) out[list] = (await api.get(list)).body.data;
  return out;
}

const PATH_CASES = ALL_ROUTES.flatMap((route) =>
  [...route.path.matchAll(/\{(\w+)\}/g)].flatMap(([, param]) =>
    LONG_VALUES.map(([what, value]) => ({ route, param: param!, what, value })),
  ),
);

function pathWith(route: RouteSpec, param: string, value: string) {
  return route.path.replace(/\{(\w+)\}/g, (_, name: string) =>
    name === param ? encodeURIComponent(value) : name === 'grant_id' ? grantId : MISSING_ID,
  );
}

describe('path parameters longer than any name', () => {
  it('covers every parameter of every route, public ones included', () => {
    const labels = new Set(PATH_CASES.map((c) => `${routeKey(c.route)} ${c.param}`));
    expect(labels).toContain('GET /scheduling/{slug} slug');
    expect(labels).toContain('GET /v3/grants/{grant_id} grant_id');
    expect(labels).toContain('GET /v3/grants/{grant_id}/folders/{folder_id} folder_id');
    expect(PATH_CASES.length).toBeGreaterThan(300);
  });

  it('answers each with a 404 in the envelope, and stores nothing', async () => {
    const before = await snapshot();
    const failures: string[] = [];
    const queue = [...PATH_CASES];
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const { route, param, what, value } = next;
        const query = new URLSearchParams(requiredQuery(route));
        const url = `${pathWith(route, param, value)}${query.size ? `?${query}` : ''}`;
        const response = await api.request(
          route.method,
          url,
          route.body ? { rawBody: '{}', headers: { 'content-type': 'application/json' } } : {},
        );
        const ok =
          response.status === 404 &&
          response.body?.request_id === response.headers.get('x-request-id') &&
          response.body?.error?.type === 'not_found_error' &&
          String(response.body?.error?.message).includes(param);
        if (!ok)
          failures.push(`${routeKey(route)} ${param}=${what} → ${response.status} ${response.text.slice(0, 200)}`);
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    expect(failures).toEqual([]);
    expect(await snapshot()).toEqual(before);
  }, 240_000);

  it('answers the booking page of the probe: 404 at 2,040, 2,100 and 5,012 characters, as at 1,000 (a page no configuration has)', async () => {
    for (const length of [2040, 2100, 5012]) {
      expectEnvelope(
        await anonymous.get(`/scheduling/${'a'.repeat(length)}`),
        404,
        'not_found_error',
        `${length} characters`,
      );
    }
    // Within the bound, the lookup runs and finds nothing: the booking page's own 404 page.
    const missing = await anonymous.get(`/scheduling/${'a'.repeat(1000)}`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toContain('text/html');
  });
});

describe('values within their schema bounds whose keys would not fit', () => {
  it('stores and finds a folder named with 256 four-byte characters, and keeps the name unique', async () => {
    const name = FOUR_BYTES.repeat(256);

    const created = await api.post(`/v3/grants/${grantId}/folders`, { name });
    const again = await api.post(`/v3/grants/${grantId}/folders`, { name });

    expect(created.status, created.text).toBe(200);
    expect(created.body.data.name).toBe(name);
    expectEnvelope(again, 409, 'conflict_error', 'the same name again');
  });

  it('creates and finds a grant by an external ID of 256 four-byte characters', async () => {
    const externalId = FOUR_BYTES.repeat(256);

    const created = await api.post('/v3/connect/custom', {
      provider: 'nylas',
      settings: { email: uniqueEmail('long-external') },
      external_id: externalId,
    });
    const found = await api.get(`/v3/grants/${encodeURIComponent(`external:${externalId}`)}`);
    const other = await api.get(`/v3/grants/${encodeURIComponent(`external:${FOUR_BYTES.repeat(255)}b`)}`);

    expect(created.status, created.text).toBe(201);
    expect(found.status, found.text).toBe(200);
    expect(found.body.data.id).toBe(created.body.data.id);
    expectEnvelope(other, 404, 'not_found_error', 'another long external ID');
  });

  it('files a message by a metadata value of 500 four-byte characters, and finds it by that value', async () => {
    const value = FOUR_BYTES.repeat(500);

    const sent = await api.post(`/v3/grants/${grantId}/messages/send`, {
      to: [{ email: 'someone@example.net' }],
      subject: 'Long metadata',
      metadata: { key1: value },
    });
    expect(sent.status, sent.text).toBe(200);
    const found = await api.get(`/v3/grants/${grantId}/messages?metadata_pair=${encodeURIComponent(`key1:${value}`)}`);
    const notFound = await api.get(
      `/v3/grants/${grantId}/messages?metadata_pair=${encodeURIComponent(`key1:${value.slice(2)}`)}`,
    );

    expect(found.status, found.text).toBe(200);
    expect((found.body.data as { subject: string }[]).map((m) => m.subject)).toEqual(['Long metadata']);
    expect(notFound.body.data).toEqual([]);
  });
});

describe('page tokens holding keys longer than any issued', () => {
  it('are a 400, as any other forged token', async () => {
    const forged = (sk: string) =>
      Buffer.from(JSON.stringify({ pk: `app#${applicationId}`, sk }), 'utf8').toString('base64url');

    const long = await api.get(`/v3/grants?page_token=${forged(`grant#${'g'.repeat(2000)}`)}`);
    const fourBytes = await api.get(`/v3/grants?page_token=${forged(`grant#${FOUR_BYTES.repeat(500)}`)}`);

    expectEnvelope(long, 400, 'invalid_request_error', 'an ASCII sort key of 2,006 bytes');
    expectEnvelope(fourBytes, 400, 'invalid_request_error', 'a sort key of 2,006 bytes in 500 characters');
    expect(long.body.error.message).toContain('page_token');
  });
});
