import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { googleClientOf, GoogleNotFoundError, type GoogleRequest } from '#shared/google/client';
import type { GrantRecord } from '#shared/db/grants';
import { connectGrant } from '#shared/accounts/connected';
import { createConnector } from '#shared/connectors/service';
import type { ApplicationId } from '#shared/ids';
import { RateLimitError } from '#shared/errors';
import { gmailUnits, MAX_IN_FLIGHT } from '#shared/google/limits';
import { gmailMessages } from '#shared/google/messages';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { connectFakeGoogleGrant } from '../support/google';
import { makeApplication } from '../support/factories';

/**
 * Provider A's limits (shared/google/client.ts, batch.ts, limits.ts) against the local Google fake,
 * which parses each batch (multipart/mixed of HTTP requests) and checks every part against Gmail's
 * Discovery document as if it came alone: gets made at once travel as batches of at most 50; a
 * rate limit or an outage on one part of a batch is retried for that part alone; a part's 404 is
 * that call's; Gmail's quota units are taken per call and a wait longer than a request can afford
 * is a 429 at once; a grant never has more than MAX_IN_FLIGHT requests under way.
 */
let fake: GoogleFake;
let grant: GrantRecord;
let email: string;
let accessToken: string;
const ids: string[] = [];
/** Every HTTP request the clients of this file made, by path. */
const sent: string[] = [];

const countingFetch: typeof fetch = async (input, init) => {
  sent.push(new URL(String(input)).pathname);
  return fetch(input, init);
};

beforeAll(async () => {
  fake = await startGoogleFake();
  ({ grant, email, accessToken } = await connectFakeGoogleGrant(fake, 'google batches'));
  for (let i = 0; i < 120; i++)
    ids.push(
      fake.deliver(email, `From: a${i}@example.com\r\nTo: ${email}\r\nSubject: Batch ${i}\r\n\r\nBody ${i}\r\n`).id,
    );
});

afterEach(() => {
  sent.length = 0;
});

afterAll(async () => {
  await fake?.close();
});

/**
 * The mailbox of the file as a grant of its own: quota units are counted per grant, and a grant
 * whose units are spent spreads its calls over time (and so over several requests).
 */
const sameMailbox = async (): Promise<GrantRecord> => {
  const { applicationId } = await makeApplication('google batches, same mailbox');
  await createConnector({ applicationId: applicationId as ApplicationId, credential: 'api_key' }, {
    provider: 'google',
    settings: { client_id: 'client-a', client_secret: 'secret-a', api_base_url: fake.url },
  } as never);
  return (
    await connectGrant({
      applicationId: applicationId as ApplicationId,
      provider: 'google',
      email,
      providerUserId: `sub-${email}`,
      scope: ['https://www.googleapis.com/auth/gmail.modify'],
      settings: {},
      tokens: { source: 'oauth', access_token: accessToken, refresh_token: `refresh-${email}`, expires_in: 3600 },
    })
  ).grant;
};

const get = (id: string): GoogleRequest => ({
  api: 'gmail',
  path: `/gmail/v1/users/me/messages/${id}`,
  query: { format: 'metadata' },
  batch: true,
});

describe("provider A's batches", () => {
  it('sends the gets made at once as batches of at most 50, each call with its own answer', async () => {
    // 100 gets of 5 units: what a grant may spend at once; the 20 after them wait for their units
    // (five more each 100 ms, so over 400 ms: four or five ticks of the 100 ms grid), and leave
    // together per tick, however late the machine runs their timer.
    const c = await googleClientOf(await sameMailbox(), { fetch: countingFetch });
    const answers = await Promise.all(ids.map((id) => c.call<{ id: string }>(get(id))));
    expect(answers.map((a) => a.id)).toEqual(ids);
    expect(sent.slice(0, 2)).toEqual(['/batch/gmail/v1', '/batch/gmail/v1']);
    // Two batches at once (a third if the units of some of the 20 came while the 100 were taken),
    // then one request per tick (a tick's one call goes as itself).
    expect(sent.length).toBeLessThanOrEqual(8);
    expect(sent.length).toBeGreaterThanOrEqual(3);
    expect(c.calls).toBe(sent.length);
  });

  it('sends one call alone as itself', async () => {
    const c = await googleClientOf(grant, { fetch: countingFetch });
    await c.call(get(ids[0]!));
    expect(sent).toEqual([`/gmail/v1/users/me/messages/${ids[0]}`]);
  });

  it('retries a rate-limited or failed part alone, in a later request, and keeps each 404 to its call', async () => {
    fake.inject({ method: 'gmail.users.messages.get', status: 429, retryAfter: 0, times: 2 });
    const waits: number[] = [];
    const c = await googleClientOf(await sameMailbox(), {
      fetch: countingFetch,
      sleep: async (ms) => void waits.push(ms),
    });
    const wanted = [...ids.slice(0, 10), '0000000000000000'];
    const answers = await Promise.allSettled(wanted.map((id) => c.call<{ id: string }>(get(id))));
    expect(answers.slice(0, 10).map((a) => a.status === 'fulfilled' && a.value.id)).toEqual(ids.slice(0, 10));
    const missing = answers[10]!;
    expect(missing.status === 'rejected' && missing.reason).toBeInstanceOf(GoogleNotFoundError);
    // One batch of 11; the two refused parts again, together (both waited Retry-After 0).
    expect(sent).toEqual(['/batch/gmail/v1', '/batch/gmail/v1']);
    expect(waits).toEqual([0, 0]);

    fake.inject({ method: 'gmail.users.messages.get', status: 503, times: 1 });
    const d = await googleClientOf(await sameMailbox(), { sleep: async () => undefined, random: () => 0 });
    const again = await Promise.all(ids.slice(0, 5).map((id) => d.call<{ id: string }>(get(id))));
    expect(again.map((a) => a.id)).toEqual(ids.slice(0, 5));
    expect(d.calls).toBe(2);
  });

  it('lists 50 messages with two provider requests: the list, and one batch of gets', async () => {
    const counted = { batch: 0, list: 0, get: 0 };
    const count = (name: keyof typeof counted) => (body: unknown) => {
      counted[name]++;
      return body;
    };
    // Faults that only count (one more than expected of each, so that a surplus shows).
    fake.inject({ method: 'batch', times: 2, mangleAnswer: count('batch') });
    fake.inject({ method: 'gmail.users.messages.list', times: 2, mangleAnswer: count('list') });
    fake.inject({ method: 'gmail.users.messages.get', times: 51, mangleAnswer: count('get') });
    const page = await gmailMessages.list(await sameMailbox(), {}, 50);
    expect(page.items).toHaveLength(50);
    expect(new Set(page.items.map((m) => m.id)).size).toBe(50);
    expect(counted).toEqual({ batch: 1, list: 1, get: 50 });
  });

  it('answers 401 to each call of a grant whose tokens are gone, and leaves no rejection unhandled', async () => {
    // The token is read with the connector, before any call awaits it: a failed read must not be an
    // unhandled rejection (one ends a Lambda's process; vitest fails the file for one).
    const c = await googleClientOf({ ...grant, id: `${grant.id.slice(0, -1)}0` } as GrantRecord);
    await new Promise((resolve) => setImmediate(resolve));
    const answers = await Promise.allSettled(ids.slice(0, 3).map((id) => c.call(get(id))));
    expect(answers.map((a) => a.status === 'rejected' && (a.reason as { status?: number }).status)).toEqual([
      401, 401, 401,
    ]);
  });

  it('the fake refuses a batch it cannot read, of another API, or of more than 100 calls', async () => {
    const post = (body: string, type = 'multipart/mixed; boundary=b') =>
      fetch(`${fake.url}/batch/gmail/v1`, {
        method: 'POST',
        headers: { authorization: `Bearer token-of-${email}`, 'content-type': type },
        body,
      });
    const part = (target: string) => `--b\r\nContent-Type: application/http\r\n\r\nGET ${target} HTTP/1.1\r\n\r\n`;
    expect((await post('{}', 'application/json')).status).toBe(400);
    expect((await post(`${part('/calendar/v3/users/me/calendarList')}--b--\r\n`)).status).toBe(400);
    expect((await post(`${part('/gmail/v1/users/me/labels').repeat(101)}--b--\r\n`)).status).toBe(400);
    expect(fake.requestViolations).toHaveLength(3);
    fake.clearViolations();
    const fine = await post(`${part('/gmail/v1/users/me/labels')}--b--\r\n`);
    expect(fine.status).toBe(200);
    expect(fine.headers.get('content-type')).toMatch(/^multipart\/mixed; boundary=/);
    expect(await fine.text()).toContain('HTTP/1.1 200 OK');
  });
});

describe("provider A's quota and concurrency per grant", () => {
  it("costs each Gmail method what Google's quota table says", () => {
    expect(gmailUnits('GET', '/gmail/v1/users/me/messages/abc')).toBe(5);
    expect(gmailUnits('GET', '/gmail/v1/users/me/messages')).toBe(5);
    expect(gmailUnits('POST', '/gmail/v1/users/me/messages/send')).toBe(100);
    expect(gmailUnits('POST', '/gmail/v1/users/me/drafts/send')).toBe(100);
    expect(gmailUnits('GET', '/gmail/v1/users/me/history')).toBe(2);
    expect(gmailUnits('GET', '/gmail/v1/users/me/threads/abc')).toBe(10);
    expect(gmailUnits('GET', '/gmail/v1/users/me/labels')).toBe(1);
    expect(gmailUnits('POST', '/gmail/v1/users/me/watch')).toBe(100);
    expect(gmailUnits('DELETE', '/gmail/v1/users/me/messages/abc')).toBe(10);
    expect(gmailUnits('PUT', '/gmail/v1/users/me/drafts/abc')).toBe(15);
  });

  it('waits for quota units, and answers 429 at once when the wait is more than the request can afford', async () => {
    // A grant of its own: its units are its own (15,000 a minute: 250 a second, 500 at once).
    const own = (await connectFakeGoogleGrant(fake, 'google quota')).grant;
    const waits: number[] = [];
    const c = await googleClientOf(own, { sleep: async (ms) => void waits.push(ms) });
    const send = () =>
      c.call({ api: 'gmail', method: 'POST', path: '/gmail/v1/users/me/stop' }).catch((e: unknown) => e);
    // 50 units each: ten at once, then each waits for 50 more units (200 ms) than the one before.
    const results: unknown[] = [];
    for (let i = 0; i < 60; i++) results.push(await send());
    expect(waits.slice(0, 3)).toEqual([expect.any(Number), expect.any(Number), expect.any(Number)]);
    expect(waits[0]).toBeGreaterThan(150);
    expect(waits.every((w, i) => i === 0 || w > waits[i - 1]!)).toBe(true);
    expect(Math.max(...waits)).toBeLessThanOrEqual(8_000);
    const refused = results.find((r) => r instanceof RateLimitError) as RateLimitError | undefined;
    expect(refused).toBeInstanceOf(RateLimitError);
    expect(Number(refused!.headers['retry-after'])).toBeGreaterThan(8);
    expect(refused!.message).toContain('smaller limit');
  });

  it(`keeps at most ${MAX_IN_FLIGHT} requests of one grant in flight`, async () => {
    let inFlight = 0;
    let most = 0;
    const slowFetch: typeof fetch = async (input, init) => {
      most = Math.max(most, ++inFlight);
      try {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return await fetch(input, init);
      } finally {
        inFlight--;
      }
    };
    const c = await googleClientOf(grant, { fetch: slowFetch });
    const d = await googleClientOf(grant, { fetch: slowFetch });
    const labels = (x: typeof c) => x.call({ api: 'gmail', path: '/gmail/v1/users/me/labels' });
    await Promise.all(Array.from({ length: 30 }, (_, i) => labels(i % 2 ? c : d)));
    expect(most).toBe(MAX_IN_FLIGHT);
  });

  it('sent nothing Google does not describe, and the fake answered nothing it does not', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});
