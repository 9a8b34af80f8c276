import { isSystemFolder, requireFolder, requireFolders } from '#shared/mailbox/folders';
import { threadCandidateFilter } from '#shared/mailbox/filters';
import { changeMessage, trashMessage } from '#shared/mailbox/message-ops';
import { findMessages } from '#shared/mailbox/query';
import { refreshThreadNow, threadMessageIds } from '#shared/mailbox/thread-refresh';
import { messageContentPlan, viewOf } from '#shared/mailbox/store';
import type { ThreadRecord } from '#shared/mailbox/types';
import { threadView } from '#shared/mailbox/views';
import { decodeBeforeCursor, encodeBeforeCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { getDrafts } from '#shared/db/drafts';
import { getMessages } from '#shared/db/messages';
import * as threads from '#shared/db/threads';
import { NotFoundError } from '#shared/errors';
import { countWithinBudget, jsonBytes } from '#shared/answer-limits';
import { idTime, parseId, type ThreadId } from '#shared/ids';
import { draftContentPlan, draftObject } from '#shared/mailbox/lookup';
import type { ListThreadsQuery, UpdateThreadBody } from '#schemas/mail';

/** Threads of an Agent Account: conversations grouped by reply headers and reply_to_message_id. */
const THREAD_BUDGET = 1000;

export async function requireThread(grant: GrantRecord, threadId: string): Promise<ThreadRecord> {
  const id = parseId('thread', threadId);
  const thread = id ? await threads.getThread(grant.id, id) : undefined;
  if (!thread) throw new NotFoundError(`Thread '${threadId}' not found`);
  return thread;
}

/**
 * Thread views with `latest_draft_or_message`: the newest of the latest message and the thread's
 * drafts. Views are built for as many threads, in order, as fit one answer (planned from recorded
 * sizes, then measured); `count` says how many that was (at least one).
 */
async function withLatest(grant: GrantRecord, list: ThreadRecord[]) {
  // The threads whose newest entry is a draft, and their latest messages, each in one batch read.
  const newerDraft = (t: ThreadRecord) => {
    const newest = [...t.draft_ids].sort().at(-1);
    return newest && idTime(newest) > idTime(t.latest_message_id) ? newest : undefined;
  };
  const [messages, drafts] = await Promise.all([
    getMessages(
      grant.id,
      list.map((t) => t.latest_message_id),
    ),
    getDrafts(
      grant.id,
      list.flatMap((t) => newerDraft(t) ?? []),
    ),
  ]);
  const latest = new Map(messages.map((m) => [m.id, m]));
  const draftsById = new Map(drafts.map((d) => [d.id, d]));
  const entries = list.map((t) => {
    const newest = newerDraft(t);
    const draft = newest ? draftsById.get(newest) : undefined;
    if (draft) return { t, draft, plan: draftContentPlan(draft) };
    const message = latest.get(t.latest_message_id);
    return { t, message, plan: message ? messageContentPlan(message) : undefined };
  });
  const base = (t: ThreadRecord) => jsonBytes(threadView(t));
  const planned = entries.slice(0, countWithinBudget(entries.map((e) => base(e.t) + (e.plan?.estimate ?? 0))));
  const views = await Promise.all(
    planned.map(async ({ t, draft, message, plan }) => {
      if (draft) return threadView(t, await draftObject(draft, plan));
      return threadView(t, message ? await viewOf(message, 'standard', plan) : undefined);
    }),
  );
  return views.slice(0, countWithinBudget(views.map(jsonBytes)));
}

/** Filters decided on the thread aggregate. */
function threadMatches(t: ThreadRecord, q: ListThreadsQuery): boolean {
  if (q.unread !== undefined && t.unread !== q.unread) return false;
  if (q.starred !== undefined && t.starred !== q.starred) return false;
  if (q.has_attachment !== undefined && t.has_attachments !== q.has_attachment) return false;
  if (q.latest_message_before !== undefined && !(t.latest_message_received_date < q.latest_message_before))
    return false;
  if (q.latest_message_after !== undefined && !(t.latest_message_received_date > q.latest_message_after)) return false;
  if (q.earliest_message_date !== undefined && t.earliest_message_date < q.earliest_message_date) return false;
  return true;
}

export async function listThreads(grant: GrantRecord, query: ListThreadsQuery, limit: number) {
  const filter = threadCandidateFilter(query);
  if (filter?.folder !== undefined && !isSystemFolder(filter.folder)) await requireFolder(grant.id, filter.folder);
  const scope = filter ? 'threads-by-message' : 'threads';
  let before = query.page_token ? decodeBeforeCursor(query.page_token, scope, 'message') : undefined;
  const found: ThreadRecord[] = [];
  const seen = new Set<string>();
  // Where each thread entered the page: the sort key to resume below once it was shown.
  const foundAt = new Map<string, string>();
  let evaluated = 0;
  let exhausted = false;
  while (found.length <= limit && evaluated < THREAD_BUDGET) {
    let threadIds: ThreadId[] = [];
    let cursor: string | undefined;
    let more: boolean;
    if (filter) {
      const page = await findMessages(grant.id, filter, { limit: 50, before, budget: 200, idsOnly: true });
      evaluated += page.evaluated;
      threadIds = page.records.map((m) => m.thread_id);
      for (const m of page.records) if (!foundAt.has(m.thread_id)) foundAt.set(m.thread_id, m.id);
      cursor = page.next ?? page.records.at(-1)?.id;
      more = page.next !== undefined;
    } else {
      const page = await threads.listThreadEntries(grant.id, before, 50);
      evaluated += page.entries.length;
      threadIds = page.entries.map((e) => e.threadId);
      for (const e of page.entries) if (!foundAt.has(e.threadId)) foundAt.set(e.threadId, e.latest);
      cursor = page.entries.at(-1)?.latest;
      more = page.more;
    }
    const fresh = threadIds.filter((id) => !seen.has(id) && seen.add(id));
    const records = await threads.getThreads(grant.id, fresh);
    found.push(...records.filter((t) => threadMatches(t, query)));
    if (!more || cursor === undefined) {
      exhausted = true;
      break;
    }
    before = cursor;
  }
  const page = found.slice(0, limit);
  // Fewer threads than the page holds when their latest entries would outgrow one answer.
  const items = await withLatest(grant, page);
  let next: string | undefined;
  // With message-level filters a thread whose older messages also match may show again on a later
  // page: pages follow matching messages, newest first.
  if (found.length > limit || items.length < page.length) next = foundAt.get(items.at(-1)!.id);
  else if (!exhausted) next = before;
  return { items, nextCursor: next ? encodeBeforeCursor(scope, next) : undefined };
}

export async function getThread(grant: GrantRecord, threadId: string) {
  return (await withLatest(grant, [await requireThread(grant, threadId)]))[0]!;
}

/** Applies read/star/folder changes to every message of the thread, then recomputes the thread once. */
export async function updateThread(grant: GrantRecord, threadId: string, body: UpdateThreadBody) {
  const thread = await requireThread(grant, threadId);
  if (body.folders) await requireFolders(grant.id, body.folders);
  try {
    // Its messages from the postings: the aggregate may not list a message its job has not added yet.
    for (const message of await getMessages(grant.id, await threadMessageIds(grant.id, thread.id))) {
      await changeMessage(grant, message, body as { unread?: boolean; starred?: boolean; folders?: string[] }, {
        threadBatch: true,
      });
    }
  } catch (error) {
    // Messages changed before the failure are reflected in the thread all the same.
    await refreshThreadNow(grant.id, thread.id);
    throw error;
  }
  const refreshed = await refreshThreadNow(grant.id, thread.id);
  if (!refreshed) throw new NotFoundError(`Thread '${threadId}' not found`);
  return (await withLatest(grant, [refreshed]))[0]!;
}

/** Moves every message of the thread to Trash, then recomputes the thread once. */
export async function deleteThread(grant: GrantRecord, threadId: string): Promise<void> {
  const thread = await requireThread(grant, threadId);
  try {
    for (const message of await getMessages(grant.id, await threadMessageIds(grant.id, thread.id)))
      await trashMessage(grant, message, { threadBatch: true });
  } finally {
    await refreshThreadNow(grant.id, thread.id);
  }
}
