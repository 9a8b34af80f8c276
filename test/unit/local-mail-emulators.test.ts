import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningService } from '../../scripts/local-stack/service';
import { startS3Local } from '../../scripts/local-stack/s3-local';
import { startInboundSmtp, type InboundHandlers } from '../../scripts/local-stack/smtp-inbound';
import { startSmtpSink } from '../../scripts/local-stack/smtp-sink';
import { smtpClient, type SunkMessage } from '../support/mail';

/** The local stack's mail and attachment emulators, exercised for real over loopback. */

/** A delivery to hold: `entered` once deliver has the message, which it keeps until `release()`. */
function gate() {
  let enter!: () => void;
  let release!: () => void;
  const entered = new Promise<void>((resolve) => (enter = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  return { entered, enter, released, release };
}

/** The first line a new connection to `port` receives (an SMTP server's greeting). */
function greeting(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (!received.includes('\r\n')) return;
      socket.destroy();
      resolve(received.split('\r\n')[0]!);
    });
    socket.on('error', reject);
  });
}

describe('Local stack: s3rver', () => {
  const directory = mkdtempSync(join(tmpdir(), 'switchboard-s3-'));
  let s3: RunningService | undefined;

  afterAll(async () => {
    await s3?.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  it('round-trips a 5 MB object through the real S3 client', async () => {
    // Prepare
    s3 = await startS3Local({ port: 0, directory, buckets: ['attachments'] });
    expect(s3.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const client = new S3Client({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    const body = randomBytes(5 * 1024 * 1024);

    try {
      // Act
      await client.send(
        new PutObjectCommand({
          Bucket: 'attachments',
          Key: 'app/att_1/file.bin',
          Body: body,
          ContentType: 'application/octet-stream',
        }),
      );
      const got = await client.send(new GetObjectCommand({ Bucket: 'attachments', Key: 'app/att_1/file.bin' }));
      const bytes = Buffer.from(await got.Body!.transformToByteArray());

      // Assess
      expect(got.ContentType).toBe('application/octet-stream');
      expect(bytes.length).toBe(body.length);
      expect(bytes.equals(body)).toBe(true);
    } finally {
      client.destroy();
    }
  });
});

describe('Local stack: SMTP sink', () => {
  let sink: Awaited<ReturnType<typeof startSmtpSink>>;

  beforeAll(async () => {
    sink = await startSmtpSink({ smtpPort: 0, httpPort: 0 });
  });
  afterAll(async () => {
    await sink?.stop();
  });

  async function list(query = ''): Promise<SunkMessage[]> {
    const res = await fetch(`${sink.httpUrl}/messages${query}`);
    expect(res.status).toBe(200);
    return (await res.json()) as SunkMessage[];
  }

  it('keeps relayed messages and serves them over HTTP', async () => {
    // Prepare
    expect(sink.smtpUrl).toMatch(/^smtp:\/\/127\.0\.0\.1:\d+$/);
    expect(sink.httpUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const port = Number(new URL(sink.smtpUrl).port);
    const transport = smtpClient(port);

    // Act
    await transport.sendMail({
      from: 'agent@switchboard.test',
      to: 'Alice@Example.com',
      subject: 'First relayed',
      text: 'one',
    });
    await transport.sendMail({
      from: 'agent@switchboard.test',
      to: ['bob@example.com', 'carol@example.com'],
      subject: 'Second relayed – ünïcode',
      text: 'two',
    });
    transport.close();

    // Assess
    const all = await list();
    expect(all.map((m) => m.subject)).toEqual(['First relayed', 'Second relayed – ünïcode']);
    // nodemailer lowercases the domain of envelope addresses (not the local part).
    expect(all[0]).toMatchObject({ mailFrom: 'agent@switchboard.test', recipients: ['Alice@example.com'] });
    expect(all[1]!.recipients).toEqual(['bob@example.com', 'carol@example.com']);
    expect(all[0]!.size).toBeGreaterThan(0);
    expect(Number.isNaN(Date.parse(all[0]!.receivedAt))).toBe(false);

    const toAlice = await list('?to=alice@example.com');
    expect(toAlice.map((m) => m.subject)).toEqual(['First relayed']);
    expect(await list('?to=nobody@example.com')).toEqual([]);

    const raw = await fetch(`${sink.httpUrl}/messages/${toAlice[0]!.id}/raw`);
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toBe('message/rfc822');
    const rawText = Buffer.from(await raw.arrayBuffer()).toString('latin1');
    expect(rawText).toContain('Subject: First relayed');
    expect(rawText.length).toBe(toAlice[0]!.size);

    expect((await fetch(`${sink.httpUrl}/messages/unknown/raw`)).status).toBe(404);
    const unknown = await fetch(`${sink.httpUrl}/nope`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: 'not found' });

    expect((await fetch(`${sink.httpUrl}/messages`, { method: 'DELETE' })).status).toBe(200);
    expect(await list()).toEqual([]);
  });
});

describe('Local stack: inbound SMTP for Agent Accounts', () => {
  const known = new Set(['agent@switchboard.test', 'other-agent@switchboard.test']);
  type Delivery = { raw: Buffer; envelope: { mailFrom: string; recipients: string[] }; storedAt: number };
  let deliveries: Delivery[] = [];
  let mode: 'store' | 'held' | 'fail' = 'store';
  let lookupFails = false;
  /** In mode 'held', deliver holds the message until the test releases it. */
  let held = gate();

  const handlers: InboundHandlers = {
    async acceptsRecipient(address) {
      if (lookupFails) throw new Error('table unavailable');
      return known.has(address.toLowerCase());
    },
    async deliver(raw, envelope) {
      if (mode === 'fail') throw new Error('write failed');
      if (mode === 'held') {
        held.enter();
        await held.released;
      }
      deliveries.push({ raw, envelope, storedAt: Date.now() });
    },
  };

  let inbound: Awaited<ReturnType<typeof startInboundSmtp>>;
  let small: Awaited<ReturnType<typeof startInboundSmtp>>;

  beforeAll(async () => {
    inbound = await startInboundSmtp({ port: 0, handlers });
    small = await startInboundSmtp({ port: 0, maxBytes: 2048, handlers });
  });
  afterAll(async () => {
    await Promise.all([inbound?.stop(), small?.stop()]);
  });
  beforeEach(() => {
    deliveries = [];
    mode = 'store';
    lookupFails = false;
    // A delivery a failed test still holds goes on.
    held.release();
    held = gate();
  });

  it('refuses a message for an unknown recipient with 550 at RCPT TO', async () => {
    // Prepare
    const transport = smtpClient(inbound.port);

    // Act
    const sent = transport.sendMail({
      from: 'someone@example.com',
      to: 'nobody@switchboard.test',
      subject: 'Hi',
      text: 'x',
    });

    // Assess
    await expect(sent).rejects.toMatchObject({ responseCode: 550 });
    await expect(sent).rejects.toThrow(/no such Agent Account/);
    expect(deliveries).toEqual([]);
    transport.close();
  });

  it('delivers once to the known recipients of a mixed list and reports the refused one', async () => {
    // Prepare
    const transport = smtpClient(inbound.port);

    // Act
    const info = await transport.sendMail({
      from: 'someone@example.com',
      to: [
        'Agent@Switchboard.TEST',
        'nobody@switchboard.test',
        'other-agent@switchboard.test',
        'agent@switchboard.test',
      ],
      subject: 'Mixed recipients',
      text: 'hello agents',
    });
    transport.close();

    // Assess
    expect(info.accepted).toEqual(['Agent@switchboard.test', 'other-agent@switchboard.test', 'agent@switchboard.test']);
    expect(info.rejected).toEqual(['nobody@switchboard.test']);
    expect(deliveries).toHaveLength(1);
    const [delivery] = deliveries;
    // One transaction, one delivery; the repeated recipient is kept once (with the later spelling).
    expect(delivery!.envelope.mailFrom).toBe('someone@example.com');
    expect(delivery!.envelope.recipients.map((r) => r.toLowerCase())).toEqual([
      'agent@switchboard.test',
      'other-agent@switchboard.test',
    ]);
    const raw = delivery!.raw.toString('latin1');
    expect(raw).toContain('Subject: Mixed recipients');
    expect(raw).toContain('hello agents');
  });

  it('acknowledges a message only after deliver has resolved', async () => {
    // Prepare
    mode = 'held';
    const transport = smtpClient(inbound.port);
    const events: string[] = [];

    // Act: deliver has the message; a new connection's greeting comes after any reply already sent on
    // the first (a sentinel), and only then is the delivery let go.
    const sent = transport
      .sendMail({ from: 'someone@example.com', to: 'agent@switchboard.test', subject: 'Held store', text: 'x' })
      .then(() => {
        events.push('acknowledged');
        return Date.now();
      });
    await held.entered;
    expect(await greeting(inbound.port)).toMatch(/^220 /);
    events.push('released');
    held.release();
    const acknowledgedAt = await sent;
    transport.close();

    // Assess
    expect(events).toEqual(['released', 'acknowledged']);
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]!.storedAt).toBeLessThanOrEqual(acknowledgedAt);
  });

  it('answers 451 when deliver fails, so the sender retries', async () => {
    // Prepare
    mode = 'fail';
    const transport = smtpClient(inbound.port);

    // Act
    const sent = transport.sendMail({
      from: 'someone@example.com',
      to: 'agent@switchboard.test',
      subject: 'Lost?',
      text: 'x',
    });

    // Assess
    await expect(sent).rejects.toMatchObject({ responseCode: 451 });
    await expect(sent).rejects.toThrow(/4\.3\.0 temporary failure/);
    transport.close();
  });

  it('answers 451 when the recipient lookup fails, and keeps serving', async () => {
    // Prepare
    lookupFails = true;
    const transport = smtpClient(inbound.port);

    // Act
    const sent = transport.sendMail({
      from: 'someone@example.com',
      to: 'agent@switchboard.test',
      subject: 'Hi',
      text: 'x',
    });

    // Assess
    await expect(sent).rejects.toMatchObject({ responseCode: 451 });
    lookupFails = false;
    await expect(
      transport.sendMail({ from: 'someone@example.com', to: 'agent@switchboard.test', subject: 'Again', text: 'x' }),
    ).resolves.toBeTruthy();
    expect(deliveries).toHaveLength(1);
    transport.close();
  });

  it('refuses a message over maxBytes with 552 and delivers nothing', async () => {
    // Prepare
    const transport = smtpClient(small.port);

    // Act
    const sent = transport.sendMail({
      from: 'someone@example.com',
      to: 'agent@switchboard.test',
      subject: 'Big',
      text: 'x'.repeat(10_000),
    });

    // Assess
    await expect(sent).rejects.toMatchObject({ responseCode: 552 });
    expect(deliveries).toEqual([]);
    transport.close();
  });
});
