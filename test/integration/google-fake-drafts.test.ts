import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';

/**
 * Drafts in the local Gmail fake, over HTTP with Node's fetch: create, get, list (q, paging),
 * update (a new message ID, the same draft ID), delete and send (delivered to another user of the
 * fake), a draft inside its conversation's thread, what deleting or trashing a draft's message does,
 * the 404s, and at the end no request or answer that broke gmail-v1.json.
 */

const ADA = 'ada@example.test';
const ADA_TOKEN = 'ya29.fake-token-ada';
const BOB = 'bob@example.test';
const BOB_TOKEN = 'ya29.fake-token-bob';
let fake: GoogleFake;
/** The fake's clock, moved by hand so that "newest first" is certain. */
let clock = Date.UTC(2026, 2, 2, 9);
const tick = () => (clock += 60_000);

interface Reply {
  status: number;
  body: any;
}

/** A Gmail call as a client makes it: path under /gmail/v1/users/me, bearer token, JSON body. */
async function gmail(path: string, init: { method?: string; body?: unknown; token?: string } = {}): Promise<Reply> {
  const headers: Record<string, string> = { Authorization: `Bearer ${init.token ?? ADA_TOKEN}` };
  if (init.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${fake.url}/gmail/v1/users/me${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const b64url = (text: string | Buffer) => Buffer.from(text).toString('base64url');
const fromB64 = (text: string) => Buffer.from(text, 'base64url');
const crlf = (lines: string[]) => lines.join('\r\n');

/** A draft's raw message: To (when given), Subject, optional extra headers, a text body. */
const draftRaw = (to: string | undefined, subject: string, text: string, extra: string[] = []) =>
  crlf([...(to ? [`To: ${to}`] : []), `Subject: ${subject}`, ...extra, 'Content-Type: text/plain', '', text]);

async function createDraft(raw: string, threadId?: string): Promise<Reply> {
  tick();
  return gmail('/drafts', { body: { message: { raw: b64url(raw), ...(threadId ? { threadId } : {}) } } });
}

const idsOf = (reply: Reply) => (reply.body.drafts ?? []).map((d: { id: string }) => d.id);

beforeAll(async () => {
  fake = await startGoogleFake({ now: () => clock });
  fake.addUser({ email: ADA, accessToken: ADA_TOKEN });
  fake.addUser({ email: BOB, accessToken: BOB_TOKEN });
});

afterAll(async () => {
  await fake?.close();
});

describe('Drafts', () => {
  it('creates a draft: a Gmail-like draft ID, its message labelled DRAFT only, in its own thread', async () => {
    const raw = draftRaw('carol@example.com', 'Lunch plans', 'Shall we meet at noon?');
    const start = fake.historyIdOf(ADA);
    const created = await createDraft(raw);
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^r-\d+$/),
      message: { id: expect.stringMatching(/^[0-9a-f]{16}$/), threadId: expect.any(String), labelIds: ['DRAFT'] },
    });
    expect(created.body.message.threadId).toBe(created.body.message.id);
    const history = await gmail(`/history?startHistoryId=${start}`);
    expect(history.body.history).toEqual([
      expect.objectContaining({
        messagesAdded: [{ message: { ...created.body.message, labelIds: ['DRAFT'] } }],
      }),
    ]);
    const again = await createDraft(raw);
    expect(again.body.id).not.toBe(created.body.id);
    for (const d of [created, again])
      expect((await gmail(`/drafts/${d.body.id}`, { method: 'DELETE' })).status).toBe(204);
  });

  it('gets a draft in each format', async () => {
    const raw = draftRaw('carol@example.com', 'Formats', 'Body of the draft.');
    const { id, message } = (await createDraft(raw)).body;
    const full = await gmail(`/drafts/${id}`);
    expect(full.status).toBe(200);
    expect(full.body).toMatchObject({
      id,
      message: { id: message.id, threadId: message.threadId, labelIds: ['DRAFT'] },
    });
    expect(full.body.message.payload.headers).toContainEqual({ name: 'Subject', value: 'Formats' });
    expect(fromB64(full.body.message.payload.body.data).toString()).toBe('Body of the draft.');
    expect(full.body.message.snippet).toBe('Body of the draft.');

    const asRaw = await gmail(`/drafts/${id}?format=raw`);
    expect(fromB64(asRaw.body.message.raw).toString()).toBe(raw);
    const minimal = await gmail(`/drafts/${id}?format=minimal`);
    expect(minimal.body.message.payload).toBeUndefined();
    expect(minimal.body.message.raw).toBeUndefined();
    const metadata = await gmail(`/drafts/${id}?format=metadata`);
    expect(metadata.body.message.payload.headers).toContainEqual({ name: 'To', value: 'carol@example.com' });
    // The draft's message is a message like any other.
    expect((await gmail(`/messages/${message.id}?format=minimal`)).body.labelIds).toEqual(['DRAFT']);
    await gmail(`/drafts/${id}`, { method: 'DELETE' });
  });

  it('threads a reply draft with its conversation; threads.get shows it with its DRAFT label', async () => {
    tick();
    const received = fake.deliver(
      ADA,
      crlf([
        'From: Dora <dora@example.com>',
        `To: ${ADA}`,
        'Subject: Budget review',
        'Message-ID: <budget-1@example.com>',
        '',
        'Can you check the budget?',
      ]),
    );
    const reply = draftRaw('dora@example.com', 'Re: Budget review', 'Checked, looks fine.', [
      'In-Reply-To: <budget-1@example.com>',
      'References: <budget-1@example.com>',
    ]);
    const hinted = await createDraft(reply, received.threadId);
    const byReferences = await createDraft(reply);
    const wrongSubject = await createDraft(
      draftRaw('dora@example.com', 'Something else', 'x', ['In-Reply-To: <budget-1@example.com>']),
      received.threadId,
    );
    expect(hinted.body.message.threadId).toBe(received.threadId);
    expect(byReferences.body.message.threadId).toBe(received.threadId);
    expect(wrongSubject.body.message.threadId).toBe(wrongSubject.body.message.id);

    const thread = await gmail(`/threads/${received.threadId}?format=minimal`);
    expect(thread.body.messages.map((m: { id: string; labelIds: string[] }) => [m.id, m.labelIds])).toEqual([
      [received.id, ['INBOX', 'UNREAD']],
      [hinted.body.message.id, ['DRAFT']],
      [byReferences.body.message.id, ['DRAFT']],
    ]);
    expect((await createDraft(reply, 'ffffffffffffffff')).status).toBe(404);
    for (const d of [hinted, byReferences, wrongSubject]) await gmail(`/drafts/${d.body.id}`, { method: 'DELETE' });
  });

  it('lists drafts newest first, searches them with q and pages', async () => {
    const first = await createDraft(draftRaw('erin@example.com', 'Offsite agenda', 'Agenda for the offsite.'));
    const second = await createDraft(draftRaw('frank@example.com', 'Offsite travel', 'Train tickets booked.'));
    const third = await createDraft(draftRaw('erin@example.com', 'Invoice', 'Paid.'));
    const all = await gmail('/drafts');
    expect(all.status).toBe(200);
    expect(all.body.drafts).toEqual([
      { id: third.body.id, message: { id: third.body.message.id, threadId: third.body.message.threadId } },
      { id: second.body.id, message: { id: second.body.message.id, threadId: second.body.message.threadId } },
      { id: first.body.id, message: { id: first.body.message.id, threadId: first.body.message.threadId } },
    ]);
    expect(all.body.resultSizeEstimate).toBe(3);

    const search = async (q: string) => idsOf(await gmail(`/drafts?q=${encodeURIComponent(q)}`));
    expect(await search('offsite')).toEqual([second.body.id, first.body.id]);
    expect(await search('to:erin@example.com')).toEqual([third.body.id, first.body.id]);
    expect(await search('subject:offsite -travel')).toEqual([first.body.id]);
    expect(await search('in:drafts invoice')).toEqual([third.body.id]);
    expect((await gmail('/drafts?q=nothing-like-this')).body).toEqual({ resultSizeEstimate: 0 });
    expect((await gmail('/drafts?q=filename:pdf')).status).toBe(400);
    expect(idsOf(await gmail('/drafts?includeSpamTrash=true'))).toHaveLength(3);
    // The drafts' messages are in messages.list too, under in:drafts.
    const messages = (await gmail('/messages?q=in:drafts')).body.messages.map((m: { id: string }) => m.id);
    expect(messages).toEqual([third.body.message.id, second.body.message.id, first.body.message.id]);

    const page1 = await gmail('/drafts?maxResults=2');
    expect(idsOf(page1)).toEqual([third.body.id, second.body.id]);
    const page2 = await gmail(`/drafts?maxResults=2&pageToken=${page1.body.nextPageToken}`);
    expect(idsOf(page2)).toEqual([first.body.id]);
    expect(page2.body.nextPageToken).toBeUndefined();
    expect((await gmail('/drafts?pageToken=garbage')).status).toBe(400);
    for (const d of [first, second, third]) await gmail(`/drafts/${d.body.id}`, { method: 'DELETE' });
    expect((await gmail('/drafts')).body).toEqual({ resultSizeEstimate: 0 });
  });

  it('updates a draft: same draft ID, a new message ID, the old message gone, history deleted+added', async () => {
    const created = await createDraft(draftRaw('gina@example.com', 'Proposal', 'First version.'));
    const old = created.body.message;
    const start = fake.historyIdOf(ADA);
    tick();
    const updated = await gmail(`/drafts/${created.body.id}`, {
      method: 'PUT',
      body: {
        id: created.body.id,
        message: { raw: b64url(draftRaw('gina@example.com', 'Proposal v2', 'Second version.')) },
      },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toEqual({
      id: created.body.id,
      message: { id: expect.any(String), threadId: expect.any(String), labelIds: ['DRAFT'] },
    });
    expect(updated.body.message.id).not.toBe(old.id);
    expect((await gmail(`/messages/${old.id}`)).status).toBe(404);
    const got = await gmail(`/drafts/${created.body.id}?format=metadata`);
    expect(got.body.message.id).toBe(updated.body.message.id);
    expect(got.body.message.payload.headers).toContainEqual({ name: 'Subject', value: 'Proposal v2' });
    expect(got.body.message.snippet).toBe('Second version.');

    const history = (await gmail(`/history?startHistoryId=${start}`)).body.history;
    expect(history.flatMap((r: any) => [...(r.messagesDeleted ?? []), ...(r.messagesAdded ?? [])])).toEqual([
      { message: { id: old.id, threadId: old.threadId } },
      { message: { ...updated.body.message } },
    ]);
    expect((await gmail('/drafts')).body.drafts).toEqual([
      { id: created.body.id, message: { id: updated.body.message.id, threadId: updated.body.message.threadId } },
    ]);
    // Without an id in the body too (Gmail's own clients send only the message).
    const again = await gmail(`/drafts/${created.body.id}`, {
      method: 'PUT',
      body: { message: { raw: b64url(draftRaw('gina@example.com', 'Proposal v3', 'Third.')) } },
    });
    expect(again.body.id).toBe(created.body.id);
    const mismatch = await gmail(`/drafts/${created.body.id}`, {
      method: 'PUT',
      body: { id: 'r-1', message: { raw: b64url('Subject: x\r\n\r\ny') } },
    });
    expect(mismatch.status).toBe(400);
    const noMessage = await gmail(`/drafts/${created.body.id}`, { method: 'PUT', body: { id: created.body.id } });
    expect(noMessage.status).toBe(400);
    await gmail(`/drafts/${created.body.id}`, { method: 'DELETE' });
  });

  it('deletes a draft with its message; 404 once gone or never there', async () => {
    const { id, message } = (await createDraft(draftRaw('hal@example.com', 'Gone soon', 'Bye.'))).body;
    const start = fake.historyIdOf(ADA);
    expect((await gmail(`/drafts/${id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await gmail(`/drafts/${id}`)).status).toBe(404);
    expect((await gmail(`/messages/${message.id}`)).status).toBe(404);
    const history = (await gmail(`/history?startHistoryId=${start}`)).body.history;
    expect(history).toHaveLength(1);
    expect(history[0].messagesDeleted).toEqual([{ message: { id: message.id, threadId: message.threadId } }]);

    expect((await gmail(`/drafts/${id}`, { method: 'DELETE' })).status).toBe(404);
    expect((await gmail('/drafts/r-123456789')).status).toBe(404);
    const update = await gmail('/drafts/r-123456789', {
      method: 'PUT',
      body: { message: { raw: b64url(draftRaw('hal@example.com', 'x', 'y')) } },
    });
    expect(update.status).toBe(404);
  });

  it('deleting or trashing a draft’s message discards the draft', async () => {
    const deleted = (await createDraft(draftRaw('ivy@example.com', 'Delete me', '1'))).body;
    expect((await gmail(`/messages/${deleted.message.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await gmail(`/drafts/${deleted.id}`)).status).toBe(404);

    const trashed = (await createDraft(draftRaw('ivy@example.com', 'Trash me', '2'))).body;
    const answer = await gmail(`/messages/${trashed.message.id}/trash`, { method: 'POST' });
    expect(answer.status).toBe(200);
    expect(answer.body.id).toBe(trashed.message.id);
    expect((await gmail(`/drafts/${trashed.id}`)).status).toBe(404);
    expect((await gmail(`/messages/${trashed.message.id}`)).status).toBe(404);

    const inThread = (await createDraft(draftRaw('ivy@example.com', 'Thread trash', '3'))).body;
    const threadAnswer = await gmail(`/threads/${inThread.message.threadId}/trash`, { method: 'POST' });
    expect(threadAnswer.status).toBe(200);
    expect(threadAnswer.body.id).toBe(inThread.message.threadId);
    expect((await gmail(`/drafts/${inThread.id}`)).status).toBe(404);
    expect((await gmail('/drafts')).body).toEqual({ resultSizeEstimate: 0 });
  });

  it('sends a draft: SENT, the draft gone, delivered to another user of the fake', async () => {
    const created = await createDraft(draftRaw(BOB, 'Weekly sync', 'Notes attached below.'));
    const draftMessage = created.body.message;
    tick();
    const sent = await gmail('/drafts/send', { body: { id: created.body.id } });
    expect(sent.status).toBe(200);
    expect(sent.body).toEqual({ id: expect.any(String), threadId: expect.any(String), labelIds: ['SENT'] });
    expect((await gmail(`/drafts/${created.body.id}`)).status).toBe(404);
    expect((await gmail(`/messages/${draftMessage.id}`)).status).toBe(404);
    expect((await gmail('/drafts')).body).toEqual({ resultSizeEstimate: 0 });

    const asSent = await gmail(`/messages/${sent.body.id}?format=metadata`);
    expect(asSent.body.labelIds).toEqual(['SENT']);
    expect(asSent.body.payload.headers).toContainEqual({ name: 'From', value: ADA });
    expect(asSent.body.payload.headers).toContainEqual({ name: 'Subject', value: 'Weekly sync' });
    const inbox = await gmail('/messages?q=subject:weekly', { token: BOB_TOKEN });
    expect(inbox.body.messages).toHaveLength(1);
    const delivered = await gmail(`/messages/${inbox.body.messages[0].id}?format=minimal`, { token: BOB_TOKEN });
    expect(delivered.body.labelIds).toEqual(['INBOX', 'UNREAD']);
    expect(delivered.body.snippet).toBe('Notes attached below.');
    expect((await gmail('/drafts/send', { body: { id: created.body.id } })).status).toBe(404);
  });

  it('sends a reply draft into its thread', async () => {
    tick();
    const received = fake.deliver(
      ADA,
      crlf([
        'From: Jon <jon@example.com>',
        `To: ${ADA}`,
        'Subject: Contract',
        'Message-ID: <contract-1@example.com>',
        '',
        'Sign?',
      ]),
    );
    const reply = draftRaw('jon@example.com', 'Re: Contract', 'Signed.', [
      'In-Reply-To: <contract-1@example.com>',
      'References: <contract-1@example.com>',
    ]);
    const created = await createDraft(reply, received.threadId);
    const sent = await gmail('/drafts/send', { body: { id: created.body.id } });
    expect(sent.body.threadId).toBe(received.threadId);
    const thread = await gmail(`/threads/${received.threadId}?format=minimal`);
    expect(thread.body.messages.map((m: { id: string; labelIds: string[] }) => [m.id, m.labelIds])).toEqual([
      [received.id, ['INBOX', 'UNREAD']],
      [sent.body.id, ['SENT']],
    ]);
  });

  it('refuses to send a draft without a recipient (400, the draft kept) or an unknown draft (404)', async () => {
    const created = await createDraft(draftRaw(undefined, 'No one', 'To nobody.'));
    const refused = await gmail('/drafts/send', { body: { id: created.body.id } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.errors[0].reason).toBe('invalidArgument');
    expect((await gmail(`/drafts/${created.body.id}`)).status).toBe(200);
    expect((await gmail('/drafts/send', { body: { id: 'r-42' } })).status).toBe(404);
    expect((await gmail('/drafts', { body: { message: {} } })).status).toBe(400);
    await gmail(`/drafts/${created.body.id}`, { method: 'DELETE' });
  });
});

describe('The whole run', () => {
  it('sent no request that broke gmail-v1.json and got no answer that did', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});
