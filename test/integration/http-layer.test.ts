import { gunzipSync } from 'node:zlib';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';

let gateway: Gateway;
let api: ApiClient;
let anonymous: ApiClient;

beforeAll(async () => {
  gateway = await startGateway();
  api = apiClient(gateway.url, (await makeApplication()).apiKey);
  anonymous = apiClient(gateway.url);
});

afterAll(async () => {
  await gateway?.close();
});

/** Raw request without fetch's automatic decompression, to see the bytes on the wire. */
function rawGet(
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(gateway.url + path, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

function expectEnvelope(response: { status: number; headers: Headers; body: any }, status: number, type: string) {
  expect(response.status).toBe(status);
  expect(response.body.error.type).toBe(type);
  expect(typeof response.body.error.message).toBe('string');
  expect(response.body.error.message.length).toBeGreaterThan(10);
  expect(response.body.request_id).toMatch(/^req_/);
  expect(response.headers.get('x-request-id')).toBe(response.body.request_id);
}

describe('authentication', () => {
  it('answers 401 without a key, with a malformed header and with an unknown key', async () => {
    expectEnvelope(await anonymous.get('/v3/grants'), 401, 'authentication_error');
    expectEnvelope(
      await anonymous.get('/v3/grants', { authorization: 'Basic dXNlcjpwYXNz' }),
      401,
      'authentication_error',
    );
    expectEnvelope(
      await anonymous.get('/v3/grants', { authorization: 'Bearer sbk_not-a-real-key' }),
      401,
      'authentication_error',
    );
    expectEnvelope(
      await anonymous.get('/v3/grants', { authorization: `Bearer ${'x'.repeat(5000)}` }),
      401,
      'authentication_error',
    );
  });

  it('authenticates before looking at the body', async () => {
    const response = await anonymous.request('POST', '/v3/connect/custom', {
      rawBody: '{not json',
      headers: { 'content-type': 'application/json' },
    });
    expectEnvelope(response, 401, 'authentication_error');
  });

  it('accepts the scheme case-insensitively', async () => {
    const key = (await makeApplication()).apiKey;
    expect((await anonymous.get('/v3/grants', { authorization: `bearer ${key}` })).status).toBe(200);
  });
});

describe('routing', () => {
  it('answers unknown paths with a 404 envelope', async () => {
    for (const path of ['/v3/nothing-here', '/v2/grants', '/', '/v3/grants/a/b/c']) {
      expectEnvelope(await api.get(path), 404, 'not_found_error');
    }
  });

  it('answers a wrong method with 405 and Allow', async () => {
    const response = await api.put('/v3/grants/grant_x', { blocked: true });
    expectEnvelope(response, 405, 'method_not_allowed_error');
    expect(response.headers.get('allow')).toBe('GET, PATCH, DELETE');
    expectEnvelope(await api.delete('/v3/grants'), 405, 'method_not_allowed_error');
    expectEnvelope(await api.get('/v3/connect/custom'), 405, 'method_not_allowed_error');
  });
});

describe('request bodies', () => {
  it('rejects malformed JSON with 400', async () => {
    const response = await api.request('POST', '/v3/connect/custom', {
      rawBody: '{"provider": "agent",',
      headers: { 'content-type': 'application/json' },
    });
    expectEnvelope(response, 400, 'invalid_request_error');
    expect(response.body.error.message).toMatch(/not valid JSON/);
  });

  it('rejects a missing body with 400 and a non-JSON content type with 415', async () => {
    expectEnvelope(
      await api.request('POST', '/v3/connect/custom', { headers: { 'content-type': 'application/json' } }),
      400,
      'invalid_request_error',
    );
    const response = await api.request('POST', '/v3/connect/custom', {
      rawBody: 'provider=agent',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectEnvelope(response, 415, 'unsupported_media_type_error');
    expect(response.body.error.message).toContain('application/json');
  });

  it('accepts JSON content types with parameters and +json suffixes', async () => {
    const contentTypes = [
      'application/json; charset=utf-8',
      'application/merge-patch+json',
      'application/vnd.api+json; charset=utf-8',
    ];
    for (const [i, contentType] of contentTypes.entries()) {
      const email = `ct-${Date.now()}-${i}@agents.test`;
      const body = JSON.stringify({ provider: 'agent', settings: { email_address: email } });
      const response = await api.request('POST', '/v3/connect/custom', {
        rawBody: body,
        headers: { 'content-type': contentType },
      });
      expect(response.status, `${contentType}: ${response.text}`).toBe(201);
      // The body was parsed as JSON: the grant is for the address it names.
      expect(response.body.data.email).toBe(email);
    }
  });

  it('rejects a body over 1 MiB with 413', async () => {
    const response = await api.post('/v3/connect/custom', {
      provider: 'agent',
      settings: { email_address: 'a@b.io' },
      pad: 'x'.repeat(1_100_000),
    });
    expectEnvelope(response, 413, 'payload_too_large');
    expect(response.body.error.message).toBe('JSON requests are limited to 1 MB (got 1.05 MB)');
  });

  it('says a limit under a megabyte in kilobytes (the credentials route takes 16 KB)', async () => {
    const response = await api.post('/v3/connect/credentials', { pad: 'x'.repeat(20_000) });
    expectEnvelope(response, 413, 'payload_too_large');
    expect(response.body.error.message).toBe('JSON requests are limited to 16 KB (got 20 KB)');
  });

  it('rejects JSON that is not an object with 400', async () => {
    for (const raw of ['[]', '42', '"agent"', 'null', 'true']) {
      const response = await api.request('POST', '/v3/connect/custom', {
        rawBody: raw,
        headers: { 'content-type': 'application/json' },
      });
      expectEnvelope(response, 400, 'invalid_request_error');
    }
  });
});

describe('responses', () => {
  it('gives every response a fresh request id in the body and x-request-id', async () => {
    const a = await api.get('/v3/grants');
    const b = await api.get('/v3/grants');
    expect(a.body.request_id).not.toBe(b.body.request_id);
    expect(a.headers.get('x-request-id')).toBe(a.body.request_id);
  });

  it('gzips bodies of 200 bytes or more when asked, and not smaller ones', async () => {
    const app = await makeApplication();
    const client = apiClient(gateway.url, app.apiKey);
    await makeAgentGrant(client);
    const big = await rawGet('/v3/grants', {
      authorization: `Bearer ${app.apiKey}`,
      'accept-encoding': 'gzip, deflate',
    });
    expect(big.headers['content-encoding']).toBe('gzip');
    expect(JSON.parse(gunzipSync(big.body).toString()).data).toHaveLength(1);

    const plain = await rawGet('/v3/grants', { authorization: `Bearer ${app.apiKey}` });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(plain.body.toString()).data).toHaveLength(1);

    const small = await rawGet('/v3/grants', { 'accept-encoding': 'gzip' });
    expect(small.status).toBe(401);
    expect(small.body.length).toBeLessThan(200);
    expect(small.headers['content-encoding']).toBeUndefined();
  });

  it('decodes percent-encoded path parameters', async () => {
    const grant = await makeAgentGrant(api);
    expect((await api.get(`/v3/grants/${encodeURIComponent(grant.email)}`)).body.data.id).toBe(grant.id);
    expect((await api.get(`/v3/grants/grant%3A${grant.id}`)).body.data.id).toBe(grant.id);
    expect((await api.get(`/v3/grants/%67rant%3A${grant.id}`)).body.data.id).toBe(grant.id);
  });
});
