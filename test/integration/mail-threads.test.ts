import { beforeAll, describe, expect, it } from 'vitest';
import { makeAgentGrant } from '../support/factories';
import { useApi } from '../support/harness';
import { jobsDone } from '../support/outbox-relay';

const { api, otherApi } = useApi();

type Grant = Awaited<ReturnType<typeof makeAgentGrant>>;
interface Message {
  id: string;
  thread_id: string;
  subject: string;
  date: number;
  unread: boolean;
  starred: boolean;
  folders: string[];
  snippet: string;
  [key: string]: unknown;
}
interface Thread {
  id: string;
  subject: string;
  message_ids: string[];
  participants: { email: string; name?: string }[];
  folders: string[];
  unread: boolean;
  starred: boolean;
  has_attachments: boolean;
  latest_message_received_date: number;
  latest_draft_or_message?: Message;
  [key: string]: unknown;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);
/** Matches a Unix time (seconds) taken within a window the test observed. */
const within = (window: { from: number; to: number }) => ({
  asymmetricMatch: (t: unknown) => typeof t === 'number' && t >= window.from && t <= window.to,
  toString: () => `a time within [${window.from}, ${window.to}]`,
});
const unique = () => Math.random().toString(36).slice(2, 8);

async function send(from: Grant, to: Grant[], subject: string, extra: Record<string, unknown> = {}): Promise<Message> {
  const response = await api.post(`/v3/grants/${from.id}/messages/send`, {
    to: to.map((g) => ({ email: g.email })),
    subject,
    body: `<p>${subject}</p>`,
    ...extra,
  });
  expect(response.status, response.text).toBe(200);
  // The recipients' copies are stored by a job committed with the send.
  await jobsDone();
  return response.body.data as Message;
}

/** The one message of `grant`'s inbox with exactly this subject. */
async function received(grant: Grant, subject: string): Promise<Message> {
  const response = await api.get(`/v3/grants/${grant.id}/messages?in=inbox&limit=200`);
  expect(response.status, response.text).toBe(200);
  const found = (response.body.data as Message[]).filter((m) => m.subject === subject);
  expect(found.map((m) => m.subject)).toEqual([subject]);
  return found[0]!;
}

async function getMessage(grant: Grant, id: string): Promise<Message> {
  const response = await api.get(`/v3/grants/${grant.id}/messages/${id}`);
  expect(response.status, response.text).toBe(200);
  return response.body.data as Message;
}

async function getThread(grant: Grant, id: string): Promise<Thread> {
  const response = await api.get(`/v3/grants/${grant.id}/threads/${id}`);
  expect(response.status, response.text).toBe(200);
  return response.body.data as Thread;
}

async function listThreads(grant: Grant, query = ''): Promise<Thread[]> {
  const response = await api.get(`/v3/grants/${grant.id}/threads${query}`);
  expect(response.status, `${query}: ${response.text}`).toBe(200);
  return response.body.data as Thread[];
}

/** Thread IDs matching a query, sorted (for filters whose order is not under test). */
const idsOf = async (grant: Grant, query: string) => (await listThreads(grant, query)).map((t) => t.id).sort();

/**
 * A → B "Lunch …", then B replies to the copy in its inbox. Returns every copy in both mailboxes.
 */
async function conversation() {
  const a = await makeAgentGrant(api);
  const b = await makeAgentGrant(api);
  const subject = `Lunch plans ${unique()}`;
  const t0 = nowSeconds();
  const firstInA = await send(a, [b], subject);
  const t1 = nowSeconds();
  const firstInB = await received(b, subject);
  const replyInB = await send(b, [a], `Re: ${subject}`, {
    reply_to_message_id: firstInB.id,
    body: '<p>Sounds good, see you at noon</p>',
  });
  const t2 = nowSeconds();
  const replyInA = await received(a, `Re: ${subject}`);
  // When the first message and the reply were sent and delivered (Unix seconds).
  const firstAt = { from: t0, to: t1 };
  const replyAt = { from: t1, to: t2 };
  return { a, b, subject, firstInA, firstInB, replyInB, replyInA, firstAt, replyAt };
}

describe('threading', () => {
  it('puts a message and its reply in one thread in each mailbox', async () => {
    // Prepare
    const { a, b, subject, firstInA, firstInB, replyInB, replyInA, firstAt, replyAt } = await conversation();

    // Act
    const threadsOfB = await listThreads(b);
    const threadsOfA = await listThreads(a);

    // Assess: B's mailbox
    expect(threadsOfB).toHaveLength(1);
    const threadOfB = threadsOfB[0]!;
    expect(threadOfB.id).toMatch(/^thr_[0-9a-z]{26}$/);
    expect(firstInB.thread_id).toBe(threadOfB.id);
    expect(replyInB.thread_id).toBe(threadOfB.id);
    const latestInB = await getMessage(b, replyInB.id);
    expect(threadOfB).toEqual({
      id: threadOfB.id,
      object: 'thread',
      grant_id: b.id,
      subject,
      participants: [{ email: a.email }, { email: b.email }],
      message_ids: [firstInB.id, replyInB.id],
      draft_ids: [],
      folders: ['inbox', 'sent'],
      snippet: latestInB.snippet,
      unread: true,
      starred: false,
      has_attachments: false,
      has_drafts: false,
      earliest_message_date: firstInB.date,
      latest_message_received_date: within(firstAt),
      latest_message_sent_date: within(replyAt),
      latest_draft_or_message: latestInB,
    });
    expect(latestInB.snippet).toBe('Sounds good, see you at noon');

    // Assess: A's mailbox has its own thread with its own copies
    expect(threadsOfA).toHaveLength(1);
    const threadOfA = threadsOfA[0]!;
    expect(threadOfA.id).not.toBe(threadOfB.id);
    expect(firstInA.thread_id).toBe(threadOfA.id);
    expect(replyInA.thread_id).toBe(threadOfA.id);
    expect(threadOfA).toMatchObject({
      grant_id: a.id,
      subject,
      participants: [{ email: a.email }, { email: b.email }],
      message_ids: [firstInA.id, replyInA.id],
      folders: ['sent', 'inbox'],
      unread: true,
      earliest_message_date: firstInA.date,
      latest_message_received_date: within(replyAt),
      latest_message_sent_date: within(firstAt),
    });
    expect(threadOfA.latest_draft_or_message).toEqual(await getMessage(a, replyInA.id));
  });

  it('keeps a reply to a reply in the same thread of both mailboxes', async () => {
    // Prepare
    const { a, b, subject, firstInA, firstInB, replyInB, replyInA } = await conversation();

    // Act: A answers B's reply
    const secondReplyInA = await send(a, [b], `Re: Re: ${subject}`, { reply_to_message_id: replyInA.id });
    const secondReplyInB = await received(b, `Re: Re: ${subject}`);

    // Assess
    const [threadOfA] = await listThreads(a);
    const [threadOfB] = await listThreads(b);
    expect(threadOfA!.message_ids).toEqual([firstInA.id, replyInA.id, secondReplyInA.id]);
    expect(threadOfB!.message_ids).toEqual([firstInB.id, replyInB.id, secondReplyInB.id]);
    expect(threadOfB!.subject).toBe(subject);
    expect(threadOfB!.latest_draft_or_message!.id).toBe(secondReplyInB.id);
    expect(secondReplyInB.thread_id).toBe(threadOfB!.id);
  });

  it('starts a new thread for an unrelated message, even with the same subject', async () => {
    // Prepare
    const { a, b, subject, firstInB } = await conversation();

    // Act
    await send(a, [b], `Something else ${unique()}`);
    const sameSubject = await send(a, [b], subject);

    // Assess
    const threads = await listThreads(b);
    expect(threads).toHaveLength(3);
    expect(new Set(threads.map((t) => t.id)).size).toBe(3);
    const original = threads.find((t) => t.id === firstInB.thread_id)!;
    expect(original.message_ids).toHaveLength(2);
    expect(threads.filter((t) => t.id !== original.id).map((t) => t.message_ids.length)).toEqual([1, 1]);
    expect((await listThreads(a)).find((t) => t.id === sameSubject.thread_id)!.message_ids).toEqual([sameSubject.id]);
  });

  it('counts every recipient mailbox of a message to several Agent Accounts as its own thread', async () => {
    const a = await makeAgentGrant(api);
    const b = await makeAgentGrant(api);
    const c = await makeAgentGrant(api);
    const subject = `Team update ${unique()}`;
    await send(a, [b, c], subject);
    for (const grant of [b, c]) {
      const threads = await listThreads(grant);
      expect(threads).toHaveLength(1);
      expect(threads[0]).toMatchObject({
        grant_id: grant.id,
        subject,
        participants: [{ email: a.email }, { email: b.email }, { email: c.email }],
      });
    }
  });
});

describe('drafts in threads', () => {
  it('lists a draft reply in draft_ids and has_drafts, and drops it when the draft is deleted', async () => {
    // Prepare
    const { a, b, firstInB, replyInB } = await conversation();

    // Act
    const draft = await api.post(`/v3/grants/${b.id}/drafts`, {
      to: [{ email: a.email }],
      subject: 'Re: draft',
      body: '<p>Not sent yet</p>',
      reply_to_message_id: replyInB.id,
    });

    // Assess
    expect(draft.status, draft.text).toBe(200);
    expect(draft.body.data.thread_id).toBe(firstInB.thread_id);
    const withDraft = await getThread(b, firstInB.thread_id);
    expect(withDraft).toMatchObject({
      draft_ids: [draft.body.data.id],
      has_drafts: true,
      message_ids: [firstInB.id, replyInB.id],
    });

    // Act: delete the draft
    const deleted = await api.delete(`/v3/grants/${b.id}/drafts/${draft.body.data.id}`);

    // Assess
    expect(deleted.status, deleted.text).toBe(200);
    expect(await getThread(b, firstInB.thread_id)).toMatchObject({ draft_ids: [], has_drafts: false });
  });

  it('shows a draft newer than every message of the thread as latest_draft_or_message', async () => {
    // Prepare
    const { a, b, firstInB } = await conversation();

    // Act
    const draft = await api.post(`/v3/grants/${b.id}/drafts`, {
      to: [{ email: a.email }],
      subject: 'Re: newest',
      body: '<p>Draft body</p>',
      reply_to_message_id: firstInB.id,
    });
    expect(draft.status, draft.text).toBe(200);
    const thread = await getThread(b, firstInB.thread_id);

    // Assess
    expect(thread.draft_ids).toEqual([draft.body.data.id]);
    expect(thread.latest_draft_or_message).toMatchObject({
      id: draft.body.data.id,
      object: 'draft',
      subject: 'Re: newest',
    });
  });
});

describe('GET /v3/grants/{grant_id}/threads', () => {
  it('lists threads by most recent activity and pages through them with limit=1', async () => {
    // Prepare: three threads in B's mailbox, then activity on the oldest
    const a = await makeAgentGrant(api);
    const b = await makeAgentGrant(api);
    const first = await send(a, [b], `First ${unique()}`);
    const second = await send(a, [b], `Second ${unique()}`);
    const third = await send(a, [b], `Third ${unique()}`);
    const firstInB = await received(b, first.subject);
    const secondInB = await received(b, second.subject);
    const thirdInB = await received(b, third.subject);
    await send(b, [a], `Re: ${first.subject}`, { reply_to_message_id: firstInB.id });
    const expected = [firstInB.thread_id, thirdInB.thread_id, secondInB.thread_id];

    // Act
    const all = await listThreads(b);
    const pages: string[][] = [];
    let token: string | undefined;
    do {
      const response = await api.get(
        `/v3/grants/${b.id}/threads?limit=1${token ? `&page_token=${encodeURIComponent(token)}` : ''}`,
      );
      expect(response.status, response.text).toBe(200);
      pages.push(response.body.data.map((t: Thread) => t.id));
      token = response.body.next_cursor;
      expect(pages.length).toBeLessThanOrEqual(5);
    } while (token);

    // Assess
    expect(all.map((t) => t.id)).toEqual(expected);
    expect(pages).toEqual(expected.map((id) => [id]));
  });

  it('pages through a filtered listing with limit=1, none missing and none repeated', async () => {
    const a = await makeAgentGrant(api);
    const b = await makeAgentGrant(api);
    const threadIds: string[] = [];
    for (let i = 0; i < 3; i++)
      threadIds.unshift((await received(b, (await send(a, [b], `Paged ${i} ${unique()}`)).subject)).thread_id);

    const pages: string[][] = [];
    let token: string | undefined;
    do {
      const response = await api.get(
        `/v3/grants/${b.id}/threads?in=inbox&limit=1${token ? `&page_token=${encodeURIComponent(token)}` : ''}`,
      );
      expect(response.status, response.text).toBe(200);
      pages.push(response.body.data.map((t: Thread) => t.id));
      token = response.body.next_cursor;
      expect(pages.length).toBeLessThanOrEqual(5);
    } while (token);

    expect(pages.flat()).toEqual(threadIds);
  });

  it('projects threads with select', async () => {
    const { b, subject } = await conversation();
    const response = await api.get(`/v3/grants/${b.id}/threads?select=subject,unread`);
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toEqual([{ subject, unread: true }]);
  });

  it('answers an empty list for a mailbox without messages', async () => {
    const grant = await makeAgentGrant(api);
    const response = await api.get(`/v3/grants/${grant.id}/threads`);
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toEqual([]);
    expect(response.body).not.toHaveProperty('next_cursor');
  });

  describe('filters', () => {
    // One mailbox (B) with three threads:
    //   report:  A -> B "Quarterly report …" (body mentions pineapple), B replied to A
    //   photos:  C -> B "Holiday photos …" with an attachment, read by B
    //   budget:  A -> B "Budget meeting …", starred by B
    let a: Grant;
    let b: Grant;
    let c: Grant;
    const ids = { report: '', photos: '', budget: '' };
    const sorted = (...names: (keyof typeof ids)[]) => names.map((n) => ids[n]).sort();

    beforeAll(async () => {
      a = await makeAgentGrant(api);
      b = await makeAgentGrant(api);
      c = await makeAgentGrant(api);
      const tag = unique();
      await send(a, [b], `Quarterly report ${tag}`, {
        body: '<p>Numbers attached below, and a pineapple for luck.</p>',
      });
      const report = await received(b, `Quarterly report ${tag}`);
      await send(c, [b], `Holiday photos ${tag}`, {
        attachments: [
          {
            filename: 'beach.txt',
            content_type: 'text/plain',
            content: Buffer.from('sand and sea').toString('base64'),
          },
        ],
      });
      const photos = await received(b, `Holiday photos ${tag}`);
      await send(a, [b], `Budget meeting ${tag}`);
      const budget = await received(b, `Budget meeting ${tag}`);
      await send(b, [a], `Re: Quarterly report ${tag}`, { reply_to_message_id: report.id });
      expect((await api.put(`/v3/grants/${b.id}/messages/${photos.id}`, { unread: false })).status).toBe(200);
      expect((await api.put(`/v3/grants/${b.id}/messages/${budget.id}`, { starred: true })).status).toBe(200);
      Object.assign(ids, { report: report.thread_id, photos: photos.thread_id, budget: budget.thread_id });
    });

    it.each([
      ['', ['budget', 'photos', 'report']],
      ['?subject=quarterly', ['report']],
      ['?subject=Holiday%20photos', ['photos']],
      ['?subject=nonexistentword', []],
      ['?in=inbox', ['budget', 'photos', 'report']],
      ['?in=sent', ['report']],
      ['?in=archive', []],
      ['?unread=true', ['budget', 'report']],
      ['?unread=false', ['photos']],
      ['?starred=true', ['budget']],
      ['?starred=false', ['photos', 'report']],
      ['?has_attachment=true', ['photos']],
      ['?has_attachment=false', ['budget', 'report']],
      ['?search_query_native=pineapple', ['report']],
      ['?search_query_native=is%3Astarred', ['budget']],
      ['?search_query_native=has%3Aattachment', ['photos']],
      ['?search_query_native=-pineapple%20meeting', ['budget']],
      ['?latest_message_after=0', ['budget', 'photos', 'report']],
      ['?latest_message_before=0', []],
      ['?latest_message_after=4102444800', []],
      ['?latest_message_before=4102444800', ['budget', 'photos', 'report']],
    ] as const)('filters %s', async (query, expected) => {
      expect(await idsOf(b, query)).toEqual(sorted(...expected));
    });

    it('filters by address: any_email, from and to', async () => {
      expect(await idsOf(b, `?any_email=${encodeURIComponent(c.email)}`)).toEqual(sorted('photos'));
      expect(await idsOf(b, `?any_email=${encodeURIComponent(`${c.email},${a.email}`)}`)).toEqual(
        sorted('budget', 'photos', 'report'),
      );
      expect(await idsOf(b, `?from=${encodeURIComponent(a.email)}`)).toEqual(sorted('budget', 'report'));
      expect(await idsOf(b, `?from=${encodeURIComponent(a.email.toUpperCase())}`)).toEqual(sorted('budget', 'report'));
      expect(await idsOf(b, `?from=${encodeURIComponent(b.email)}`)).toEqual(sorted('report'));
      expect(await idsOf(b, `?to=${encodeURIComponent(a.email)}`)).toEqual(sorted('report'));
      expect(await idsOf(b, `?search_query_native=${encodeURIComponent(`from:${c.email}`)}`)).toEqual(sorted('photos'));
      expect(await idsOf(b, `?from=${encodeURIComponent(a.email)}&unread=true&starred=false`)).toEqual(
        sorted('report'),
      );
    });

    it("filters by latest_message_after and latest_message_before around each thread's own date", async () => {
      // Prepare
      const threads = await listThreads(b);
      expect(threads).toHaveLength(3);
      const dates = threads.map((t) => t.latest_message_received_date);

      for (const t of threads) {
        const d = t.latest_message_received_date;
        // Act
        const after = await idsOf(b, `?latest_message_after=${d - 1}`);
        const notAfter = await idsOf(b, `?latest_message_after=${d}`);
        const before = await idsOf(b, `?latest_message_before=${d + 1}`);
        const notBefore = await idsOf(b, `?latest_message_before=${d}`);
        // Assess: strict bounds, exactly the threads on the right side
        expect(after).toEqual(
          threads
            .filter((x) => x.latest_message_received_date > d - 1)
            .map((x) => x.id)
            .sort(),
        );
        expect(after).toContain(t.id);
        expect(notAfter).toEqual(
          threads
            .filter((x) => x.latest_message_received_date > d)
            .map((x) => x.id)
            .sort(),
        );
        expect(notAfter).not.toContain(t.id);
        expect(before).toEqual(
          threads
            .filter((x) => x.latest_message_received_date < d + 1)
            .map((x) => x.id)
            .sort(),
        );
        expect(before).toContain(t.id);
        expect(notBefore).not.toContain(t.id);
      }
      expect(await idsOf(b, `?latest_message_after=${Math.max(...dates)}`)).toEqual([]);
      expect(await idsOf(b, `?latest_message_before=${Math.min(...dates)}`)).toEqual([]);
    });

    it.each([
      ['?shared_from=someone%40example.com', 'shared_from'],
      ['?shared_folder_id=fld_1', 'shared_folder_id'],
      ['?in=in%3Ainbox', 'in'],
      ['?in=%5CInbox', 'in'],
      ['?from=not-an-address', 'from'],
      ['?subject=%21', 'subject'],
      ['?search_query_native=is%3Aimportant', 'is:important'],
      ['?unread=perhaps', 'unread'],
      ['?page_token=garbage', 'page_token'],
      ['?select=id,colour', 'colour'],
      ['?color=red', 'color'],
    ])('answers 400 for %s', async (query, named) => {
      const response = await api.get(`/v3/grants/${b.id}/threads${query}`);
      expect(response.status, response.text).toBe(400);
      expect(response.body.error.type).toBe('invalid_request_error');
      expect(response.body.error.message).toContain(named);
    });

    it('answers 404 for in= naming a folder the mailbox does not have', async () => {
      const response = await api.get(`/v3/grants/${b.id}/threads?in=fld_00000000000000000000000000`);
      expect(response.status, response.text).toBe(404);
      expect(response.body.error.type).toBe('not_found_error');
    });

    it('finds a thread by a custom folder it was filed in', async () => {
      // Prepare
      const folder = await api.post(`/v3/grants/${b.id}/folders`, { name: `Filed ${unique()}` });
      expect(folder.status, folder.text).toBe(200);
      const photos = await getThread(b, ids.photos);

      // Act
      const moved = await api.put(`/v3/grants/${b.id}/messages/${photos.message_ids[0]}`, {
        folders: [folder.body.data.id, 'inbox'],
      });

      // Assess
      expect(moved.status, moved.text).toBe(200);
      expect(await idsOf(b, `?in=${folder.body.data.id}`)).toEqual(sorted('photos'));
      expect((await getThread(b, ids.photos)).folders).toEqual([folder.body.data.id, 'inbox']);
    });
  });
});

describe('GET /v3/grants/{grant_id}/threads/{thread_id}', () => {
  it('returns the thread with its latest message', async () => {
    const { b, firstInB, replyInB } = await conversation();
    const [listed] = await listThreads(b);
    const fetched = await getThread(b, firstInB.thread_id);
    expect(fetched).toEqual(listed);
    expect(fetched.latest_draft_or_message!.id).toBe(replyInB.id);
  });

  it('projects with select', async () => {
    const { b, firstInB, replyInB } = await conversation();
    const response = await api.get(`/v3/grants/${b.id}/threads/${firstInB.thread_id}?select=id,message_ids`);
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toEqual({ id: firstInB.thread_id, message_ids: [firstInB.id, replyInB.id] });
  });

  it.each(['thr_00000000000000000000000000', 'not-a-thread', 'msg_00000000000000000000000000'])(
    'answers 404 for unknown thread %s',
    async (id) => {
      const grant = await makeAgentGrant(api);
      const response = await api.get(`/v3/grants/${grant.id}/threads/${id}`);
      expect(response.status, response.text).toBe(404);
      expect(response.body.error.type).toBe('not_found_error');
    },
  );

  it('answers 404 for a thread of another grant or of another application', async () => {
    // Prepare
    const { a, b, firstInB } = await conversation();
    const other = await otherApi('other');
    const foreignGrant = await makeAgentGrant(other);

    // Act
    const responses = {
      otherGrantSameApp: await api.get(`/v3/grants/${a.id}/threads/${firstInB.thread_id}`),
      otherAppOnOwnersGrant: await other.get(`/v3/grants/${b.id}/threads/${firstInB.thread_id}`),
      otherAppOnItsOwnGrant: await other.get(`/v3/grants/${foreignGrant.id}/threads/${firstInB.thread_id}`),
      otherAppList: await other.get(`/v3/grants/${b.id}/threads`),
      otherAppUpdate: await other.put(`/v3/grants/${b.id}/threads/${firstInB.thread_id}`, { starred: true }),
      otherAppDelete: await other.delete(`/v3/grants/${b.id}/threads/${firstInB.thread_id}`),
    };

    // Assess
    for (const [name, response] of Object.entries(responses)) {
      expect({ name, status: response.status, type: response.body?.error?.type }).toEqual({
        name,
        status: 404,
        type: 'not_found_error',
      });
    }
    expect(await getThread(b, firstInB.thread_id)).toMatchObject({ starred: false, folders: ['inbox', 'sent'] });
  });
});

describe('PUT /v3/grants/{grant_id}/threads/{thread_id}', () => {
  it('marks every message of the thread read, then unread', async () => {
    // Prepare
    const a = await makeAgentGrant(api);
    const b = await makeAgentGrant(api);
    const subject = `Read me ${unique()}`;
    await send(a, [b], subject);
    const first = await received(b, subject);
    await send(a, [b], `Re: ${subject}`, { reply_to_message_id: (await listThreads(a))[0]!.message_ids[0] });
    const second = await received(b, `Re: ${subject}`);
    expect(second.thread_id).toBe(first.thread_id);
    const inboxBefore = (await api.get(`/v3/grants/${b.id}/folders/inbox`)).body.data;
    expect([inboxBefore.total_count, inboxBefore.unread_count]).toEqual([2, 2]);

    // Act
    const read = await api.put(`/v3/grants/${b.id}/threads/${first.thread_id}`, { unread: false });

    // Assess
    expect(read.status, read.text).toBe(200);
    expect(read.body.data).toMatchObject({ id: first.thread_id, unread: false, message_ids: [first.id, second.id] });
    expect(read.body.data.latest_draft_or_message).toMatchObject({ id: second.id, unread: false });
    expect((await getMessage(b, first.id)).unread).toBe(false);
    expect((await getMessage(b, second.id)).unread).toBe(false);
    const inboxAfter = (await api.get(`/v3/grants/${b.id}/folders/inbox`)).body.data;
    expect([inboxAfter.total_count, inboxAfter.unread_count]).toEqual([2, 0]);
    expect(await idsOf(b, '?unread=true')).toEqual([]);

    // Act: and back to unread
    const unread = await api.put(`/v3/grants/${b.id}/threads/${first.thread_id}`, { unread: true });

    // Assess
    expect(unread.status, unread.text).toBe(200);
    expect(unread.body.data.unread).toBe(true);
    expect([(await getMessage(b, first.id)).unread, (await getMessage(b, second.id)).unread]).toEqual([true, true]);
    expect((await api.get(`/v3/grants/${b.id}/folders/inbox`)).body.data.unread_count).toBe(2);
  });

  it('stars every message of the thread', async () => {
    // Prepare
    const { b, firstInB, replyInB } = await conversation();

    // Act
    const response = await api.put(`/v3/grants/${b.id}/threads/${firstInB.thread_id}`, { starred: true });

    // Assess
    expect(response.status, response.text).toBe(200);
    expect(response.body.data.starred).toBe(true);
    expect((await getMessage(b, firstInB.id)).starred).toBe(true);
    expect((await getMessage(b, replyInB.id)).starred).toBe(true);
    expect(await idsOf(b, '?starred=true')).toEqual([firstInB.thread_id]);
    const starredMessages = await api.get(`/v3/grants/${b.id}/messages?starred=true`);
    expect(starredMessages.body.data.map((m: Message) => m.id).sort()).toEqual([firstInB.id, replyInB.id].sort());

    // Act: unstar
    const off = await api.put(`/v3/grants/${b.id}/threads/${firstInB.thread_id}`, { starred: false });
    expect(off.status, off.text).toBe(200);
    expect(off.body.data.starred).toBe(false);
    expect((await getMessage(b, replyInB.id)).starred).toBe(false);
  });

  it('moves every message of the thread to archive and updates folder counts', async () => {
    // Prepare
    const { b, firstInB, replyInB } = await conversation();

    // Act
    const response = await api.put(`/v3/grants/${b.id}/threads/${firstInB.thread_id}`, { folders: ['archive'] });

    // Assess
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toMatchObject({
      id: firstInB.thread_id,
      folders: ['archive'],
      message_ids: [firstInB.id, replyInB.id],
    });
    expect((await getMessage(b, firstInB.id)).folders).toEqual(['archive']);
    expect((await getMessage(b, replyInB.id)).folders).toEqual(['archive']);
    expect(await idsOf(b, '?in=archive')).toEqual([firstInB.thread_id]);
    expect(await idsOf(b, '?in=inbox')).toEqual([]);
    const folders = (await api.get(`/v3/grants/${b.id}/folders`)).body.data as {
      id: string;
      total_count: number;
      unread_count: number;
    }[];
    const count = (id: string) => folders.find((f) => f.id === id)!;
    expect([
      count('inbox').total_count,
      count('sent').total_count,
      count('archive').total_count,
      count('archive').unread_count,
    ]).toEqual([0, 0, 2, 1]);
  });

  it('applies several changes at once and projects with select', async () => {
    const { b, firstInB } = await conversation();
    const response = await api.put(
      `/v3/grants/${b.id}/threads/${firstInB.thread_id}?select=id,unread,starred,folders`,
      {
        unread: false,
        starred: true,
        folders: ['spam'],
      },
    );
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toEqual({ id: firstInB.thread_id, unread: false, starred: true, folders: ['spam'] });
  });

  it('answers 404 for an unknown folder and changes no message', async () => {
    const { b, firstInB, replyInB } = await conversation();
    const response = await api.put(`/v3/grants/${b.id}/threads/${firstInB.thread_id}`, {
      folders: ['fld_00000000000000000000000000'],
    });
    expect(response.status, response.text).toBe(404);
    expect(response.body.error.type).toBe('not_found_error');
    expect((await getMessage(b, firstInB.id)).folders).toEqual(['inbox']);
    expect((await getMessage(b, replyInB.id)).folders).toEqual(['sent']);
  });

  it('answers 404 for an unknown thread', async () => {
    const grant = await makeAgentGrant(api);
    const response = await api.put(`/v3/grants/${grant.id}/threads/thr_00000000000000000000000000`, { unread: false });
    expect(response.status, response.text).toBe(404);
    expect(response.body.error.type).toBe('not_found_error');
  });

  it.each([
    [{}, 'at least one field'],
    [{ unread: 'no' }, 'unread'],
    [{ folders: [] }, 'folders'],
    [{ folders: ['inbox', 'inbox'] }, 'folders'],
    [{ subject: 'x' }, 'subject'],
  ])('answers 400 for %j', async (body, named) => {
    const { b, firstInB } = await conversation();
    const response = await api.put(`/v3/grants/${b.id}/threads/${firstInB.thread_id}`, body);
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.type).toBe('invalid_request_error');
    expect(response.body.error.message).toContain(named);
  });
});

describe('DELETE /v3/grants/{grant_id}/threads/{thread_id}', () => {
  it('moves every message of the thread to trash', async () => {
    // Prepare
    const { a, b, firstInB, replyInB, firstInA } = await conversation();

    // Act
    const response = await api.delete(`/v3/grants/${b.id}/threads/${firstInB.thread_id}`);

    // Assess
    expect(response.status, response.text).toBe(200);
    expect(Object.keys(response.body)).toEqual(['request_id']);
    expect((await getMessage(b, firstInB.id)).folders).toEqual(['trash']);
    expect((await getMessage(b, replyInB.id)).folders).toEqual(['trash']);
    const thread = await getThread(b, firstInB.thread_id);
    expect(thread).toMatchObject({ folders: ['trash'], message_ids: [firstInB.id, replyInB.id] });
    expect(await idsOf(b, '?in=trash')).toEqual([firstInB.thread_id]);
    const trash = (await api.get(`/v3/grants/${b.id}/folders/trash`)).body.data;
    expect([trash.total_count, trash.unread_count]).toEqual([2, 1]);
    const inbox = (await api.get(`/v3/grants/${b.id}/folders/inbox`)).body.data;
    expect([inbox.total_count, inbox.unread_count]).toEqual([0, 0]);
    // The other mailbox is untouched.
    expect((await getThread(a, firstInA.thread_id)).folders).toEqual(['sent', 'inbox']);

    // Act: deleting again leaves everything in trash
    const again = await api.delete(`/v3/grants/${b.id}/threads/${firstInB.thread_id}`);
    expect(again.status, again.text).toBe(200);
    expect((await api.get(`/v3/grants/${b.id}/folders/trash`)).body.data.total_count).toBe(2);
  });

  it('answers 404 for an unknown thread', async () => {
    const grant = await makeAgentGrant(api);
    const response = await api.delete(`/v3/grants/${grant.id}/threads/thr_00000000000000000000000000`);
    expect(response.status, response.text).toBe(404);
    expect(response.body.error.type).toBe('not_found_error');
  });
});
