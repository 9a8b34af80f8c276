import { attachmentsOf, isMessageListing, messageListingPage, messagePath } from '#shared/microsoft/reads';
import type { ListMessagesQuery, ListThreadsQuery, UpdateThreadBody } from '#schemas/mail';
import { decodeProviderCursor, encodeProviderCursor, invalidPageToken } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { deleteLiveMetadata, liveMetadataOf, setLiveMetadata } from '#shared/db/live-metadata';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import type { GrantId } from '#shared/ids';
import { INDEXED_METADATA_KEYS } from '#shared/mailbox/postings';
import { MAX_BATCH } from '#shared/microsoft/batch';
import { graphClientOf, GraphNotFoundError, type GraphClient } from '#shared/microsoft/client';
import {
  GRAPH_MESSAGE_SELECT,
  mayHoldAttachments,
  messageFromGraph,
  type GraphAttachment,
  type GraphMessage,
} from '#shared/microsoft/graph-message';
import { graphListing, type GraphListing } from '#shared/microsoft/graph-query';
import { folderIdOf } from '#shared/microsoft/messages';
import { inPool } from '#shared/pool';
import type { Draft, Message, Page, Thread, ThreadsProvider } from '#shared/providers/contract';

/**
 * Provider B's threads, live: a thread is an Outlook conversation (a message's `conversationId`, its
 * `thread_id`), read through Graph every time; nothing is stored. Graph has no listing of a user's
 * conversations, so a thread listing is a message listing (our filters as Graph's `$filter` or
 * `$search`, through graph-query.ts), its messages' conversations read whole (`$filter=conversationId
 * eq …`, all in `$batch`es), then each thread's newest message or draft in full. A thread matches when
 * one of its messages does, as on Gmail; the thread-level filters (`unread`, `starred`,
 * `has_attachment`, `latest_message_before`/`_after`, `earliest_message_date`) narrow Graph's listing
 * where a `$filter` can, and are then checked exactly on the thread as read. Pages follow the
 * listed messages, newest first, so a page may hold fewer threads than `limit` (several of its
 * messages in one conversation, or threads the exact check left out) and still have a next page.
 * Without filters a thread shows only at its newest message, so on one page only; with filters a
 * thread whose older messages also match may show again later, as in the stored mailbox.
 *
 * The conversation's drafts (`isDraft`) are its drafts, their IDs Graph's; the rest are its messages,
 * oldest first. An update changes every message (never a draft) with `$batch`ed PATCHes and moves
 * (Outlook keeps a message in one folder: `folders` names exactly one; a move gives a message a new
 * ID, and our metadata moves with it); a delete moves every message and draft to Deleted Items.
 */

const SCOPE = 'graph-threads';
/** Listed and read messages: what a Message needs, and whether it is a draft. */
const LISTING_SELECT = [...GRAPH_MESSAGE_SELECT, 'isDraft'];
/** A conversation's members: what the thread's aggregate needs, without bodies and headers. */
const MEMBER_SELECT = [
  ...GRAPH_MESSAGE_SELECT.filter((p) => p !== 'body' && p !== 'internetMessageHeaders'),
  'isDraft',
];
/** A conversation's messages asked for per page (Graph's page size is 10 unless asked). */
const MEMBER_PAGE = 250;
/** Conversations (or newest messages) read at once: they travel as one batch. */
const READ_CONCURRENCY = MAX_BATCH;

/** The thread-level filters, checked on each thread as read (kept in the page token for the next pages). */
interface ThreadChecks {
  unread?: boolean;
  starred?: boolean;
  has_attachment?: boolean;
  latest_message_before?: number;
  latest_message_after?: number;
  earliest_message_date?: number;
  /**
   * The listing has no filter: a thread is shown at its newest message (of the mailbox, or of the
   * listed folder) only, so on one page only.
   */
  anchor?: 'mailbox' | 'folder';
}

const CHECK_FLAGS = ['unread', 'starred', 'has_attachment'] as const;
const CHECK_DATES = ['latest_message_before', 'latest_message_after', 'earliest_message_date'] as const;
/** Filters only Graph's `$search` says: a listing with one of them cannot narrow by the others. */
const SEARCHED = ['subject', 'to', 'cc', 'bcc', 'any_email', 'search_query_native'] as const;

const notFound = (id: string) => new NotFoundError(`No thread '${id}' in this grant's mailbox`);

/** Conversation IDs are base64; anything else names no thread (and must not reach a query). */
function checkId(id: string): string {
  if (!/^[A-Za-z0-9_=+/-]{1,512}$/.test(id)) throw notFound(id);
  return id;
}

/** Epoch seconds of an ISO time, or -Infinity: what orders a conversation's messages. */
const timeOf = (iso: string | null | undefined) => {
  const ms = iso ? Date.parse(iso) : NaN;
  return Number.isNaN(ms) ? -Infinity : ms;
};
const receivedOf = (m: GraphMessage) => timeOf(m.receivedDateTime ?? m.sentDateTime ?? m.createdDateTime);
const oldestFirst = (a: GraphMessage, b: GraphMessage) =>
  receivedOf(a) - receivedOf(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The message listing that finds a thread query's threads, and the checks left for each thread. The
 * thread-level filters narrow the listing as "one of its messages" conditions, which every matching
 * thread meets (its newest message is received after `latest_message_after` and on or after
 * `earliest_message_date`; all of it before `latest_message_before`), except beside a `$search`,
 * which takes no `$filter`: there only the exact checks apply.
 */
function threadListing(query: ListThreadsQuery): { listing: GraphListing; checks: ThreadChecks } {
  const checks: ThreadChecks = {};
  for (const name of CHECK_FLAGS) if (query[name] !== undefined) checks[name] = query[name];
  for (const name of CHECK_DATES) if (query[name] !== undefined) checks[name] = query[name];
  const messageQuery: ListMessagesQuery = {
    ...(query.in !== undefined ? { in: query.in } : {}),
    ...(query.from !== undefined ? { from: query.from } : {}),
  };
  for (const name of SEARCHED) if (query[name] !== undefined) messageQuery[name] = query[name];
  if (!SEARCHED.some((name) => query[name] !== undefined)) {
    for (const name of CHECK_FLAGS) if (query[name] !== undefined) messageQuery[name] = query[name];
    const after = Math.max(
      query.latest_message_after ?? -Infinity,
      query.earliest_message_date !== undefined ? query.earliest_message_date - 1 : -Infinity,
    );
    if (after !== -Infinity) messageQuery.received_after = after;
    if (query.latest_message_before !== undefined) messageQuery.received_before = query.latest_message_before;
  }
  const listing = graphListing(messageQuery);
  if (listing.filter === undefined && listing.search === undefined)
    checks.anchor = listing.folder !== undefined ? 'folder' : 'mailbox';
  return { listing, checks };
}

const invalidToken = invalidPageToken;

/** Our page token: Graph's nextLink of the message listing, and the checks of its threads. */
const tokenOf = (link: string, checks: ThreadChecks) => encodeProviderCursor(SCOPE, JSON.stringify({ link, checks }));

const isBoolean = (v: unknown) => v === undefined || typeof v === 'boolean';
const isSeconds = (v: unknown) => v === undefined || Number.isInteger(v);

/**
 * What a page token of ours holds, if it continues a thread listing of this grant's mailbox: a token
 * is not signed, and must never make us read anything else (the client follows a link only on its
 * own API base).
 */
function continuation(client: GraphClient, pageToken: string): { link: string; checks: ThreadChecks } {
  let held: { link?: unknown; checks?: Record<string, unknown> };
  try {
    held = JSON.parse(decodeProviderCursor(pageToken, SCOPE)) as typeof held;
  } catch (error) {
    if (error instanceof InvalidRequestError) throw error;
    throw invalidToken();
  }
  const checks = held.checks;
  if (
    typeof checks !== 'object' ||
    checks === null ||
    !CHECK_FLAGS.every((name) => isBoolean(checks[name])) ||
    !CHECK_DATES.every((name) => isSeconds(checks[name])) ||
    ![undefined, 'mailbox', 'folder'].includes(checks.anchor as string | undefined) ||
    !isMessageListing(client, String(held.link))
  )
    throw invalidToken();
  return { link: String(held.link), checks: checks as ThreadChecks };
}

/** One page of the message listing: the first (the query as Graph's) or the one a token continues. */
const listingPage = (client: GraphClient, from: GraphListing | string, limit: number) =>
  messageListingPage(client, from, limit, LISTING_SELECT);

/** Every message and draft of a conversation (without bodies), oldest first; none when it has none. */
async function conversation(client: GraphClient, id: string): Promise<GraphMessage[]> {
  const found: GraphMessage[] = [];
  for await (const page of client.pages<GraphMessage>({
    path: `${client.mailbox}/messages`,
    query: { $filter: `conversationId eq '${id.replace(/'/g, "''")}'`, $select: MEMBER_SELECT, $top: MEMBER_PAGE },
    batch: true,
  }))
    found.push(...page.value);
  return found.sort(oldestFirst);
}

/** The Sent Items folder's ID: its messages are the ones the grant sent. */
const sentFolderOf = (client: GraphClient) => folderIdOf(client, 'sentitems');

/** The conversation's newest message, or its newest draft when that is as new or newer. */
function latestOf(members: readonly GraphMessage[]): GraphMessage | undefined {
  const newest = members.filter((m) => !m.isDraft).at(-1);
  const newestDraft = members.filter((m) => m.isDraft).at(-1);
  if (!newestDraft) return newest;
  return !newest || receivedOf(newestDraft) >= receivedOf(newest) ? newestDraft : newest;
}

/**
 * The newest message or draft of each conversation in full (its body, its attachments): the listed
 * copy when the listing has it, else read, its attachments beside it when Graph says it has some
 * (after it when only its body shows it holds inline ones). One gone since is answered as its member.
 */
async function newestInFull(
  client: GraphClient,
  grant: GrantRecord,
  latest: readonly GraphMessage[],
  listed: ReadonlyMap<string, GraphMessage>,
): Promise<Map<string, Message | Draft>> {
  const views = new Map<string, Message | Draft>();
  await inPool(latest, READ_CONCURRENCY, async (member) => {
    let full = listed.get(member.id);
    let attachments: GraphAttachment[] | undefined;
    try {
      if (!full)
        [full, attachments] = await Promise.all([
          client.call<GraphMessage>({
            path: messagePath(client, member.id),
            query: { $select: LISTING_SELECT },
            batch: true,
          }),
          member.hasAttachments === true ? attachmentsOf(client, member.id) : undefined,
        ]);
      if (attachments === undefined && mayHoldAttachments(full)) attachments = await attachmentsOf(client, member.id);
    } catch (error) {
      if (!(error instanceof GraphNotFoundError)) throw error;
      full = member;
    }
    const view = messageFromGraph(grant, full, { attachments: attachments ?? [] });
    views.set(member.id, member.isDraft ? { ...view, object: 'draft' } : view);
  });
  return views;
}

/** The thread of a conversation's members (oldest first), its newest entry as given. */
function threadOf(
  grant: GrantRecord,
  id: string,
  members: readonly GraphMessage[],
  sentFolder: string,
  latest: Message | Draft | undefined,
): Thread {
  const messages = members.filter((m) => !m.isDraft);
  const drafts = members.filter((m) => m.isDraft);
  const views = messages.map((m) => messageFromGraph(grant, m));
  const seen = new Set<string>();
  const participants: Message['from'] = [];
  for (const m of views)
    for (const p of [...m.from, ...m.to, ...m.cc, ...m.bcc]) {
      const key = p.email.toLowerCase();
      if (!seen.has(key)) {
        seen.add(key);
        participants.push(p);
      }
    }
  const sent = messages.filter((m) => m.parentFolderId === sentFolder).map((m) => messageFromGraph(grant, m));
  const received = messages.filter((m) => m.parentFolderId !== sentFolder).map((m) => messageFromGraph(grant, m));
  const first = members[0];
  const newest = views.at(-1);
  return {
    id,
    object: 'thread',
    grant_id: grant.id,
    ...(first?.subject != null ? { subject: first.subject } : {}),
    participants,
    message_ids: messages.map((m) => m.id),
    draft_ids: drafts.map((m) => m.id),
    folders: [...new Set(members.flatMap((m) => (m.parentFolderId ? [m.parentFolderId] : [])))],
    ...(newest?.snippet !== undefined ? { snippet: newest.snippet } : {}),
    unread: views.some((m) => m.unread),
    starred: members.some((m) => m.flag?.flagStatus === 'flagged'),
    has_attachments: messages.some((m) => m.hasAttachments === true),
    has_drafts: drafts.length > 0,
    ...(views.length ? { earliest_message_date: Math.min(...views.map((m) => m.date)) } : {}),
    ...(received.length ? { latest_message_received_date: Math.max(...received.map((m) => m.date)) } : {}),
    ...(sent.length ? { latest_message_sent_date: Math.max(...sent.map((m) => m.date)) } : {}),
    ...(latest ? { latest_draft_or_message: latest } : {}),
  };
}

/** Whether a thread passes the thread-level filters (a date filter needs the date it compares). */
function passes(thread: Thread, checks: ThreadChecks): boolean {
  if (checks.unread !== undefined && thread.unread !== checks.unread) return false;
  if (checks.starred !== undefined && thread.starred !== checks.starred) return false;
  if (checks.has_attachment !== undefined && thread.has_attachments !== checks.has_attachment) return false;
  const latest = thread.latest_message_received_date;
  if (checks.latest_message_before !== undefined && !(latest !== undefined && latest < checks.latest_message_before))
    return false;
  if (checks.latest_message_after !== undefined && !(latest !== undefined && latest > checks.latest_message_after))
    return false;
  const earliest = thread.earliest_message_date;
  if (
    checks.earliest_message_date !== undefined &&
    !(earliest !== undefined && earliest >= checks.earliest_message_date)
  )
    return false;
  return true;
}

/** Threads of conversations read (IDs with their members), each with its newest entry in full. */
async function threadsOf(
  client: GraphClient,
  grant: GrantRecord,
  conversations: readonly { id: string; members: GraphMessage[] }[],
  sentFolder: string,
  listed: ReadonlyMap<string, GraphMessage> = new Map(),
): Promise<Thread[]> {
  const latest = conversations.flatMap((c) => latestOf(c.members) ?? []);
  const views = await newestInFull(client, grant, latest, listed);
  return conversations.map((c) => {
    const newest = latestOf(c.members);
    return threadOf(grant, c.id, c.members, sentFolder, newest ? views.get(newest.id) : undefined);
  });
}

/** Whether a listed message is where its thread shows: no member of the anchor's scope is newer. */
function shownHere(listed: GraphMessage, members: readonly GraphMessage[], anchor: ThreadChecks['anchor']): boolean {
  if (anchor === undefined) return true;
  const inScope = anchor === 'folder' ? members.filter((m) => m.parentFolderId === listed.parentFolderId) : members;
  return !inScope.some((m) => receivedOf(m) > receivedOf(listed));
}

async function list(grant: GrantRecord, query: ListThreadsQuery, limit: number): Promise<Page<Thread>> {
  // A token carries its own listing and checks; the first page's filters are refused before Graph is asked.
  const first = query.page_token === undefined ? threadListing(query) : undefined;
  const client = await graphClientOf(grant);
  const { link, checks } = first ? { link: undefined, checks: first.checks } : continuation(client, query.page_token!);
  const page = await listingPage(client, first?.listing ?? link!, limit);
  // Each conversation once, where it first shows on the page (the newest first).
  const where = new Map<string, GraphMessage>();
  for (const m of page.value) if (m.conversationId && !where.has(m.conversationId)) where.set(m.conversationId, m);
  const read = new Map<string, GraphMessage[]>();
  const [sentFolder] = await Promise.all([
    sentFolderOf(client),
    inPool([...where.keys()], READ_CONCURRENCY, async (id) => {
      read.set(id, await conversation(client, id));
    }),
  ]);
  const conversations = [...where].flatMap(([id, listed]) => {
    const members = read.get(id) ?? [];
    // Gone since it was listed, or shown on an earlier page at a newer message.
    return members.length && shownHere(listed, members, checks.anchor) ? [{ id, members }] : [];
  });
  const listed = new Map(page.value.map((m) => [m.id, m]));
  const threads = await threadsOf(client, grant, conversations, sentFolder, listed);
  return {
    items: threads.filter((t) => passes(t, checks)),
    ...(page.nextLink ? { nextCursor: tokenOf(page.nextLink, checks) } : {}),
  };
}

/** A conversation's members, or a 404 when it has none. */
async function requireConversation(client: GraphClient, id: string): Promise<GraphMessage[]> {
  const members = await conversation(client, id);
  if (!members.length) throw notFound(id);
  return members;
}

async function get(grant: GrantRecord, threadId: string): Promise<Thread> {
  const id = checkId(threadId);
  const client = await graphClientOf(grant);
  const [members, sentFolder] = await Promise.all([requireConversation(client, id), sentFolderOf(client)]);
  return (await threadsOf(client, grant, [{ id, members }], sentFolder))[0]!;
}

/** Our metadata of messages Graph gave new IDs (moves): kept under the new IDs, gone from the old ones. */
async function carryMetadata(grant: GrantRecord, moved: ReadonlyMap<string, string>): Promise<void> {
  const grantId = grant.id as GrantId;
  const stored = await liveMetadataOf(grantId, [...moved.keys()]);
  await inPool([...stored], READ_CONCURRENCY, async ([from, metadata]) => {
    await setLiveMetadata(grantId, moved.get(from)!, metadata, INDEXED_METADATA_KEYS);
    await deleteLiveMetadata(grantId, from, INDEXED_METADATA_KEYS);
  });
}

/**
 * Moves members to a folder, all in `$batch`es (each failed item retried by the client); our metadata
 * moves with them. Answers the members as they are after (moved ones under their new IDs, ones gone
 * since left out) and the first failure that is not "gone", if any, to throw once all is done.
 */
async function moveAll(
  client: GraphClient,
  grant: GrantRecord,
  members: GraphMessage[],
  destination: string,
): Promise<{ members: GraphMessage[]; failure?: unknown }> {
  const moving = members.filter((m) => m.parentFolderId !== destination);
  if (!moving.length) return { members };
  const results = await client.all<GraphMessage>(
    moving.map((m) => ({
      method: 'POST',
      path: `${messagePath(client, m.id)}/move`,
      body: { destinationId: destination },
    })),
  );
  const after = new Map<string, GraphMessage | undefined>();
  const moved = new Map<string, string>();
  let failure: unknown;
  results.forEach((result, i) => {
    const m = moving[i]!;
    if (result.status === 'fulfilled') {
      after.set(m.id, { ...m, id: result.value.id, parentFolderId: result.value.parentFolderId ?? destination });
      if (result.value.id !== m.id) moved.set(m.id, result.value.id);
    } else if (result.reason instanceof GraphNotFoundError) after.set(m.id, undefined);
    else failure ??= result.reason;
  });
  await carryMetadata(grant, moved);
  return {
    members: members.flatMap((m) => (after.has(m.id) ? (after.get(m.id) ?? []) : [m])),
    ...(failure !== undefined ? { failure } : {}),
  };
}

async function update(grant: GrantRecord, threadId: string, body: UpdateThreadBody): Promise<Thread> {
  const id = checkId(threadId);
  if (body.folders !== undefined && body.folders.length !== 1)
    throw new InvalidRequestError(
      `A message of a microsoft grant is in exactly one folder (Outlook has no labels): 'folders' must name one for the thread's messages, not ${body.folders.length}`,
    );
  const client = await graphClientOf(grant);
  // The conversation, the folder its messages are to go to and Sent Items, read at once.
  const [read, destination, sentFolder] = await Promise.all([
    requireConversation(client, id),
    body.folders !== undefined ? folderIdOf(client, body.folders[0]!) : undefined,
    sentFolderOf(client),
  ]);
  let members = read;
  let failure: unknown;
  // The flags of every message (drafts keep theirs), each PATCH only where something changes.
  const patches = members.flatMap((m) => {
    if (m.isDraft) return [];
    const changes = {
      ...(body.unread !== undefined && body.unread !== (m.isRead === false) ? { isRead: !body.unread } : {}),
      ...(body.starred !== undefined && body.starred !== (m.flag?.flagStatus === 'flagged')
        ? { flag: { flagStatus: body.starred ? ('flagged' as const) : ('notFlagged' as const) } }
        : {}),
    };
    return Object.keys(changes).length ? [{ m, changes }] : [];
  });
  if (patches.length) {
    const results = await client.all<GraphMessage>(
      patches.map(({ m, changes }) => ({ method: 'PATCH', path: messagePath(client, m.id), body: changes })),
    );
    const patched = new Map<string, GraphMessage | undefined>();
    results.forEach((result, i) => {
      const { m, changes } = patches[i]!;
      if (result.status === 'fulfilled') patched.set(m.id, { ...m, ...changes });
      else if (result.reason instanceof GraphNotFoundError) patched.set(m.id, undefined);
      else failure ??= result.reason;
    });
    members = members.flatMap((m) => (patched.has(m.id) ? (patched.get(m.id) ?? []) : [m]));
  }
  if (destination !== undefined) {
    // Drafts stay in Drafts: moved elsewhere, Outlook would no longer offer them as drafts.
    const drafts = members.filter((m) => m.isDraft);
    const moved = await moveAll(
      client,
      grant,
      members.filter((m) => !m.isDraft),
      destination,
    );
    failure ??= moved.failure;
    members = [...moved.members, ...drafts].sort(oldestFirst);
  }
  // What was changed before a failure stays changed; the failure is the answer.
  if (failure !== undefined) throw failure;
  if (!members.length) throw notFound(id);
  return (await threadsOf(client, grant, [{ id, members }], sentFolder))[0]!;
}

/** Deleting a thread moves its messages and drafts to Deleted Items (our Trash), as a message's delete does. */
async function remove(grant: GrantRecord, threadId: string): Promise<void> {
  const id = checkId(threadId);
  const client = await graphClientOf(grant);
  const [members, trash] = await Promise.all([requireConversation(client, id), folderIdOf(client, 'deleteditems')]);
  const { failure } = await moveAll(client, grant, members, trash);
  if (failure !== undefined) throw failure;
}

export const graphThreads: ThreadsProvider = { list, get, update, delete: remove };
