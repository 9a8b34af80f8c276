import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication, uniqueEmail } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { smtpClient, startInboundListener } from '../support/mail';
import { createTestQueue, drainQueue } from '../support/queues';
import { expireUploads } from '../support/uploads';

/**
 * Inbound mail: a real SMTP session against the listener `npm start` runs, backed by the same
 * ingest function the AWS inbound path (SES → S3 → Lambda) calls.
 */
let gateway: Gateway;
let api: ApiClient;
let applicationId: string;
let queueUrl: string;
let port: number;
let stopSmtp: () => Promise<void>;

beforeAll(async () => {
  queueUrl = await createTestQueue('inbound-fanout');
  process.env.FANOUT_QUEUE_URL = queueUrl;
  gateway = await startGateway();
  const app = await makeApplication();
  applicationId = app.applicationId;
  api = apiClient(gateway.url, app.apiKey);
  ({ port, stop: stopSmtp } = await startInboundListener());
});

afterAll(async () => {
  await stopSmtp?.();
  await gateway?.close();
});

describe('inbound SMTP', () => {
  it('stores mail for an Agent Account in its inbox and publishes message.created', async () => {
    // Prepare
    const agent = await makeAgentGrant(api);
    await drainQueue(queueUrl, 1);

    // Act
    const info = await smtpClient(port).sendMail({
      from: '"Outside Person" <person@example.net>',
      to: agent.email,
      subject: 'Inbound hello',
      html: '<p>Hello from <b>outside</b></p>',
      attachments: [{ filename: 'report.csv', content: 'a,b\n1,2\n', contentType: 'text/csv' }],
      messageId: '<inbound-1@example.net>',
    });

    // Assess
    expect(info.accepted).toEqual([agent.email]);
    const [message] = (await api.get(`/v3/grants/${agent.id}/messages?in=inbox`)).body.data;
    expect(message).toMatchObject({
      subject: 'Inbound hello',
      from: [{ email: 'person@example.net', name: 'Outside Person' }],
      to: [{ email: agent.email }],
      unread: true,
      folders: ['inbox'],
      body: '<p>Hello from <b>outside</b></p>',
    });
    expect(message.attachments).toEqual([
      expect.objectContaining({ filename: 'report.csv', content_type: 'text/csv', size: 8 }),
    ]);
    const [event] = await drainQueue(queueUrl, 1);
    expect(event!.body).toMatchObject({
      type: 'message.created',
      data: {
        application_id: applicationId,
        grant_id: agent.id,
        object: { id: message.id, thread_id: message.thread_id },
      },
    });
  });

  it('refuses unknown recipients at RCPT TO and delivers to the known ones', async () => {
    const agent = await makeAgentGrant(api);
    const unknown = uniqueEmail('nobody');
    await expect(
      smtpClient(port).sendMail({ from: 'a@example.net', to: unknown, subject: 'x', text: 'x' }),
    ).rejects.toMatchObject({ responseCode: 550 });
    const mixed = await smtpClient(port).sendMail({
      from: 'a@example.net',
      to: [agent.email, unknown],
      subject: 'Mixed',
      text: 'x',
    });
    expect(mixed.accepted).toEqual([agent.email]);
    expect(mixed.rejected).toEqual([unknown]);
    expect(
      (await api.get(`/v3/grants/${agent.id}/messages`)).body.data.map((m: { subject: string }) => m.subject),
    ).toEqual(['Mixed']);
  });

  it('stores a message delivered twice (same Message-ID) once, and one copy per mailbox', async () => {
    const [a, b] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api)]);
    const mail = {
      from: 'a@example.net',
      to: [a.email, b.email],
      cc: a.email,
      subject: 'Twice',
      text: 'same',
      messageId: `<twice-${Date.now()}@example.net>`,
    };
    await smtpClient(port).sendMail(mail);
    await smtpClient(port).sendMail(mail);
    expect((await api.get(`/v3/grants/${a.id}/messages`)).body.data).toHaveLength(1);
    expect((await api.get(`/v3/grants/${b.id}/messages`)).body.data).toHaveLength(1);
    // The second delivery's copies were never committed: they go when their upload records expire
    // (one per mailbox), and one raw message per mailbox is left in S3.
    expect(await expireUploads([a.id, b.id])).toBe(2);
    const s3 = new S3Client({ forcePathStyle: true });
    for (const grant of [a, b]) {
      const listed = await s3.send(
        new ListObjectsV2Command({ Bucket: process.env.MAIL_BUCKET, Prefix: `grants/${grant.id}/` }),
      );
      expect(listed.KeyCount).toBe(1);
    }
    s3.destroy();
  });

  it('threads replies by In-Reply-To and References', async () => {
    const agent = await makeAgentGrant(api);
    const sent = await api.post(`/v3/grants/${agent.id}/messages/send`, {
      to: [{ email: 'partner@example.net' }],
      subject: 'Proposal',
      body: 'draft',
    });
    const headers = await api.get(`/v3/grants/${agent.id}/messages/${sent.body.data.id}?fields=include_headers`);
    const messageId = headers.body.data.headers.find(
      (h: { name: string }) => h.name.toLowerCase() === 'message-id',
    ).value;
    await smtpClient(port).sendMail({
      from: 'partner@example.net',
      to: agent.email,
      subject: 'Re: Proposal',
      text: 'ok',
      inReplyTo: messageId,
      references: [messageId],
    });
    await smtpClient(port).sendMail({
      from: 'partner@example.net',
      to: agent.email,
      subject: 'Unrelated',
      text: 'new',
    });
    const threads = (await api.get(`/v3/grants/${agent.id}/threads`)).body.data;
    expect(threads).toHaveLength(2);
    const proposal = threads.find((t: { subject: string }) => t.subject === 'Proposal');
    expect(proposal.message_ids).toHaveLength(2);
    expect(proposal.latest_draft_or_message.subject).toBe('Re: Proposal');
    // The reply names the message it answers.
    expect(proposal.latest_draft_or_message.in_reply_to).toBe(messageId);
  });

  it('keeps plain-text mail as plain text', async () => {
    const agent = await makeAgentGrant(api);
    await smtpClient(port).sendMail({
      from: 'a@example.net',
      to: agent.email,
      subject: 'Plain',
      text: 'just text\nsecond line',
    });
    const [message] = (await api.get(`/v3/grants/${agent.id}/messages`)).body.data;
    expect(message.body.trimEnd()).toBe('just text\nsecond line');
    expect((await api.get(`/v3/grants/${agent.id}/messages?search_query_native=second`)).body.data).toHaveLength(1);
  });
});
