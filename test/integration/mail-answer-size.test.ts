import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { ANSWER_BUDGET_BYTES } from '#shared/answer-limits';
import { makeAgentGrant } from '../support/factories';
import { useApi } from '../support/harness';
import { jobsDone } from '../support/outbox-relay';

/**
 * Every answer stays under the 6 MB that API Gateway and Lambda carry: list pages end early (with a
 * `next_cursor` that loses nothing), and an object too large for one answer serves its largest
 * content from a short-lived URL.
 */
const { api } = useApi();
type Grant = Awaited<ReturnType<typeof makeAgentGrant>>;
let alice: Grant;
let bob: Grant;
const DEPLOYED_LIMIT = 6_000_000;
const received: string[] = [];

/** A body of `bytes` printable characters that JSON carries as they are. */
const bodyOf = (bytes: number) =>
  `<p>${randomBytes(Math.ceil(bytes * 0.75))
    .toString('base64')
    .slice(0, bytes - 7)}</p>`;

beforeAll(async () => {
  [alice, bob] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api)]);
  // Five messages of 2.5 MB, each in a thread of its own.
  for (let i = 0; i < 5; i++) {
    const response = await api.post(`/v3/grants/${alice.id}/messages/send`, {
      to: [{ email: bob.email }],
      subject: `Large ${i}`,
      body: bodyOf(2_500_000),
    });
    expect(response.status, response.text.slice(0, 300)).toBe(200);
    // Bob's copy is stored by the jobs worker: one at a time, in the order sent.
    await jobsDone();
  }
}, 120_000);

/** Pages through a list; checks each answer's size and returns every item in order. */
async function pageThrough(path: string) {
  const items: { id: string; [k: string]: unknown }[] = [];
  const sizes: number[] = [];
  let token: string | undefined;
  for (let pages = 0; pages < 20; pages++) {
    const response = await api.get(
      `${path}${path.includes('?') ? '&' : '?'}limit=5${token ? `&page_token=${encodeURIComponent(token)}` : ''}`,
    );
    expect(response.status, response.text.slice(0, 300)).toBe(200);
    sizes.push(Buffer.byteLength(response.text));
    items.push(...response.body.data);
    token = response.body.next_cursor;
    if (!token) break;
  }
  return { items, sizes };
}

describe('answer sizes', () => {
  it('ends a message page early rather than answer over the limit, and pages on without losing or repeating one', async () => {
    const first = await api.get(`/v3/grants/${bob.id}/messages?limit=5`);
    expect(Buffer.byteLength(first.text)).toBeLessThan(DEPLOYED_LIMIT);
    expect(first.body.data.length).toBeLessThan(5);
    expect(first.body.next_cursor).toEqual(expect.any(String));

    const { items, sizes } = await pageThrough(`/v3/grants/${bob.id}/messages`);
    expect(Math.max(...sizes)).toBeLessThan(DEPLOYED_LIMIT);
    expect(items.map((m) => m.subject)).toEqual(['Large 4', 'Large 3', 'Large 2', 'Large 1', 'Large 0']);
    expect(items.every((m) => typeof m.body === 'string' && (m.body as string).length > 2_000_000)).toBe(true);
    received.push(...items.map((m) => m.id));
  }, 60_000);

  it('does the same for threads, whose latest messages carry the bodies', async () => {
    const { items, sizes } = await pageThrough(`/v3/grants/${bob.id}/threads`);
    expect(Math.max(...sizes)).toBeLessThan(DEPLOYED_LIMIT);
    expect(sizes.length).toBeGreaterThan(1);
    expect(items.map((t) => t.subject)).toEqual(['Large 4', 'Large 3', 'Large 2', 'Large 1', 'Large 0']);
  }, 60_000);

  it('moves the raw MIME behind a URL when a message would not fit an answer with it, and the URL serves it', async () => {
    const { items, sizes } = await pageThrough(`/v3/grants/${bob.id}/messages?fields=raw_mime`);
    expect(Math.max(...sizes)).toBeLessThan(DEPLOYED_LIMIT);
    expect(items).toHaveLength(5);
    const [one] = items;
    expect(one!.raw_mime).toBeUndefined();
    expect(one!.raw_mime_url).toEqual(expect.stringMatching(/^http/));
    const raw = await (await fetch(one!.raw_mime_url as string)).text();
    expect(raw).toContain('Subject: Large 4');

    const single = await api.get(`/v3/grants/${bob.id}/messages/${one!.id}?fields=raw_mime`);
    expect(Buffer.byteLength(single.text)).toBeLessThan(DEPLOYED_LIMIT);
    expect(single.body.data.raw_mime_url).toEqual(expect.any(String));
    expect(single.body.data.body.length).toBeGreaterThan(2_000_000);
  }, 60_000);

  it('serves a body over the budget from a URL, in GET and in lists, for messages and drafts', async () => {
    const huge = bodyOf(ANSWER_BUDGET_BYTES + 200_000);
    // Inbound mail (the path SMTP and SES use): a send's JSON body is limited to 3 MB, inbound mail is not.
    const { ingestMessage } = await import('#shared/agent/ingest');
    const mime = `From: ${alice.email}\r\nTo: ${bob.email}\r\nSubject: Huge\r\nMessage-ID: <huge-${randomBytes(4).toString('hex')}@example.net>\r\nContent-Type: text/html; charset=utf-8\r\n\r\n${huge}\r\n`;
    await ingestMessage(Buffer.from(mime), { mailFrom: alice.email, recipients: [bob.email] });
    const record = (await api.get(`/v3/grants/${bob.id}/messages?subject=Huge&limit=1`)).body.data[0] as { id: string };

    const single = await api.get(`/v3/grants/${bob.id}/messages/${record.id}`);
    expect(single.status).toBe(200);
    expect(Buffer.byteLength(single.text)).toBeLessThan(DEPLOYED_LIMIT);
    expect(single.body.data.body).toBeUndefined();
    // As stored from the MIME (the parser ends the body with the message's last line break).
    expect((await (await fetch(single.body.data.body_url)).text()).trim()).toBe(huge);

    const list = await api.get(`/v3/grants/${bob.id}/messages?limit=3`);
    expect(Buffer.byteLength(list.text)).toBeLessThan(DEPLOYED_LIMIT);
    expect(list.body.data[0]).toMatchObject({ id: record.id, body_url: expect.any(String) });

    const draft = await api.request('POST', `/v3/grants/${bob.id}/drafts`, {
      rawBody: multipartDraft(huge),
      headers: { 'content-type': 'multipart/form-data; boundary=sizeboundary' },
    });
    expect(draft.status, draft.text.slice(0, 300)).toBe(200);
    expect(Buffer.byteLength(draft.text)).toBeLessThan(DEPLOYED_LIMIT);
    expect(draft.body.data.body_url).toEqual(expect.any(String));
    expect(await (await fetch(draft.body.data.body_url)).text()).toBe(huge);
    const drafts = await api.get(`/v3/grants/${bob.id}/drafts`);
    expect(Buffer.byteLength(drafts.text)).toBeLessThan(DEPLOYED_LIMIT);
    expect(drafts.body.data[0].body_url).toEqual(expect.any(String));
  }, 60_000);

  it('refuses to clean more message content than one answer carries, saying to ask for fewer', async () => {
    const response = await api.put(`/v3/grants/${bob.id}/messages/clean`, { message_id: received });
    expect(response.status).toBe(400);
    expect(response.body.error.message).toContain('clean fewer message_id at a time');
    const one = await api.put(`/v3/grants/${bob.id}/messages/clean`, { message_id: [received[0]] });
    expect(one.status).toBe(200);
    expect(Buffer.byteLength(one.text)).toBeLessThan(DEPLOYED_LIMIT);
  }, 60_000);
});

function multipartDraft(body: string): Buffer {
  return Buffer.from(
    `--sizeboundary\r\nContent-Disposition: form-data; name="message"\r\n\r\n${JSON.stringify({ subject: 'Huge draft', body })}\r\n--sizeboundary--\r\n`,
  );
}
