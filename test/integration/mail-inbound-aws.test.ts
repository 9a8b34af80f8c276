import { HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { SESEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';

/** The AWS inbound path: SES stored the raw message under inbound/ and invokes the inbound function. */
let gateway: Gateway;
let api: ApiClient;
const s3 = new S3Client({ forcePathStyle: true });

beforeAll(async () => {
  gateway = await startGateway();
  api = apiClient(gateway.url, (await makeApplication()).apiKey);
});
afterAll(async () => gateway?.close());

function sesEvent(messageId: string, recipients: string[]): SESEvent {
  return {
    Records: [
      {
        eventSource: 'aws:ses',
        eventVersion: '1.0',
        ses: {
          mail: {
            messageId,
            source: 'sender@example.net',
            destination: recipients,
            timestamp: new Date().toISOString(),
          },
          receipt: { recipients, timestamp: new Date().toISOString() },
        },
      },
    ],
  } as unknown as SESEvent;
}

describe('Function: inbound (SES receipt → S3 → Lambda)', () => {
  it('ingests the stored message for its Agent Account recipients and removes the inbound copy', async () => {
    // Prepare
    const agent = await makeAgentGrant(api);
    const sesId = `ses-${Date.now()}`;
    const raw = [
      `From: Sender <sender@example.net>`,
      `To: ${agent.email}`,
      'Subject: Via SES',
      'Message-ID: <via-ses@example.net>',
      '',
      'Hello through SES',
    ].join('\r\n');
    await s3.send(new PutObjectCommand({ Bucket: process.env.MAIL_BUCKET, Key: `inbound/${sesId}`, Body: raw }));
    const { handler } = await import('#functions/inbound/handler');

    // Act
    await handler(sesEvent(sesId, [agent.email, 'unknown@agents.test']));

    // Assess
    const [message] = (await api.get(`/v3/grants/${agent.id}/messages`)).body.data;
    expect(message).toMatchObject({
      subject: 'Via SES',
      from: [{ email: 'sender@example.net', name: 'Sender' }],
      folders: ['inbox'],
      unread: true,
    });
    expect(message.body.trim()).toBe('Hello through SES');
    await expect(
      s3.send(new HeadObjectCommand({ Bucket: process.env.MAIL_BUCKET, Key: `inbound/${sesId}` })),
    ).rejects.toMatchObject({ name: 'NotFound' });
  });

  it('fails (and so is retried by Lambda) when the stored message is missing', async () => {
    const { handler } = await import('#functions/inbound/handler');
    // S3 answers GetObject of the missing inbound copy with NoSuchKey, which the handler lets through.
    await expect(handler(sesEvent('missing-object', ['x@agents.test']))).rejects.toMatchObject({
      name: 'NoSuchKey',
      $metadata: { httpStatusCode: 404 },
    });
  });
});
