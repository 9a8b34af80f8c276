import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ROUTES } from '#functions/routes';
import { routeKey, type RouteSpec } from '#shared/http/route';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import {
  bodyTextWith,
  fieldLabel,
  numberFields,
  outOfBounds,
  requiredQuery,
  type NumberField,
} from '../support/schema-fields';

/**
 * Every integer and number of every route's query and body, sent past its bounds over HTTP (2**53 + 2,
 * 23 digits, 1e308, the field's maximum + 1, -1e308): a 400 `invalid_request_error` in the envelope
 * naming the field and the bound, and nothing stored changes. The requests are generated from the
 * schemas, so a new field is covered the day it is added. Before the bounds, a capacity of
 * 9007199254740993 or `GET /v3/grants?since=99999999999999999999999` reached the DynamoDB client,
 * which threw, and clients got a 500.
 */
let gateway: Gateway;
let api: ApiClient;
let grantId: string;

beforeAll(async () => {
  gateway = await startGateway();
  api = apiClient(gateway.url, (await makeApplication('number-bounds')).apiKey);
  grantId = (await makeAgentGrant(api)).id;
});

afterAll(async () => {
  await gateway?.close();
});

/** An ID of the right shape that names nothing (validation comes before any lookup but the grant's). */
const MISSING_ID = 'zz_01jzzzzzzzzzzzzzzzzzzzzzzz';

const path = (route: RouteSpec) =>
  route.path.replace(/\{(\w+)\}/g, (_, name: string) => (name === 'grant_id' ? grantId : MISSING_ID));

const CASES = ALL_ROUTES.flatMap((route) =>
  numberFields(route).fields.flatMap((field) => outOfBounds(field).map((bad) => ({ route, field, ...bad }))),
);

/** What a client would see stored: the lists a refused request could have added to or changed. */
async function snapshot() {
  const lists = [
    '/v3/grants?limit=200',
    `/v3/grants/${grantId}/events?calendar_id=primary&limit=200`,
    `/v3/grants/${grantId}/drafts?limit=200`,
    `/v3/grants/${grantId}/messages/schedules?limit=200`,
    `/v3/grants/${grantId}/templates?limit=200`,
    `/v3/grants/${grantId}/scheduling/configurations?limit=200`,
    '/v3/rules?limit=200',
    '/v3/policies?limit=200',
  ];
  const out: Record<string, unknown> = {};
  for (const list of lists) {
    const response = await api.get(list);
    expect(response.status, `${list}: ${response.text}`).toBe(200);
    out[list] = response.body.data;
  }
  return out;
}

async function send(route: RouteSpec, field: NumberField, literal: string) {
  const query = new URLSearchParams(requiredQuery(route));
  let body: string | undefined = route.body ? '{}' : undefined;
  if (field.where === 'query') query.set(field.steps[0]!, literal);
  else body = bodyTextWith(field, literal);
  const url = `${path(route)}${query.size ? `?${query}` : ''}`;
  return {
    url,
    response: await api.request(route.method, url, {
      rawBody: body,
      headers: body ? { 'content-type': 'application/json' } : {},
    }),
  };
}

describe('numbers beyond their bounds, every route and field', () => {
  it('covers the fields the fuzz run found, and many more', () => {
    const labels = new Set(CASES.map((c) => `${routeKey(c.route)} ${fieldLabel(c.field)}`));
    expect(labels).toContain('POST /v3/grants/{grant_id}/events capacity');
    expect(labels).toContain('PUT /v3/grants/{grant_id}/events/{event_id} capacity');
    expect(labels).toContain('GET /v3/grants since');
    expect(labels).toContain('GET /v3/grants before');
    expect(CASES.length).toBeGreaterThan(500);
  });

  it('answers each with a 400 envelope naming the field and its bound, and stores nothing', async () => {
    const before = await snapshot();
    const failures: string[] = [];
    // A few at a time: the requests are independent, and the emulators answer faster side by side.
    const queue = [...CASES];
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const { route, field, literal, message } = next;
        const { url, response } = await send(route, field, literal);
        const ok =
          response.status === 400 &&
          response.body?.request_id === response.headers.get('x-request-id') &&
          response.body?.error?.type === 'invalid_request_error' &&
          typeof response.body?.error?.message === 'string' &&
          response.body.error.message.includes(message);
        if (!ok)
          failures.push(
            `${route.method} ${url} ${field.where} ${fieldLabel(field)}=${literal} → ${response.status} ${response.text.slice(0, 300)} (wanted ${message})`,
          );
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    expect(failures).toEqual([]);
    expect(await snapshot()).toEqual(before);
  }, 240_000);

  it('answers the cases of the issue exactly', async () => {
    const capacity = await api.request('POST', `/v3/grants/${grantId}/events?calendar_id=primary`, {
      rawBody: '{"when":{"start_time":1800000000,"end_time":1800003600},"capacity":9007199254740993}',
      headers: { 'content-type': 'application/json' },
    });
    expect(capacity.status, capacity.text).toBe(400);
    expect(capacity.body.error).toEqual({
      type: 'invalid_request_error',
      message: `Invalid request body: 'capacity' must be <= ${Number.MAX_SAFE_INTEGER}`,
    });

    const since = await api.get('/v3/grants?since=99999999999999999999999');
    expect(since.status, since.text).toBe(400);
    expect(since.body.error).toEqual({
      type: 'invalid_request_error',
      message: "Invalid query: 'since' must be <= 253402300799",
    });
    // The bounds themselves are accepted.
    expect((await api.get('/v3/grants?since=253402300799&before=0')).status).toBe(200);
  });

  it('refuses numbers JavaScript cannot hold exactly inside free-form objects too (template variables, grant settings)', async () => {
    const template = await api.post(`/v3/grants/${grantId}/templates`, {
      name: 'Bounds',
      engine: 'mustache',
      subject: 'n={{n}}',
      body: '<p>{{n}}</p>',
    });
    expect(template.status, template.text).toBe(200);
    const before = await snapshot();
    const cases: [string, string, string, string][] = [
      [
        'POST',
        `/v3/grants/${grantId}/templates/${template.body.data.id}/render`,
        '{"variables":{"n":9007199254740993}}',
        "'variables.n'",
      ],
      [
        'POST',
        `/v3/grants/${grantId}/drafts`,
        `{"subject":"x","template":{"id":"${template.body.data.id}","variables":{"n":-1e308}}}`,
        "'template.variables.n'",
      ],
      ['PATCH', `/v3/grants/${grantId}`, '{"settings":{"quota":1e300}}', "'settings.quota'"],
    ];
    for (const [method, url, body, field] of cases) {
      const response = await api.request(method, url, {
        rawBody: body,
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status, `${method} ${url}: ${response.text}`).toBe(400);
      expect(response.body.error.message).toContain(`${field} must be between -9007199254740991 and 9007199254740991`);
    }
    expect(await snapshot()).toEqual(before);
  });
});
