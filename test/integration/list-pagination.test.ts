import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { jobsDone } from '../support/outbox-relay';
import { startReceiver, type Receiver } from '../support/receiver';

/**
 * The list envelope of the spec: `next_cursor` is "present only when more results exist". Each list
 * here is walked with a small page size to its end: every page before the last carries a string
 * `next_cursor`, the last one has no such key at all (not null), and the pages together are the
 * whole listing, none missing, none repeated, no empty page at the end.
 */
let gateway: Gateway;
let api: ApiClient;
let receiver: Receiver;
type Grant = Awaited<ReturnType<typeof makeAgentGrant>>;
let a: Grant;
let listId: string;

beforeAll(async () => {
  gateway = await startGateway();
  receiver = await startReceiver();
  api = apiClient(gateway.url, (await makeApplication('list-pagination')).apiKey);
  const ok = (r: ApiResponse, what: string) => {
    if (r.status >= 300) throw new Error(`${what}: ${r.status} ${r.text}`);
    return r;
  };
  [a] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api), makeAgentGrant(api)]);
  for (const subject of ['First', 'Second', 'Third'])
    ok(
      await api.post(`/v3/grants/${a.id}/messages/send`, {
        to: [{ email: 'someone@example.net' }],
        subject,
        body: subject,
      }),
      'send',
    );
  await jobsDone();
  for (const subject of ['Draft one', 'Draft two', 'Draft three'])
    ok(await api.post(`/v3/grants/${a.id}/drafts`, { subject }), 'draft');
  for (const name of ['Work', 'Home']) ok(await api.post(`/v3/grants/${a.id}/calendars`, { name }), 'calendar');
  const base = (Math.floor(Date.now() / 1000 / 86_400) + 2) * 86_400;
  for (let i = 0; i < 3; i++)
    ok(
      await api.post(`/v3/grants/${a.id}/events?calendar_id=primary&notify_participants=false`, {
        title: `Event ${i}`,
        when: { start_time: base + i * 3600, end_time: base + i * 3600 + 1800 },
      }),
      'event',
    );
  for (let i = 0; i < 3; i++)
    ok(
      await api.post('/v3/webhooks', {
        webhook_url: receiver.url,
        trigger_types: ['message.created'],
        description: `hook ${i}`,
      }),
      'webhook',
    );
  for (const name of ['Blocked', 'Allowed', 'Partners'])
    listId = ok(await api.post('/v3/lists', { name, type: 'domain' }), 'list').body.data.id;
  ok(
    await api.post(`/v3/lists/${listId}/items`, { items: ['one.example', 'two.example', 'three.example'] }),
    'list items',
  );
  for (const name of ['p1', 'p2', 'p3']) ok(await api.post('/v3/policies', { name }), 'policy');
  for (const name of ['One', 'Two', 'Three'])
    ok(await api.post(`/v3/grants/${a.id}/templates`, { name, engine: 'mustache', body: 'x' }), 'template');
  for (const name of ['One', 'Two', 'Three'])
    ok(await api.post(`/v3/grants/${a.id}/signatures`, { name, body: `<p>${name}</p>` }), 'signature');
  const participant = {
    email: a.email,
    is_organizer: true,
    availability: { calendar_ids: ['primary'] },
    booking: { calendar_id: 'primary' },
  };
  for (const title of ['One', 'Two', 'Three']) {
    ok(
      await api.post(`/v3/grants/${a.id}/scheduling/configurations`, {
        participants: [participant],
        availability: { duration_minutes: 30 },
        event_booking: { title },
      }),
      'configuration',
    );
  }
});

afterAll(async () => {
  await receiver?.close();
  await gateway?.close();
});

/** Walks a list with `limit` to its end; checks the envelope of every page. */
async function walk(path: string, limit: number): Promise<{ pages: number; ids: string[] }> {
  const ids: string[] = [];
  let token: string | undefined;
  for (let pages = 1; ; pages++) {
    const response = await api.get(
      `${path}${path.includes('?') ? '&' : '?'}limit=${limit}${token ? `&page_token=${encodeURIComponent(token)}` : ''}`,
    );
    expect(response.status, `${path}: ${response.text}`).toBe(200);
    const items = response.body.data as { id?: string; value?: string }[];
    ids.push(...items.map((item) => item.id ?? item.value!));
    if (!('next_cursor' in response.body)) {
      // The last page: no key at all, and not an empty page after a full one.
      expect(items.length, `${path}: page ${pages} is empty after a next_cursor`).toBeGreaterThan(pages > 1 ? 0 : -1);
      return { pages, ids };
    }
    expect(typeof response.body.next_cursor, `${path}: page ${pages}`).toBe('string');
    token = response.body.next_cursor;
    expect(pages, `${path}: more pages than items`).toBeLessThan(100);
  }
}

describe('next_cursor', () => {
  const lists = (): [string, number][] => [
    ['/v3/grants', 1],
    [`/v3/grants/${a.id}/messages`, 1],
    [`/v3/grants/${a.id}/threads`, 1],
    [`/v3/grants/${a.id}/drafts`, 1],
    [`/v3/grants/${a.id}/folders`, 3],
    [`/v3/grants/${a.id}/calendars`, 1],
    [`/v3/grants/${a.id}/events?calendar_id=primary`, 1],
    ['/v3/webhooks', 1],
    ['/v3/lists', 1],
    [`/v3/lists/${listId}/items`, 1],
    ['/v3/policies', 1],
    [`/v3/grants/${a.id}/templates`, 1],
    [`/v3/grants/${a.id}/signatures`, 1],
    ['/v3/scheduling/configurations', 1],
    [`/v3/grants/${a.id}/scheduling/configurations`, 1],
  ];

  it('is a string on every page before the last and absent on the last, walking each list to its end', async () => {
    for (const [path, limit] of lists()) {
      // Act
      const walked = await walk(path, limit);
      const whole = await api.get(path);

      // Assess: several pages, and together exactly the whole listing.
      expect(walked.pages, path).toBeGreaterThan(1);
      expect(whole.status, whole.text).toBe(200);
      expect(whole.body, path).not.toHaveProperty('next_cursor');
      expect(walked.ids, path).toEqual(
        (whole.body.data as { id?: string; value?: string }[]).map((item) => item.id ?? item.value!),
      );
      expect(new Set(walked.ids).size, path).toBe(walked.ids.length);
    }
  });

  it('is absent when one page holds the whole listing exactly, and on an empty listing', async () => {
    for (const [path] of lists()) {
      const whole = (await api.get(path)).body.data.length as number;
      const exact = await api.get(`${path}${path.includes('?') ? '&' : '?'}limit=${whole}`);
      expect(exact.status, exact.text).toBe(200);
      expect(exact.body.data, path).toHaveLength(whole);
      expect(exact.body, path).not.toHaveProperty('next_cursor');
    }
    const empty = await makeAgentGrant(api);
    const none = await api.get(`/v3/grants/${empty.id}/drafts`);
    expect(none.status).toBe(200);
    expect(none.body.data).toEqual([]);
    expect(Object.keys(none.body).sort()).toEqual(['data', 'request_id']);
  });
});
