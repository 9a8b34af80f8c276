import { describe, expect, it } from 'vitest';
import type { GrantRecord } from '#shared/db/grants';
import { mayHoldAttachments, messageFromGraph, type GraphMessage } from '#shared/microsoft/graph-message';

/** A Graph message as our Message (shared/microsoft/graph-message.ts), with no network. */

/** A grant of provider B (only its ID reaches a Message). */
const makeGrant = (overrides: Partial<GrantRecord> = {}): GrantRecord =>
  ({
    id: 'grant_unitgraphmessage',
    application_id: 'app_unit',
    provider: 'microsoft',
    grant_status: 'valid',
    email: 'ada@contoso.example',
    scope: ['Mail.ReadWrite'],
    settings: {},
    created_at: 0,
    updated_at: 0,
    blocked: false,
    ...overrides,
  }) as GrantRecord;

const grant = makeGrant();

const makeGraphMessage = (overrides: Partial<GraphMessage> = {}): GraphMessage => ({
  id: 'AAMkADmsg=',
  conversationId: 'AAQkADconv=',
  subject: 'Plans',
  bodyPreview: 'Plans & numbers',
  body: { contentType: 'html', content: '<p>Plans &amp; numbers</p>' },
  from: { emailAddress: { name: 'Lee, Ann', address: 'ann@example.org' } },
  toRecipients: [
    { emailAddress: { name: 'bob@example.org', address: 'bob@example.org' } },
    { emailAddress: { name: 'Carol', address: 'carol@example.org' } },
  ],
  ccRecipients: [],
  bccRecipients: [],
  replyTo: [{ emailAddress: { address: 'replies@example.org' } }],
  receivedDateTime: '2026-03-02T09:00:30Z',
  sentDateTime: '2026-03-02T08:59:00Z',
  createdDateTime: '2026-03-02T09:00:31Z',
  isRead: false,
  flag: { flagStatus: 'flagged' },
  parentFolderId: 'AAMkADinbox=',
  hasAttachments: true,
  internetMessageId: '<plans-3@example.org>',
  ...overrides,
});

describe('Function: messageFromGraph', () => {
  it('maps addresses, flags, the one folder, the thread, the snippet, the body and the received time', () => {
    // Prepare
    const graph = makeGraphMessage();

    // Act
    const message = messageFromGraph(grant, graph);

    // Assess
    expect(message).toEqual({
      id: 'AAMkADmsg=',
      object: 'message',
      grant_id: grant.id,
      thread_id: 'AAQkADconv=',
      subject: 'Plans',
      from: [{ email: 'ann@example.org', name: 'Lee, Ann' }],
      to: [{ email: 'bob@example.org' }, { email: 'carol@example.org', name: 'Carol' }],
      cc: [],
      bcc: [],
      reply_to: [{ email: 'replies@example.org' }],
      date: Date.parse('2026-03-02T09:00:30Z') / 1000,
      created_at: Date.parse('2026-03-02T09:00:31Z') / 1000,
      unread: true,
      starred: true,
      folders: ['AAMkADinbox='],
      snippet: 'Plans & numbers',
      body: '<p>Plans &amp; numbers</p>',
      attachments: [],
    });
  });

  it('counts a completed flag as not starred, and a read message as not unread', () => {
    // Act
    const message = messageFromGraph(grant, makeGraphMessage({ isRead: true, flag: { flagStatus: 'complete' } }));

    // Assess
    expect(message).toMatchObject({ unread: false, starred: false });
  });

  it("maps the attachments' metadata, inline ones by their content ID", () => {
    // Act
    const message = messageFromGraph(grant, makeGraphMessage(), {
      attachments: [
        { id: 'att-1', name: 'q3.pdf', contentType: 'application/pdf', size: 1234, isInline: false },
        { id: 'att-2', name: 'logo.png', contentType: 'image/png', size: 9, isInline: true, contentId: '<logo@x>' },
        { id: 'att-3', name: 'Forwarded', contentType: null, size: 10, isInline: false },
      ],
    });

    // Assess
    expect(message.attachments).toEqual([
      {
        id: 'att-1',
        grant_id: grant.id,
        filename: 'q3.pdf',
        content_type: 'application/pdf',
        size: 1234,
        is_inline: false,
        content_disposition: 'attachment',
      },
      {
        id: 'att-2',
        grant_id: grant.id,
        filename: 'logo.png',
        content_type: 'image/png',
        size: 9,
        is_inline: true,
        content_disposition: 'inline',
        content_id: 'logo@x',
      },
      {
        id: 'att-3',
        grant_id: grant.id,
        filename: 'Forwarded',
        content_type: 'application/octet-stream',
        size: 10,
        is_inline: false,
        content_disposition: 'attachment',
      },
    ]);
  });

  it("gives Graph's internet headers by fields, and the Message-ID it answers to as in_reply_to", () => {
    // Prepare
    const graph = makeGraphMessage({
      internetMessageHeaders: [
        { name: 'From', value: 'ann@example.org' },
        { name: 'In-Reply-To', value: ' <plans-2@example.org> ' },
        { name: 'X-Thing', value: 'kept' },
      ],
    });

    // Act
    const standard = messageFromGraph(grant, graph);
    const basic = messageFromGraph(grant, graph, { fields: 'include_basic_headers' });
    const all = messageFromGraph(grant, graph, { fields: 'include_headers' });

    // Assess
    expect(standard.headers).toBeUndefined();
    expect(standard.in_reply_to).toBe('<plans-2@example.org>');
    expect(basic.headers).toEqual([{ name: 'In-Reply-To', value: ' <plans-2@example.org> ' }]);
    expect(all.headers).toContainEqual({ name: 'X-Thing', value: 'kept' });
  });

  it('rebuilds the threading headers of a message Graph holds no headers for (a draft, a sent item)', () => {
    // Act
    const message = messageFromGraph(grant, makeGraphMessage(), { fields: 'include_basic_headers' });

    // Assess
    expect(message.headers).toEqual([{ name: 'Message-ID', value: '<plans-3@example.org>' }]);
  });

  it('gives the MIME as base64url for raw_mime only', () => {
    // Prepare
    const mime = 'From: ann@example.org\r\nSubject: Plans\r\n\r\nBody ✓';

    // Act
    const raw = messageFromGraph(grant, makeGraphMessage(), { fields: 'raw_mime', mime });
    const standard = messageFromGraph(grant, makeGraphMessage(), { mime });

    // Assess
    expect(Buffer.from(raw.raw_mime!, 'base64url').toString('utf8')).toBe(mime);
    expect(standard.raw_mime).toBeUndefined();
  });

  it('keeps a message without subject, sender or times whole', () => {
    // Act
    const message = messageFromGraph(grant, { id: 'AAMkADbare=' });

    // Assess
    expect(message).toMatchObject({ thread_id: 'AAMkADbare=', from: [], date: 0, folders: [], unread: false });
    expect(message.subject).toBeUndefined();
    expect(message.body).toBeUndefined();
  });
});

describe('Function: mayHoldAttachments', () => {
  it('trusts hasAttachments, and asks an HTML body that shows inline images by cid: when it says none', () => {
    // Act
    const answers = [
      makeGraphMessage({ hasAttachments: true }),
      makeGraphMessage({ hasAttachments: false, body: { contentType: 'html', content: '<img src="cid:logo@x">' } }),
      makeGraphMessage({ hasAttachments: false, body: { contentType: 'text', content: 'see cid:logo' } }),
      makeGraphMessage({ hasAttachments: false }),
    ].map(mayHoldAttachments);

    // Assess
    expect(answers).toEqual([true, true, false, false]);
  });
});
