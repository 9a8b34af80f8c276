import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { randomBytes } from 'node:crypto';
import { ImapFlow } from 'imapflow';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { GrantId, MessageId } from '#shared/ids';
import { getTrackedMessage } from '#shared/tracking/records';
import { apiClient, type ApiClient } from '../support/api';
import { makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { connectImapGrant, useDovecot } from '../support/dovecot';
import { createQueueWithDlq, createTestQueue, sqs } from '../support/queues';
import { rememberSecret } from '../support/secrets';
import { grantNotifications, syncRun as runSync } from '../support/sync-runs';
import { startQueueWorker } from '../support/sqs-worker';

/**
 * Mail of an IMAP grant beyond sync (against a real Dovecot and its submission relay into this
 * file's SMTP sink): sending over the account's own SMTP server with the copy put in Sent, a
 * scheduled send sent when due by the scheduled-send worker, and attachments read from the server
 * when downloaded (never stored beside the message).
 */
let gateway: Gateway;
let api: ApiClient;
let apiKey: string;
let applicationId: string;
const PASSWORD = 'imap mail test password 3';
const dovecot = useDovecot([{ user: 'mail@example.org', password: PASSWORD }]);

let fanout: string;
let worker: ReturnType<typeof startQueueWorker> | undefined;
let grant: { id: string; email: string };
const queueArn = async (url: string) =>
  (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes!
    .QueueArn!;

beforeAll(async () => {
  rememberSecret(PASSWORD, 'the IMAP mail test password');
  fanout = await createTestQueue('imap-mail-fanout');
  const scheduled = await createQueueWithDlq('imap-scheduled-send', { visibilityTimeout: 360, maxReceiveCount: 3 });
  Object.assign(process.env, {
    FANOUT_QUEUE_URL: fanout,
    MAIL_SYNC_QUEUE_URL: await createTestQueue('imap-mail-sync'),
    SCHEDULED_SEND_QUEUE_URL: scheduled.queue,
    SCHEDULED_SEND_QUEUE_ARN: await queueArn(scheduled.queue),
    SCHEDULED_SEND_DLQ_ARN: await queueArn(scheduled.dlq),
  });
  gateway = await startGateway();
  const app = await makeApplication();
  ({ apiKey, applicationId } = app);
  api = apiClient(gateway.url, apiKey);
  const { handler } = await import('../../functions/scheduled-send/handler');
  worker = startQueueWorker(scheduled.queue, handler as never, { functionName: 'scheduled-send', timeoutMs: 60_000 });
  grant = await connectImapGrant(api, dovecot, 'mail@example.org', PASSWORD);
  await syncRun();
  await notifications();
});
afterAll(async () => {
  await worker?.stop();
  await gateway?.close();
});

const syncRun = () => runSync(applicationId, grant.id);

const notifications = () => grantNotifications(fanout, grant.id);

async function inFolder(path: string, subject: string) {
  const client = new ImapFlow({
    host: '127.0.0.1',
    port: dovecot.imapPort,
    secure: false,
    auth: { user: 'mail@example.org', pass: PASSWORD },
    logger: false,
  });
  await client.connect();
  try {
    await client.mailboxOpen(path);
    const uids = (await client.search({ header: { subject } }, { uid: true })) || [];
    return await Promise.all(
      uids.map(
        async (uid) => (await client.fetchOne(String(uid), { flags: true, source: true }, { uid: true })) || undefined,
      ),
    );
  } finally {
    await client.logout();
  }
}

describe('IMAP send', () => {
  it("sends over the account's SMTP server, puts the copy in Sent, and the next sync reports nothing more", async () => {
    const sent = await api.post(`/v3/grants/${grant.id}/messages/send`, {
      to: [{ email: 'erin@example.net', name: 'Erin' }],
      subject: 'Over IMAP',
      body: '<p>Hello from an IMAP grant</p>',
    });
    expect(sent.status, sent.text).toBe(200);
    expect(sent.body.data).toMatchObject({
      object: 'message',
      grant_id: grant.id,
      folders: ['sent'],
      unread: false,
      subject: 'Over IMAP',
      from: [{ email: 'mail@example.org' }],
    });

    const arrived = await dovecot.sink.waitFor('erin@example.net');
    expect(arrived.map((m) => m.subject)).toEqual(['Over IMAP']);
    const [copy] = await inFolder('Sent', 'Over IMAP');
    expect(copy && [...copy.flags!]).toContain('\\Seen');

    const read = await api.get(`/v3/grants/${grant.id}/messages/${sent.body.data.id}`);
    expect(read.status, read.text).toBe(200);
    expect(read.body.data.body).toBe('<p>Hello from an IMAP grant</p>');
    expect((await notifications()).map((n) => n.type)).toEqual(['message.created']);
    await syncRun();
    expect(await notifications()).toEqual([]);
  });

  it('tracks what the send asks: the message submitted is rewritten, the copy in Sent is as written, and the tracked record names the stored copy', async () => {
    // Act
    const sent = await api.post(`/v3/grants/${grant.id}/messages/send`, {
      to: [{ email: 'tracked@example.net' }],
      subject: 'Tracked over IMAP',
      body: '<html><body><p>See <a href="https://shop.example.com/item">the item</a></p></body></html>',
      tracking_options: { opens: true, links: true, thread_replies: true, domain_name: 'links.example.com' },
    });

    // Assess
    expect(sent.status, sent.text).toBe(200);
    const [arrived] = await dovecot.sink.waitFor('tracked@example.net');
    const submitted = String((await simpleParser(await dovecot.sink.raw(arrived!.id))).html);
    expect(submitted).toMatch(/href="https:\/\/links\.example\.com\/t\/l\/[\w-]+\.[\w-]+"/);
    expect(submitted).toMatch(/<img src="https:\/\/links\.example\.com\/t\/o\/[\w-]+\.[\w-]+"/);
    const [copy] = await inFolder('Sent', 'Tracked over IMAP');
    const kept = String(copy!.source);
    expect(kept).toContain('https://shop.example.com/item');
    expect(kept).not.toContain('/t/o/');
    expect(kept).not.toContain('links.example.com');
    const read = await api.get(`/v3/grants/${grant.id}/messages/${sent.body.data.id}?fields=include_tracking_options`);
    expect(read.body.data.tracking_options).toMatchObject({ opens: true, links: true, thread_replies: true });
    expect(await getTrackedMessage(grant.id as GrantId, sent.body.data.id as MessageId)).toMatchObject({
      opens: true,
      links: true,
      thread_replies: true,
      domain_name: 'links.example.com',
    });
    expect((await notifications()).map((n) => n.type)).toEqual(['message.created']);
    await syncRun();
    expect(await notifications()).toEqual([]);
  });

  it('refuses a recipient that is not an address before anything is sent or stored', async () => {
    const refused = await api.post(`/v3/grants/${grant.id}/messages/send`, {
      to: [{ email: 'not an address@' }],
      subject: 'Never',
      body: 'x',
    });
    expect(refused.status, refused.text).toBe(400);
    expect(refused.body.error.message).toMatch(/email/);
    expect(await inFolder('Sent', 'Never')).toEqual([]);
  });

  it('downloads attachments from the server, byte for byte, for sent and synced messages', async () => {
    const download = async (messageId: string, attachmentId: string) => {
      const response = await fetch(
        `${gateway.url}/v3/grants/${grant.id}/attachments/${attachmentId}/download?message_id=${messageId}`,
        { headers: { authorization: `Bearer ${apiKey}` } },
      );
      expect(response.status).toBe(200);
      return Buffer.from(await response.arrayBuffer());
    };
    const content = randomBytes(200_000);
    const sent = await api.post(`/v3/grants/${grant.id}/messages/send`, {
      to: [{ email: 'frank@example.net' }],
      subject: 'With a file',
      body: 'see attached',
      attachments: [
        { filename: 'data.bin', content_type: 'application/octet-stream', content: content.toString('base64') },
      ],
    });
    expect(sent.status, sent.text).toBe(200);
    const [attachment] = sent.body.data.attachments as { id: string; filename: string; size: number }[];
    expect(attachment).toMatchObject({ filename: 'data.bin', size: content.length });
    expect((await download(sent.body.data.id, attachment!.id)).equals(content)).toBe(true);

    // A message another client put on the server, with an attachment: synced, then read from the server.
    const other = randomBytes(50_000);
    const client = new ImapFlow({
      host: '127.0.0.1',
      port: dovecot.imapPort,
      secure: false,
      auth: { user: 'mail@example.org', pass: PASSWORD },
      logger: false,
    });
    await client.connect();
    try {
      const boundary = 'b-1';
      const raw = [
        'From: Hal <hal@example.net>',
        'To: mail@example.org',
        'Subject: Report attached',
        'Message-ID: <report@example.net>',
        `Date: ${new Date().toUTCString()}`,
        'MIME-Version: 1.0',
        `Content-Type: multipart/mixed; boundary="${boundary}"`,
        '',
        `--${boundary}`,
        'Content-Type: text/plain; charset=utf-8',
        '',
        'The report.',
        `--${boundary}`,
        'Content-Type: application/pdf; name="report.pdf"',
        'Content-Disposition: attachment; filename="report.pdf"',
        'Content-Transfer-Encoding: base64',
        '',
        other.toString('base64').replace(/.{76}/g, '$&\r\n'),
        `--${boundary}--`,
        '',
      ].join('\r\n');
      await client.append('INBOX', Buffer.from(raw));
    } finally {
      await client.logout();
    }
    await syncRun();
    const [report] = (await api.get(`/v3/grants/${grant.id}/messages?subject=report`)).body.data;
    expect(report.attachments).toEqual([
      expect.objectContaining({ filename: 'report.pdf', content_type: 'application/pdf', size: other.length }),
    ]);
    expect((await download(report.id, report.attachments[0].id)).equals(other)).toBe(true);
  });
});

describe('IMAP scheduled send', () => {
  it('sends a scheduled message when due, through the Sent copy, with message.send_success', async () => {
    const sendAt = Math.floor(Date.now() / 1000) + 16;
    const scheduled = await api.post(`/v3/grants/${grant.id}/messages/send`, {
      to: [{ email: 'gina@example.net' }],
      subject: 'Later over IMAP',
      body: 'when due',
      send_at: sendAt,
    });
    expect(scheduled.status, scheduled.text).toBe(202);
    const scheduleId = scheduled.body.data.schedule_id as string;
    await vi.waitFor(
      async () =>
        expect((await api.get(`/v3/grants/${grant.id}/messages/schedules/${scheduleId}`)).body.data.status.code).toBe(
          'success',
        ),
      { timeout: 60_000, interval: 500 },
    );
    const arrived = await dovecot.sink.waitFor('gina@example.net');
    expect(arrived.map((m) => m.subject)).toEqual(['Later over IMAP']);
    expect(await inFolder('Sent', 'Later over IMAP')).toHaveLength(1);
    const types = (await notifications()).map((n) => n.type);
    expect(types).toContain('message.send_success');
  }, 90_000);
});
