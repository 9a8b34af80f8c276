import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication, uniqueEmail } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { sunkRaw, waitForSunk } from '../support/mail';
import { createTestQueue, drainQueue, messagesIn } from '../support/queues';
import { jobsDone } from '../support/outbox-relay';

/** POST /v3/grants/{grant_id}/messages/send: local delivery, the outside relay, multipart, limits, idempotency. */
let gateway: Gateway;
let api: ApiClient;
let apiKey: string;
let applicationId: string;
let queueUrl: string;
type Grant = Awaited<ReturnType<typeof makeAgentGrant>>;
let alice: Grant;
let bob: Grant;

const outside = () => uniqueEmail('person').replace('@agents.test', '@example.net');

beforeAll(async () => {
  queueUrl = await createTestQueue('send-fanout');
  process.env.FANOUT_QUEUE_URL = queueUrl;
  gateway = await startGateway();
  const app = await makeApplication();
  apiKey = app.apiKey;
  applicationId = app.applicationId;
  api = apiClient(gateway.url, apiKey);
  [alice, bob] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api)]);
  await drainQueue(queueUrl, 2);
});

afterAll(async () => gateway?.close());

describe('delivery', () => {
  it('delivers to another Agent Account, keeps a Sent copy, and publishes message.created for both', async () => {
    // Act
    const sent = await api.post(`/v3/grants/${alice.id}/messages/send`, {
      to: [{ email: bob.email, name: 'Bob' }],
      subject: 'Hello Bob',
      body: '<p>Hi!</p>',
      metadata: { key2: 'order-9' },
    });

    // Assess
    expect(sent.status).toBe(200);
    await jobsDone();
    expect(sent.body.data).toMatchObject({
      grant_id: alice.id,
      folders: ['sent'],
      unread: false,
      from: [{ email: alice.email }],
      metadata: { key2: 'order-9' },
    });
    const [received] = (await api.get(`/v3/grants/${bob.id}/messages`)).body.data;
    expect(received).toMatchObject({
      subject: 'Hello Bob',
      folders: ['inbox'],
      unread: true,
      body: '<p>Hi!</p>',
      from: [{ email: alice.email }],
      metadata: {},
    });
    const events = await drainQueue(queueUrl, 2);
    expect(events.map((e) => [e.body.type, e.body.data.grant_id, e.body.data.object.id]).sort()).toEqual(
      [
        ['message.created', alice.id, sent.body.data.id],
        ['message.created', bob.id, received.id],
      ].sort(),
    );
    expect(events.every((e) => e.body.data.application_id === applicationId)).toBe(true);
  });

  it('relays outside addresses over SMTP with the right headers; Bcc only in the envelope', async () => {
    const to = outside();
    const hidden = outside();
    const r = await api.post(`/v3/grants/${alice.id}/messages/send`, {
      from: [{ email: alice.email, name: 'Alice A.' }],
      to: [{ email: to }],
      bcc: [{ email: hidden }],
      reply_to: [{ email: 'replies@example.net' }],
      subject: 'Über outside',
      body: '<p>external</p>',
      custom_headers: [{ name: 'X-Campaign', value: 'spring' }],
    });
    expect(r.status).toBe(200);
    const [message] = await waitForSunk(to);
    expect(message!.recipients.sort()).toEqual([to, hidden].sort());
    expect(message!.mailFrom).toBe(alice.email);
    expect(message!.subject).toBe('Über outside');
    const raw = await sunkRaw(message!.id);
    expect(raw).toMatch(/^From: "?Alice A\."? <.+>$/m);
    expect(raw).toContain('X-Campaign: spring');
    expect(raw).toMatch(/^Reply-To: replies@example\.net$/m);
    expect(raw).not.toMatch(/^Bcc:/im);
    expect(raw).toMatch(/^Message-ID: <.+@switchboard\.local>$/m);
    // The Sent copy keeps the Bcc list for its owner.
    expect(r.body.data.bcc).toEqual([{ email: hidden }]);
  });

  it('threads a reply with reply_to_message_id and sets In-Reply-To', async () => {
    const first = await api.post(`/v3/grants/${alice.id}/messages/send`, {
      to: [{ email: bob.email }],
      subject: 'Thread start',
      body: 'one',
    });
    await jobsDone();
    const [inBob] = (await api.get(`/v3/grants/${bob.id}/messages?subject=thread`)).body.data;
    const to = outside();
    const reply = await api.post(`/v3/grants/${bob.id}/messages/send`, {
      to: [{ email: alice.email }, { email: to }],
      subject: 'Re: Thread start',
      body: 'two',
      reply_to_message_id: inBob.id,
    });
    expect(reply.status).toBe(200);
    await jobsDone();
    expect(reply.body.data.thread_id).toBe(inBob.thread_id);
    // Alice's copy of the reply joins her original thread through In-Reply-To.
    const aliceThread = (await api.get(`/v3/grants/${alice.id}/messages?thread_id=${first.body.data.thread_id}`)).body
      .data;
    expect(aliceThread.map((m: { subject: string }) => m.subject)).toEqual(['Re: Thread start', 'Thread start']);
    const raw = await sunkRaw((await waitForSunk(to))[0]!.id);
    expect(raw).toMatch(/^In-Reply-To: <.+>$/m);
  });

  it('sends plain text, renders a template and appends a signature', async () => {
    const template = await api.post(`/v3/grants/${alice.id}/templates`, {
      name: 't',
      engine: 'handlebars',
      subject: 'Hi {{name}}',
      body: 'Dear {{name}},',
    });
    const signature = await api.post(`/v3/grants/${alice.id}/signatures`, { name: 's', body: '-- Alice' });
    const r = await api.post(`/v3/grants/${alice.id}/messages/send`, {
      to: [{ email: bob.email }],
      template: { id: template.body.data.id, variables: { name: 'Bob & Co' } },
      signature_id: signature.body.data.id,
      is_plaintext: true,
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.subject).toBe('Hi Bob & Co');
    expect(r.body.data.body).toBe('Dear Bob &amp; Co,\n\n-- Alice');
    const overridden = await api.post(`/v3/grants/${alice.id}/messages/send`, {
      to: [{ email: bob.email }],
      subject: 'Explicit',
      template: { id: template.body.data.id, variables: { name: 'X' } },
    });
    expect(overridden.body.data).toMatchObject({ subject: 'Explicit', body: 'Dear X,' });
  });
});

describe('notifications', () => {
  it('publishes message.updated on changes, and .truncated without the body over 1 MB', async () => {
    // Drain everything earlier tests left on the file's fan-out queue: once the outbox is drained
    // and their jobs have run, all of it is on the queue.
    await jobsDone();
    await drainQueue(queueUrl, await messagesIn(queueUrl));
    const big = `<p>${'x'.repeat(1_100_000)}</p>`;
    const sent = await api.post(`/v3/grants/${alice.id}/messages/send`, {
      to: [{ email: bob.email }],
      subject: 'Huge body',
      body: big,
    });
    expect(sent.status).toBe(200);
    expect(sent.body.data.body).toBe(big);
    await jobsDone();
    const created = await drainQueue(queueUrl, 2);
    expect(created.map((e) => e.body.type)).toEqual(['message.created.truncated', 'message.created.truncated']);
    expect(
      created.every((e) => e.body.data.object.body === undefined && e.body.data.object.subject === 'Huge body'),
    ).toBe(true);
    expect(created.every((e) => e.attributes.type === 'message.created.truncated')).toBe(true);

    const [received] = (await api.get(`/v3/grants/${bob.id}/messages?subject=huge`)).body.data;
    expect(received.body).toBe(big);
    await api.put(`/v3/grants/${bob.id}/messages/${received.id}`, { unread: false });
    const [updated] = await drainQueue(queueUrl, 1);
    expect(updated!.body).toMatchObject({
      type: 'message.updated.truncated',
      data: { grant_id: bob.id, object: { id: received.id, unread: false } },
    });

    const small = await api.post(`/v3/grants/${alice.id}/messages/send`, {
      to: [{ email: 'x@example.net' }],
      subject: 'Small',
    });
    // Its message.created, and the relay's answer for the outside recipient (message.delivered).
    const smallSent = await drainQueue(queueUrl, 2);
    expect(smallSent.map((e) => e.body.type).sort()).toEqual(['message.created', 'message.delivered']);
    await api.put(`/v3/grants/${alice.id}/messages/${small.body.data.id}`, { starred: true });
    const [plain] = await drainQueue(queueUrl, 1);
    expect(plain!.body).toMatchObject({
      type: 'message.updated',
      data: { object: { id: small.body.data.id, starred: true, body: '' } },
    });
  });
});

describe('attachments', () => {
  it('sends a 5 MB attachment as multipart and downloads it byte for byte', async () => {
    // Prepare
    const content = randomBytes(5 * 1024 * 1024);
    const form = new FormData();
    form.append(
      'message',
      JSON.stringify({ to: [{ email: bob.email }], subject: 'Big file', body: '<p>see attached</p>' }),
    );
    form.append('file', new Blob([content], { type: 'application/octet-stream' }), 'big.bin');

    // Act
    const response = await fetch(`${gateway.url}/v3/grants/${alice.id}/messages/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}` },
      body: form,
    });

    // Assess
    expect(response.status, await response.clone().text()).toBe(200);
    await jobsDone();
    const [received] = (await api.get(`/v3/grants/${bob.id}/messages?subject=big`)).body.data;
    const [attachment] = received.attachments;
    expect(attachment).toMatchObject({
      filename: 'big.bin',
      size: content.length,
      content_type: 'application/octet-stream',
    });
    const meta = await api.get(`/v3/grants/${bob.id}/attachments/${attachment.id}?message_id=${received.id}`);
    expect(meta.body.data).toMatchObject({ id: attachment.id, size: content.length });
    // Over 4 MB: a redirect to a short-lived URL, which fetch follows.
    const redirect = await fetch(
      `${gateway.url}/v3/grants/${bob.id}/attachments/${attachment.id}/download?message_id=${received.id}`,
      {
        headers: { authorization: `Bearer ${apiKey}` },
        redirect: 'manual',
      },
    );
    expect(redirect.status).toBe(302);
    const body = (await redirect.json()) as { data: { url: string } };
    expect(body.data.url).toBe(redirect.headers.get('location'));
    const download = await fetch(redirect.headers.get('location')!);
    expect(Buffer.from(await download.arrayBuffer()).equals(content)).toBe(true);
  }, 60_000);

  it('downloads small attachments in the response', async () => {
    const content = Buffer.from('small attachment ✓');
    await api.post(`/v3/grants/${alice.id}/messages/send`, {
      to: [{ email: bob.email }],
      subject: 'Small file',
      attachments: [{ filename: 'note ✓.txt', content_type: 'text/plain', content: content.toString('base64') }],
    });
    await jobsDone();
    const [received] = (await api.get(`/v3/grants/${bob.id}/messages?subject=small`)).body.data;
    const response = await fetch(
      `${gateway.url}/v3/grants/${bob.id}/attachments/${received.attachments[0].id}/download?message_id=${received.id}`,
      {
        headers: { authorization: `Bearer ${apiKey}` },
      },
    );
    expect(response.status).toBe(200);
    // The contract's media type; the file's own type in x-attachment-content-type.
    expect(response.headers.get('content-type')).toBe('application/octet-stream');
    expect(response.headers.get('x-attachment-content-type')).toBe('text/plain');
    expect(response.headers.get('content-disposition')).toBe(
      `attachment; filename*=UTF-8''${encodeURIComponent('note ✓.txt')}`,
    );
    expect(Buffer.from(await response.arrayBuffer()).equals(content)).toBe(true);
    expect(
      (
        await api.get(
          `/v3/grants/${bob.id}/attachments/att_01jzzzzzzzzzzzzzzzzzzzzzzz/download?message_id=${received.id}`,
        )
      ).status,
    ).toBe(404);
    expect((await api.get(`/v3/grants/${bob.id}/attachments/${received.attachments[0].id}/download`)).status).toBe(400);
  });

  it('answers 413 for JSON over 3 MB, pointing to multipart, and for multipart over 25 MB', async () => {
    const big = await api.post(`/v3/grants/${alice.id}/messages/send`, {
      to: [{ email: bob.email }],
      attachments: [{ filename: 'a.bin', content: randomBytes(2_400_000).toString('base64') }],
    });
    expect(big.status).toBe(413);
    expect(big.body.error.type).toBe('payload_too_large');
    expect(big.body.error.message).toContain('multipart/form-data');

    // API Gateway itself stops requests over 10 MB, so the 25 MB rule is exercised on the handler directly.
    const boundary = 'switchboardtestboundary';
    const payload = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="message"\r\n\r\n{"to":[{"email":"${bob.email}"}]}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
      ),
      Buffer.alloc(26 * 1024 * 1024),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const result = (await gateway.invoke({
      method: 'POST',
      path: `/v3/grants/${alice.id}/messages/send`,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: payload,
    })) as { statusCode: number; body: string };
    expect(result.statusCode).toBe(413);
    expect(JSON.parse(result.body).error.message).toContain('25 MB');
  }, 60_000);
});

describe('Idempotency-Key', () => {
  it('replays the first answer for the same key and payload, and refuses another payload with 409', async () => {
    const to = outside();
    const key = `key-${randomBytes(4).toString('hex')}`;
    const payload = { to: [{ email: to }], subject: 'Once only', body: 'x' };
    const first = await api.post(`/v3/grants/${alice.id}/messages/send`, payload, { 'idempotency-key': key });
    const again = await api.post(`/v3/grants/${alice.id}/messages/send`, payload, { 'idempotency-key': key });
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-response')).toBe('true');
    expect(first.headers.get('idempotent-response')).toBeNull();
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(await waitForSunk(to)).toHaveLength(1);
    const sentCopies = (
      await api.get(`/v3/grants/${alice.id}/messages?in=sent&subject=${encodeURIComponent('once only')}`)
    ).body.data;
    expect(sentCopies).toHaveLength(1);

    const different = await api.post(
      `/v3/grants/${alice.id}/messages/send`,
      { ...payload, subject: 'Another' },
      { 'idempotency-key': key },
    );
    expect(different.status).toBe(409);
    expect(different.body.error.message).toContain('different request');
    // Another grant may use the same key for its own send: a fresh send, not a replay of Alice's.
    const otherGrant = await api.post(`/v3/grants/${bob.id}/messages/send`, payload, { 'idempotency-key': key });
    expect(otherGrant.status, otherGrant.text).toBe(200);
    expect(otherGrant.headers.get('idempotent-response')).toBeNull();
    expect(otherGrant.body.data.id).toEqual(expect.any(String));
    expect(otherGrant.body.data.id).not.toBe(first.body.data.id);
    expect(otherGrant.body.data.grant_id).toBe(bob.id);
  });
});

describe('bad input', () => {
  it.each([
    [{ subject: 'nobody' }, 'recipient', 400],
    [{ to: [{ email: 'x@example.net' }], send_at: 2_000_000_000 }, 'send_at', 400],
    [{ to: [{ email: 'x@example.net' }], from: [{ email: 'someone@else.net' }] }, "'from'", 400],
    [{ to: [{ email: 'not-an-email' }] }, "'to[0].email'", 400],
    [{ to: [{ email: 'x@example.net' }], custom_headers: [{ name: 'Subject', value: 'x' }] }, 'custom_headers', 400],
    [
      { to: [{ email: 'x@example.net' }], custom_headers: [{ name: 'X-A', value: 'a\r\nBcc: y' }] },
      'custom_headers[0].value',
      400,
    ],
    [{ to: [{ email: 'x@example.net' }], attachments: [{ filename: 'a', content: '***' }] }, 'base64', 400],
    [{ to: [{ email: 'x@example.net' }], template: { id: 'tpl_01jzzzzzzzzzzzzzzzzzzzzzzz' } }, 'Template', 404],
    [{ to: [{ email: 'x@example.net' }], signature_id: 'nope' }, 'Signature', 404],
    [{ to: [{ email: 'x@example.net' }], reply_to_message_id: 'msg_01jzzzzzzzzzzzzzzzzzzzzzzz' }, 'Message', 404],
    [
      { to: [{ email: 'x@example.net' }], tracking_options: { opens: true, domain_name: 'bad..host' } },
      'tracking_options',
      400,
    ],
  ])('rejects %j', async (body, fragment, status) => {
    const r = await api.post(`/v3/grants/${alice.id}/messages/send`, body);
    expect(r.status, r.text).toBe(status);
    expect(r.body.error.message).toContain(fragment);
  });

  it('refuses select on send', async () => {
    expect(
      (await api.post(`/v3/grants/${alice.id}/messages/send?select=id`, { to: [{ email: bob.email }] })).status,
    ).toBe(400);
  });
});
