import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { AttachmentObject } from '#schemas/mail';
import type { GrantRecord } from '#shared/db/grants';
import { NotFoundError } from '#shared/errors';
import { INLINE_DOWNLOAD_MAX } from '#shared/mailbox/attachments';
import { graphAttachments } from '#shared/microsoft/attachments';
import { graphMessages } from '#shared/microsoft/messages';
import type { Attachment } from '#shared/providers/contract';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';
import { connectFakeMicrosoftGrant } from '../support/microsoft';

/**
 * Attachments of provider B's messages and drafts, live (shared/microsoft/attachments.ts), against
 * the local Graph fake: described by Graph's attachment, downloaded from its contentBytes, over one
 * answer's size served from the mail bucket by a short-lived URL; an attachment of another message
 * or grant not found. Every request and answer checked by the fake against Graph's descriptions,
 * every description against our published AttachmentObject.
 */
let fake: GraphFake;
let grant: GrantRecord;
let email: string;
let accessToken: string;
const PDF = Buffer.from('%PDF-1.4 a tiny test file\n');
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0xfe]);
let messageId = '';
let pdf: Attachment;
let logo: Attachment;
let otherMessageId = '';
let other: Attachment;

beforeAll(async () => {
  fake = await startGraphFake();
  ({ grant, email, accessToken } = await connectFakeMicrosoftGrant(fake, 'microsoft live attachments'));
  messageId = fake.deliver(email, {
    from: 'ann@example.org',
    to: email,
    subject: 'Files',
    html: '<p>See the menu <img src="cid:logo@x"></p>',
    attachments: [
      { name: 'menu.pdf', contentType: 'application/pdf', content: PDF },
      { name: 'logo.png', contentType: 'image/png', content: PNG, isInline: true, contentId: 'logo@x' },
    ],
  }).id;
  otherMessageId = fake.deliver(email, {
    from: 'bob@example.org',
    to: email,
    subject: 'More',
    text: 'Another file',
    attachments: [{ name: 'notes.txt', contentType: 'text/plain', content: 'notes' }],
  }).id;
  // The attachments' IDs as our messages give them.
  [pdf, logo] = (await graphMessages.get(grant, messageId, {})).attachments as [Attachment, Attachment];
  [other] = (await graphMessages.get(grant, otherMessageId, {})).attachments as [Attachment];
});

afterEach(() => {
  expect(fake.violations()).toEqual([]);
});

afterAll(async () => {
  await fake?.close();
});

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validAttachment = ajv.compile(AttachmentObject);

describe("Provider B's attachments, live", () => {
  it('describes an attachment as the message does, by the ID the message gives it', async () => {
    // Act
    const [file, inline] = await Promise.all([
      graphAttachments.get(grant, pdf.id, messageId),
      graphAttachments.get(grant, logo.id, messageId),
    ]);

    // Assess
    expect(validAttachment(file), JSON.stringify(validAttachment.errors)).toBe(true);
    expect(validAttachment(inline), JSON.stringify(validAttachment.errors)).toBe(true);
    expect(file).toEqual(pdf);
    expect(file).toMatchObject({
      grant_id: grant.id,
      filename: 'menu.pdf',
      content_type: 'application/pdf',
      size: PDF.length,
      is_inline: false,
      content_disposition: 'attachment',
    });
    expect(inline).toMatchObject({ filename: 'logo.png', is_inline: true, content_disposition: 'inline' });
  });

  it('downloads the bytes as they are, with the name, type and content ID to serve them under', async () => {
    // Act
    const [file, inline] = await Promise.all([
      graphAttachments.download(grant, pdf.id, messageId),
      graphAttachments.download(grant, logo.id, messageId),
    ]);

    // Assess
    expect(file.kind).toBe('content');
    expect(file.kind === 'content' && file.content.equals(PDF)).toBe(true);
    expect(file.kind === 'content' && file.attachment).toMatchObject({
      filename: 'menu.pdf',
      content_type: 'application/pdf',
    });
    expect(inline.kind === 'content' && inline.content.equals(PNG)).toBe(true);
    expect(inline.kind === 'content' && inline.attachment).toMatchObject({
      filename: 'logo.png',
      content_type: 'image/png',
      content_disposition: 'inline',
      content_id: 'logo@x',
    });
  });

  it("404s an attachment of another message, of another grant, or an ID that is not Graph's", async () => {
    // Prepare
    const stranger = await connectFakeMicrosoftGrant(fake, 'microsoft attachments stranger');

    // Act
    const refusals = await Promise.allSettled([
      graphAttachments.get(grant, other.id, messageId),
      graphAttachments.download(grant, other.id, messageId),
      graphAttachments.get(grant, pdf.id, otherMessageId),
      graphAttachments.get(grant, pdf.id, 'AAMkADnosuchmessage='),
      graphAttachments.get(stranger.grant, pdf.id, messageId),
      graphAttachments.download(stranger.grant, pdf.id, messageId),
      graphAttachments.get(grant, '../../messages', messageId),
      graphAttachments.download(grant, pdf.id, '../mailFolders'),
    ]);

    // Assess
    for (const refused of refusals)
      expect(refused.status === 'rejected' && refused.reason).toBeInstanceOf(NotFoundError);
    await expect(graphAttachments.get(grant, other.id, messageId)).rejects.toThrow(
      `Attachment '${other.id}' not found in message '${messageId}'`,
    );
  });

  it("reads a draft's attachments by the draft's ID", async () => {
    // Prepare: a draft with a file, made at Graph.
    const response = await fetch(`${fake.url}/v1.0/me/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        subject: 'Draft with a file',
        toRecipients: [{ emailAddress: { address: 'ann@example.org' } }],
        attachments: [
          {
            '@odata.type': '#microsoft.graph.fileAttachment',
            name: 'plan.txt',
            contentType: 'text/plain',
            contentBytes: Buffer.from('the plan').toString('base64'),
          },
        ],
      }),
    });
    expect(response.status).toBe(201);
    const draft = (await response.json()) as { id: string };
    const [attachment] = (await graphMessages.get(grant, draft.id, {})).attachments;

    // Act
    const described = await graphAttachments.get(grant, attachment!.id, draft.id);
    const downloaded = await graphAttachments.download(grant, attachment!.id, draft.id);

    // Assess
    expect(described).toMatchObject({ filename: 'plan.txt', content_type: 'text/plain', size: 8 });
    expect(downloaded.kind === 'content' && downloaded.content.toString('utf8')).toBe('the plan');
  });

  it('serves one too large for an answer by a short-lived URL to the mail bucket', async () => {
    // Prepare
    const content = Buffer.alloc(INLINE_DOWNLOAD_MAX + 1024, 7);
    const id = fake.deliver(email, {
      from: 'ann@example.org',
      to: email,
      subject: 'Large',
      text: 'A large file',
      attachments: [{ name: 'large.bin', content }],
    }).id;
    const [large] = (await graphMessages.get(grant, id, {})).attachments;

    // Act
    const download = await graphAttachments.download(grant, large!.id, id);

    // Assess
    expect(download.kind).toBe('redirect');
    const response = await fetch(download.kind === 'redirect' ? download.url : '');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-disposition')).toContain('large.bin');
    expect(Buffer.from(await response.arrayBuffer()).equals(content)).toBe(true);
  });

  it('retries an attachment read Graph throttled, after its Retry-After', async () => {
    // Prepare
    fake.inject({ path: /\/attachments\/[^/]+$/, method: 'GET', status: 429, retryAfter: 1 });
    const before = fake.requests().length;

    // Act
    const download = await graphAttachments.download(grant, pdf.id, messageId);

    // Assess
    expect(download.kind === 'content' && download.content.equals(PDF)).toBe(true);
    const reads = fake
      .requests()
      .slice(before)
      .filter((r) => r.path.includes('/attachments/'));
    expect(reads.map((r) => r.status)).toEqual([429, 200]);
  });
});
