import { randomBytes } from 'node:crypto';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { s3 } from '#shared/aws/s3';
import { DeliveryError, mailTransport } from '#shared/mail/transport';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { makeAgentGrant, makeApplication, uniqueEmail } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { sunkMessages, waitForSunk } from '../support/mail';
import { createTestQueue } from '../support/queues';

/**
 * Idempotency-Key on POST /v3/grants/{grant_id}/messages/send: a retry is recognised by what it
 * asks (not by its bytes: multipart boundaries change from one attempt to the next), and a key is
 * given back only when nothing was sent.
 */
let gateway: Gateway;
let api: ApiClient;
let apiKey: string;
type Grant = Awaited<ReturnType<typeof makeAgentGrant>>;
let alice: Grant;

const outside = () => uniqueEmail('person').replace('@agents.test', '@example.net');
const newKey = () => `key-${randomBytes(6).toString('hex')}`;
const sendPath = () => `/v3/grants/${alice.id}/messages/send`;

beforeAll(async () => {
  process.env.FANOUT_QUEUE_URL = await createTestQueue('send-idempotency');
  gateway = await startGateway();
  apiKey = (await makeApplication()).apiKey;
  api = apiClient(gateway.url, apiKey);
  alice = await makeAgentGrant(api);
});

afterEach(() => vi.restoreAllMocks());
afterAll(async () => gateway?.close());

interface Part {
  name: string;
  filename?: string;
  contentType?: string;
  content: string | Buffer;
}

/** A multipart/form-data body with the boundary given (clients draw a new one for every request). */
function multipart(boundary: string, parts: Part[]): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename ? `; filename="${part.filename}"` : ''}`;
    const type = part.contentType ? `\r\nContent-Type: ${part.contentType}` : '';
    chunks.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}${type}\r\n\r\n`),
      Buffer.from(part.content),
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

function postMultipart(key: string, parts: Part[]): Promise<ApiResponse> {
  const boundary = `----switchboard${randomBytes(12).toString('hex')}`;
  return api.request('POST', sendPath(), {
    rawBody: multipart(boundary, parts),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'idempotency-key': key },
  });
}

const file = (content: string, filename = 'report.txt'): Part => ({
  name: 'file',
  filename,
  contentType: 'text/plain',
  content,
});

describe('recognising a retry', () => {
  it('replays a multipart send retried with the same key and a new boundary', async () => {
    // Prepare
    const to = outside();
    const key = newKey();
    const parts = [
      {
        name: 'message',
        content: JSON.stringify({ to: [{ email: to }], subject: 'Multipart once', body: '<p>attached</p>' }),
      },
      file('numbers: 1 2 3'),
      file('second', 'b.txt'),
    ];

    // Act
    const first = await postMultipart(key, parts);
    const again = await postMultipart(key, parts);

    // Assess
    expect(first.status, first.text).toBe(200);
    expect(first.headers.get('idempotent-response')).toBeNull();
    expect(again.status, again.text).toBe(200);
    expect(again.headers.get('idempotent-response')).toBe('true');
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(again.body.data.attachments.map((a: { filename: string }) => a.filename)).toEqual(['report.txt', 'b.txt']);
    expect(await waitForSunk(to)).toHaveLength(1);
  });

  it.each([
    ['file content', [file('numbers: 1 2 4'), file('second', 'b.txt')]],
    ['file name', [file('numbers: 1 2 3', 'other.txt'), file('second', 'b.txt')]],
    ['file order', [file('second', 'b.txt'), file('numbers: 1 2 3')]],
    ['number of files', [file('numbers: 1 2 3')]],
  ])('refuses with 409 a multipart send with the same key and another %s', async (_change, files) => {
    const to = outside();
    const key = newKey();
    const message = { name: 'message', content: JSON.stringify({ to: [{ email: to }], subject: 'Multipart changed' }) };
    expect((await postMultipart(key, [message, file('numbers: 1 2 3'), file('second', 'b.txt')])).status).toBe(200);

    const changed = await postMultipart(key, [message, ...files]);

    expect(changed.status, changed.text).toBe(409);
    expect(changed.body.error.message).toContain('different request');
    expect(await waitForSunk(to)).toHaveLength(1);
  });

  it('replays JSON sent again with other spacing and key order, and refuses another body with 409', async () => {
    const to = outside();
    const key = newKey();
    const headers = { 'content-type': 'application/json', 'idempotency-key': key };
    const first = await api.request('POST', sendPath(), {
      rawBody: JSON.stringify({ to: [{ email: to }], subject: 'JSON once', body: 'x' }),
      headers,
    });
    const again = await api.request('POST', sendPath(), {
      rawBody: `{ "body": "x",\n  "subject": "JSON once", "to": [ { "email": "${to}" } ] }`,
      headers,
    });
    expect(first.status, first.text).toBe(200);
    expect(again.status, again.text).toBe(200);
    expect(again.headers.get('idempotent-response')).toBe('true');
    expect(again.body.data.id).toBe(first.body.data.id);

    const different = await api.post(
      sendPath(),
      { to: [{ email: to }], subject: 'JSON once', body: 'y' },
      { 'idempotency-key': key },
    );
    expect(different.status).toBe(409);
    expect(different.body.error.message).toContain('different request');
    expect(await waitForSunk(to)).toHaveLength(1);
  });
});

describe('a send that fails', () => {
  it('gives the key back when the relay refused the message, so a retry with it sends', async () => {
    const to = outside();
    const key = newKey();
    const payload = { to: [{ email: to }], subject: 'Refused first' };
    vi.spyOn(mailTransport(), 'send').mockRejectedValueOnce(new DeliveryError('451 try again later'));

    const failed = await api.post(sendPath(), payload, { 'idempotency-key': key });
    const retried = await api.post(sendPath(), payload, { 'idempotency-key': key });

    expect(failed.status, failed.text).toBe(502);
    expect(retried.status, retried.text).toBe(200);
    expect(retried.headers.get('idempotent-response')).toBeNull();
    expect(await waitForSunk(to)).toHaveLength(1);
  });

  it('keeps the key when storing failed after the message was delivered: a retry gets 409, not a second copy', async () => {
    // Prepare: the relay takes the message, then the Sent copy cannot be stored.
    const to = outside();
    const key = newKey();
    const payload = { to: [{ email: to }], subject: 'Delivered, then failed' };
    const send = s3.send.bind(s3);
    vi.spyOn(s3, 'send').mockImplementation(((command: unknown) => {
      if (command instanceof PutObjectCommand) return Promise.reject(new Error('S3 is unavailable'));
      return send(command as never);
    }) as never);

    // Act
    const failed = await api.post(sendPath(), payload, { 'idempotency-key': key });
    vi.restoreAllMocks();
    const retried = await api.post(sendPath(), payload, { 'idempotency-key': key });

    // Assess
    expect(failed.status, failed.text).toBe(500);
    expect(retried.status, retried.text).toBe(409);
    expect(retried.body.error.message).toContain('no recorded outcome');
    expect(retried.body.error.message).toContain('not sent again');
    expect(await waitForSunk(to)).toHaveLength(1);
    // A new key is a new send.
    expect((await api.post(sendPath(), payload, { 'idempotency-key': newKey() })).status).toBe(200);
    await vi.waitFor(async () => expect(await sunkMessages(to)).toHaveLength(2));
  });
});
