import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { MessageObject } from '#schemas/mail';
import { graphMessages } from '#shared/microsoft/messages';
import { graphFolders } from '#shared/microsoft/folders';
import { encodeProviderCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError, RateLimitError } from '#shared/errors';
import type { Message } from '#shared/providers/contract';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';
import { connectFakeMicrosoftGrant } from '../support/microsoft';

/**
 * Provider B's messages, live (shared/microsoft/messages.ts), against the local Graph fake: listing
 * with our filters as Graph's `$filter` or `$search`, paging through Graph's nextLink, get (headers,
 * raw MIME), update of flags and of the one folder (a move, keeping its immutable ID), trash and delete; every
 * request and answer checked by the fake against Graph's descriptions.
 */
let fake: GraphFake;
let grant: GrantRecord;
let email: string;
const ids: Record<string, string> = {};
let conversation = '';
let work = '';
const PDF = Buffer.from('%PDF-1.4 a tiny test file\n');
/** 2026-03-02T09:00:00Z, in seconds: Plans arrives then, Re: Plans a day later, Lunch two. */
const T0 = Date.parse('2026-03-02T09:00:00Z') / 1000;
const DAY = 86_400;

beforeAll(async () => {
  fake = await startGraphFake();
  ({ grant, email } = await connectFakeMicrosoftGrant(fake, 'microsoft live messages'));
  work = (await graphFolders.create(grant, { name: 'Work' })).id;
  const plans = fake.deliver(email, {
    from: { name: 'Ann', address: 'ann@example.org' },
    to: email,
    subject: 'Plans',
    text: 'Body of Plans',
    receivedAt: T0 * 1000,
  });
  ids.plans = plans.id;
  conversation = plans.conversationId;
  ids.reply = fake.deliver(email, {
    from: { name: 'Bob', address: 'bob@example.org' },
    to: email,
    cc: 'dora@example.org',
    subject: 'Re: Plans',
    text: 'Body of Re: Plans',
    receivedAt: (T0 + DAY) * 1000,
    conversationId: conversation,
    isRead: true,
  }).id;
  ids.lunch = fake.deliver(email, {
    from: 'carol@example.org',
    to: email,
    subject: 'Lunch',
    html: '<p>Lunch? <img src="cid:logo@x"></p>',
    receivedAt: (T0 + 2 * DAY) * 1000,
    folder: work,
    isRead: true,
    attachments: [
      { name: 'menu.pdf', contentType: 'application/pdf', content: PDF },
      { name: 'logo.png', contentType: 'image/png', content: 'png bytes', isInline: true, contentId: 'logo@x' },
    ],
  }).id;
  fake.changeOutside(email, { kind: 'flag', id: ids.lunch, flagStatus: 'flagged' });
});

afterEach(() => {
  expect(fake.violations()).toEqual([]);
});

afterAll(async () => {
  await fake?.close();
});

const idsOf = (page: { items: Message[] }) => page.items.map((m) => m.id);

/** Responses are schemas too: what the provider answers is a MessageObject as published. */
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validMessage = ajv.compile(MessageObject);

describe("Provider B's messages, live", () => {
  it('lists newest first, with each filter Graph can say as its $filter', async () => {
    // Act
    const [all, unread, starred, inWork, inInbox, fromTwo, thread, withFiles, after, before] = await Promise.all([
      graphMessages.list(grant, {}, 50),
      graphMessages.list(grant, { unread: true }, 50),
      graphMessages.list(grant, { starred: true }, 50),
      graphMessages.list(grant, { in: work }, 50),
      graphMessages.list(grant, { in: 'inbox' }, 50),
      graphMessages.list(grant, { from: 'bob@example.org, carol@example.org' }, 50),
      graphMessages.list(grant, { thread_id: conversation }, 50),
      graphMessages.list(grant, { has_attachment: true }, 50),
      graphMessages.list(grant, { received_after: T0 }, 50),
      graphMessages.list(grant, { received_before: T0 + DAY }, 50),
    ]);

    // Assess
    expect(idsOf(all)).toEqual([ids.lunch, ids.reply, ids.plans]);
    for (const message of all.items) expect(validMessage(message), JSON.stringify(validMessage.errors)).toBe(true);
    expect(idsOf(unread)).toEqual([ids.plans]);
    expect(idsOf(starred)).toEqual([ids.lunch]);
    expect(idsOf(inWork)).toEqual([ids.lunch]);
    expect(idsOf(inInbox)).toEqual([ids.reply, ids.plans]);
    expect(idsOf(fromTwo)).toEqual([ids.lunch, ids.reply]);
    expect(idsOf(thread)).toEqual([ids.reply, ids.plans]);
    expect(idsOf(withFiles)).toEqual([ids.lunch]);
    expect(idsOf(after)).toEqual([ids.lunch, ids.reply]);
    expect(idsOf(before)).toEqual([ids.plans]);
  });

  it('searches what only $search can say, and takes search_query_native as Graph’s own $search', async () => {
    // Act
    const [subject, cc, anyEmail, fromAndSubject, native, nativeInFolder] = await Promise.all([
      graphMessages.list(grant, { subject: 'Plans' }, 50),
      graphMessages.list(grant, { cc: 'dora@example.org' }, 50),
      graphMessages.list(grant, { any_email: 'ann@example.org' }, 50),
      graphMessages.list(grant, { subject: 'Plans', from: 'bob@example.org' }, 50),
      graphMessages.list(grant, { search_query_native: 'lunch' }, 50),
      graphMessages.list(grant, { search_query_native: 'subject:plans', in: 'inbox' }, 50),
    ]);

    // Assess
    expect(idsOf(subject)).toEqual([ids.reply, ids.plans]);
    expect(idsOf(cc)).toEqual([ids.reply]);
    expect(idsOf(anyEmail)).toEqual([ids.plans]);
    expect(idsOf(fromAndSubject)).toEqual([ids.reply]);
    expect(idsOf(native)).toEqual([ids.lunch]);
    expect(idsOf(nativeInFolder)).toEqual([ids.reply, ids.plans]);
  });

  it('refuses a search with filters Graph takes only as $filter, naming them, before asking Graph', async () => {
    // Prepare
    const before = fake.requests().length;

    // Act
    const refused = graphMessages.list(grant, { subject: 'Plans', unread: true }, 50);

    // Assess
    await expect(refused).rejects.toThrow(InvalidRequestError);
    await expect(refused).rejects.toThrow(/'subject'.*'unread'/);
    await expect(graphMessages.list(grant, { search_query_native: 'x', starred: true }, 50)).rejects.toThrow(
      /'search_query_native'.*'starred'/,
    );
    expect(fake.requests()).toHaveLength(before);
  });

  it("pages with Graph's nextLink inside our token, and refuses a token that would read anything else", async () => {
    // Act
    const first = await graphMessages.list(grant, {}, 2);
    const second = await graphMessages.list(grant, { page_token: first.nextCursor! }, 2);

    // Assess
    expect(idsOf(first)).toEqual([ids.lunch, ids.reply]);
    expect(first.nextCursor).toBeDefined();
    expect(idsOf(second)).toEqual([ids.plans]);
    expect(second.nextCursor).toBeUndefined();
    const forged = [
      'not-ours',
      encodeProviderCursor('graph-messages', `${fake.url}/v1.0/users/someone-else@example.org/messages`),
      encodeProviderCursor('graph-messages', `${fake.url}/v1.0/me/mailFolders`),
      encodeProviderCursor('graph-messages', 'http://elsewhere.example/v1.0/me/messages'),
      encodeProviderCursor('graph-folders', `${fake.url}/v1.0/me/messages`),
    ];
    for (const token of forged)
      await expect(graphMessages.list(grant, { page_token: token }, 2)).rejects.toThrow(InvalidRequestError);
  });

  it('lists attachments by their metadata, also inline ones of a message Graph says has none', async () => {
    // Prepare
    const inlineOnly = fake.deliver(email, {
      from: 'erin@example.org',
      to: email,
      subject: 'Logo',
      html: '<p><img src="cid:logo2@x"></p>',
      folder: 'junkemail',
      attachments: [
        { name: 'logo.png', contentType: 'image/png', content: 'png', isInline: true, contentId: 'logo2@x' },
      ],
    });

    // Act
    const [inWork, junk] = await Promise.all([
      graphMessages.list(grant, { in: work }, 50),
      graphMessages.list(grant, { in: 'spam' }, 50),
    ]);

    // Assess
    expect(inWork.items[0]!.attachments).toEqual([
      expect.objectContaining({
        filename: 'menu.pdf',
        content_type: 'application/pdf',
        size: PDF.length,
        is_inline: false,
        content_disposition: 'attachment',
      }),
      expect.objectContaining({ filename: 'logo.png', content_type: 'image/png', is_inline: true }),
    ]);
    expect(junk.items.map((m) => [m.id, m.attachments.map((a) => a.filename)])).toEqual([
      [inlineOnly.id, ['logo.png']],
    ]);
  });

  it('gets one message with its headers when asked, its MIME as raw_mime, and 404s one that is not there', async () => {
    // Act
    const plans = await graphMessages.get(grant, ids.plans!, { fields: 'include_headers' });
    const raw = await graphMessages.get(grant, ids.plans!, { fields: 'raw_mime' });

    // Assess
    expect(plans).toMatchObject({
      id: ids.plans,
      thread_id: conversation,
      subject: 'Plans',
      from: [{ email: 'ann@example.org', name: 'Ann' }],
      to: [{ email }],
      unread: true,
      starred: false,
      folders: [fake.folderId(email, 'inbox')],
      body: 'Body of Plans',
      snippet: 'Body of Plans',
      date: T0,
      attachments: [],
      metadata: {},
    });
    expect(validMessage(plans), JSON.stringify(validMessage.errors)).toBe(true);
    expect(validMessage(raw), JSON.stringify(validMessage.errors)).toBe(true);
    expect(plans.headers).toContainEqual({ name: 'Subject', value: 'Plans' });
    expect(plans.headers?.map((h) => h.name)).toContain('Message-ID');
    expect(Buffer.from(raw.raw_mime!, 'base64url').toString('utf8')).toContain('Subject: Plans');
    await expect(graphMessages.get(grant, 'AAMkADnosuchmessage=', {})).rejects.toThrow(NotFoundError);
    await expect(graphMessages.get(grant, '../mailFolders', {})).rejects.toThrow(NotFoundError);
    // The registry adds the tracking options (shared/registries/messages.ts); the provider answers the standard message.
    expect(await graphMessages.get(grant, ids.plans!, { fields: 'include_tracking_options' })).toMatchObject({
      id: ids.plans,
      subject: 'Plans',
    });
  });

  it('updates the flags through isRead and flag, answers what Graph holds, and sends nothing when nothing changes', async () => {
    // Act
    const updated = await graphMessages.update(grant, ids.plans!, { unread: false, starred: true });

    // Assess
    expect(updated).toMatchObject({ id: ids.plans, unread: false, starred: true, subject: 'Plans' });
    expect(await graphMessages.get(grant, ids.plans!, {})).toMatchObject({ unread: false, starred: true });
    // Nothing to change (the flag is set, the folder is the one it is in): nothing is sent, the ID stays.
    const changes = () => fake.requests().filter((r) => r.method !== 'GET' && r.path !== '/v1.0/$batch');
    const before = changes().length;
    const unchanged = await graphMessages.update(grant, ids.plans!, { starred: true, folders: ['inbox'] });
    expect(unchanged).toMatchObject({ id: ids.plans, starred: true, folders: [fake.folderId(email, 'inbox')] });
    expect(changes()).toHaveLength(before);
  });

  it('moves a message to the one folder given, keeping its ID (immutable IDs) and our metadata', async () => {
    // Prepare
    await graphMessages.update(grant, ids.plans!, { metadata: { key1: 'project-x' } });

    // Act
    const moved = await graphMessages.update(grant, ids.plans!, { folders: [work] });

    // Assess
    expect(moved.id).toBe(ids.plans);
    expect(moved).toMatchObject({ folders: [work], subject: 'Plans', starred: true, metadata: { key1: 'project-x' } });
    expect(fake.requests().filter((r) => r.path.endsWith('/move')).length).toBeGreaterThan(0);
    expect(idsOf(await graphMessages.list(grant, { in: work }, 50))).toContain(moved.id);
    expect(idsOf(await graphMessages.list(grant, { metadata_pair: 'key1:project-x' }, 50))).toEqual([moved.id]);
    expect((await graphMessages.get(grant, moved.id, {})).metadata).toEqual({ key1: 'project-x' });
    ids.plans = moved.id;

    await expect(graphMessages.update(grant, moved.id, { folders: [work, 'inbox'] })).rejects.toThrow(
      /exactly one folder/,
    );
    await expect(graphMessages.update(grant, moved.id, { folders: ['AAMkADnosuchfolder='] })).rejects.toThrow(
      /'folders' names no folder of this grant/,
    );
    await expect(graphMessages.update(grant, 'AAMkADnosuchmessage=', { unread: true })).rejects.toThrow(NotFoundError);
  });

  it('moves to Deleted Items (our Trash) by default, once, and deletes for good with hard_delete', async () => {
    // Act
    await graphMessages.delete(grant, ids.lunch!, {});

    // Assess: in Deleted Items under the same ID.
    expect((await graphMessages.get(grant, ids.lunch!, {})).folders).toEqual([fake.folderId(email, 'deleteditems')]);
    const trash = await graphMessages.list(grant, { in: 'trash' }, 50);
    expect(trash.items.map((m) => m.subject)).toEqual(['Lunch']);
    const trashed = trash.items[0]!;
    expect(trashed.id).toBe(ids.lunch);
    expect(trashed.folders).toEqual([fake.folderId(email, 'deleteditems')]);
    await graphMessages.delete(grant, trashed.id, {});
    expect(idsOf(await graphMessages.list(grant, { in: 'trash' }, 50))).toEqual([trashed.id]);

    await graphMessages.delete(grant, trashed.id, { hard_delete: true });
    await expect(graphMessages.get(grant, trashed.id, {})).rejects.toThrow(NotFoundError);
    await expect(graphMessages.delete(grant, trashed.id, {})).rejects.toThrow(NotFoundError);
    await expect(graphMessages.delete(grant, trashed.id, { hard_delete: true })).rejects.toThrow(NotFoundError);
  });

  it('reads the mailbox a grant of application permissions names, paging on its /users path', async () => {
    // Prepare
    const app = await connectFakeMicrosoftGrant(fake, 'microsoft app permissions', {
      settings: { credential_type: 'adminconsent' },
    });
    const sent = [1, 2, 3].map(
      (n) => fake.deliver(app.email, { from: 'ann@example.org', to: app.email, subject: `N${n}`, text: `${n}` }).id,
    );

    // Act
    const first = await graphMessages.list(app.grant, { from: 'ann@example.org' }, 2);
    const second = await graphMessages.list(app.grant, { page_token: first.nextCursor! }, 2);

    // Assess
    expect([...idsOf(first), ...idsOf(second)].sort()).toEqual([...sent].sort());
    expect(fake.requests().at(-1)?.path).toMatch(new RegExp(`^/v1\\.0/users/${app.userId}/messages\\?`));
    // A token of this listing names its own mailbox: another grant's listing refuses it.
    await expect(graphMessages.list(grant, { page_token: first.nextCursor! }, 2)).rejects.toThrow(InvalidRequestError);
  });

  it("answers 429 'use a smaller limit and select' when Graph's rate limit outlasts the request", async () => {
    // Prepare
    fake.inject({ path: /\/messages$/, method: 'GET', status: 429, retryAfter: 60 });

    // Act
    const limited = await graphMessages.list(grant, {}, 50).catch((e: unknown) => e);

    // Assess
    expect(limited).toBeInstanceOf(RateLimitError);
    expect((limited as Error).message).toContain('smaller limit');
  });
});
