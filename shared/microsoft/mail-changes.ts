import { attachmentsOf } from '#shared/microsoft/reads';
import type { OutboxEntry } from '#shared/db/outbox';
import type { GrantRecord } from '#shared/db/grants';
import { liveMetadataOf } from '#shared/db/live-metadata';
import { ProviderError } from '#shared/errors';
import { derivedId, type ApplicationId, type GrantId } from '#shared/ids';
import { MAX_BATCH } from '#shared/microsoft/batch';
import {
  graphClientOf,
  GraphGoneError,
  GraphNotFoundError,
  type GraphClient,
  type GraphPage,
} from '#shared/microsoft/client';
import {
  GRAPH_MESSAGE_SELECT,
  mayHoldAttachments,
  messageFromGraph,
  type GraphMessage,
} from '#shared/microsoft/graph-message';
import { newNotification } from '#shared/notifications/notification';
import { inPool } from '#shared/pool';
import type { Message, SyncOutcome, SyncRun, SyncSource } from '#shared/providers/contract';
import { clock } from '#shared/time';
import { countMetric, METRICS } from '#shared/metrics';

/**
 * Provider B's mail changes, announced: each mail folder's `messages/delta` from its stored deltaLink
 * (following every nextLink to the next deltaLink), read by the bounded runs of
 * shared/services/mail-sync.ts (one at a time per grant, under its lease), as Gmail's history is for
 * provider A (shared/google/mail-changes.ts). Nothing of the mailbox is stored: the cursors are the state.
 *   - The grant's first run reads every folder's first round without announcing anything (what was
 *     there before is not news), a page at a time, and takes each folder's deltaLink.
 *   - Then each page of a round becomes notifications, committed with the link that follows it in one
 *     conditional write (`run.save`): a page announced is never announced again, and a run that stops
 *     (out of time) goes on from the link it committed.
 *   - A message in a page: `message.created` when Exchange received it since the folder's last round
 *     began (and it was not announced created already), `message.updated` otherwise (read, flagged, or
 *     moved into the folder); as Graph has it now, the shape GET answers. Drafts (the Drafts and Outbox
 *     folders, and any message still a draft) are not messages: they announce nothing, as for Gmail.
 *   - `@removed`: the message left the folder. Still in the mailbox (an ID that survives a move), it
 *     is announced by the folder it went to, once, as `message.updated`; gone, `message.deleted`.
 *   - A folder found since the last run has no baseline to keep quiet about: its first round announces
 *     what it holds (moved in: updated; received since the last listing: created). A folder gone loses
 *     its cursor.
 *   - An expired link (410 `syncStateNotFound`: GraphGoneError) reads the folder's first round again,
 *     announcing, as `message.created`, only the messages it holds that Exchange received since the
 *     folder's last round began and that were not announced yet, as Gmail's expired history does
 *     (there, at most 500): changes to older messages in the gap are what no API gives back.
 * Outlook gives a moved message a new ID unless immutable IDs are asked for: then its old ID is gone
 * (`message.deleted`) and the new one is `message.updated` in its new folder, as GET sees them.
 */

/** Changes per page: a page's notifications and the state fit one DynamoDB transaction (100 items). */
const PAGE = 90;
/**
 * How far before a round begins "received since" reaches: Exchange stamps `receivedDateTime` when it
 * received a message, which may be before it shows in the folder, and by another clock than ours.
 */
const RECEIVED_MARGIN_MS = 60_000;
/** What a round reads of each message: enough to tell what changed; the message itself is read for its notification. */
const DELTA_SELECT = ['id', 'changeKey', 'receivedDateTime', 'isDraft'] as const;
/** Folders whose messages are drafts (or on their way out as sent mail): never announced. */
const UNWATCHED = ['drafts', 'outbox'] as const;
const FOLDER_PAGE = 250;

/** One folder's place in its changes. */
export interface GraphFolderCursor {
  /** Where the next round starts (absent until the folder's first round ended). */
  delta_link?: string;
  /** Mid-round: the page to go on from, and when the round began (epoch ms, less the margin). */
  next_link?: string;
  round_at?: number;
  /** When the last completed round began (epoch ms, less the margin): messages received since are new. */
  read_at: number;
  /** Messages announced created that were received since `read_at`, with when (epoch ms): not new again. */
  recent?: Record<string, number>;
  /** The round under way announces nothing (the grant's first, or one after an expired link). */
  silent?: boolean;
  /** After an expired link: the round reads the folder again and announces only what was received since then (epoch ms). */
  recover_since?: number;
}

/** Provider B's mail cursors in the grant's sync record. */
export interface GraphMailCursors {
  /** When the folders were last listed (epoch ms): a folder found later was made after it. */
  listed_at: number;
  folders: Record<string, GraphFolderCursor>;
}

type State = SyncRun['state'] & { graph_mail?: GraphMailCursors };

interface DeltaEntry {
  id: string;
  changeKey?: string | null;
  receivedDateTime?: string | null;
  isDraft?: boolean | null;
  '@removed'?: { reason?: string };
}

type Change = 'created' | 'updated' | 'deleted';

const stateOf = (run: SyncRun) => run.state as State;

/** The same change read again makes the same notification ID. */
const notificationId = (grant: GrantRecord, messageId: string, change: Change, version: string) =>
  derivedId('notification', clock.nowMs(), `${grant.id}\n${messageId}\n${change}\n${version}`);

const note = (grant: GrantRecord, change: Change, object: object, version: string, id: string): OutboxEntry => ({
  notification: newNotification({
    type: `message.${change}`,
    applicationId: grant.application_id as ApplicationId,
    grantId: grant.id as GrantId,
    object,
    id: notificationId(grant, id, change, version),
  }),
});

/**
 * Commits the next state with its notifications, then makes it the run's state (the service ends
 * the run with `run.state`: it must hold only what was committed, or what announces nothing).
 */
async function commit(run: SyncRun, next: State, outbox: OutboxEntry[] = []): Promise<void> {
  await run.save(next, outbox);
  Object.assign(run.state, next);
}

/**
 * Makes a state that announces nothing the run's state without a write of its own: the next commit,
 * or the run's end (the service writes `run.state` when it gives the lease back, failed or not), writes
 * it. Lost with a crashed run, it only means the same empty round is read again from the link before.
 * Most rounds find nothing: a run writes the state once, not once per folder.
 */
const keep = (run: SyncRun, next: State): void => void Object.assign(run.state, next);

const messagesPath = (client: GraphClient, folderId: string) =>
  `${client.mailbox}/mailFolders/${encodeURIComponent(folderId)}/messages`;

/** Every folder of a collection, every page (ID and whether it has children). */
async function collection(client: GraphClient, path: string): Promise<{ id: string; childFolderCount?: number }[]> {
  const found: { id: string; childFolderCount?: number }[] = [];
  for await (const page of client.pages<{ id: string; childFolderCount?: number }>({
    path,
    query: { $top: FOLDER_PAGE, $select: ['id', 'childFolderCount'] },
    batch: true,
  }))
    found.push(...page.value);
  return found;
}

/** The IDs of the mailbox's folders whose messages are announced: all of them, child folders included, but drafts and outbox. */
async function watchedFolders(client: GraphClient): Promise<string[]> {
  const [top, unwatched] = await Promise.all([
    collection(client, `${client.mailbox}/mailFolders`),
    client.all<{ id: string }>(
      UNWATCHED.map((name) => ({ path: `${client.mailbox}/mailFolders/${name}`, query: { $select: ['id'] } })),
    ),
  ]);
  const skip = new Set<string>();
  for (const answer of unwatched) {
    if (answer.status === 'fulfilled') skip.add(answer.value.id);
    else if (!(answer.reason instanceof GraphNotFoundError)) throw answer.reason;
  }
  const all = [...top];
  let level = top;
  while (level.length) {
    const next: typeof top = [];
    await inPool(
      level.filter((f) => (f.childFolderCount ?? 0) > 0),
      MAX_BATCH,
      async (f) => {
        try {
          next.push(
            ...(await collection(client, `${client.mailbox}/mailFolders/${encodeURIComponent(f.id)}/childFolders`)),
          );
        } catch (error) {
          // Deleted while listed: the next run does without it.
          if (!(error instanceof GraphNotFoundError)) throw error;
        }
      },
    );
    all.push(...next);
    level = next;
  }
  return all.map((f) => f.id).filter((id) => !skip.has(id));
}

/**
 * The messages as GET answers them (with their attachments and our metadata), read together (batches);
 * one gone since is left out: its removal is in a later round.
 */
async function readMessages(grant: GrantRecord, client: GraphClient, ids: readonly string[]) {
  const found = new Map<string, Message>();
  await inPool(ids, MAX_BATCH, async (id) => {
    try {
      const message = await client.call<GraphMessage>({
        path: `${client.mailbox}/messages/${encodeURIComponent(id)}`,
        query: { $select: GRAPH_MESSAGE_SELECT },
        batch: true,
      });
      const attachments = mayHoldAttachments(message) ? await attachmentsOf(client, id) : [];
      found.set(id, messageFromGraph(grant, message, { attachments }));
    } catch (error) {
      if (!(error instanceof GraphNotFoundError)) throw error;
    }
  });
  const metadata = await liveMetadataOf(grant.id as GrantId, [...found.keys()]);
  for (const [id, message] of found) found.set(id, { ...message, metadata: metadata.get(id) ?? {} });
  return found;
}

/** Which of these IDs name a message of the mailbox still (one that left a folder for another, under the same ID). */
async function stillThere(client: GraphClient, ids: readonly string[]): Promise<Set<string>> {
  const answers = await client.all<{ id: string }>(
    ids.map((id) => ({ path: `${client.mailbox}/messages/${encodeURIComponent(id)}`, query: { $select: ['id'] } })),
  );
  const there = new Set<string>();
  answers.forEach((answer, i) => {
    if (answer.status === 'fulfilled') there.add(ids[i]!);
    else if (!(answer.reason instanceof GraphNotFoundError)) throw answer.reason;
  });
  return there;
}

const receivedMs = (e: { receivedDateTime?: string | null }) => {
  const ms = e.receivedDateTime ? Date.parse(e.receivedDateTime) : NaN;
  return Number.isNaN(ms) ? 0 : ms;
};

/**
 * A page of a round as notifications; `recent` takes the messages announced created. A quiet round
 * announces nothing but takes what it saw received since it began as known; one after an expired link
 * announces only the messages received since `recover_since` not announced yet, as message.created.
 */
async function notesOf(
  grant: GrantRecord,
  client: GraphClient,
  folderId: string,
  cp: GraphFolderCursor,
  roundAt: number,
  entries: readonly DeltaEntry[],
  recent: Record<string, number>,
  /** Announced created from another folder (a message keeps its ID when it moves: immutable IDs). */
  elsewhere: ReadonlySet<string>,
): Promise<OutboxEntry[]> {
  const known = (id: string) => recent[id] !== undefined || elsewhere.has(id);
  const present = entries.filter((e) => !e['@removed'] && e.isDraft !== true);
  if (cp.silent && cp.recover_since === undefined) {
    for (const e of present) if (receivedMs(e) >= roundAt) recent[e.id] = receivedMs(e);
    return [];
  }
  const since = cp.recover_since ?? cp.read_at;
  const wanted = cp.silent ? present.filter((e) => receivedMs(e) >= since && !known(e.id)) : present;
  const removed = cp.silent ? [] : entries.filter((e) => e['@removed']).map((e) => e.id);
  const [there, read] = await Promise.all([
    removed.length ? stillThere(client, removed) : new Set<string>(),
    readMessages(
      grant,
      client,
      wanted.map((e) => e.id),
    ),
  ]);
  const notes: OutboxEntry[] = [];
  for (const entry of entries) {
    if (entry['@removed']) {
      if (removed.includes(entry.id) && !there.has(entry.id))
        notes.push(
          note(grant, 'deleted', { id: entry.id, object: 'message', grant_id: grant.id }, `gone ${folderId}`, entry.id),
        );
      continue;
    }
    const message = read.get(entry.id);
    if (!message) continue;
    const received = receivedMs(entry);
    const created = received >= since && !known(entry.id);
    if (created) recent[entry.id] = received;
    notes.push(note(grant, created ? 'created' : 'updated', message, entry.changeKey ?? '', entry.id));
  }
  return notes;
}

/**
 * Only what the rounds still need to know of the messages announced created: those received since the
 * oldest round start of any folder (a message may move to a folder whose last round began earlier).
 */
const prune = (recent: Record<string, number>, since: number) =>
  Object.fromEntries(Object.entries(recent).filter(([, at]) => at >= since));

/** The messages other folders announced created, and the oldest of their last rounds' starts. */
function otherFolders(cursors: GraphMailCursors, folderId: string): { announced: Set<string>; oldest: number } {
  const announced = new Set<string>();
  let oldest = Infinity;
  for (const [id, cp] of Object.entries(cursors.folders)) {
    if (id === folderId) continue;
    for (const message of Object.keys(cp.recent ?? {})) announced.add(message);
    oldest = Math.min(oldest, cp.read_at);
  }
  return { announced, oldest };
}

/** A page of a folder's round, and when it was asked for (epoch ms). */
interface Fetched {
  page: GraphPage<DeltaEntry>;
  at: number;
}

/** The next page of the folder's round: where the cursor stands, or a new round (a baseline) when it has no link. */
async function fetchPage(client: GraphClient, folderId: string, cp: GraphFolderCursor): Promise<Fetched> {
  const at = clock.nowMs();
  const from = cp.next_link ??
    cp.delta_link ?? { path: `${messagesPath(client, folderId)}/delta`, query: { $select: DELTA_SELECT } };
  return { page: await client.page<DeltaEntry>(from, { Prefer: `odata.maxpagesize=${PAGE}` }), at };
}

/**
 * One folder's round from its cursor, a page at a time, each page committed with its notifications and
 * the link to go on from, the last one with the next round's deltaLink.
 */
async function readFolder(
  grant: GrantRecord,
  client: GraphClient,
  run: SyncRun,
  folderId: string,
  /** Its first page, asked for with the other folders' (they go out together). */
  first?: Promise<Fetched>,
): Promise<{ status: 'done' | 'more' | 'gone'; announced: number }> {
  let announced = 0;
  /** Commits the folder's cursor with its notifications; a round that ends announcing nothing is only kept (`keep`). */
  const save = async (cursor: GraphFolderCursor, notes: OutboxEntry[] = [], roundEnd = false) => {
    announced += notes.length;
    const graph = stateOf(run).graph_mail!;
    const next: State = {
      ...stateOf(run),
      graph_mail: { ...graph, folders: { ...graph.folders, [folderId]: cursor } },
      ...(notes.length ? { last_change_at: clock.nowSeconds() } : {}),
    };
    if (roundEnd && !notes.length) keep(run, next);
    else await commit(run, next, notes);
  };
  let cp = stateOf(run).graph_mail!.folders[folderId]!;
  let prefetched = first;
  for (;;) {
    if (run.outOfTime()) return { status: 'more', announced };
    const fetching = prefetched ?? fetchPage(client, folderId, cp);
    prefetched = undefined;
    let page: GraphPage<DeltaEntry>;
    let at: number;
    try {
      ({ page, at } = await fetching);
    } catch (error) {
      // Deleted since it was listed: the next run drops its cursor.
      if (error instanceof GraphNotFoundError) return { status: 'gone', announced };
      if (!(error instanceof GraphGoneError)) throw error;
      countMetric(METRICS.cursorResets, { provider: 'microsoft' });
      // The round starts again, quietly; what was received since the last round began is owed at its end.
      const owed = cp.silent ? cp.recover_since : cp.read_at;
      cp = {
        read_at: cp.read_at,
        ...(cp.recent ? { recent: cp.recent } : {}),
        silent: true,
        ...(owed !== undefined ? { recover_since: owed } : {}),
      };
      await save(cp);
      continue;
    }
    const roundAt = cp.next_link ? (cp.round_at ?? at - RECEIVED_MARGIN_MS) : at - RECEIVED_MARGIN_MS;
    const recent = { ...cp.recent };
    const others = otherFolders(stateOf(run).graph_mail!, folderId);
    const notes = await notesOf(grant, client, folderId, cp, roundAt, page.value, recent, others.announced);
    const { next_link: _n, round_at: _r, silent: _s, recover_since: _o, delta_link: _d, ...kept } = cp;
    if (page.deltaLink !== undefined) {
      await save(
        {
          ...kept,
          delta_link: page.deltaLink,
          read_at: roundAt,
          recent: prune(recent, Math.min(roundAt, others.oldest)),
        },
        notes,
        true,
      );
      return { status: 'done', announced };
    }
    if (page.nextLink === undefined)
      throw new ProviderError(`Provider B ended a delta round of folder '${folderId}' without its deltaLink`);
    cp = {
      ...kept,
      ...(cp.silent ? { silent: true } : {}),
      ...(cp.recover_since !== undefined ? { recover_since: cp.recover_since } : {}),
      next_link: page.nextLink,
      round_at: roundAt,
      recent,
    };
    await save(cp, notes);
  }
}

export const graphMailChanges: SyncSource = {
  async run(grant: GrantRecord, run: SyncRun): Promise<SyncOutcome> {
    const client = await graphClientOf(grant);
    const listedAt = clock.nowMs();
    const folders = await watchedFolders(client);
    const before = stateOf(run).graph_mail;
    // The first run keeps quiet about every folder; a later one announces what a new folder holds.
    const cursors: Record<string, GraphFolderCursor> = {};
    for (const id of folders)
      cursors[id] =
        before?.folders[id] ??
        (before ? { read_at: before.listed_at - RECEIVED_MARGIN_MS } : { read_at: listedAt, silent: true });
    keep(run, { ...stateOf(run), graph_mail: { listed_at: listedAt, folders: cursors } });
    // Every folder's next page asked for at once (most rounds are one empty page); each is then read in turn.
    const firsts = new Map(folders.map((id) => [id, fetchPage(client, id, cursors[id]!)]));
    for (const fetching of firsts.values()) fetching.catch(() => undefined);
    let changed = false;
    for (const id of folders) {
      if (run.outOfTime()) return { status: 'more', changed };
      const read = await readFolder(grant, client, run, id, firsts.get(id));
      changed ||= read.announced > 0;
      if (read.status === 'more') return { status: 'more', changed };
    }
    if (!run.state.seeded) keep(run, { ...stateOf(run), seeded: true });
    return { status: 'done', changed };
  },
};
