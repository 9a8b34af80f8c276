import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestMessage } from '#shared/agent/ingest';
import { failedRecipients, parseDeliveryReport } from '#shared/mail/dsn';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication, uniqueEmail } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { connectImapGrant, openImapClient, useDovecot } from '../support/dovecot';
import { sunkRaw, waitForSunk } from '../support/mail';
import { jobsDone, publishedBesidesDeliveries } from '../support/outbox-relay';
import { createTestQueue, drainQueue } from '../support/queues';

/**
 * message.bounce_detected: a delivery status notification (RFC 3464) arriving in an Agent Account's
 * mailbox about a message it sent is read (the status part, the returned message or headers),
 * matched to the Sent copy by Message-ID and announced once per failed recipient, committed with
 * the report's own stored copy (so a report delivered twice announces once).
 */
let gateway: Gateway;
let api: ApiClient;
let applicationId: string;
let queueUrl: string;
type Grant = Awaited<ReturnType<typeof makeAgentGrant>>;
let alice: Grant;
let bob: Grant;

const outside = () => uniqueEmail('person').replace('@agents.test', '@example.net');
const IMAP_PASSWORD = 'bounce test imap password 3';
const dovecot = useDovecot([{ user: 'bounced@example.org', password: IMAP_PASSWORD }]);

beforeAll(async () => {
  queueUrl = await createTestQueue('bounce-fanout');
  process.env.FANOUT_QUEUE_URL = queueUrl;
  gateway = await startGateway();
  const app = await makeApplication();
  applicationId = app.applicationId;
  api = apiClient(gateway.url, app.apiKey);
  [alice, bob] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api)]);
  await drainQueue(queueUrl, 2);
});

afterAll(async () => gateway?.close());

/** Exactly `count` notifications since the last drain besides the relay's answers, by type then time. */
async function published(count: number) {
  const events = await publishedBesidesDeliveries(queueUrl);
  expect(events).toHaveLength(count);
  return events;
}

/** Alice sends to `to`: the Sent copy and the Message-ID that left. */
async function sent(to: string[]) {
  const r = await api.post(`/v3/grants/${alice.id}/messages/send`, {
    to: to.map((email) => ({ email })),
    cc: [{ email: 'cc@example.org', name: 'Cee' }],
    subject: 'Quarterly report',
    body: '<p>Attached soon.</p>',
  });
  expect(r.status, r.text).toBe(200);
  const [sunk] = await waitForSunk(to[0]!);
  const { messageId } = await simpleParser(await sunkRaw(sunk!.id));
  await published(1); // its message.created
  return { message: r.body.data, messageIdHeader: messageId! };
}

interface ReportOptions {
  id: string;
  to?: string;
  recipients: { address: string; action: string; status: string; diagnostic?: string }[];
  /** How the report returns the message: its headers (default), the whole message, or nothing. */
  returned?: { kind: 'headers' | 'message'; messageId: string } | undefined;
  perMessage?: string[];
  statusEncoding?: 'base64';
}

/** A delivery status notification as a reporting MTA writes it. */
function report(options: ReportOptions): Buffer {
  const status = [
    [
      'Reporting-MTA: dns; mx.example.net',
      'Arrival-Date: Sat, 28 Nov 2026 19:59:58 +0000',
      ...(options.perMessage ?? []),
    ].join('\r\n'),
    ...options.recipients.map((r) =>
      [
        `Final-Recipient: rfc822; ${r.address}`,
        `Action: ${r.action}`,
        `Status: ${r.status}`,
        'Remote-MTA: dns; mx2.example.net',
        ...(r.diagnostic ? [`Diagnostic-Code: smtp; ${r.diagnostic}`] : []),
      ].join('\r\n'),
    ),
  ].join('\r\n\r\n');
  const returned = options.returned;
  const returnedHeaders = returned
    ? ['From: someone@agents.test', `Message-ID: ${returned.messageId}`, 'Subject: Quarterly report'].join('\r\n')
    : '';
  return Buffer.from(
    [
      'From: Mail Delivery System <MAILER-DAEMON@mx.example.net>',
      `To: ${options.to ?? alice.email}`,
      'Subject: Undelivered Mail Returned to Sender',
      `Message-ID: <${options.id}@mx.example.net>`,
      'Date: Sat, 28 Nov 2026 20:00:00 +0000',
      'Auto-Submitted: auto-replied',
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type="delivery-status";',
      '  boundary="=_report"',
      '',
      '--=_report',
      'Content-Type: text/plain; charset=us-ascii',
      '',
      'Your message could not be delivered to one or more recipients.',
      '',
      '--=_report',
      'Content-Type: message/delivery-status',
      ...(options.statusEncoding === 'base64'
        ? [
            'Content-Transfer-Encoding: base64',
            '',
            Buffer.from(status)
              .toString('base64')
              .replace(/(.{76})/g, '$1\r\n'),
          ]
        : ['', status]),
      '',
      ...(returned
        ? [
            '--=_report',
            returned.kind === 'headers' ? 'Content-Type: text/rfc822-headers' : 'Content-Type: message/rfc822',
            '',
            returnedHeaders,
            ...(returned.kind === 'message' ? ['', 'Attached soon.'] : []),
            '',
          ]
        : []),
      '--=_report--',
      '',
    ].join('\r\n'),
  );
}

const deliver = (raw: Buffer, to = alice.email) => ingestMessage(raw, { mailFrom: '', recipients: [to] });

describe('reading delivery status notifications', () => {
  it('reads the status blocks (folded and base64-encoded) and the returned headers', () => {
    const raw = report({
      id: 'unit-1',
      recipients: [
        { address: 'Nobody@Example.net', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 User unknown' },
        { address: 'later@example.net', action: 'delayed', status: '4.4.1' },
      ],
      returned: { kind: 'message', messageId: '<orig-1@switchboard.local>' },
      statusEncoding: 'base64',
    });

    const parsed = parseDeliveryReport(raw);

    expect(parsed).toEqual({
      originalMessageId: '<orig-1@switchboard.local>',
      reportingMta: 'mx.example.net',
      recipients: [
        {
          address: 'nobody@example.net',
          action: 'failed',
          status: '5.1.1',
          diagnosticCode: '550 5.1.1 User unknown',
          remoteMta: 'mx2.example.net',
        },
        { address: 'later@example.net', action: 'delayed', status: '4.4.1', remoteMta: 'mx2.example.net' },
      ],
    });
    expect(failedRecipients(parsed!).map((r) => r.address)).toEqual(['nobody@example.net']);
  });

  it('prefers an Original-Message-ID field, finds a report nested in multipart/mixed, and ignores other mail', () => {
    const inner = report({
      id: 'unit-2',
      recipients: [{ address: 'x@example.net', action: 'failed', status: '5.2.2' }],
      perMessage: ['Original-Message-ID: <orig-2@switchboard.local>'],
    }).toString('latin1');
    const [head, body] = [inner.slice(0, inner.indexOf('MIME-Version')), inner.slice(inner.indexOf('Content-Type'))];
    const nested = `${head}MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=outer\r\n\r\n--outer\r\n${body}\r\n--outer--\r\n`;

    expect(parseDeliveryReport(Buffer.from(nested, 'latin1'))?.originalMessageId).toBe('<orig-2@switchboard.local>');
    expect(
      parseDeliveryReport(Buffer.from('Subject: hi\r\nContent-Type: text/plain\r\n\r\nStatus: 5.1.1\r\n')),
    ).toBeUndefined();
    expect(
      parseDeliveryReport(
        Buffer.from(
          'Content-Type: multipart/report; report-type=disposition-notification; boundary=b\r\n\r\n--b\r\nContent-Type: message/disposition-notification\r\n\r\nFinal-Recipient: rfc822; a@b.c\r\n--b--\r\n',
        ),
      ),
    ).toBeUndefined();
  });
});

describe('message.bounce_detected', () => {
  it('announces a bounce of a sent message with the failed recipient, the reason and the message, once per report', async () => {
    // Prepare
    const nobody = outside();
    const { message, messageIdHeader } = await sent([nobody, outside()]);
    const raw = report({
      id: `dsn-${Date.now()}`,
      recipients: [
        {
          address: nobody,
          action: 'failed',
          status: '5.1.1',
          diagnostic: `550 5.1.1 <${nobody}>: Recipient address rejected: User unknown`,
        },
      ],
      returned: { kind: 'headers', messageId: messageIdHeader },
    });

    // Act: the report arrives, then the same report again (a retry of its delivery)
    const first = await deliver(raw);
    const again = await deliver(raw);

    // Assess: the report is stored once (message.created) and announces one bounce
    expect(again.delivered[0]).toMatchObject({ duplicate: true, message_id: first.delivered[0]!.message_id });
    const events = await published(2);
    expect(events.map((e) => e.type)).toEqual(['message.bounce_detected', 'message.created']);
    expect(events[0].data).toMatchObject({ application_id: applicationId, grant_id: alice.id });
    expect(events[0].data.object).toEqual({
      bounced_address: nobody,
      bounce_reason: `550 5.1.1 <${nobody}>: Recipient address rejected: User unknown`,
      bounce_date: expect.any(Number),
      type: 'addressing',
      status: '5.1.1',
      code: 550,
      report_message_id: first.delivered[0]!.message_id,
      origin: {
        id: message.id,
        grant_id: alice.id,
        thread_id: message.thread_id,
        subject: 'Quarterly report',
        date: message.date,
        from: [{ email: alice.email }],
        to: message.to,
        cc: [{ email: 'cc@example.org', name: 'Cee' }],
        bcc: [],
      },
    });
  });

  it('announces each failed recipient of one report; a delayed one is not a bounce', async () => {
    const [a, b, c] = [outside(), outside(), outside()];
    const { message, messageIdHeader } = await sent([a, b, c]);

    await deliver(
      report({
        id: `dsn-multi-${Date.now()}`,
        recipients: [
          { address: a, action: 'failed', status: '5.2.2', diagnostic: '552 5.2.2 Mailbox full' },
          { address: b, action: 'delayed', status: '4.4.1' },
          { address: c, action: 'failed', status: '4.4.7' },
        ],
        returned: { kind: 'message', messageId: messageIdHeader },
      }),
    );

    const bounces = (await published(3)).filter((e) => e.type === 'message.bounce_detected');
    expect(bounces.map((e) => e.data.object.bounced_address).sort()).toEqual([a, c].sort());
    const byAddress = new Map(bounces.map((e) => [e.data.object.bounced_address, e.data.object]));
    expect(byAddress.get(a)).toMatchObject({ type: 'mailbox', status: '5.2.2', code: 552 });
    expect(byAddress.get(c)).toMatchObject({
      type: 'network',
      status: '4.4.7',
      bounce_reason: 'Delivery failed with status 4.4.7',
    });
    expect(byAddress.get(c)).not.toHaveProperty('code');
    expect(bounces.every((e) => e.data.object.origin.id === message.id)).toBe(true);
  });

  it('announces nothing for a report about a message the mailbox did not send, or with no failed recipient', async () => {
    // Prepare: a message Alice sent, one Bob sent, and one Alice received
    const { messageIdHeader } = await sent([outside()]);
    const toBob = await api.post(`/v3/grants/${bob.id}/messages/send`, {
      to: [{ email: outside() }],
      subject: 'From Bob',
      body: 'hi',
    });
    expect(toBob.status).toBe(200);
    const bobsHeader = (
      await api.get(`/v3/grants/${bob.id}/messages/${toBob.body.data.id}?fields=include_headers`)
    ).body.data.headers.find((h: { name: string }) => h.name === 'Message-ID').value;
    const receivedHeader = `<received-${Date.now()}@example.net>`;
    await deliver(
      Buffer.from(
        `From: x@example.net\r\nTo: ${alice.email}\r\nSubject: hi\r\nMessage-ID: ${receivedHeader}\r\n\r\nhello\r\n`,
      ),
    );
    await published(2);
    const failed = [{ address: 'gone@example.net', action: 'failed', status: '5.1.1' }];

    // Act
    await deliver(
      report({ id: `dsn-bob-${Date.now()}`, recipients: failed, returned: { kind: 'headers', messageId: bobsHeader } }),
    );
    await deliver(
      report({
        id: `dsn-recv-${Date.now()}`,
        recipients: failed,
        returned: { kind: 'headers', messageId: receivedHeader },
      }),
    );
    await deliver(report({ id: `dsn-none-${Date.now()}`, recipients: failed }));
    await deliver(
      report({
        id: `dsn-delivered-${Date.now()}`,
        recipients: [{ address: 'fine@example.net', action: 'delivered', status: '2.0.0' }],
        returned: { kind: 'headers', messageId: messageIdHeader },
      }),
    );

    // Assess: the four reports are stored, nothing else is announced
    expect((await published(4)).map((e) => e.type)).toEqual(Array(4).fill('message.created'));
  });
});

describe('message.bounce_detected for IMAP grants', () => {
  it('announces a report that a sync run finds in the inbox about a message in Sent; not when the first sync stores it', async () => {
    // Prepare: a sent message and an old report about it, there before the grant (history)
    const client = await openImapClient(dovecot, 'bounced@example.org', IMAP_PASSWORD);
    const header = `<imap-sent-${Date.now()}@example.org>`;
    const failed = [
      { address: 'gone@example.net', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 No such user' },
    ];
    try {
      await client.append(
        'Sent',
        `From: bounced@example.org\r\nTo: gone@example.net\r\nSubject: Hello\r\nMessage-ID: ${header}\r\n\r\nhi\r\n`,
        ['\\Seen'],
      );
      const old = report({
        id: `imap-old-${Date.now()}`,
        to: 'bounced@example.org',
        recipients: failed,
        returned: { kind: 'headers', messageId: header },
      });
      await client.append('INBOX', old);
    } finally {
      await client.logout();
    }
    const grant = await connectImapGrant(api, dovecot, 'bounced@example.org', IMAP_PASSWORD);
    const { runMailSync } = await import('#shared/services/mail-sync');
    const sync = async () => {
      await runMailSync({ application_id: applicationId, grant_id: grant.id }, () => 300_000);
      await jobsDone();
    };
    await sync();
    const seeded = await published(2);
    expect(seeded.map((e) => e.type)).toEqual(['grant.created', 'grant.imap_sync_completed']);

    // Act: a new report arrives
    const writer = await openImapClient(dovecot, 'bounced@example.org', IMAP_PASSWORD);
    try {
      await writer.append(
        'INBOX',
        report({
          id: `imap-new-${Date.now()}`,
          to: 'bounced@example.org',
          recipients: failed,
          returned: { kind: 'headers', messageId: header },
        }),
      );
    } finally {
      await writer.logout();
    }
    await sync();

    // Assess
    const events = await published(2);
    expect(events.map((e) => e.type)).toEqual(['message.bounce_detected', 'message.created']);
    expect(events[0].data.grant_id).toBe(grant.id);
    expect(events[0].data.object).toMatchObject({
      bounced_address: 'gone@example.net',
      status: '5.1.1',
      code: 550,
      report_message_id: events[1].data.object.id,
      origin: { grant_id: grant.id, subject: 'Hello', to: [{ email: 'gone@example.net' }] },
    });
  });
});
