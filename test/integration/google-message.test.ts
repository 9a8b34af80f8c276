import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { googleClientOf } from '#shared/google/client';
import { messageFromGmail, partOfAttachment, type GmailMessage } from '#shared/google/gmail-message';
import type { GrantRecord } from '#shared/db/grants';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { connectFakeGoogleGrant } from '../support/google';

/**
 * A Gmail message as our Message (shared/google/gmail-message.ts), from what the local Google fake
 * answers to users.messages.get (its answers checked against gmail-v1.json): labels as folders,
 * flags, addresses, the body part, attachments by Gmail's attachment ID, headers by `fields`, raw MIME.
 */
let fake: GoogleFake;
let grant: GrantRecord;
let email: string;

beforeAll(async () => {
  fake = await startGoogleFake();
  ({ grant, email } = await connectFakeGoogleGrant(fake, 'google messages'));
});

afterAll(async () => {
  await fake?.close();
});

const crlf = (lines: string[]) => lines.join('\r\n');
const PDF = Buffer.from('%PDF-1.4 a tiny test file\n');

async function fetched(id: string, format: 'full' | 'raw') {
  const client = await googleClientOf(grant);
  return client.call<GmailMessage>({ api: 'gmail', path: `/gmail/v1/users/me/messages/${id}`, query: { format } });
}

describe('a Gmail message as ours', () => {
  it('maps a multipart message with an HTML body, an inline image and an attachment', async () => {
    const raw = crlf([
      'From: "Lee, Ann" <ann@example.org>',
      `To: ${email}, Bob <bob@example.org>`,
      'Cc: carol@example.org',
      'Reply-To: replies@example.org',
      'Subject: =?UTF-8?B?UGxhbnMg4oCUIFEz?=',
      'Message-ID: <plans-3@example.org>',
      'In-Reply-To: <plans-2@example.org>',
      'Date: Mon, 02 Mar 2026 09:00:00 +0000',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="mixed"',
      '',
      '--mixed',
      'Content-Type: multipart/related; boundary="related"',
      '',
      '--related',
      'Content-Type: multipart/alternative; boundary="alt"',
      '',
      '--alt',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Plans & numbers',
      '--alt',
      'Content-Type: text/html; charset=utf-8',
      '',
      '<p>Plans &amp; numbers <img src="cid:logo@x"></p>',
      '--alt--',
      '--related',
      'Content-Type: image/png',
      'Content-ID: <logo@x>',
      'Content-Disposition: inline; filename="logo.png"',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from('png bytes').toString('base64'),
      '--related--',
      '--mixed',
      'Content-Type: application/pdf; name="q3.pdf"',
      'Content-Disposition: attachment; filename="q3.pdf"',
      'Content-Transfer-Encoding: base64',
      '',
      PDF.toString('base64'),
      '--mixed--',
      '',
    ]);
    const work = await (
      await googleClientOf(grant)
    ).call<{ id: string }>({
      api: 'gmail',
      method: 'POST',
      path: '/gmail/v1/users/me/labels',
      body: { name: 'Work', labelListVisibility: 'labelShow', messageListVisibility: 'show' },
    });
    const { id, threadId } = fake.deliver(email, raw, ['INBOX', 'UNREAD', 'STARRED', work.id]);
    const message = messageFromGmail(grant, await fetched(id, 'full'));
    expect(message).toMatchObject({
      id,
      object: 'message',
      grant_id: grant.id,
      thread_id: threadId,
      subject: 'Plans — Q3',
      from: [{ email: 'ann@example.org', name: 'Lee, Ann' }],
      to: [{ email }, { email: 'bob@example.org', name: 'Bob' }],
      cc: [{ email: 'carol@example.org' }],
      bcc: [],
      reply_to: [{ email: 'replies@example.org' }],
      unread: true,
      starred: true,
      in_reply_to: '<plans-2@example.org>',
      body: '<p>Plans &amp; numbers <img src="cid:logo@x"></p>',
    });
    expect(message.folders).toEqual(expect.arrayContaining(['INBOX', 'UNREAD', 'STARRED', work.id]));
    expect(message.snippet).toContain('Plans & numbers');
    expect(message.headers).toBeUndefined();
    expect(message.attachments).toHaveLength(2);
    const [logo, pdf] = message.attachments;
    expect(logo).toMatchObject({
      filename: 'logo.png',
      content_type: 'image/png',
      is_inline: true,
      content_id: 'logo@x',
    });
    expect(pdf).toMatchObject({
      filename: 'q3.pdf',
      content_type: 'application/pdf',
      is_inline: false,
      content_disposition: 'attachment',
      size: PDF.length,
    });
    // The attachment ID names its part: the same on every read (Gmail's own attachment IDs need not be).
    expect(pdf!.id).toMatch(/^part\.[0-9.]+$/);
    expect(messageFromGmail(grant, await fetched(id, 'full')).attachments[1]!.id).toBe(pdf!.id);
    const client = await googleClientOf(grant);
    const part = partOfAttachment((await fetched(id, 'full')).payload, pdf!.id)!;
    const content = await client.call<{ data: string; size: number }>({
      api: 'gmail',
      path: `/gmail/v1/users/me/messages/${id}/attachments/${part.body!.attachmentId!}`,
    });
    expect(Buffer.from(content.data, 'base64url')).toEqual(PDF);
  });

  it('gives the headers by fields, and the raw MIME as base64url', async () => {
    const raw = crlf([
      'From: dora@example.net',
      `To: ${email}`,
      'Subject: Short',
      'Message-ID: <short@example.net>',
      'X-Thing: kept',
      '',
      'Just text',
    ]);
    const { id } = fake.deliver(email, raw);
    const full = await fetched(id, 'full');
    const plain = messageFromGmail(grant, full);
    expect(plain).toMatchObject({ subject: 'Short', body: 'Just text', unread: true, starred: false, attachments: [] });
    const basic = messageFromGmail(grant, full, 'include_basic_headers');
    // Only the threading headers (the contract: Message-ID, In-Reply-To, References).
    expect(basic.headers).toEqual([{ name: 'Message-ID', value: '<short@example.net>' }]);
    const all = messageFromGmail(grant, full, 'include_headers');
    expect(all.headers).toContainEqual({ name: 'X-Thing', value: 'kept' });
    const rawMessage = messageFromGmail(grant, { ...(await fetched(id, 'raw')), payload: full.payload }, 'raw_mime');
    expect(Buffer.from(rawMessage.raw_mime!, 'base64url').toString()).toBe(raw);
  });

  it('got nothing from the fake that gmail-v1.json does not describe', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});
