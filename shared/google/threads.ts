import type { ListThreadsQuery, UpdateThreadBody } from '#schemas/mail';
import { encodeProviderCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { googleClientOf, GoogleNotFoundError, type GoogleClient } from '#shared/google/client';
import { draftFromGmail, messageFromGmail, type GmailMessage } from '#shared/google/gmail-message';
import { gmailListing } from '#shared/google/gmail-query';
import { gmailPage } from '#shared/google/gmail-listing';
import type { Message, Page, Thread, ThreadsProvider } from '#shared/providers/contract';

/**
 * Provider A's threads, live: Gmail's own threads (users.threads), not ours. A thread's messages
 * labelled DRAFT are its drafts (their draft IDs from users.drafts.list, read once per request and
 * only when a thread holds one); the rest are its messages, oldest first. The aggregate (participants,
 * folders = the union of labels, flags, dates, the newest message or draft) is computed from the
 * thread as Gmail answers it, every time.
 */

const SCOPE = 'gmail-threads';
const FLAG_LABELS = new Set(['UNREAD', 'STARRED']);

interface GmailThread {
  id: string;
  snippet?: string;
  historyId?: string;
  messages?: GmailMessage[];
}

const threadPath = (id: string) => {
  if (!/^[0-9a-zA-Z_-]{1,64}$/.test(id)) throw new NotFoundError(`No thread '${id}' in this grant's mailbox`);
  return `/gmail/v1/users/me/threads/${id}`;
};

/** Draft ID by the ID of the message it holds, for every draft of the mailbox. */
async function draftIds(client: GoogleClient): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  let pageToken: string | undefined;
  do {
    const page = await client.call<{ drafts?: { id: string; message?: { id: string } }[]; nextPageToken?: string }>({
      api: 'gmail',
      path: '/gmail/v1/users/me/drafts',
      query: { maxResults: 500, ...(pageToken ? { pageToken } : {}) },
    });
    for (const d of page.drafts ?? []) if (d.message?.id) found.set(d.message.id, d.id);
    pageToken = page.nextPageToken;
  } while (pageToken);
  return found;
}

const isDraft = (m: GmailMessage) => (m.labelIds ?? []).includes('DRAFT');

function threadOf(grant: GrantRecord, thread: GmailThread, drafts: ReadonlyMap<string, string>): Thread {
  const all = thread.messages ?? [];
  const messages = all.filter((m) => !isDraft(m)).map((m) => messageFromGmail(grant, m));
  const draftMessages = all.filter(isDraft);
  const seen = new Set<string>();
  const participants: Message['from'] = [];
  for (const m of messages)
    for (const p of [...m.from, ...m.to, ...m.cc, ...m.bcc]) {
      const key = p.email.toLowerCase();
      if (!seen.has(key)) {
        seen.add(key);
        participants.push(p);
      }
    }
  const folders = [...new Set(all.flatMap((m) => m.labelIds ?? []))];
  const sent = messages.filter((m) => m.folders.includes('SENT'));
  const received = messages.filter((m) => !m.folders.includes('SENT'));
  const newest = messages.at(-1);
  const newestDraft = draftMessages.at(-1);
  const latestDraft =
    newestDraft && drafts.has(newestDraft.id)
      ? draftFromGmail(grant, drafts.get(newestDraft.id)!, newestDraft)
      : undefined;
  const latest = latestDraft && (!newest || latestDraft.date >= newest.date) ? latestDraft : newest;
  const first = messages[0] ?? (latestDraft as Message | undefined);
  return {
    id: thread.id,
    object: 'thread',
    grant_id: grant.id,
    ...(first?.subject !== undefined ? { subject: first.subject } : {}),
    participants,
    message_ids: messages.map((m) => m.id),
    draft_ids: draftMessages.flatMap((m) => (drafts.has(m.id) ? [drafts.get(m.id)!] : [])),
    folders,
    ...(newest?.snippet !== undefined ? { snippet: newest.snippet } : {}),
    unread: messages.some((m) => m.unread),
    starred: all.some((m) => (m.labelIds ?? []).includes('STARRED')),
    has_attachments: messages.some((m) => m.attachments.length > 0),
    has_drafts: draftMessages.length > 0,
    ...(messages.length ? { earliest_message_date: Math.min(...messages.map((m) => m.date)) } : {}),
    ...(received.length ? { latest_message_received_date: received.at(-1)!.date } : {}),
    ...(sent.length ? { latest_message_sent_date: sent.at(-1)!.date } : {}),
    ...(latest ? { latest_draft_or_message: latest } : {}),
  };
}

async function fetchThread(client: GoogleClient, id: string): Promise<GmailThread> {
  try {
    return await client.call<GmailThread>({
      api: 'gmail',
      path: threadPath(id),
      query: { format: 'full' },
      batch: true,
    });
  } catch (error) {
    if (error instanceof GoogleNotFoundError) throw new NotFoundError(`No thread '${id}' in this grant's mailbox`);
    throw error;
  }
}

const withDrafts = async (client: GoogleClient, threads: readonly GmailThread[]) =>
  threads.some((t) => (t.messages ?? []).some(isDraft)) ? draftIds(client) : new Map<string, string>();

async function list(grant: GrantRecord, query: ListThreadsQuery, limit: number): Promise<Page<Thread>> {
  const { latest_message_before, latest_message_after, earliest_message_date, ...shared } = query;
  // Gmail matches a thread when any of its messages matches: "latest after X" is that; the others are not.
  if (latest_message_before !== undefined || earliest_message_date !== undefined)
    throw new InvalidRequestError(
      `'${latest_message_before !== undefined ? 'latest_message_before' : 'earliest_message_date'}' cannot be answered by Gmail's search on google grants`,
    );
  const listing = gmailListing({
    ...shared,
    ...(latest_message_after !== undefined ? { received_after: latest_message_after } : {}),
  });
  const client = await googleClientOf(grant);
  const page = await gmailPage(client, 'threads', listing, { limit, token: query.page_token, scope: SCOPE }, (id) =>
    fetchThread(client, id),
  );
  const drafts = await withDrafts(client, page.items);
  return {
    items: page.items.map((t) => threadOf(grant, t, drafts)),
    ...(page.next ? { nextCursor: encodeProviderCursor(SCOPE, page.next) } : {}),
  };
}

async function get(grant: GrantRecord, threadId: string): Promise<Thread> {
  const client = await googleClientOf(grant);
  const thread = await fetchThread(client, threadId);
  return threadOf(grant, thread, await withDrafts(client, [thread]));
}

async function update(grant: GrantRecord, threadId: string, body: UpdateThreadBody): Promise<Thread> {
  const client = await googleClientOf(grant);
  const current = await fetchThread(client, threadId);
  const labels = new Set((current.messages ?? []).flatMap((m) => m.labelIds ?? []));
  const add = new Set<string>();
  const remove = new Set<string>();
  if (body.unread !== undefined) (body.unread ? add : remove).add('UNREAD');
  if (body.starred !== undefined) (body.starred ? add : remove).add('STARRED');
  if (body.folders !== undefined) {
    const wanted = new Set(body.folders.filter((f) => !FLAG_LABELS.has(f)));
    for (const label of wanted) if (!labels.has(label)) add.add(label);
    // DRAFT and SENT say what a message is, not where it is filed: a folder change keeps them.
    for (const label of labels)
      if (!FLAG_LABELS.has(label) && label !== 'DRAFT' && label !== 'SENT' && !wanted.has(label)) remove.add(label);
  }
  if (add.size || remove.size)
    await client.call({
      api: 'gmail',
      method: 'POST',
      path: `${threadPath(threadId)}/modify`,
      body: {
        ...(add.size ? { addLabelIds: [...add] } : {}),
        ...(remove.size ? { removeLabelIds: [...remove] } : {}),
      },
    });
  return get(grant, threadId);
}

/** Deleting a thread moves it to the trash, as deleting a message does without hard_delete. */
async function remove(grant: GrantRecord, threadId: string): Promise<void> {
  const client = await googleClientOf(grant);
  try {
    await client.call({ api: 'gmail', method: 'POST', path: `${threadPath(threadId)}/trash` });
  } catch (error) {
    if (error instanceof GoogleNotFoundError)
      throw new NotFoundError(`No thread '${threadId}' in this grant's mailbox`);
    throw error;
  }
}

export const gmailThreads: ThreadsProvider = { list, get, update, delete: remove };
