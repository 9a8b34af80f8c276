import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { MessageObject, SendMessageResult } from '#schemas/mail';
import { graphAccountMail, graphScheduledSending, graphSend } from '#shared/microsoft/send';
import { graphMessages } from '#shared/microsoft/messages';
import { getSchedule } from '#shared/db/schedules';
import type { GrantRecord } from '#shared/db/grants';
import type { GrantId, ScheduleId } from '#shared/ids';
import { ConflictError, InvalidRequestError, NotFoundError, ProviderError } from '#shared/errors';
import { clock } from '#shared/time';
import { uniqueEmail } from '../support/factories';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';
import { connectFakeMicrosoftGrant } from '../support/microsoft';

/**
 * Sending from provider B, live (shared/microsoft/send.ts, submit.ts), against the local Graph fake:
 * composed as every send is and handed to Graph as MIME (sendMail), or, over Graph's 4 MB, as a draft
 * whose large attachment goes by upload session; the answer is the Sent copy found by its Message-ID;
 * replies carry the answered message's headers and land in its conversation; Idempotency-Key replays;
 * a scheduled send's due run; account mail with an invitation; Graph's faults and refusals.
 */
let fake: GraphFake;
let grant: GrantRecord;
let email: string;
const bob = uniqueEmail('bob');

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validResult = ajv.compile(SendMessageResult);
const validMessage = ajv.compile(MessageObject);

beforeAll(async () => {
  fake = await startGraphFake();
  ({ grant, email } = await connectFakeMicrosoftGrant(fake, 'microsoft live send'));
  fake.addUser({ email: bob, accessToken: `token-of-${bob}` });
});

afterEach(() => {
  expect(fake.violations()).toEqual([]);
});

afterAll(async () => {
  await fake?.close();
});

const context = (idempotencyKey?: string) => ({
  files: [],
  requestId: 'req-test',
  ...(idempotencyKey ? { idempotencyKey } : {}),
});

/** Bob's Inbox at the fake, as Graph answers it. */
async function inboxOf(address: string): Promise<
  {
    subject: string;
    from: { emailAddress: { address: string } };
    hasAttachments: boolean;
    attachments: { name: string; contentType: string; size: number; contentBytes: string }[];
  }[]
> {
  const answer = await fetch(`${fake.url}/v1.0/me/mailFolders/inbox/messages?$expand=attachments&$top=100`, {
    headers: { authorization: `Bearer token-of-${address}` },
  });
  return ((await answer.json()) as { value: never[] }).value;
}

const sentSince = (since: number) =>
  fake
    .requests()
    .slice(since)
    .map((r) => `${r.method} ${r.path.replace(/\?.*/, '')} ${r.status}`);

describe('sending from provider B, live', () => {
  it('sends MIME through sendMail: the answer is the Sent copy, the recipient gets it with its attachment', async () => {
    // Prepare
    const since = fake.requests().length;
    // Act
    const { result, replayed, scheduled } = await graphSend.send(
      grant,
      {
        to: [{ email: bob, name: 'Bob' }],
        subject: 'Hello from the API',
        body: '<p>Hi Bob</p>',
        custom_headers: [{ name: 'X-Campaign', value: 'spring' }],
        attachments: [
          { filename: 'note.txt', content_type: 'text/plain', content: Buffer.from('a note').toString('base64') },
        ],
      },
      context(),
    );
    // Assess
    expect({ replayed, scheduled }).toEqual({ replayed: false, scheduled: false });
    expect(validResult(result)).toBe(true);
    expect(validMessage(result)).toBe(true);
    expect(result).toMatchObject({
      object: 'message',
      grant_id: grant.id,
      subject: 'Hello from the API',
      to: [{ email: bob, name: 'Bob' }],
      from: [{ email }],
      folders: [fake.folderId(email, 'sentitems')],
    });
    expect(result.attachments.map((a) => a.filename)).toEqual(['note.txt']);
    expect(sentSince(since)).toContain(`POST /v1.0/me/sendMail 202`);
    const received = (await inboxOf(bob)).find((m) => m.subject === 'Hello from the API');
    expect(received?.from.emailAddress.address).toBe(email);
    expect(received?.attachments.map((a) => a.name)).toEqual(['note.txt']);
    const full = await graphMessages.get(grant, result.id, { fields: 'include_headers' });
    expect(full.headers).toContainEqual({ name: 'X-Campaign', value: 'spring' });
  });

  it("threads a reply: the answered message's Message-ID as In-Reply-To, in its conversation", async () => {
    // Prepare
    const original = fake.deliver(email, { from: bob, to: email, subject: 'Question', text: 'Are you in?' });
    // Act
    const { result } = await graphSend.send(
      grant,
      { to: [{ email: bob }], subject: 'Re: Question', body: 'Yes', reply_to_message_id: original.id },
      context(),
    );
    const missing = await graphSend
      .send(grant, { to: [{ email: bob }], body: 'x', reply_to_message_id: 'AAMkNone' }, context())
      .catch((e: unknown) => e);
    // Assess
    expect(result.thread_id).toBe(original.conversationId);
    expect(result.in_reply_to).toBe(original.internetMessageId);
    expect(missing).toBeInstanceOf(NotFoundError);
  });

  it('sends once per Idempotency-Key: the same request replays the Sent copy, another is a 409', async () => {
    // Prepare
    const body = { to: [{ email: bob }], subject: 'Once only', body: 'One copy' };
    // Act
    const first = await graphSend.send(grant, body, context('ms-key-once-1'));
    const again = await graphSend.send(grant, body, context('ms-key-once-1'));
    const other = await graphSend
      .send(grant, { ...body, body: 'Other' }, context('ms-key-once-1'))
      .catch((e: unknown) => e);
    // Assess
    expect(again).toMatchObject({ replayed: true });
    expect(again.result.id).toBe(first.result.id);
    expect(validResult(again.result)).toBe(true);
    expect((await inboxOf(bob)).filter((m) => m.subject === 'Once only')).toHaveLength(1);
    expect(other).toBeInstanceOf(ConflictError);
  });

  it('sends a message over 4 MB as a draft whose large attachment is uploaded by ranges, then sent', async () => {
    // Prepare
    const large = Buffer.alloc(6_000_000, 1);
    large.write('zip header', 0);
    const since = fake.requests().length;
    // Act
    const { result } = await graphSend.send(
      grant,
      {
        to: [{ email: bob }],
        subject: 'The archive',
        body: 'Attached',
        attachments: [
          { filename: 'small.txt', content_type: 'text/plain', content: Buffer.from('small').toString('base64') },
          { filename: 'archive.zip', content_type: 'application/zip', content: large.toString('base64') },
        ],
      },
      context(),
    );
    // Assess
    const calls = sentSince(since);
    expect(calls.filter((c) => c.includes('sendMail'))).toEqual([]);
    expect(calls).toContain('POST /v1.0/me/messages 201');
    expect(calls.filter((c) => /^POST .*\/attachments 201$/.test(c))).toHaveLength(1);
    expect(calls.filter((c) => /createUploadSession 201$/.test(c))).toHaveLength(1);
    expect(calls.filter((c) => /^PUT \/upload\//.test(c))).toEqual([
      expect.stringMatching(/ 200$/),
      expect.stringMatching(/ 201$/),
    ]);
    expect(calls.find((c) => /\/send 202$/.test(c))).toBeDefined();
    expect(validResult(result)).toBe(true);
    expect(result.attachments.map((a) => [a.filename, a.size])).toEqual([
      ['small.txt', 5],
      ['archive.zip', 6_000_000],
    ]);
    const received = (await inboxOf(bob)).find((m) => m.subject === 'The archive');
    expect(received?.attachments.map((a) => a.size)).toEqual([5, 6_000_000]);
    const drafts = await fetch(`${fake.url}/v1.0/me/mailFolders/drafts/messages`, {
      headers: { authorization: `Bearer token-of-${email}` },
    }).then((r) => r.json() as Promise<{ value: unknown[] }>);
    expect(drafts.value).toEqual([]);
  });

  it('schedules with send_at, and sends through Graph when the schedule is due', async () => {
    // Prepare
    const { result, scheduled } = await graphSend.send(
      grant,
      { to: [{ email: bob }], subject: 'Later on', body: 'When due', send_at: clock.nowSeconds() + 3600 },
      context(),
    );
    const record = (await getSchedule(
      grant.id as GrantId,
      (result as { schedule_id: string }).schedule_id as ScheduleId,
    ))!;
    let relayed = false;
    // Act
    const before = (await inboxOf(bob)).map((m) => m.subject);
    const { messageId } = await graphScheduledSending.send(grant, record, {
      beforeRelay: async () => void (relayed = true),
      scheduleItems: () => [],
    });
    // Assess
    expect(scheduled).toBe(true);
    expect(validResult(result)).toBe(true);
    expect(before).not.toContain('Later on');
    expect(relayed).toBe(true);
    expect((await inboxOf(bob)).map((m) => m.subject)).toContain('Later on');
    expect((await graphMessages.get(grant, messageId, {})).folders).toEqual([fake.folderId(email, 'sentitems')]);
  });

  it('refuses use_draft for a scheduled send of a microsoft grant', async () => {
    // Act
    const refused = await graphSend
      .send(grant, { to: [{ email: bob }], body: 'x', send_at: clock.nowSeconds() + 3600, use_draft: true }, context())
      .catch((e: unknown) => e);
    // Assess
    expect(refused).toBeInstanceOf(InvalidRequestError);
    expect((refused as Error).message).toMatch(/'use_draft' is not available for microsoft grants/);
  });

  it('sends account mail with its calendar invitation, kept in Sent Items', async () => {
    // Prepare
    const ics = [
      'BEGIN:VCALENDAR',
      'METHOD:REQUEST',
      'BEGIN:VEVENT',
      'UID:booking-1@switchboard',
      'DTSTART:20260310T090000Z',
      'DTEND:20260310T093000Z',
      'SUMMARY:Intro call',
      'END:VEVENT',
      'END:VCALENDAR',
    ].join('\r\n');
    // Act
    await graphAccountMail.send(
      grant,
      {
        to: [{ email: bob }],
        subject: 'Invitation: Intro call',
        body: 'See you',
        calendar: { method: 'REQUEST', content: ics },
      },
      'booking confirmation',
    );
    // Assess
    const received = (await inboxOf(bob)).find((m) => m.subject === 'Invitation: Intro call');
    expect(received?.attachments.map((a) => a.name)).toEqual(['invite.ics']);
    const invitation = Buffer.from(received!.attachments[0]!.contentBytes, 'base64').toString('utf8');
    expect(invitation).toContain('METHOD:REQUEST');
    expect(invitation).toContain('UID:booking-1@switchboard');
    const sent = await graphMessages.list(grant, { in: 'sent', subject: 'Invitation' }, 10);
    expect(sent.items.map((m) => m.subject)).toEqual(['Invitation: Intro call']);
  });

  it("retries Graph's 429 and 503 on sendMail, and keeps a 500 unretried (the message may have left)", async () => {
    // Prepare
    fake.inject({ path: /\/sendMail$/, status: 429, retryAfter: 0 });
    fake.inject({ path: /\/sendMail$/, status: 503, retryAfter: 0 });
    const since = fake.requests().length;
    // Act
    const { result } = await graphSend.send(
      grant,
      { to: [{ email: bob }], subject: 'After faults', body: 'ok' },
      context(),
    );
    fake.inject({ path: /\/sendMail$/, status: 500 });
    const failed = await graphSend
      .send(grant, { to: [{ email: bob }], subject: 'Lost?', body: 'x' }, context('ms-key-500'))
      .catch((e: unknown) => e);
    // Assess
    expect(result.subject).toBe('After faults');
    expect(sentSince(since).filter((c) => c.includes('sendMail'))).toEqual([
      'POST /v1.0/me/sendMail 429',
      'POST /v1.0/me/sendMail 503',
      'POST /v1.0/me/sendMail 202',
      'POST /v1.0/me/sendMail 500',
    ]);
    expect(failed).toBeInstanceOf(ProviderError);
    await expect(
      graphSend.send(grant, { to: [{ email: bob }], subject: 'Lost?', body: 'x' }, context('ms-key-500')),
    ).rejects.toThrow(ConflictError);
    expect((await inboxOf(bob)).map((m) => m.subject)).not.toContain('Lost?');
  });

  it("turns Graph's refusal of a message into our 400, with Graph's words", async () => {
    // Act
    const refused = await graphSend
      .send(grant, { to: [{ email: 'nobody-at-all' }], body: 'x' }, context())
      .catch((e: unknown) => e);
    // Assess
    expect(refused).toBeInstanceOf(InvalidRequestError);
    expect(refused).toMatchObject({ status: 400, message: expect.stringMatching(/not a valid SMTP address/) });
  });
});
