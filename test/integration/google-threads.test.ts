import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gmailThreads } from '#shared/google/threads';
import { googleClientOf } from '#shared/google/client';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { connectFakeGoogleGrant } from '../support/google';

/**
 * Provider A's threads, live (shared/google/threads.ts): Gmail's threads against the local Google
 * fake, aggregated from the thread as Gmail answers it; filters through Gmail search; label changes
 * on the whole thread; delete as trash.
 */
let fake: GoogleFake;
let grant: GrantRecord;
let email: string;
let plans = '';
let lunch = '';
const messageIds: Record<string, string> = {};

const crlf = (lines: string[]) => lines.join('\r\n');

beforeAll(async () => {
  fake = await startGoogleFake();
  ({ grant, email } = await connectFakeGoogleGrant(fake, 'google live threads'));
  const first = fake.deliver(
    email,
    crlf([
      'From: Ann <ann@example.org>',
      `To: ${email}`,
      'Subject: Plans',
      'Message-ID: <plans@example.org>',
      'Date: Mon, 02 Mar 2026 09:00:00 +0000',
      '',
      'First',
    ]),
  );
  plans = first.threadId;
  messageIds.first = first.id;
  // Our answer, sent through Gmail: it joins the thread, labelled SENT.
  const client = await googleClientOf(grant);
  const reply = await client.call<{ id: string; threadId: string }>({
    api: 'gmail',
    method: 'POST',
    path: '/gmail/v1/users/me/messages/send',
    body: {
      threadId: plans,
      raw: Buffer.from(
        crlf([
          `From: ${email}`,
          'To: Ann <ann@example.org>, Bob <bob@example.org>',
          'Subject: Re: Plans',
          'In-Reply-To: <plans@example.org>',
          'References: <plans@example.org>',
          '',
          'Second',
        ]),
      ).toString('base64url'),
    },
  });
  expect(reply.threadId).toBe(plans);
  messageIds.reply = reply.id;
  lunch = fake.deliver(email, crlf(['From: carol@example.org', `To: ${email}`, 'Subject: Lunch', '', 'Noon?']), [
    'INBOX',
    'STARRED',
  ]).threadId;
});

afterAll(async () => {
  await fake?.close();
});

describe("provider A's threads, live", () => {
  it('aggregates a thread from its messages as Gmail holds them', async () => {
    const thread = await gmailThreads.get(grant, plans);
    expect(thread).toMatchObject({
      id: plans,
      object: 'thread',
      grant_id: grant.id,
      subject: 'Plans',
      message_ids: [messageIds.first, messageIds.reply],
      draft_ids: [],
      unread: true,
      starred: false,
      has_attachments: false,
      has_drafts: false,
    });
    expect(thread.participants.map((p) => p.email)).toEqual(['ann@example.org', email, 'bob@example.org']);
    expect(thread.folders).toEqual(expect.arrayContaining(['INBOX', 'UNREAD', 'SENT']));
    expect(thread.latest_message_sent_date).toBeDefined();
    expect(thread.latest_draft_or_message).toMatchObject({ id: messageIds.reply, object: 'message' });
    await expect(gmailThreads.get(grant, 'ffffffffffffffff')).rejects.toThrow(NotFoundError);
  });

  it('lists threads newest first through Gmail search, paging with its tokens', async () => {
    const all = await gmailThreads.list(grant, {}, 50);
    expect(all.items.map((t) => t.id)).toEqual([lunch, plans]);
    expect((await gmailThreads.list(grant, { starred: true }, 50)).items.map((t) => t.id)).toEqual([lunch]);
    expect((await gmailThreads.list(grant, { to: 'bob@example.org' }, 50)).items.map((t) => t.id)).toEqual([plans]);
    const first = await gmailThreads.list(grant, {}, 1);
    const second = await gmailThreads.list(grant, { page_token: first.nextCursor! }, 1);
    expect([...first.items, ...second.items].map((t) => t.id)).toEqual([lunch, plans]);
    await expect(gmailThreads.list(grant, { latest_message_before: 1 }, 5)).rejects.toThrow(InvalidRequestError);
  });

  it('holds a draft answering the thread as a draft (its Gmail draft ID), not as a message', async () => {
    const client = await googleClientOf(grant);
    const draft = await client.call<{ id: string; message: { id: string } }>({
      api: 'gmail',
      method: 'POST',
      path: '/gmail/v1/users/me/drafts',
      body: {
        message: {
          threadId: plans,
          raw: Buffer.from(
            crlf([
              `From: ${email}`,
              'To: ann@example.org',
              'Subject: Re: Plans',
              'In-Reply-To: <plans@example.org>',
              'References: <plans@example.org>',
              '',
              'Third, unsent',
            ]),
          ).toString('base64url'),
        },
      },
    });
    const thread = await gmailThreads.get(grant, plans);
    expect(thread).toMatchObject({
      message_ids: [messageIds.first, messageIds.reply],
      draft_ids: [draft.id],
      has_drafts: true,
    });
    expect(thread.latest_draft_or_message).toMatchObject({ id: draft.id, object: 'draft' });
    await client.call({ api: 'gmail', method: 'DELETE', path: `/gmail/v1/users/me/drafts/${draft.id}` });
    expect((await gmailThreads.get(grant, plans)).has_drafts).toBe(false);
  });

  it('changes flags and folders of the whole thread, SENT kept', async () => {
    const read = await gmailThreads.update(grant, plans, { unread: false, starred: true });
    expect(read).toMatchObject({ unread: false, starred: true });
    const archived = await gmailThreads.update(grant, plans, { folders: ['STARRED'] });
    expect(archived.folders.sort()).toEqual(['SENT', 'STARRED']);
  });

  it('deletes a thread to the trash', async () => {
    await gmailThreads.delete(grant, lunch);
    expect((await gmailThreads.get(grant, lunch)).folders).toContain('TRASH');
    expect((await gmailThreads.list(grant, {}, 50)).items.map((t) => t.id)).toEqual([plans]);
  });

  it('sent nothing Gmail does not describe, and the fake answered nothing it does not', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});
