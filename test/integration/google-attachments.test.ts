import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gmailAttachments } from '#shared/google/attachments';
import { INLINE_DOWNLOAD_MAX } from '#shared/mailbox/attachments';
import type { GrantRecord } from '#shared/db/grants';
import { NotFoundError } from '#shared/errors';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { connectFakeGoogleGrant } from '../support/google';

/**
 * Attachments of provider A's messages, live (shared/google/attachments.ts), against the local Google
 * fake: described from the message, downloaded through users.messages.attachments.get, and over one
 * answer's size served from the mail bucket by a short-lived URL.
 */
let fake: GoogleFake;
let grant: GrantRecord;
let email: string;

beforeAll(async () => {
  fake = await startGoogleFake();
  ({ grant, email } = await connectFakeGoogleGrant(fake, 'google live attachments'));
});

afterAll(async () => {
  await fake?.close();
});

const withAttachment = (filename: string, content: Buffer) =>
  [
    'From: ann@example.org',
    `To: ${email}`,
    'Subject: File',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b"',
    '',
    '--b',
    'Content-Type: text/plain',
    '',
    'See attached.',
    '--b',
    `Content-Type: application/octet-stream; name="${filename}"`,
    `Content-Disposition: attachment; filename="${filename}"`,
    'Content-Transfer-Encoding: base64',
    '',
    content.toString('base64').replace(/.{76}/g, '$&\r\n'),
    '--b--',
    '',
  ].join('\r\n');

describe("provider A's attachments, live", () => {
  it('describes and downloads a small attachment', async () => {
    const content = Buffer.from('a small file\n');
    const { id } = fake.deliver(email, withAttachment('small.txt', content));
    const attachment = await gmailAttachments.get(grant, 'part.1', id);
    expect(attachment).toMatchObject({ id: 'part.1', filename: 'small.txt', size: content.length, is_inline: false });
    const download = await gmailAttachments.download(grant, 'part.1', id);
    expect(download.kind).toBe('content');
    expect(download.kind === 'content' && download.content).toEqual(content);
    await expect(gmailAttachments.get(grant, 'part.7', id)).rejects.toThrow(NotFoundError);
    await expect(gmailAttachments.download(grant, 'part.1', 'ffffffffffffffff')).rejects.toThrow(NotFoundError);
  });

  it('serves one too large for an answer by a short-lived URL to the mail bucket', async () => {
    const content = Buffer.alloc(INLINE_DOWNLOAD_MAX + 1024, 7);
    const { id } = fake.deliver(email, withAttachment('large.bin', content));
    const download = await gmailAttachments.download(grant, 'part.1', id);
    expect(download.kind).toBe('redirect');
    const response = await fetch(download.kind === 'redirect' ? download.url : '');
    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(content)).toBe(true);
  });

  it('sent nothing Gmail does not describe, and the fake answered nothing it does not', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});
