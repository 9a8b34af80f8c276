import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gmailMessages } from '#shared/google/messages';
import { googleClientOf } from '#shared/google/client';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError, RateLimitError } from '#shared/errors';
import type { Message } from '#shared/providers/contract';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { connectFakeGoogleGrant } from '../support/google';

/**
 * Provider A's messages, live (shared/google/messages.ts), against the local Google fake: listing
 * with our filters as Gmail search, paging through Gmail's own tokens, a thread's messages, get,
 * update of flags and folders (labels), trash and delete; every request and answer checked by the
 * fake against gmail-v1.json.
 */
let fake: GoogleFake;
let grant: GrantRecord;
let email: string;
const ids: Record<string, string> = {};
let threadOfPlans = '';
let work = '';

const crlf = (lines: string[]) => lines.join('\r\n');
const mail = (from: string, subject: string, date: string, extra: string[] = []) =>
  crlf([`From: ${from}`, `To: ${email}`, `Subject: ${subject}`, `Date: ${date}`, ...extra, '', `Body of ${subject}`]);

beforeAll(async () => {
  fake = await startGoogleFake();
  ({ grant, email } = await connectFakeGoogleGrant(fake, 'google live messages'));
  const client = await googleClientOf(grant);
  work = (
    await client.call<{ id: string }>({
      api: 'gmail',
      method: 'POST',
      path: '/gmail/v1/users/me/labels',
      body: { name: 'Work', labelListVisibility: 'labelShow', messageListVisibility: 'show' },
    })
  ).id;
  const plans = fake.deliver(
    email,
    mail('Ann <ann@example.org>', 'Plans', 'Mon, 02 Mar 2026 09:00:00 +0000', ['Message-ID: <plans@example.org>']),
    ['INBOX', 'UNREAD', work],
  );
  ids.plans = plans.id;
  threadOfPlans = plans.threadId;
  ids.reply = fake.deliver(
    email,
    mail('Bob <bob@example.org>', 'Re: Plans', 'Tue, 03 Mar 2026 09:00:00 +0000', [
      'Message-ID: <reply@example.org>',
      'In-Reply-To: <plans@example.org>',
      'References: <plans@example.org>',
    ]),
    ['INBOX'],
  ).id;
  ids.lunch = fake.deliver(email, mail('carol@example.org', 'Lunch', 'Wed, 04 Mar 2026 09:00:00 +0000'), [
    'INBOX',
    'STARRED',
  ]).id;
});

afterAll(async () => {
  await fake?.close();
});

const idsOf = (page: { items: Message[] }) => page.items.map((m) => m.id);

describe("provider A's messages, live", () => {
  it('lists newest first, filters through Gmail search and pages with its tokens', async () => {
    expect(idsOf(await gmailMessages.list(grant, {}, 50))).toEqual([ids.lunch, ids.reply, ids.plans]);
    expect(idsOf(await gmailMessages.list(grant, { unread: true }, 50))).toEqual([ids.plans]);
    expect(idsOf(await gmailMessages.list(grant, { starred: true }, 50))).toEqual([ids.lunch]);
    expect(idsOf(await gmailMessages.list(grant, { in: work }, 50))).toEqual([ids.plans]);
    expect(idsOf(await gmailMessages.list(grant, { from: 'bob@example.org, carol@example.org' }, 50))).toEqual([
      ids.lunch,
      ids.reply,
    ]);
    expect(idsOf(await gmailMessages.list(grant, { any_email: 'ann@example.org' }, 50))).toEqual([ids.plans]);
    expect(idsOf(await gmailMessages.list(grant, { subject: 'Plans' }, 50))).toEqual([ids.reply, ids.plans]);
    expect(idsOf(await gmailMessages.list(grant, { search_query_native: 'lunch OR from:ann' }, 50))).toEqual([
      ids.lunch,
      ids.plans,
    ]);

    const first = await gmailMessages.list(grant, {}, 2);
    expect(idsOf(first)).toEqual([ids.lunch, ids.reply]);
    expect(first.nextCursor).toBeDefined();
    const second = await gmailMessages.list(grant, { page_token: first.nextCursor! }, 2);
    expect(idsOf(second)).toEqual([ids.plans]);
    expect(second.nextCursor).toBeUndefined();
    await expect(gmailMessages.list(grant, { page_token: 'not-ours' }, 2)).rejects.toThrow(InvalidRequestError);
  });

  it("lists a thread's messages, newest first, and nothing for an unknown thread", async () => {
    expect(idsOf(await gmailMessages.list(grant, { thread_id: threadOfPlans }, 50))).toEqual([ids.reply, ids.plans]);
    const first = await gmailMessages.list(grant, { thread_id: threadOfPlans }, 1);
    expect(idsOf(first)).toEqual([ids.reply]);
    expect(
      idsOf(await gmailMessages.list(grant, { thread_id: threadOfPlans, page_token: first.nextCursor! }, 1)),
    ).toEqual([ids.plans]);
    expect(idsOf(await gmailMessages.list(grant, { thread_id: 'ffffffffffffffff' }, 50))).toEqual([]);
  });

  it('gets one message, with its headers when asked, and 404s one that is not there', async () => {
    const plans = await gmailMessages.get(grant, ids.plans!, { fields: 'include_headers' });
    expect(plans).toMatchObject({
      id: ids.plans,
      thread_id: threadOfPlans,
      subject: 'Plans',
      from: [{ email: 'ann@example.org', name: 'Ann' }],
      unread: true,
      body: 'Body of Plans',
    });
    expect(plans.folders).toEqual(expect.arrayContaining(['INBOX', work]));
    expect(plans.headers).toContainEqual({ name: 'Message-ID', value: '<plans@example.org>' });
    await expect(gmailMessages.get(grant, 'ffffffffffffffff', {})).rejects.toThrow(NotFoundError);
    await expect(gmailMessages.get(grant, '../labels', {})).rejects.toThrow(NotFoundError);
  });

  it('updates flags and replaces folders (labels), flags kept', async () => {
    const read = await gmailMessages.update(grant, ids.plans!, { unread: false, starred: true });
    expect(read).toMatchObject({ unread: false, starred: true });
    const moved = await gmailMessages.update(grant, ids.plans!, { folders: [work] });
    expect(moved.folders.sort()).toEqual(['STARRED', work].sort());
    expect(idsOf(await gmailMessages.list(grant, { in: 'INBOX' }, 50))).not.toContain(ids.plans);
  });

  it('keeps our metadata beside Gmail\u2019s message: answered with it, listed by metadata_pair, replaced as a whole', async () => {
    const tagged = await gmailMessages.update(grant, ids.plans!, { metadata: { key1: 'project-x', note: 'keep' } });
    expect(tagged.metadata).toEqual({ key1: 'project-x', note: 'keep' });
    expect((await gmailMessages.get(grant, ids.plans!, {})).metadata).toEqual({ key1: 'project-x', note: 'keep' });
    await gmailMessages.update(grant, ids.reply!, { metadata: { key1: 'project-x' } });
    const listed = await gmailMessages.list(grant, { metadata_pair: 'key1:project-x' }, 50);
    expect(idsOf(listed).sort()).toEqual([ids.plans, ids.reply].sort());
    expect(listed.items.find((m) => m.id === ids.reply)?.metadata).toEqual({ key1: 'project-x' });
    // Paged from our index, newest ID first.
    const first = await gmailMessages.list(grant, { metadata_pair: 'key1:project-x' }, 1);
    expect(first.items).toHaveLength(1);
    const second = await gmailMessages.list(
      grant,
      { metadata_pair: 'key1:project-x', page_token: first.nextCursor! },
      1,
    );
    expect([...idsOf(first), ...idsOf(second)].sort()).toEqual([ids.plans, ids.reply].sort());
    expect(second.nextCursor).toBeUndefined();
    // Replaced as a whole: the old pair no longer lists it; a key that is not indexed is refused.
    await gmailMessages.update(grant, ids.reply!, { metadata: { key2: 'other' } });
    expect(idsOf(await gmailMessages.list(grant, { metadata_pair: 'key1:project-x' }, 50))).toEqual([ids.plans]);
    expect(idsOf(await gmailMessages.list(grant, { metadata_pair: 'key2:other' }, 50))).toEqual([ids.reply]);
    await expect(gmailMessages.list(grant, { metadata_pair: 'note:keep' }, 50)).rejects.toThrow(/key1, key2/);
    await expect(gmailMessages.list(grant, { metadata_pair: 'key1:project-x', unread: true }, 50)).rejects.toThrow(
      /'metadata_pair' cannot be combined with provider filters \('unread'\)/,
    );
    await gmailMessages.update(grant, ids.plans!, { metadata: {} });
    expect((await gmailMessages.get(grant, ids.plans!, {})).metadata).toEqual({});
    expect(idsOf(await gmailMessages.list(grant, { metadata_pair: 'key1:project-x' }, 50))).toEqual([]);
  });

  it('trashes by default and deletes for good with hard_delete', async () => {
    await gmailMessages.delete(grant, ids.lunch!, {});
    expect((await gmailMessages.get(grant, ids.lunch!, {})).folders).toContain('TRASH');
    expect(idsOf(await gmailMessages.list(grant, {}, 50))).not.toContain(ids.lunch);
    await gmailMessages.delete(grant, ids.lunch!, { hard_delete: true });
    await expect(gmailMessages.get(grant, ids.lunch!, {})).rejects.toThrow(NotFoundError);
    await expect(gmailMessages.delete(grant, ids.lunch!, {})).rejects.toThrow(NotFoundError);
  });

  it("answers 429 'use a smaller limit and select' when Gmail's rate limit outlasts the request", async () => {
    fake.inject({ method: 'gmail.users.messages.get', status: 429, retryAfter: 60 });
    const limited = await gmailMessages.list(grant, {}, 50).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(RateLimitError);
    expect((limited as Error).message).toContain('smaller limit');
  });

  it('sent nothing Gmail does not describe, and the fake answered nothing it does not', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});
