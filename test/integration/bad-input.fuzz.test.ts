import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes as connectRoutes } from '#functions/connect/routes';
import { routes as grantRoutes } from '#functions/grants/routes';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { apiClient } from '../support/api';
import { startGateway, type Gateway } from '../support/gateway';

/**
 * Property: whatever malformed request a client sends to the foundation's endpoints, the answer is
 * a 4xx in the error envelope — never a 5xx, never a bare body. Each generated request carries at
 * least one defect by construction (bad credentials, unknown, ill-typed or out-of-range parameters,
 * broken or ill-typed JSON, wrong content type, unknown grant, a trailing slash or an empty path
 * segment), so none of them may succeed.
 */
let gateway: Gateway;
let apiKey: string;
let grantId: string;

beforeAll(async () => {
  // A trailing slash is ignored when routing, as serverless offline does: the grant functions must refuse such a path themselves.
  gateway = await startGateway({ ignoreTrailingSlash: true });
  apiKey = (await makeApplication('fuzz')).apiKey;
  grantId = (await makeAgentGrant(apiClient(gateway.url, apiKey))).id;
});

afterAll(async () => {
  await gateway?.close();
});

interface BadRequest {
  method: string;
  path: string;
  query?: string;
  headers: Record<string, string>;
  body?: string;
  defect: string;
}

const ENDPOINTS = [
  { method: 'POST', path: '/v3/connect/custom', body: true },
  { method: 'GET', path: '/v3/grants', body: false },
  { method: 'GET', path: '/v3/grants/{grant}', body: false },
  { method: 'PATCH', path: '/v3/grants/{grant}', body: true },
  { method: 'DELETE', path: '/v3/grants/{grant}', body: false },
] as const;
/** Every query parameter these endpoints know (from their schemas), so an "unknown" one is unknown everywhere. */
const KNOWN_QUERY = new Set(
  [...Object.values(grantRoutes), ...Object.values(connectRoutes)].flatMap((r) =>
    Object.keys(('query' in r ? (r.query as { properties?: object }) : {}).properties ?? {}),
  ),
);

const endpoint = fc.constantFrom(...ENDPOINTS);
const junk = fc.string({ unit: 'binary', maxLength: 60 });
/** What can travel in an HTTP header value. */
const headerJunk = fc.stringMatching(/^[\x21-\x7e]{0,60}$/);
const notJson = fc.oneof(
  fc.constantFrom('{', '{"provider":', "{'a':1}", 'undefined', '[1,2', '{"a":1}}', '\u0000', 'NaN'),
  junk.filter((s) => {
    try {
      JSON.parse(s);
      return false;
    } catch {
      return true;
    }
  }),
);
const wrongTypedValue = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.double(),
);

function target(e: (typeof ENDPOINTS)[number], grant: string) {
  return e.path.replace('{grant}', grant);
}

const badRequest: fc.Arbitrary<BadRequest> = fc.oneof(
  // Bad or missing credentials.
  fc
    .record({
      e: endpoint,
      auth: fc.oneof(
        fc.constant(''),
        fc.constant('Bearer'),
        headerJunk.map((j) => `Bearer x${j}`),
        headerJunk.map((j) => `Basic ${j}`),
      ),
    })
    .map(({ e, auth }) => ({
      method: e.method,
      path: target(e, grantId),
      headers: (auth ? { authorization: auth } : {}) as Record<string, string>,
      body: e.body ? '{}' : undefined,
      defect: 'auth',
    })),
  // Unknown query parameters.
  fc
    .record({
      e: endpoint,
      key: fc.stringMatching(/^[a-z_]{1,12}$/).filter((k) => !KNOWN_QUERY.has(k)),
      value: fc.string({ maxLength: 20 }),
    })
    .map(({ e, key, value }) => ({
      method: e.method,
      path: target(e, grantId),
      query: `${key}=${encodeURIComponent(value)}`,
      headers: { 'content-type': 'application/json' },
      body: e.body ? '{"blocked":true}' : undefined,
      defect: 'unknown query',
    })),
  // Ill-typed list parameters.
  fc
    .record({
      param: fc.constantFrom('limit', 'offset'),
      value: fc.oneof(
        fc.constantFrom('0', '-1', '1.5', 'abc', '', '1e400', '10001', '99999999999', 'NaN', '-Infinity'),
        fc.stringMatching(/^[a-z]{1,8}$/),
      ),
    })
    // offset=0 is valid; limit above 200 is valid (treated as 200).
    .filter(({ param, value }) => (param === 'offset' ? value !== '0' : !['10001', '99999999999'].includes(value)))
    .map(({ param, value }) => ({
      method: 'GET',
      path: '/v3/grants',
      query: `${param}=${value}`,
      headers: {},
      defect: 'bad list parameter',
    })),
  // Numbers no DynamoDB key or JavaScript number holds exactly, and times past the year 9999 (once a 500 from the DynamoDB client).
  fc
    .record({
      param: fc.constantFrom('limit', 'offset', 'since', 'before'),
      value: fc.oneof(
        fc.constantFrom(
          '9007199254740993',
          '99999999999999999999999',
          '1e308',
          '-1e308',
          '253402300800',
          '9'.repeat(400),
        ),
        fc.bigInt({ min: 2n ** 53n, max: 10n ** 30n }).map(String),
        fc.bigInt({ min: -(10n ** 30n), max: -1n }).map(String),
      ),
    })
    // A limit past the year 9999 in seconds is still a safe integer: treated as 200.
    .filter(({ param, value }) => !(param === 'limit' && value === '253402300800'))
    .map(({ param, value }) => ({
      method: 'GET',
      path: '/v3/grants',
      query: `${param}=${value}`,
      headers: {},
      defect: 'out-of-range parameter',
    })),
  // Forged page tokens.
  junk.map((j) => ({
    method: 'GET',
    path: '/v3/grants',
    query: `page_token=${encodeURIComponent(`x${j}`)}`,
    headers: {},
    defect: 'page token',
  })),
  // Broken JSON.
  fc.record({ e: fc.constantFrom(ENDPOINTS[0], ENDPOINTS[3]), body: notJson }).map(({ e, body }) => ({
    method: e.method,
    path: target(e, grantId),
    headers: { 'content-type': 'application/json' },
    body,
    defect: 'malformed json',
  })),
  // Wrong content type.
  fc
    .record({
      e: fc.constantFrom(ENDPOINTS[0], ENDPOINTS[3]),
      type: fc.constantFrom(
        'text/plain',
        'application/xml',
        'multipart/form-data; boundary=x',
        'application/x-www-form-urlencoded',
        'image/png',
      ),
    })
    .map(({ e, type }) => ({
      method: e.method,
      path: target(e, grantId),
      headers: { 'content-type': type },
      body: '{"blocked":true}',
      defect: 'content type',
    })),
  // Ill-typed or unknown fields in otherwise valid JSON.
  fc
    .oneof(
      wrongTypedValue.map((v) => ({ provider: 'agent', settings: { email_address: v } })),
      wrongTypedValue.map((v) => ({ provider: v, settings: { email_address: 'fuzz@agents.test' } })),
      fc
        .string({ maxLength: 40 })
        .filter((s) => !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(s))
        .map((v) => ({ provider: 'agent', settings: { email_address: v } })),
      fc
        .stringMatching(/^[a-z]{1,10}$/)
        .filter((k) => !['provider', 'settings', 'external_id'].includes(k))
        .map((k) => ({ provider: 'agent', settings: { email_address: 'fuzz@agents.test' }, [k]: 1 })),
      fc.constantFrom([], 'agent', 42, null),
    )
    .map((body) => ({
      method: 'POST',
      path: '/v3/connect/custom',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      defect: 'bad create body',
    })),
  fc
    .oneof(
      fc.constant({}),
      wrongTypedValue.filter((v) => typeof v !== 'boolean').map((v) => ({ blocked: v })),
      fc.oneof(fc.integer(), fc.boolean(), fc.constant(''), fc.constant('a/b')).map((v) => ({ external_id: v })),
      fc
        .stringMatching(/^[a-z]{1,10}$/)
        .filter((k) => !['blocked', 'external_id'].includes(k))
        .map((k) => ({ [k]: 'x' })),
    )
    .map((body) => ({
      method: 'PATCH',
      path: `/v3/grants/${grantId}`,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      defect: 'bad patch body',
    })),
  // A trailing slash or an empty segment: another path, which no route has (404, never the route without the slash).
  fc.record({ e: endpoint, trailing: fc.boolean() }).map(({ e, trailing }) => ({
    method: e.method,
    path: trailing ? `${target(e, grantId)}/` : target(e, grantId).replace('/v3/', '/v3//'),
    headers: { 'content-type': 'application/json' },
    body: e.body ? '{"blocked":true}' : undefined,
    defect: 'misshapen path',
  })),
  // Grants that do not exist (or `me`, which needs an access token).
  fc
    .record({
      e: fc.constantFrom(ENDPOINTS[2], ENDPOINTS[3], ENDPOINTS[4]),
      ref: fc.string({ minLength: 1, maxLength: 80 }),
    })
    .filter(({ ref }) => ref.trim() !== '' && !ref.includes('/'))
    .map(({ e, ref }) => ({
      method: e.method,
      path: target(e, encodeURIComponent(ref)),
      headers: { 'content-type': 'application/json' },
      body: e.body ? '{"blocked":false}' : undefined,
      defect: 'unknown grant',
    })),
);

describe('bad input', () => {
  it('answers a few hundred malformed requests with 4xx envelopes only', async () => {
    const seen = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(badRequest, async (req) => {
        const headers = { ...req.headers };
        if (req.defect !== 'auth') headers.authorization = `Bearer ${apiKey}`;
        const response = await fetch(`${gateway.url}${req.path}${req.query ? `?${req.query}` : ''}`, {
          method: req.method,
          headers,
          body: req.body,
        });
        const text = await response.text();
        const body = JSON.parse(text);
        seen.set(req.defect, (seen.get(req.defect) ?? 0) + 1);
        expect(
          response.status,
          `${req.defect}: ${req.method} ${req.path}?${req.query ?? ''} ${req.body ?? ''} → ${text}`,
        ).toBeGreaterThanOrEqual(400);
        expect(response.status, text).toBeLessThan(500);
        expect(body.request_id).toBe(response.headers.get('x-request-id'));
        expect(typeof body.error?.type).toBe('string');
        expect(typeof body.error?.message).toBe('string');
        if (req.defect === 'misshapen path') expect(body.error.type, text).toBe('not_found_error');
        if (req.defect === 'out-of-range parameter')
          expect(body.error.message, text).toMatch(/'(limit|offset|since|before)' must be ([<>]=|a finite number)/);
      }),
      { numRuns: 400 },
    );
    // Every kind of defect was exercised.
    expect([...seen.keys()].sort()).toEqual(
      [
        'auth',
        'bad create body',
        'bad list parameter',
        'bad patch body',
        'content type',
        'malformed json',
        'misshapen path',
        'out-of-range parameter',
        'page token',
        'unknown grant',
        'unknown query',
      ].sort(),
    );
  }, 120_000);
});
