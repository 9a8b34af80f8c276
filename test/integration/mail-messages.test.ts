import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clock } from '#shared/time';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication, uniqueEmail } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { jobsDone } from '../support/outbox-relay';

/**
 * Messages of an Agent Account over HTTP: every list filter of the spec, get, update, delete and
 * clean. The mailbox is filled by real sends between Agent Accounts of the same deployment.
 */
let gateway: Gateway;
let api: ApiClient;
type Grant = Awaited<ReturnType<typeof makeAgentGrant>>;
let alice: Grant;
let bob: Grant;
let carol: Grant;
/** Bob's inbox, newest first, keyed by subject. */
const inbox: Record<string, { id: string; thread_id: string }> = {};
let betweenSends = 0;

const ids = (r: { body: { data: { id: string }[] } }) => r.body.data.map((m) => m.id);

beforeAll(async () => {
  gateway = await startGateway();
  api = apiClient(gateway.url, (await makeApplication()).apiKey);
  [alice, bob, carol] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api), makeAgentGrant(api)]);
  const send = async (from: Grant, body: object) => {
    const r = await api.post(`/v3/grants/${from.id}/messages/send`, body);
    if (r.status !== 200) throw new Error(`send failed: ${r.status} ${r.text}`);
    await jobsDone();
  };
  // received_after / received_before work in whole seconds (of the receipt time in the message ID):
  // the first two messages are received two seconds in the past, by the injectable clock the
  // handlers share with this process, so a whole second lies between them and the third.
  const restoreClock = clock.set(() => Date.now() - 2000);
  try {
    await send(alice, {
      to: [{ email: bob.email, name: 'Bob' }],
      subject: 'Quarterly invoice 42',
      body: '<p>The budget is attached.</p><p>Zebra crossing.</p>',
    });
    await send(carol, {
      to: [{ email: bob.email }],
      cc: [{ email: alice.email }],
      subject: 'Lunch on Friday?',
      body: '<p>Shall we meet?</p>',
      attachments: [
        { filename: 'menu.txt', content_type: 'text/plain', content: Buffer.from('soup').toString('base64') },
      ],
    });
    // The next whole second: both receipts lie before it, the third (on the real clock, 2 s
    // ahead of this one) a whole second or more after it.
    betweenSends = clock.nowSeconds() + 1;
  } finally {
    restoreClock();
  }
  await send(alice, {
    to: [{ email: carol.email }],
    bcc: [{ email: bob.email }],
    subject: 'Invoices overview',
    body: 'Plain budget text',
    is_plaintext: true,
  });
  const list = await api.get(`/v3/grants/${bob.id}/messages?limit=50`);
  for (const m of list.body.data) inbox[m.subject] = { id: m.id, thread_id: m.thread_id };
});

afterAll(async () => gateway?.close());

describe('GET /v3/grants/{grant_id}/messages', () => {
  it('lists newest first with limit and page_token', async () => {
    const all = await api.get(`/v3/grants/${bob.id}/messages`);
    expect(all.status).toBe(200);
    expect(all.body.data.map((m: { subject: string }) => m.subject)).toEqual([
      'Invoices overview',
      'Lunch on Friday?',
      'Quarterly invoice 42',
    ]);
    const first = await api.get(`/v3/grants/${bob.id}/messages?limit=2`);
    expect(first.body.data).toHaveLength(2);
    const second = await api.get(`/v3/grants/${bob.id}/messages?limit=2&page_token=${first.body.next_cursor}`);
    expect([...ids(first), ...ids(second)]).toEqual(ids(all));
    expect(second.body).not.toHaveProperty('next_cursor');
  });

  it('returns the message fields', async () => {
    const { body } = await api.get(`/v3/grants/${bob.id}/messages/${inbox['Lunch on Friday?']!.id}`);
    expect(body.data).toMatchObject({
      object: 'message',
      grant_id: bob.id,
      subject: 'Lunch on Friday?',
      from: [{ email: carol.email }],
      to: [{ email: bob.email }],
      cc: [{ email: alice.email }],
      unread: true,
      starred: false,
      folders: ['inbox'],
      body: '<p>Shall we meet?</p>',
      snippet: 'Shall we meet?',
      metadata: {},
    });
    expect(body.data.attachments).toEqual([
      expect.objectContaining({
        filename: 'menu.txt',
        content_type: 'text/plain',
        size: 4,
        is_inline: false,
        grant_id: bob.id,
      }),
    ]);
    expect(body.data).not.toHaveProperty('headers');
  });

  it.each([
    ['subject=invoice', ['Quarterly invoice 42']],
    ['subject=INVOICE', ['Quarterly invoice 42']],
    ['subject=invoices', ['Invoices overview']],
    ['subject=invoice%2042', ['Quarterly invoice 42']],
    ['subject=voice', []],
  ])('matches whole subject keywords case-insensitively: %s', async (query, subjects) => {
    const r = await api.get(`/v3/grants/${bob.id}/messages?${query}`);
    expect(r.body.data.map((m: { subject: string }) => m.subject)).toEqual(subjects);
  });

  it('filters by from, to, cc, bcc and any_email', async () => {
    const subjects = async (q: string) =>
      (await api.get(`/v3/grants/${bob.id}/messages?${q}`)).body.data.map((m: { subject: string }) => m.subject);
    expect(await subjects(`from=${encodeURIComponent(carol.email)}`)).toEqual(['Lunch on Friday?']);
    expect(await subjects(`from=${encodeURIComponent(alice.email.toUpperCase())}`)).toEqual([
      'Invoices overview',
      'Quarterly invoice 42',
    ]);
    expect(await subjects(`to=${encodeURIComponent(carol.email)}`)).toEqual(['Invoices overview']);
    expect(await subjects(`cc=${encodeURIComponent(alice.email)}`)).toEqual(['Lunch on Friday?']);
    // Bcc recipients do not see the Bcc list: Bob's copy shows none.
    expect(await subjects(`bcc=${encodeURIComponent(bob.email)}`)).toEqual([]);
    expect(await subjects(`any_email=${encodeURIComponent(`${carol.email},nobody@x.io`)}`)).toEqual([
      'Invoices overview',
      'Lunch on Friday?',
    ]);
    expect(await subjects(`any_email=${encodeURIComponent(alice.email)}&subject=lunch`)).toEqual(['Lunch on Friday?']);
  });

  it('filters by folder, read and star state, thread, attachment and receipt time', async () => {
    const subjects = async (q: string) =>
      (await api.get(`/v3/grants/${bob.id}/messages?${q}`)).body.data.map((m: { subject: string }) => m.subject);
    expect(await subjects('in=inbox')).toHaveLength(3);
    expect(await subjects('in=sent')).toEqual([]);
    expect(await subjects('has_attachment=true')).toEqual(['Lunch on Friday?']);
    expect(await subjects('has_attachment=false')).toEqual(['Invoices overview', 'Quarterly invoice 42']);
    expect(await subjects(`thread_id=${inbox['Lunch on Friday?']!.thread_id}`)).toEqual(['Lunch on Friday?']);
    expect(await subjects(`received_after=${betweenSends}`)).toEqual(['Invoices overview']);
    expect(await subjects(`received_before=${betweenSends}`)).toEqual(['Lunch on Friday?', 'Quarterly invoice 42']);
    expect(await subjects(`received_after=${betweenSends}&received_before=${betweenSends + 3600}`)).toEqual([
      'Invoices overview',
    ]);

    const target = inbox['Quarterly invoice 42']!.id;
    await api.put(`/v3/grants/${bob.id}/messages/${target}`, { unread: false, starred: true });
    expect(await subjects('unread=true')).toEqual(['Invoices overview', 'Lunch on Friday?']);
    expect(await subjects('unread=false')).toEqual(['Quarterly invoice 42']);
    expect(await subjects('starred=true')).toEqual(['Quarterly invoice 42']);
    expect(await subjects('starred=true&unread=true')).toEqual([]);
    expect(await subjects('in=inbox&starred=false')).toEqual(['Invoices overview', 'Lunch on Friday?']);
  });

  it('searches subject, body and addresses with search_query_native', async () => {
    const subjects = async (q: string) =>
      (await api.get(`/v3/grants/${bob.id}/messages?search_query_native=${encodeURIComponent(q)}`)).body.data.map(
        (m: { subject: string }) => m.subject,
      );
    expect(await subjects('budget')).toEqual(['Invoices overview', 'Quarterly invoice 42']);
    expect(await subjects('zebra')).toEqual(['Quarterly invoice 42']);
    expect(await subjects('BUDGET -zebra')).toEqual(['Invoices overview']);
    expect(await subjects('"budget is attached"')).toEqual(['Quarterly invoice 42']);
    expect(await subjects(`from:${carol.email}`)).toEqual(['Lunch on Friday?']);
    expect(await subjects('meet has:attachment')).toEqual(['Lunch on Friday?']);
    expect(await subjects('subject:lunch')).toEqual(['Lunch on Friday?']);
    expect(await subjects('nothinglikethis')).toEqual([]);
    // No word to match (a single character is one: "x" would be searched for).
    const bad = await api.get(`/v3/grants/${bob.id}/messages?search_query_native=${encodeURIComponent('- #')}`);
    expect(bad.status).toBe(400);
  });

  it('filters by metadata_pair alone, with key1..key5 only', async () => {
    const target = inbox['Lunch on Friday?']!.id;
    const put = await api.put(`/v3/grants/${bob.id}/messages/${target}`, { metadata: { key1: 'crm-7', note: 'x' } });
    expect(put.body.data.metadata).toEqual({ key1: 'crm-7', note: 'x' });
    expect(ids(await api.get(`/v3/grants/${bob.id}/messages?metadata_pair=key1:crm-7`))).toEqual([target]);
    expect(ids(await api.get(`/v3/grants/${bob.id}/messages?metadata_pair=key1:crm-8`))).toEqual([]);
    const combined = await api.get(`/v3/grants/${bob.id}/messages?metadata_pair=key1:crm-7&in=inbox`);
    expect(combined.status).toBe(400);
    expect(combined.body.error.message).toContain('cannot be combined');
    expect((await api.get(`/v3/grants/${bob.id}/messages?metadata_pair=note:x`)).status).toBe(400);
    expect((await api.get(`/v3/grants/${bob.id}/messages?metadata_pair=key6:x`)).status).toBe(400);
  });

  it.each([
    ['in=in%3Ainbox', 400, 'folder ID'],
    ['in=%5CInbox', 400, 'folder ID'],
    ['in=fld_01jzzzzzzzzzzzzzzzzzzzzzzz', 404, 'not found'],
    ['query_imap=true', 400, 'IMAP'],
    ['shared_from=x%40y.z', 400, 'shared_from'],
    ['from=not-an-address', 400, 'from'],
    ['subject=%21%21', 400, 'subject'],
    ['received_after=soon', 400, 'received_after'],
    ['unread=maybe', 400, 'unread'],
    ['fields=everything', 400, 'fields'],
    ['select=subject.nested', 400, 'nested'],
    ['page_token=abc', 400, 'page_token'],
  ])('rejects %s', async (query, status, fragment) => {
    const r = await api.get(`/v3/grants/${bob.id}/messages?${query}`);
    expect(r.status).toBe(status);
    expect(r.body.error.message).toContain(fragment);
  });

  it('returns headers with fields=include_headers, raw MIME with fields=raw_mime, and projects with select', async () => {
    const id = inbox['Quarterly invoice 42']!.id;
    const withHeaders = await api.get(`/v3/grants/${bob.id}/messages/${id}?fields=include_headers`);
    const names = withHeaders.body.data.headers.map((h: { name: string }) => h.name.toLowerCase());
    expect(names).toEqual(expect.arrayContaining(['message-id']));
    const listed = await api.get(`/v3/grants/${bob.id}/messages?fields=include_headers&limit=1`);
    expect(Array.isArray(listed.body.data[0].headers)).toBe(true);
    const raw = await api.get(`/v3/grants/${bob.id}/messages/${id}?fields=raw_mime`);
    expect(Buffer.from(raw.body.data.raw_mime, 'base64url').toString()).toContain('Subject: Quarterly invoice 42');
    const selected = await api.get(`/v3/grants/${bob.id}/messages?select=id,subject&limit=1`);
    expect(Object.keys(selected.body.data[0]).sort()).toEqual(['id', 'subject']);
    // Only the headers that place a message in its conversation.
    const basic = await api.get(`/v3/grants/${bob.id}/messages/${id}?fields=include_basic_headers`);
    const basicNames = basic.body.data.headers.map((h: { name: string }) => h.name.toLowerCase());
    expect(basicNames).toContain('message-id');
    expect(basicNames.every((n: string) => ['message-id', 'in-reply-to', 'references'].includes(n))).toBe(true);
    // A received message tracks nothing (tracked sends: test/integration/tracking.test.ts).
    const tracking = await api.get(`/v3/grants/${bob.id}/messages/${id}?fields=include_tracking_options`);
    expect(tracking.status).toBe(200);
    expect(tracking.body.data.tracking_options).toEqual({ opens: false, links: false, thread_replies: false });
  });
});

describe('PUT /v3/grants/{grant_id}/messages/{message_id}', () => {
  it('updates unread, starred and folders, keeping what is not sent', async () => {
    const { body } = await api.post(`/v3/grants/${alice.id}/messages/send`, {
      to: [{ email: carol.email }],
      subject: 'Move me',
      body: 'x',
    });
    const sentId = body.data.id;
    const r = await api.put(`/v3/grants/${alice.id}/messages/${sentId}`, { folders: ['archive'], starred: true });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ folders: ['archive'], starred: true, unread: false });
    expect((await api.put(`/v3/grants/${alice.id}/messages/${sentId}`, { unread: true })).body.data).toMatchObject({
      folders: ['archive'],
      starred: true,
      unread: true,
    });
  });

  it('rejects unknown folders, empty bodies, unknown fields and too much metadata', async () => {
    const id = inbox['Invoices overview']!.id;
    expect((await api.put(`/v3/grants/${bob.id}/messages/${id}`, { folders: ['nowhere'] })).status).toBe(404);
    expect((await api.put(`/v3/grants/${bob.id}/messages/${id}`, {})).status).toBe(400);
    expect((await api.put(`/v3/grants/${bob.id}/messages/${id}`, { subject: 'no' })).status).toBe(400);
    const metadata = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v']));
    const tooMuch = await api.put(`/v3/grants/${bob.id}/messages/${id}`, { metadata });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.body.error.message).toContain('metadata');
  });

  it('answers 404 for unknown messages and for another application', async () => {
    expect((await api.get(`/v3/grants/${bob.id}/messages/msg_01jzzzzzzzzzzzzzzzzzzzzzzz`)).status).toBe(404);
    expect((await api.get(`/v3/grants/${bob.id}/messages/not-an-id`)).status).toBe(404);
    const other = apiClient(gateway.url, (await makeApplication('other')).apiKey);
    expect((await other.get(`/v3/grants/${bob.id}/messages`)).status).toBe(404);
    expect((await other.get(`/v3/grants/${bob.id}/messages/${inbox['Invoices overview']!.id}`)).status).toBe(404);
  });
});

describe('DELETE /v3/grants/{grant_id}/messages/{message_id}', () => {
  it('moves to trash, and hard_delete removes for good', async () => {
    const dave = await makeAgentGrant(api);
    await api.post(`/v3/grants/${alice.id}/messages/send`, {
      to: [{ email: dave.email }],
      subject: 'Trash me',
      body: 'x',
    });
    await jobsDone();
    const [message] = (await api.get(`/v3/grants/${dave.id}/messages`)).body.data;
    const trashed = await api.delete(`/v3/grants/${dave.id}/messages/${message.id}`);
    expect(trashed.status).toBe(200);
    expect(trashed.body).toEqual({ request_id: trashed.headers.get('x-request-id') });
    expect((await api.get(`/v3/grants/${dave.id}/messages/${message.id}`)).body.data.folders).toEqual(['trash']);
    expect(ids(await api.get(`/v3/grants/${dave.id}/messages?in=trash`))).toEqual([message.id]);
    expect((await api.get(`/v3/grants/${dave.id}/folders/inbox`)).body.data).toMatchObject({
      total_count: 0,
      unread_count: 0,
    });
    expect((await api.get(`/v3/grants/${dave.id}/folders/trash`)).body.data).toMatchObject({
      total_count: 1,
      unread_count: 1,
    });

    expect((await api.delete(`/v3/grants/${dave.id}/messages/${message.id}?hard_delete=true`)).status).toBe(200);
    expect((await api.get(`/v3/grants/${dave.id}/messages/${message.id}`)).status).toBe(404);
    expect((await api.get(`/v3/grants/${dave.id}/messages?search_query_native=trash`)).body.data).toEqual([]);
    expect((await api.get(`/v3/grants/${dave.id}/folders/trash`)).body.data.total_count).toBe(0);
    expect((await api.get(`/v3/grants/${dave.id}/threads`)).body.data).toEqual([]);
  });
});

describe('PUT /v3/grants/{grant_id}/messages/clean', () => {
  it('turns HTML into readable markdown, with options', async () => {
    const erin = await makeAgentGrant(api);
    const html =
      '<div><p>Hello <b>Erin</b>, see <a href="https://example.com/doc">the doc</a>.</p><img src="https://example.com/x.png" alt="chart">' +
      '<script>alert(1)</script><div class="gmail_quote">On Mon someone wrote:<blockquote>old text</blockquote></div></div>';
    await api.post(`/v3/grants/${alice.id}/messages/send`, {
      to: [{ email: erin.email }],
      subject: 'Clean me',
      body: html,
    });
    await jobsDone();
    const [message] = (await api.get(`/v3/grants/${erin.id}/messages`)).body.data;
    const cleaned = await api.put(`/v3/grants/${erin.id}/messages/clean`, { message_id: [message.id] });
    expect(cleaned.status).toBe(200);
    const conversation: string = cleaned.body.data[0].conversation;
    expect(conversation).toContain('Hello **Erin**, see the doc.');
    expect(conversation).not.toContain('alert');
    expect(conversation).not.toContain('old text');
    expect(conversation).not.toContain('https://example.com/doc');
    const keepLinks = await api.put(`/v3/grants/${erin.id}/messages/clean`, {
      message_id: [message.id],
      ignore_links: false,
      ignore_images: false,
      images_as_markdown: true,
    });
    expect(keepLinks.body.data[0].conversation).toContain('[the doc](https://example.com/doc)');
    expect(keepLinks.body.data[0].conversation).toContain('![chart](https://example.com/x.png)');
    expect(
      (await api.put(`/v3/grants/${erin.id}/messages/clean`, { message_id: ['msg_01jzzzzzzzzzzzzzzzzzzzzzzz'] }))
        .status,
    ).toBe(404);
    expect((await api.put(`/v3/grants/${erin.id}/messages/clean`, { message_id: [] })).status).toBe(400);
  });
});

describe('routing', () => {
  it('sends PUT /messages/clean to clean, not to update a message called "clean"', async () => {
    const r = await api.put(`/v3/grants/${bob.id}/messages/clean`, { unread: false });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toContain('message_id');
  });

  it('keeps another grant of the same application apart', async () => {
    const stranger = uniqueEmail();
    expect((await api.get(`/v3/grants/${stranger}/messages`)).status).toBe(404);
    expect((await api.get(`/v3/grants/${carol.id}/messages/${inbox['Invoices overview']!.id}`)).status).toBe(404);
  });
});
