import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ROUTES } from '#functions/routes';
import type { RouteSpec } from '#shared/http/route';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { requiredQuery } from '../support/schema-fields';

/**
 * Paths match as API Gateway matches them: a trailing slash (or an empty segment) is another path,
 * which no route has, so it answers 404 `not_found_error` and changes nothing. Checked for every
 * route, through two gateways: one that routes as API Gateway does (the request reaches the
 * `$default` function), and one that ignores a trailing slash when it matches, as serverless offline
 * does (the request reaches the route's own function, which must refuse it: `DELETE /v3/grants/{id}/`
 * used to delete the grant). Real objects stand behind the IDs, so a route that still answered would
 * visibly change them.
 */
let exact: Gateway;
let loose: Gateway;
let apiKey: string;
let api: ApiClient;
const ids: Record<string, string> = {};

/** An ID of the right shape that names nothing, for the objects this file does not create. */
const MISSING_ID = 'zz_01jzzzzzzzzzzzzzzzzzzzzzzz';

beforeAll(async () => {
  [exact, loose] = await Promise.all([startGateway(), startGateway({ ignoreTrailingSlash: true })]);
  apiKey = (await makeApplication('exact-paths')).apiKey;
  api = apiClient(exact.url, apiKey);
  ids.grant_id = (await makeAgentGrant(api)).id;
  const template = await api.post(`/v3/grants/${ids.grant_id}/templates`, {
    name: 'Kept',
    engine: 'mustache',
    subject: 'Kept',
    body: '<p>kept</p>',
  });
  const draft = await api.post(`/v3/grants/${ids.grant_id}/drafts`, { subject: 'Kept' });
  const event = await api.post(`/v3/grants/${ids.grant_id}/events?calendar_id=primary&notify_participants=false`, {
    title: 'Kept',
    when: { start_time: 1_900_000_000, end_time: 1_900_003_600 },
  });
  for (const [name, response] of [
    ['template', template],
    ['draft', draft],
    ['event', event],
  ] as const) {
    if (response.status >= 300) throw new Error(`${name}: ${response.status} ${response.text}`);
  }
  ids.template_id = template.body.data.id;
  ids.draft_id = draft.body.data.id;
  ids.event_id = event.body.data.id;
});

afterAll(async () => {
  await Promise.all([exact?.close(), loose?.close()]);
});

const fill = (route: RouteSpec) => route.path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? MISSING_ID);

/** A body that would change the object, were the request to reach its route. */
function bodyOf(route: RouteSpec): string | undefined {
  if (!route.body) return undefined;
  if (route.method === 'PATCH' && route.path === '/v3/grants/{grant_id}') return '{"blocked":true}';
  if (route.method === 'PUT' && route.path.endsWith('/templates/{template_id}')) return '{"name":"Changed"}';
  if (route.method === 'PUT' && route.path.endsWith('/drafts/{draft_id}')) return '{"subject":"Changed"}';
  if (route.method === 'PUT' && route.path.endsWith('/events/{event_id}')) return '{"title":"Changed"}';
  return '{}';
}

/** The objects behind the IDs, and the lists they are in, as a client reads them. */
async function stored() {
  const reads = [
    `/v3/grants/${ids.grant_id}`,
    `/v3/grants/${ids.grant_id}/templates/${ids.template_id}`,
    `/v3/grants/${ids.grant_id}/drafts/${ids.draft_id}`,
    `/v3/grants/${ids.grant_id}/events/${ids.event_id}?calendar_id=primary`,
    '/v3/grants?limit=200',
    `/v3/grants/${ids.grant_id}/templates?limit=200`,
    `/v3/grants/${ids.grant_id}/drafts?limit=200`,
    `/v3/grants/${ids.grant_id}/events?calendar_id=primary&limit=200`,
  ];
  const out: Record<string, unknown> = {};
  for (const read of reads) {
    const response = await api.get(read);
    expect(response.status, `${read}: ${response.text}`).toBe(200);
    out[read] = response.body.data;
  }
  return out;
}

function expectNotFound(
  what: string,
  status: number | undefined,
  text: string,
  requestIdHeader: string | null | undefined,
  hint: RegExp,
) {
  expect(status, `${what} → ${text}`).toBe(404);
  let body: { request_id?: string; error?: { type?: string; message?: string } } = {};
  try {
    body = JSON.parse(text);
  } catch {
    expect.fail(`${what} → not JSON: ${text.slice(0, 300)}`);
  }
  expect(body.request_id, what).toBe(requestIdHeader);
  expect(body.error?.type, what).toBe('not_found_error');
  expect(body.error?.message, what).toMatch(hint);
}

describe('paths match exactly, every route', () => {
  it('answers a trailing slash or an empty segment with 404, whichever way the request is routed, and changes nothing', async () => {
    const before = await stored();
    const looseApi = apiClient(loose.url, apiKey);
    for (const route of ALL_ROUTES) {
      const path = fill(route);
      const query = new URLSearchParams(requiredQuery(route)).toString();
      const body = bodyOf(route);
      const send = (client: ApiClient, p: string) =>
        client.request(route.method, `${p}${query ? `?${query}` : ''}`, {
          rawBody: body,
          headers: body ? { 'content-type': 'application/json' } : {},
        });
      const variants = [
        { via: 'API Gateway', client: api, path: `${path}/`, hint: /^No endpoint .*trailing slash names another path/ },
        {
          via: 'API Gateway',
          client: api,
          path: path.replace(/^(\/[^/]+)\//, '$1//'),
          hint: /^No endpoint .*'\/\/' names another path/,
        },
        // Routed, as serverless offline matches, to the function whose route has the path without the slash: the function refuses it.
        {
          via: 'loose routing',
          client: looseApi,
          path: `${path}/`,
          hint: /^No endpoint .*trailing slash names another path/,
        },
      ];
      for (const variant of variants) {
        const response = await send(variant.client, variant.path);
        expectNotFound(
          `${variant.via}: ${route.method} ${variant.path}`,
          response.status,
          response.text,
          response.headers.get('x-request-id'),
          variant.hint,
        );
      }
    }
    expect(ALL_ROUTES.length).toBeGreaterThan(100);
    // Nothing was deleted, blocked, renamed or created.
    expect(await stored()).toEqual(before);
  }, 120_000);

  it('still serves the exact path, both ways', async () => {
    for (const client of [api, apiClient(loose.url, apiKey)]) {
      const response = await client.get(`/v3/grants/${ids.grant_id}`);
      expect(response.status, response.text).toBe(200);
      expect(response.body.data.id).toBe(ids.grant_id);
    }
  });
});
