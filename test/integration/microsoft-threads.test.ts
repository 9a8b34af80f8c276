import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { ThreadObject } from '#schemas/mail';
import { encodeProviderCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { graphFolders } from '#shared/microsoft/folders';
import { graphMessages } from '#shared/microsoft/messages';
import { graphThreads } from '#shared/microsoft/threads';
import type { Page, Thread } from '#shared/providers/contract';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';
import { connectFakeMicrosoftGrant } from '../support/microsoft';

/**
 * Provider B's threads, live (shared/microsoft/threads.ts), against the local Graph fake: Outlook
 * conversations listed through a message listing (our filters as Graph's `$filter` or `$search`,
 * thread-level ones checked on each thread), paged through Graph's nextLink, read whole, updated and
 * trashed message by message in `$batch`es; every request and answer checked by the fake against
 * Graph's descriptions, every thread against our published ThreadObject.
 */
let fake: GraphFake;
let grant: GrantRecord;
let email: string;
let accessToken: string;
let work = '';
/** Conversation IDs: plans (received, received, sent), lunch (one, with a file), old (one, read). */
const threads: Record<string, string> = {};
const ids: Record<string, string> = {};
/** 2026-03-02T09:00:00Z, in seconds. */
const T0 = Date.parse('2026-03-02T09:00:00Z') / 1000;
const DAY = 86_400;

beforeAll(async () => {
  fake = await startGraphFake();
  ({ grant, email, accessToken } = await connectFakeMicrosoftGrant(fake, 'microsoft live threads'));
  work = (await graphFolders.create(grant, { name: 'Work' })).id;
  const old = fake.deliver(email, {
    from: 'old@example.org',
    to: email,
    subject: 'Old news',
    text: 'Long ago',
    receivedAt: (T0 - DAY) * 1000,
    isRead: true,
  });
  threads.old = old.conversationId;
  ids.old = old.id;
  const plans = fake.deliver(email, {
    from: { name: 'Ann', address: 'ann@example.org' },
    to: email,
    subject: 'Plans',
    text: 'Body of Plans',
    receivedAt: T0 * 1000,
  });
  threads.plans = plans.conversationId;
  ids.plans = plans.id;
  ids.replyIn = fake.deliver(email, {
    from: { name: 'Bob', address: 'bob@example.org' },
    to: email,
    cc: 'dora@example.org',
    subject: 'Re: Plans',
    text: 'Body of the reply',
    receivedAt: (T0 + DAY) * 1000,
    conversationId: threads.plans,
    isRead: true,
  }).id;
  ids.replyOut = fake.deliver(email, {
    from: email,
    to: 'ann@example.org',
    subject: 'Re: Plans',
    text: 'My answer',
    receivedAt: (T0 + 2 * DAY) * 1000,
    conversationId: threads.plans,
    folder: 'sentitems',
    isRead: true,
  }).id;
  const lunch = fake.deliver(email, {
    from: 'carol@example.org',
    to: email,
    subject: 'Lunch',
    text: 'Lunch?',
    receivedAt: (T0 + 3 * DAY) * 1000,
    folder: work,
    isRead: true,
    attachments: [{ name: 'menu.pdf', contentType: 'application/pdf', content: '%PDF-1.4 menu' }],
  });
  threads.lunch = lunch.conversationId;
  ids.lunch = lunch.id;
  fake.changeOutside(email, { kind: 'flag', id: ids.lunch, flagStatus: 'flagged' });
});

afterEach(() => {
  expect(fake.violations()).toEqual([]);
});

afterAll(async () => {
  await fake?.close();
});

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validThread = ajv.compile(ThreadObject);
const expectValid = (thread: Thread) => expect(validThread(thread), JSON.stringify(validThread.errors)).toBe(true);

const idsOf = (page: { items: Thread[] }) => page.items.map((t) => t.id);

/** Every page of a listing, in order (a page may hold fewer threads than asked, even none). */
async function allPages(first: Page<Thread>, next: (token: string) => Promise<Page<Thread>>) {
  const pages = [first];
  while (pages.at(-1)!.nextCursor) pages.push(await next(pages.at(-1)!.nextCursor!));
  return pages;
}

/** Graph's requests that change something, outside the `$batch` envelopes. */
const changes = () => fake.requests().filter((r) => r.method !== 'GET' && r.path !== '/v1.0/$batch');

describe("Provider B's threads, live", () => {
  it('lists conversations newest first, each with its aggregate and its newest message in full', async () => {
    // Act
    const all = await graphThreads.list(grant, {}, 50);

    // Assess
    expect(idsOf(all)).toEqual([threads.lunch, threads.plans, threads.old]);
    expect(all.nextCursor).toBeUndefined();
    for (const thread of all.items) expectValid(thread);
    const [lunch, plans] = all.items;
    expect(plans).toMatchObject({
      object: 'thread',
      grant_id: grant.id,
      subject: 'Plans',
      message_ids: [ids.plans, ids.replyIn, ids.replyOut],
      draft_ids: [],
      participants: [
        { email: 'ann@example.org', name: 'Ann' },
        { email },
        { email: 'bob@example.org', name: 'Bob' },
        { email: 'dora@example.org' },
      ],
      unread: true,
      starred: false,
      has_attachments: false,
      has_drafts: false,
      snippet: 'My answer',
      earliest_message_date: T0,
      latest_message_received_date: T0 + DAY,
      latest_message_sent_date: T0 + 2 * DAY,
    });
    expect(new Set(plans!.folders)).toEqual(
      new Set([fake.folderId(email, 'inbox'), fake.folderId(email, 'sentitems')]),
    );
    expect(plans!.latest_draft_or_message).toMatchObject({
      object: 'message',
      id: ids.replyOut,
      thread_id: threads.plans,
      body: 'My answer',
    });
    expect(lunch).toMatchObject({ starred: true, unread: false, has_attachments: true, folders: [work] });
    expect(lunch!.latest_draft_or_message!.attachments).toEqual([
      expect.objectContaining({ filename: 'menu.pdf', content_type: 'application/pdf', is_inline: false }),
    ]);
  });

  it('narrows with $filter where Graph can, and checks the thread-level filters on each thread exactly', async () => {
    // Act
    const [unread, read, starred, unstarred, files, inWork, inInbox, fromBob, after, before, earliest] =
      await Promise.all([
        graphThreads.list(grant, { unread: true }, 50),
        graphThreads.list(grant, { unread: false }, 50),
        graphThreads.list(grant, { starred: true }, 50),
        graphThreads.list(grant, { starred: false }, 50),
        graphThreads.list(grant, { has_attachment: true }, 50),
        graphThreads.list(grant, { in: work }, 50),
        graphThreads.list(grant, { in: 'inbox' }, 50),
        graphThreads.list(grant, { from: 'bob@example.org' }, 50),
        graphThreads.list(grant, { latest_message_after: T0 + DAY / 2 }, 50),
        graphThreads.list(grant, { latest_message_before: T0 + 2 * DAY }, 50),
        graphThreads.list(grant, { earliest_message_date: T0 }, 50),
      ]);

    // Assess
    expect(idsOf(unread)).toEqual([threads.plans]);
    // Plans has read messages, but an unread one too: it is not a read thread.
    expect(idsOf(read)).toEqual([threads.lunch, threads.old]);
    expect(idsOf(starred)).toEqual([threads.lunch]);
    expect(idsOf(unstarred)).toEqual([threads.plans, threads.old]);
    expect(idsOf(files)).toEqual([threads.lunch]);
    expect(idsOf(inWork)).toEqual([threads.lunch]);
    expect(idsOf(inInbox)).toEqual([threads.plans, threads.old]);
    expect(idsOf(fromBob)).toEqual([threads.plans]);
    expect(idsOf(after)).toEqual([threads.lunch, threads.plans]);
    // Plans' sent answer is newer, but its latest received message is not.
    expect(idsOf(before)).toEqual([threads.plans, threads.old]);
    expect(idsOf(earliest)).toEqual([threads.lunch, threads.plans]);
    // Graph was asked for unread messages, not for every message.
    const listings = fake.requests().map((r) => decodeURIComponent(r.path));
    expect(listings.some((p) => /\/messages\?.*\$filter=isRead eq false/.test(p))).toBe(true);
  });

  it('searches what only $search says, checking the thread-level filters beside it on each thread', async () => {
    // Act
    const [subject, cc, anyEmail, subjectUnread, subjectRead, native, nativeStarred] = await Promise.all([
      graphThreads.list(grant, { subject: 'Plans' }, 50),
      graphThreads.list(grant, { cc: 'dora@example.org' }, 50),
      graphThreads.list(grant, { any_email: 'carol@example.org' }, 50),
      graphThreads.list(grant, { subject: 'Plans', unread: true }, 50),
      graphThreads.list(grant, { subject: 'Plans', unread: false }, 50),
      graphThreads.list(grant, { search_query_native: 'lunch' }, 50),
      graphThreads.list(grant, { search_query_native: 'news', starred: true }, 50),
    ]);

    // Assess
    expect(idsOf(subject)).toEqual([threads.plans]);
    expect(idsOf(cc)).toEqual([threads.plans]);
    expect(idsOf(anyEmail)).toEqual([threads.lunch]);
    expect(idsOf(subjectUnread)).toEqual([threads.plans]);
    expect(idsOf(subjectRead)).toEqual([]);
    expect(idsOf(native)).toEqual([threads.lunch]);
    expect(idsOf(nativeStarred)).toEqual([]);
    const searches = fake.requests().filter((r) => r.path.includes('$search='));
    expect(searches.every((r) => !r.path.includes('$filter='))).toBe(true);
  });

  it('refuses what Graph cannot answer with a 400 naming it, before asking Graph', async () => {
    // Prepare
    const before = fake.requests().length;

    // Act
    const refused = await Promise.allSettled([
      graphThreads.list(grant, { search_query_native: 'plans', subject: 'Plans' }, 50),
      graphThreads.list(grant, { search_query_native: 'plans', from: 'ann@example.org', unread: true }, 50),
    ]);

    // Assess
    const reasons = refused.map((r) => (r.status === 'rejected' ? r.reason : r.value));
    for (const reason of reasons) expect(reason).toBeInstanceOf(InvalidRequestError);
    expect(String(reasons[0])).toMatch(/'search_query_native'.*'subject'/);
    // `unread` is checked on each thread, not asked of Graph: only `from` is refused beside the search.
    expect(String(reasons[1])).toMatch(/'search_query_native'.*'from'/);
    expect(String(reasons[1])).not.toMatch(/'unread'/);
    expect(fake.requests()).toHaveLength(before);
  });

  it("pages with Graph's nextLink inside our token, a thread shown once, and refuses tokens that would read anything else", async () => {
    // Act
    const first = await graphThreads.list(grant, {}, 2);
    const pages = await allPages(first, (token) => graphThreads.list(grant, { page_token: token }, 2));
    const inbox = await allPages(await graphThreads.list(grant, { in: 'inbox' }, 1), (token) =>
      graphThreads.list(grant, { page_token: token }, 1),
    );
    const unread = await allPages(await graphThreads.list(grant, { unread: false }, 1), (token) =>
      graphThreads.list(grant, { page_token: token }, 1),
    );

    // Assess
    // Lunch, then Plans' sent answer: Plans' older messages on the next page show nothing new.
    expect(idsOf(first)).toEqual([threads.lunch, threads.plans]);
    expect(pages.flatMap(idsOf)).toEqual([threads.lunch, threads.plans, threads.old]);
    expect(inbox.flatMap(idsOf)).toEqual([threads.plans, threads.old]);
    // The token keeps the thread-level check: Plans' read messages never bring it in.
    expect(unread.flatMap(idsOf)).toEqual([threads.lunch, threads.old]);
    const other = await connectFakeMicrosoftGrant(fake, 'microsoft threads other', {
      settings: { credential_type: 'adminconsent' },
    });
    const link = (path: string, checks: object = {}) =>
      encodeProviderCursor('graph-threads', JSON.stringify({ link: `${fake.url}${path}`, checks }));
    const forged = [
      'not-ours',
      encodeProviderCursor('graph-messages', `${fake.url}/v1.0/me/messages`),
      encodeProviderCursor('graph-threads', `${fake.url}/v1.0/me/messages`),
      link(`/v1.0/users/${other.userId}/messages`),
      link('/v1.0/me/mailFolders'),
      link('/v1.0/me/messages', { unread: 'yes' }),
      link('/v1.0/me/messages', { anchor: 'elsewhere' }),
      encodeProviderCursor(
        'graph-threads',
        JSON.stringify({ link: 'http://elsewhere.example/v1.0/me/messages', checks: {} }),
      ),
    ];
    for (const token of forged)
      await expect(graphThreads.list(grant, { page_token: token }, 2)).rejects.toThrow(InvalidRequestError);
    // A token of this grant's listing names its own mailbox: another grant refuses it.
    const own = await graphThreads.list(other.grant, {}, 1);
    fake.deliver(other.email, { from: 'x@example.org', to: other.email, subject: 'A', text: 'a' });
    fake.deliver(other.email, { from: 'x@example.org', to: other.email, subject: 'B', text: 'b' });
    const paged = await graphThreads.list(other.grant, {}, 1);
    expect(own.items).toEqual([]);
    expect(paged.nextCursor).toBeDefined();
    await expect(graphThreads.list(grant, { page_token: paged.nextCursor! }, 1)).rejects.toThrow(InvalidRequestError);
  });

  it('gets one thread, and 404s one that is not there or is another grant’s', async () => {
    // Act
    const plans = await graphThreads.get(grant, threads.plans!);

    // Assess
    expectValid(plans);
    expect(plans).toMatchObject({ id: threads.plans, message_ids: [ids.plans, ids.replyIn, ids.replyOut] });
    await expect(graphThreads.get(grant, 'AAQkADnosuchthread=')).rejects.toThrow(NotFoundError);
    await expect(graphThreads.get(grant, "x' or conversationId ne 'y")).rejects.toThrow(NotFoundError);
    const other = await connectFakeMicrosoftGrant(fake, 'microsoft threads stranger');
    await expect(graphThreads.get(other.grant, threads.plans!)).rejects.toThrow(NotFoundError);
  });

  it('updates the flags of every message of the conversation in one $batch, retrying an item Graph throttled', async () => {
    // Prepare: Graph throttles one of the PATCHes inside the batch.
    fake.inject({ path: /\/messages\/[^/]+$/, method: 'PATCH', status: 429, retryAfter: 1 });
    const before = fake.requests().length;

    // Act
    const updated = await graphThreads.update(grant, threads.plans!, { unread: false, starred: true });

    // Assess
    expectValid(updated);
    expect(updated).toMatchObject({ id: threads.plans, unread: false, starred: true });
    const patches = fake
      .requests()
      .slice(before)
      .filter((r) => r.method === 'PATCH');
    // Plans was unread and none was starred: three PATCHes, one answered 429 and sent again.
    expect(patches.filter((r) => r.status === 429)).toHaveLength(1);
    expect(patches.filter((r) => r.status === 200)).toHaveLength(3);
    // The three went in one batch; the throttled one was sent again alone.
    expect(patches.slice(0, 3).every((r) => r.inBatch)).toBe(true);
    const seen = await graphMessages.list(grant, { thread_id: threads.plans! }, 50);
    expect(seen.items.map((m) => [m.unread, m.starred])).toEqual([
      [false, true],
      [false, true],
      [false, true],
    ]);
    // Nothing to change: nothing sent.
    const sent = changes().length;
    await graphThreads.update(grant, threads.plans!, { starred: true });
    expect(changes()).toHaveLength(sent);
  });

  it('moves every message to the one folder given, keeping their IDs (immutable IDs) and our metadata', async () => {
    // Prepare
    await graphMessages.update(grant, ids.replyIn!, { metadata: { key1: 'thread-move' } });
    const archive = fake.folderId(email, 'archive');

    // Act
    const moved = await graphThreads.update(grant, threads.plans!, { folders: ['archive'] });

    // Assess
    expectValid(moved);
    expect(moved.folders).toEqual([archive]);
    expect(moved.message_ids).toHaveLength(3);
    expect(moved.message_ids.every((id) => Object.values(ids).includes(id))).toBe(true);
    expect(fake.requests().filter((r) => r.path.endsWith('/move')).length).toBeGreaterThanOrEqual(3);
    expect((await graphThreads.get(grant, threads.plans!)).message_ids).toEqual(moved.message_ids);
    const tagged = await graphMessages.list(grant, { metadata_pair: 'key1:thread-move' }, 50);
    expect(tagged.items.map((m) => [m.id, m.metadata])).toEqual([[moved.message_ids[1], { key1: 'thread-move' }]]);
    await expect(graphThreads.update(grant, threads.plans!, { folders: [work, 'inbox'] })).rejects.toThrow(
      /exactly one folder/,
    );
    await expect(graphThreads.update(grant, threads.plans!, { folders: ['AAMkADnosuchfolder='] })).rejects.toThrow(
      /'folders' names no folder of this grant/,
    );
    await expect(graphThreads.update(grant, 'AAQkADnosuchthread=', { unread: true })).rejects.toThrow(NotFoundError);
  });

  it('trashes every message of the conversation, once, and 404s a thread that is not there', async () => {
    // Act
    await graphThreads.delete(grant, threads.lunch!);

    // Assess
    const trash = fake.folderId(email, 'deleteditems');
    const lunch = await graphThreads.get(grant, threads.lunch!);
    expect(lunch.folders).toEqual([trash]);
    expect(idsOf(await graphThreads.list(grant, { in: 'trash' }, 50))).toEqual([threads.lunch]);
    const sent = changes().length;
    await graphThreads.delete(grant, threads.lunch!);
    expect(changes()).toHaveLength(sent);
    await expect(graphThreads.delete(grant, 'AAQkADnosuchthread=')).rejects.toThrow(NotFoundError);
  });

  it('keeps a reply draft apart from the messages, answers it as the newest entry, and leaves its flags alone', async () => {
    // Prepare: Graph's createReply puts a draft (newer than the message) in Old news' conversation.
    const response = await fetch(`${fake.url}/v1.0/me/messages/${ids.old}/createReply`, {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ comment: 'Draft answer' }),
    });
    const draft = (await response.json()) as { id: string; conversationId: string };
    const patches = () => fake.requests().filter((r) => r.method === 'PATCH');
    const before = patches().length;

    // Act
    const updated = await graphThreads.update(grant, threads.old!, { starred: true });

    // Assess
    expect(response.status).toBe(201);
    expect(draft.conversationId).toBe(threads.old);
    expectValid(updated);
    expect(updated).toMatchObject({
      message_ids: [ids.old],
      draft_ids: [draft.id],
      has_drafts: true,
      starred: true,
      latest_message_received_date: T0 - DAY,
    });
    expect(updated.latest_draft_or_message).toMatchObject({ object: 'draft', id: draft.id });
    // The message was starred; the draft was not touched.
    expect(
      patches()
        .slice(before)
        .map((r) => decodeURIComponent(r.path)),
    ).toEqual([`/v1.0/me/messages/${ids.old}`]);
    expect((await graphMessages.get(grant, draft.id, {})).starred).toBe(false);
  });

  it("answers a draft's conversation with its draft, and retries a conversation read Graph throttled", async () => {
    // Prepare: a draft made at Graph (its own conversation), and Graph throttling the next conversation read.
    const response = await fetch(`${fake.url}/v1.0/me/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        subject: 'Unsent',
        body: { contentType: 'text', content: 'Draft body' },
        toRecipients: [{ emailAddress: { address: 'ann@example.org' } }],
      }),
    });
    const draft = (await response.json()) as { id: string; conversationId: string };
    fake.inject({ path: /\/messages$/, method: 'GET', status: 429, retryAfter: 1 });
    const before = fake.requests().length;

    // Act
    const thread = await graphThreads.get(grant, draft.conversationId);

    // Assess
    expect(response.status).toBe(201);
    expectValid(thread);
    expect(thread).toMatchObject({
      id: draft.conversationId,
      message_ids: [],
      draft_ids: [draft.id],
      has_drafts: true,
      subject: 'Unsent',
      folders: [fake.folderId(email, 'drafts')],
    });
    expect(thread.latest_draft_or_message).toMatchObject({ object: 'draft', id: draft.id, body: 'Draft body' });
    const reads = fake
      .requests()
      .slice(before)
      .filter((r) => decodeURIComponent(r.path).includes('conversationId eq'));
    expect(reads.map((r) => r.status)).toEqual([429, 200]);
  });
});
