import { SendMessageCommand } from '@aws-sdk/client-sqs';
import Ajv from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApplicationId, GrantId, MessageId } from '#shared/ids';
import { newId } from '#shared/ids';
import { apiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { outboxDrained } from '../support/outbox-relay';
import { createQueueWithDlq, createTestQueue, drainQueue, messagesIn, sqs } from '../support/queues';
import { drainThroughHandler } from '../support/sqs-worker';
import {
  MessageBouncedObject,
  MessageComplaintObject,
  MessageDeliveredObject,
  MessageRejectedObject,
} from '#schemas/deliverability';

/**
 * The deliverability notifications of the outgoing transport. SES events, as SES's event publishing
 * documents them and as SNS wraps them, go through the SQS emulator into the real ses-events worker
 * and become message.delivered / bounced / complaint / rejected (message.transactional.* for a
 * transactional send), once each however often SQS delivers them; events without our tags are
 * dropped, malformed messages go to the dead-letter queue. Locally, the relay's answer is announced.
 */
let gateway: Gateway;
let fanout: string;
let events: { queue: string; dlq: string };
let applicationId: ApplicationId;
let grantId: GrantId;
let apiKey: string;
let handler: typeof import('#functions/ses-events/handler').handler;

beforeAll(async () => {
  fanout = await createTestQueue('deliverability-fanout');
  process.env.FANOUT_QUEUE_URL = fanout;
  // One receive: a message that fails moves to the DLQ on its next receive (a second later).
  events = await createQueueWithDlq('ses-events', { visibilityTimeout: 1, maxReceiveCount: 1 });
  gateway = await startGateway();
  const app = await makeApplication();
  applicationId = app.applicationId as ApplicationId;
  apiKey = app.apiKey;
  grantId = (await makeAgentGrant(apiClient(gateway.url, apiKey))).id as GrantId;
  ({ handler } = await import('#functions/ses-events/handler'));
  await published(1); // grant.created
});

afterAll(async () => gateway?.close());

const ajv = new Ajv({ strict: false, allErrors: true });
const SCHEMAS: Record<string, ReturnType<typeof ajv.compile>> = {
  delivered: ajv.compile(MessageDeliveredObject),
  bounced: ajv.compile(MessageBouncedObject),
  complaint: ajv.compile(MessageComplaintObject),
  rejected: ajv.compile(MessageRejectedObject),
};

/**
 * The notifications published since the last call: exactly `count`, sorted by type; nothing else is
 * left. Each deliverability notification's object conforms to its schema (schemas/deliverability.ts).
 */
async function published(count: number) {
  await outboxDrained();
  const bodies = (await drainQueue(fanout, count)).map((e) => e.body);
  expect(await messagesIn(fanout)).toBe(0);
  for (const body of bodies) {
    const validate = SCHEMAS[String(body.type).split('.').pop()!];
    if (validate) expect(validate(body.data.object), JSON.stringify(validate.errors)).toBe(true);
  }
  return bodies.sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
}

const tagsOf = (grant: string, message: string) => ({
  'ses:configuration-set': ['switchboard-test'],
  'ses:source-ip': ['192.0.2.1'],
  switchboard_application: [applicationId],
  switchboard_grant: [grant],
  switchboard_message: [message],
});

/** An SES event in the event publishing format, inside SNS's notification envelope. */
function sesEvent(eventType: string, details: Record<string, unknown>, tags?: Record<string, string[]>) {
  const mail = {
    timestamp: '2026-11-28T10:00:00.000Z',
    source: 'agent@agents.test',
    sourceArn: 'arn:aws:ses:us-east-1:123456789012:identity/agents.test',
    sendingAccountId: '123456789012',
    messageId: `0100018c${Math.random().toString(16).slice(2)}-000000`,
    destination: ['ann@example.net', 'bob@example.org', 'hidden@example.com'],
    headersTruncated: false,
    commonHeaders: {
      from: ['Agent <agent@agents.test>'],
      to: ['Ann <ann@example.net>'],
      cc: ['bob@example.org'],
      messageId: '<abc@switchboard.local>',
      subject: 'Quarterly report',
    },
    ...(tags ? { tags } : {}),
  };
  const event = { eventType, mail, ...details };
  return JSON.stringify({
    Type: 'Notification',
    MessageId: crypto.randomUUID(),
    TopicArn: 'arn:aws:sns:us-east-1:123456789012:switchboard-test-ses-events',
    Message: JSON.stringify(event),
    Timestamp: '2026-11-28T10:00:05.000Z',
    SignatureVersion: '1',
  });
}

const enqueue = (...bodies: string[]) =>
  Promise.all(bodies.map((MessageBody) => sqs.send(new SendMessageCommand({ QueueUrl: events.queue, MessageBody }))));
const work = () => drainThroughHandler(events.queue, handler, { functionName: 'ses-events' });

const expectedMessage = (id: string) => ({
  id,
  subject: 'Quarterly report',
  from: 'agent@agents.test',
  to: ['ann@example.net'],
  cc: ['bob@example.org'],
  bcc: ['hidden@example.com'],
  sent_at: Date.parse('2026-11-28T10:00:00.000Z') / 1000,
});

describe('SES events of an Agent Account send', () => {
  it('announces delivery, bounce, complaint and rejection with the message they are about', async () => {
    // Prepare
    const id = newId('message');
    const tags = tagsOf(grantId, id);
    await enqueue(
      sesEvent(
        'Delivery',
        {
          delivery: {
            timestamp: '2026-11-28T10:00:03.000Z',
            processingTimeMillis: 3000,
            recipients: ['ann@example.net'],
            smtpResponse: '250 2.0.0 OK',
            reportingMTA: 'a8-1.smtp-out.amazonses.com',
          },
        },
        tags,
      ),
      sesEvent(
        'Bounce',
        {
          bounce: {
            bounceType: 'Permanent',
            bounceSubType: 'NoEmail',
            bouncedRecipients: [
              {
                emailAddress: 'bob@example.org',
                action: 'failed',
                status: '5.1.1',
                diagnosticCode: 'smtp; 550 5.1.1 user unknown',
              },
            ],
            timestamp: '2026-11-28T10:00:04.000Z',
            feedbackId: '0100018c-feedback-1',
            reportingMTA: 'dsn; a8-1.smtp-out.amazonses.com',
          },
        },
        tags,
      ),
      sesEvent(
        'Complaint',
        {
          complaint: {
            complainedRecipients: [{ emailAddress: 'ann@example.net' }],
            timestamp: '2026-11-28T11:00:00.000Z',
            feedbackId: '0100018c-feedback-2',
            userAgent: 'Mail.example/1.0',
            complaintFeedbackType: 'abuse',
            arrivalDate: '2026-11-28T10:59:00.000Z',
          },
        },
        tags,
      ),
      sesEvent('Reject', { reject: { reason: 'Bad content' } }, tags),
    );

    // Act
    expect(await work()).toBe(4);

    // Assess
    const [bounced, complaint, delivered, rejected] = await published(4);
    for (const n of [bounced, complaint, delivered, rejected]) {
      expect(n.data).toMatchObject({ application_id: applicationId, grant_id: grantId });
      expect(n.data.object.message).toEqual(expectedMessage(id));
    }
    expect(delivered.type).toBe('message.delivered');
    expect(delivered.data.object.delivered).toEqual({
      delivered_at: Date.parse('2026-11-28T10:00:03.000Z') / 1000,
      recipients: ['ann@example.net'],
      smtp_response: '250 2.0.0 OK',
    });
    expect(bounced.type).toBe('message.bounced');
    expect(bounced.data.object.bounce).toEqual({
      bounced_at: Date.parse('2026-11-28T10:00:04.000Z') / 1000,
      type: 'NoEmail',
      bounce_type: 'permanent',
      recipients: [{ email: 'bob@example.org', status: '5.1.1', diagnostic_code: 'smtp; 550 5.1.1 user unknown' }],
    });
    expect(complaint.type).toBe('message.complaint');
    expect(complaint.data.object.complaint).toEqual({
      complained_at: Date.parse('2026-11-28T11:00:00.000Z') / 1000,
      type: 'abuse',
      recipients: [{ email: 'ann@example.net' }],
    });
    expect(rejected.type).toBe('message.rejected');
    expect(rejected.data.object.rejected).toMatchObject({
      reason: 'Bad content',
      recipients: [{ email: 'ann@example.net' }, { email: 'bob@example.org' }, { email: 'hidden@example.com' }],
    });
  });

  it('announces an event once however many times SQS delivers it', async () => {
    const body = sesEvent(
      'Delivery',
      { delivery: { timestamp: '2026-11-28T10:00:03.000Z', recipients: ['ann@example.net'] } },
      tagsOf(grantId, newId('message')),
    );
    await enqueue(body, body);
    await work();
    await enqueue(body);
    await work();

    const [delivered] = await published(1);
    expect(delivered.type).toBe('message.delivered');
  });
});

describe('SES events of a transactional send', () => {
  it('announces them as message.transactional.*, with no grant', async () => {
    const id = newId('message');
    await enqueue(
      sesEvent(
        'Bounce',
        {
          bounce: {
            bounceType: 'Transient',
            bounceSubType: 'MailboxFull',
            bouncedRecipients: [{ emailAddress: 'ann@example.net' }],
            timestamp: '2026-11-28T10:05:00.000Z',
          },
        },
        tagsOf('transactional', id),
      ),
    );

    await work();

    const [bounced] = await published(1);
    expect(bounced.type).toBe('message.transactional.bounced');
    expect(bounced.data).toMatchObject({ application_id: applicationId, grant_id: null });
    expect(bounced.data.object.bounce).toMatchObject({ type: 'MailboxFull', bounce_type: 'transient' });
    expect(bounced.data.object.message.id).toBe(id);
  });
});

describe('events that announce nothing', () => {
  it('drops an event without our tags, and one of a grant that is not there', async () => {
    const delivery = { delivery: { timestamp: '2026-11-28T10:00:03.000Z', recipients: ['ann@example.net'] } };
    await enqueue(
      sesEvent('Delivery', delivery),
      sesEvent('Delivery', delivery, tagsOf(newId('grant'), newId('message'))),
    );

    expect(await work()).toBe(2);

    await outboxDrained();
    expect(await messagesIn(fanout)).toBe(0);
    expect(await messagesIn(events.queue)).toBe(0);
    expect(await messagesIn(events.dlq)).toBe(0);
  });

  it('moves a malformed message to the dead-letter queue', async () => {
    await enqueue(
      'not json',
      JSON.stringify({ Type: 'Notification', Message: JSON.stringify({ eventType: 'Bounce', mail: {} }) }),
    );

    await work();

    await outboxDrained();
    expect(await messagesIn(fanout)).toBe(0);
    expect(await messagesIn(events.queue)).toBe(0);
    expect(await messagesIn(events.dlq)).toBe(2);
  });
});

describe('the local relay', () => {
  it('announces the recipients it accepted as delivered and those it refused as rejected, once', async () => {
    // Prepare
    const { mailTransport } = await import('#shared/mail/transport');
    const { announceRelayAnswer } = await import('#shared/deliverability/relay');
    const id = newId('message') as MessageId;
    const message = {
      id,
      subject: 'Receipt',
      from: 'billing@shop.example',
      to: ['ann@example.net'],
      sent_at: 1_790_000_000,
    };
    const raw = Buffer.from(`From: billing@shop.example\r\nTo: ann@example.net\r\nSubject: Receipt\r\n\r\nThanks`);
    const answer = await mailTransport().send(raw, { from: 'billing@shop.example', to: ['ann@example.net'] });
    const sender = { applicationId, grantId: null };

    // Act: the relay's own answer, then a partial refusal as a relay answers one.
    await announceRelayAnswer(sender, message, answer);
    await announceRelayAnswer(sender, message, answer);
    await announceRelayAnswer(
      sender,
      { ...message, id: newId('message') },
      {
        accepted: ['ann@example.net'],
        rejected: [{ address: 'gone@example.net', reason: '550 5.1.1 no such user' }],
      },
    );

    // Assess
    const [first, second, rejected] = await published(3);
    expect(answer.accepted).toEqual(['ann@example.net']);
    expect(first.type).toBe('message.transactional.delivered');
    expect(second.type).toBe('message.transactional.delivered');
    expect([first.data.object.message.id, second.data.object.message.id]).toContain(id);
    expect(rejected.type).toBe('message.transactional.rejected');
    expect(rejected.data.object.rejected.recipients).toEqual([
      { email: 'gone@example.net', diagnostic_code: '550 5.1.1 no such user' },
    ]);
  });
});

describe('sends through the local relay', () => {
  it('commits message.delivered with the Sent copy of an Agent Account send, for its outside recipients', async () => {
    // Prepare
    const api = apiClient(gateway.url, apiKey);
    const to = `ann-${newId('message').slice(-8)}@example.net`;

    // Act
    const sent = await api.post(`/v3/grants/${grantId}/messages/send`, {
      to: [{ email: to }],
      subject: 'Delivered?',
      body: 'Hello',
      metadata: { order: '42' },
    });

    // Assess
    expect(sent.status, sent.text).toBe(200);
    const [created, delivered] = await published(2);
    expect(created.type).toBe('message.created');
    expect(delivered.type).toBe('message.delivered');
    expect(delivered.data).toMatchObject({ application_id: applicationId, grant_id: grantId });
    expect(delivered.data.object.message).toMatchObject({
      id: sent.body.data.id,
      subject: 'Delivered?',
      to: [to],
      metadata: { order: '42' },
    });
    expect(delivered.data.object.delivered.recipients).toEqual([to]);
  });
});
