import { createHash } from 'node:crypto';
import type { FetchMessageObject, ImapFlow, ListResponse, MailboxObject } from 'imapflow';
import { changeMessage, hardDeleteMessage } from '#shared/mailbox/message-ops';
import { parsedMessageFields, serverLookups, storeServerMessages, type NewMessage } from '#shared/mailbox/store';
import { SYSTEM_FOLDERS } from '#shared/mailbox/system-folders';
import { folderView } from '#shared/mailbox/views';
import * as folders from '#shared/db/folders';
import type { GrantRecord } from '#shared/db/grants';
import type { FolderRecord, MessageRecord } from '#shared/db/mail-records';
import {
  folderLocations,
  getLocation,
  locationDelete,
  locationPut,
  readServerPlace,
  serverPlace,
  type FolderCheckpoint,
  type MailSyncRecord,
  type ServerLocation,
} from '#shared/db/mail-sync';
import * as messages from '#shared/db/messages';
import { transactWrite } from '#shared/db/transact';
import type { OutboxEntry } from '#shared/db/outbox';
import { derivedId, newId, type MessageId } from '#shared/ids';
import { isDraftCopy } from '#shared/imap/draft-copies';
import { parseMime } from '#shared/mail/parse';
import { inboundNotices } from '#shared/tracking/inbound';
import { newNotification } from '#shared/notifications/notification';
import type { SyncRun, SyncOutcome } from '#shared/providers/contract';
import { clock } from '#shared/time';

/**
 * One bounded sync run of an IMAP grant (shared/services/mail-sync.ts serializes and schedules the
 * runs). One LIST with STATUS tells which folders changed since their checkpoint
 * `{uid_validity, uid_next, highest_modseq, messages}`; an unchanged folder is not even opened.
 * A changed folder is examined (read-only: nothing is marked seen) and, in this order:
 * - expunges: UIDs reported VANISHED (QRESYNC) or, when the counts disagree, the difference between
 *   `UID SEARCH ALL` and the stored locations; a message that leaves its last folder is deleted at
 *   the end of the run (a move between folders seen in one run is an update, not a delete + create);
 * - flags: `FETCH 1:* (FLAGS) (CHANGEDSINCE <modseq>)` with CONDSTORE, every flag otherwise;
 * - new messages: `UID FETCH <uid_next>:*`, in batches, each batch stored and then checkpointed.
 * First sync of a folder (or after its UIDVALIDITY changed): the messages of the sync window (the
 * spec's three months) newest first, stored without message.created (history, not news), then the
 * locations of an old UIDVALIDITY are dropped (messages found again keep their IDs: the ID comes
 * from the Message-ID header). After the first full sync: grant.imap_sync_completed.
 * A run stops between batches when it is out of time and says `more`: the checkpoint is saved,
 * and the next run (queued at once) continues from it; nothing is fetched twice or lost if it dies,
 * since a message stored again is recognised by its Message-ID and a location is put idempotently.
 */

/** Messages fetched per batch (each batch is stored, then checkpointed). */
export const SYNC_BATCH = 50;
/** The sync window of a first sync: the spec's three months of stored data. */
export const SYNC_WINDOW_DAYS = 90;

const ROLE_IDS: Record<string, string> = {
  '\\Inbox': 'inbox',
  '\\Sent': 'sent',
  '\\Drafts': 'drafts',
  '\\Trash': 'trash',
  '\\Junk': 'spam',
  '\\Archive': 'archive',
};
/** Virtual folders that show messages of other folders again: not synced (their messages are, where they live). */
const VIRTUAL = new Set(['\\All', '\\Flagged']);
const SYSTEM_NAMES = new Map<string, string>(SYSTEM_FOLDERS.map((f) => [f.id, f.name]));

/**
 * The ID of a synced message, from its Message-ID header (the spec's rule for IMAP): the same
 * message in several folders, or found again after a UIDVALIDITY change, keeps one ID. Its time part
 * is the message's date, as every message ID's is its creation (IDs sort by time).
 */
export const imapMessageId = (messageIdHeader: string, dateSeconds: number): MessageId =>
  derivedId('message', dateSeconds * 1000, messageIdHeader.trim().toLowerCase());

/** The ID of a folder that is not a system folder: from its path, so every run maps a path to one ID. */
export const imapFolderId = (path: string): string => derivedId('folder', 0, path);

interface ServerFolder {
  id: string;
  path: string;
  name: string;
  parentPath?: string;
  role?: string;
  status: { messages?: number; uidNext?: number; uidValidity?: bigint; highestModseq?: bigint };
}

/**
 * The server's selectable folders, with their IDs: a folder already stored keeps its ID (a rename
 * through the API changed its path, not its ID), a role's first folder gets the role's system ID,
 * and any other folder an ID from its path.
 */
function serverFolders(list: ListResponse[], storedByPath: ReadonlyMap<string, string>): ServerFolder[] {
  const taken = new Set<string>(storedByPath.values());
  const result: ServerFolder[] = [];
  for (const box of list) {
    if (box.flags.has('\\Noselect') || box.flags.has('\\NonExistent')) continue;
    if (box.specialUse && VIRTUAL.has(box.specialUse)) continue;
    const roleId = box.specialUse ? ROLE_IDS[box.specialUse] : undefined;
    const id = storedByPath.get(box.path) ?? (roleId && !taken.has(roleId) ? roleId : imapFolderId(box.path));
    taken.add(id);
    result.push({
      id,
      path: box.path,
      name: roleId && id === roleId ? SYSTEM_NAMES.get(roleId)! : box.name,
      ...(box.parentPath ? { parentPath: box.parentPath } : {}),
      ...(box.specialUse ? { role: box.specialUse } : {}),
      status: box.status ?? {},
    });
  }
  return result;
}

const unchanged = (cp: FolderCheckpoint | undefined, folder: ServerFolder) =>
  cp !== undefined &&
  cp.seed_below === undefined &&
  folder.status.uidValidity !== undefined &&
  String(folder.status.uidValidity) === cp.uid_validity &&
  folder.status.uidNext === cp.uid_next &&
  folder.status.messages === cp.messages &&
  (folder.status.highestModseq === undefined || String(folder.status.highestModseq) === cp.highest_modseq);

const folderNotification = (
  grant: GrantRecord,
  type: 'folder.created' | 'folder.updated' | 'folder.deleted',
  folder: FolderRecord,
): OutboxEntry => ({
  notification: newNotification({
    type,
    applicationId: grant.application_id,
    grantId: grant.id,
    object: folderView(folder, 0),
  }),
});

const locationOf = (uids: Record<string, string> | undefined, folderId: string) => {
  const value = uids?.[folderId];
  return value ? readServerPlace(value) : undefined;
};
const withoutKey = <T>(map: Record<string, T> | undefined, key: string) =>
  Object.fromEntries(Object.entries(map ?? {}).filter(([k]) => k !== key));

/** What one run changed and where it stands (shared by the folder steps). */
interface RunContext {
  grant: GrantRecord;
  client: ImapFlow;
  state: MailSyncRecord;
  run: SyncRun;
  /** Messages that left a folder in this run and may have no folder left (deleted at the end, if so). */
  orphans: Set<MessageId>;
  changed: boolean;
}

export async function runImapSync(grant: GrantRecord, client: ImapFlow, run: SyncRun): Promise<SyncOutcome> {
  const state = run.state;
  const ctx: RunContext = { grant, client, state, run, orphans: new Set(), changed: false };
  const stored = await folders.listFolders(grant.id);
  const storedByPath = new Map(stored.flatMap((f) => (f.server_path ? [[f.server_path, f.id] as const] : [])));
  const listed = serverFolders(
    await client.list({ statusQuery: { messages: true, uidNext: true, uidValidity: true, highestModseq: true } }),
    storedByPath,
  );
  await reconcileFolders(ctx, listed, stored, !state.seeded);

  let status: SyncOutcome['status'] = 'done';
  // The inbox first: the first page a user opens answers soonest.
  const order = [...listed].sort((a, b) => (a.id === 'inbox' ? -1 : b.id === 'inbox' ? 1 : 0));
  for (const folder of order) {
    if (unchanged(state.folders[folder.id], folder)) continue;
    if (run.outOfTime()) {
      status = 'more';
      break;
    }
    if ((await syncFolder(ctx, folder)) === 'more') {
      status = 'more';
      break;
    }
  }
  await settleOrphans(ctx);
  const seeded =
    status === 'done' && listed.every((f) => state.folders[f.id] && state.folders[f.id]!.seed_below === undefined);
  const outbox: OutboxEntry[] = [];
  if (seeded && !state.seeded) {
    state.seeded = true;
    const count = Object.values(state.folders).reduce((sum, f) => sum + f.messages, 0);
    outbox.push({
      notification: newNotification({
        type: 'grant.imap_sync_completed',
        applicationId: grant.application_id,
        grantId: grant.id,
        object: {
          id: grant.id,
          grant_id: grant.id,
          provider: grant.provider,
          email: grant.email,
          folders: listed.length,
          messages: count,
          completed_at: clock.nowSeconds(),
        },
      }),
    });
    // The import's last search entries, which its batches' merges left for a larger step.
    outbox.push({
      job: { kind: 'merge-search', application_id: grant.application_id, grant_id: grant.id },
      id: newId('job'),
      applicationId: grant.application_id,
    });
  }
  await run.save(state, outbox);
  return { status, changed: ctx.changed };
}

/** Folder records follow the server: new folders are created, gone ones deleted (their messages leave them). */
async function reconcileFolders(
  ctx: RunContext,
  listed: ServerFolder[],
  records: FolderRecord[],
  quiet: boolean,
): Promise<void> {
  const { grant, state } = ctx;
  const stored = new Map(records.map((f) => [f.id, f]));
  const byPath = new Map(listed.map((f) => [f.path, f]));
  const now = clock.nowSeconds();
  for (const folder of listed) {
    if (stored.has(folder.id)) continue;
    const record: FolderRecord = {
      id: folder.id,
      grant_id: grant.id,
      name: folder.name,
      server_path: folder.path,
      ...(folder.parentPath && byPath.get(folder.parentPath) ? { parent_id: byPath.get(folder.parentPath)!.id } : {}),
      system_folder: folder.role !== undefined && ROLE_IDS[folder.role] === folder.id,
      attributes: folder.role ? [folder.role] : [],
      total_count: 0,
      unread_count: 0,
      created_at: now,
      updated_at: now,
    };
    try {
      await folders.insertFolder(record, quiet ? [] : [folderNotification(grant, 'folder.created', record)]);
    } catch (error) {
      if (!(error instanceof folders.FolderNameTakenError)) throw error;
      // Two server folders whose names differ only in case: the second is named by its path.
      await folders.insertFolder(
        { ...record, name: folder.path },
        quiet ? [] : [folderNotification(grant, 'folder.created', record)],
      );
    }
    stored.set(folder.id, record);
    ctx.changed = true;
  }
  const present = new Set(listed.map((f) => f.id));
  for (const record of stored.values()) {
    if (present.has(record.id) || record.server_path === undefined) continue;
    // Gone from the server: its messages leave it, then the folder goes.
    const cp = state.folders[record.id];
    for (const location of await folderLocations(grant.id, record.id)) await forget(ctx, record.id, location);
    const fresh = await folders.getFolder(grant.id, record.id);
    if (fresh)
      await folders.deleteFolder(fresh, [folderNotification(grant, 'folder.deleted', fresh)]).catch(() => undefined);
    if (cp) delete state.folders[record.id];
    ctx.changed = true;
  }
}

async function syncFolder(ctx: RunContext, folder: ServerFolder): Promise<'done' | 'more'> {
  const { client, state, grant } = ctx;
  const cp = state.folders[folder.id];
  const vanished = new Set<number>();
  const onExpunge = (event: { path: string; uid?: number; vanished: boolean }) => {
    if (event.path === folder.path && event.vanished && event.uid) vanished.add(event.uid);
  };
  client.on('expunge', onExpunge);
  try {
    const qresync = cp && cp.seed_below === undefined && cp.highest_modseq && client.enabled.has('QRESYNC');
    const box: MailboxObject = await client.mailboxOpen(folder.path, {
      readOnly: true,
      ...(qresync ? { changedSince: BigInt(cp.highest_modseq!), uidValidity: BigInt(cp.uid_validity) } : {}),
    });
    const uidValidity = String(box.uidValidity);
    if (!cp || cp.uid_validity !== uidValidity) {
      // First sync of the folder, or its UIDs were reset: seed it from the server's current UIDs.
      state.folders[folder.id] = {
        path: folder.path,
        uid_validity: uidValidity,
        uid_next: box.uidNext,
        messages: 0,
        seed_below: box.uidNext,
        ...modseqOf(box),
      };
      ctx.changed ||= cp !== undefined;
      return seedFolder(ctx, folder, box);
    }
    cp.path = folder.path;
    if (cp.seed_below !== undefined && (await seedFolder(ctx, folder, box)) === 'more') return 'more';

    // Expunges reported by QRESYNC.
    for (const uid of vanished) await expunged(ctx, folder.id, uidValidity, uid);
    // Flags changed since the checkpoint (CONDSTORE), or every flag.
    const changedSince = cp.highest_modseq && box.highestModseq !== undefined ? BigInt(cp.highest_modseq) : undefined;
    if (changedSince === undefined || box.highestModseq! > changedSince) {
      const known = new Map((await folderLocations(grant.id, folder.id, uidValidity)).map((l) => [l.uid, l]));
      if (known.size) {
        for await (const message of client.fetch(
          '1:*',
          { uid: true, flags: true },
          { uid: true, ...(changedSince !== undefined ? { changedSince } : {}) },
        )) {
          const location = known.get(message.uid);
          if (location) await flagsSeen(ctx, location, keptFlags(message.flags));
        }
      }
    }
    Object.assign(cp, modseqOf(box));
    // New messages.
    if (box.uidNext > cp.uid_next) {
      const fresh = ((await client.search({ uid: `${cp.uid_next}:*` }, { uid: true })) || [])
        .filter((uid) => uid >= cp.uid_next)
        .sort((a, b) => a - b);
      const stored = await storeBatches(ctx, folder, uidValidity, fresh, false, async (batch, added) => {
        cp.uid_next = batch.at(-1)! + 1;
        cp.messages += added;
        await ctx.run.save(state);
      });
      if (stored === 'more') return 'more';
      cp.uid_next = Math.max(cp.uid_next, box.uidNext);
    }
    // Expunges without QRESYNC: the counts disagree, so compare the UIDs.
    if (box.exists !== cp.messages) {
      const onServer = new Set((await client.search({ all: true }, { uid: true })) || []);
      const locations = await folderLocations(grant.id, folder.id, uidValidity);
      for (const location of locations)
        if (!onServer.has(location.uid)) await expunged(ctx, folder.id, uidValidity, location.uid, location);
      cp.messages = locations.filter((l) => onServer.has(l.uid)).length;
    }
    await ctx.run.save(state);
    return 'done';
  } finally {
    client.off('expunge', onExpunge);
  }
}

const modseqOf = (box: MailboxObject) =>
  box.highestModseq !== undefined && !box.noModseq ? { highest_modseq: String(box.highestModseq) } : {};

/** The first sync of a folder (or after a UIDVALIDITY change): the sync window, newest first, in batches. */
async function seedFolder(ctx: RunContext, folder: ServerFolder, box: MailboxObject): Promise<'done' | 'more'> {
  const { client, state, grant } = ctx;
  const cp = state.folders[folder.id]!;
  const since = new Date((clock.nowSeconds() - SYNC_WINDOW_DAYS * 86400) * 1000);
  const uids = ((await client.search({ since }, { uid: true })) || [])
    .filter((uid) => uid < cp.seed_below!)
    .sort((a, b) => b - a);
  // Quiet while the grant's first sync runs; a reseed after a UIDVALIDITY change stores only what the old UIDs did not hold, quietly too.
  const stored = await storeBatches(ctx, folder, cp.uid_validity, uids, true, async (batch, added) => {
    cp.messages += added;
    cp.seed_below = batch.at(-1)!;
    await ctx.run.save(state);
  });
  if (stored === 'more') return 'more';
  delete cp.seed_below;
  // Locations under an older UIDVALIDITY: a message found again has its new location; the others left the folder.
  for (const location of await folderLocations(grant.id, folder.id)) {
    if (location.uid_validity === cp.uid_validity) continue;
    await forget(ctx, folder.id, location);
  }
  cp.messages = (await folderLocations(grant.id, folder.id, cp.uid_validity)).length;
  Object.assign(cp, modseqOf(box));
  await ctx.run.save(state);
  return 'done';
}

/**
 * Stores `uids` of a folder in batches of SYNC_BATCH, in their order: each batch is stored, then
 * checkpointed by `checkpoint` (with how many locations it added) before the next one is stored.
 * The next batch is fetched and parsed (read-only, nothing stored) while the current one is stored:
 * one batch ahead at most, and dropped when the run stops. Stops after a checkpoint when the run is
 * out of time and batches remain: 'more'.
 */
async function storeBatches(
  ctx: RunContext,
  folder: ServerFolder,
  uidValidity: string,
  uids: readonly number[],
  quiet: boolean,
  checkpoint: (batch: number[], added: number) => Promise<void>,
): Promise<'done' | 'more'> {
  const batches: number[][] = [];
  for (let i = 0; i < uids.length; i += SYNC_BATCH) batches.push(uids.slice(i, i + SYNC_BATCH));
  const fetch = (batch: number[]) => {
    const fetching = fetchBatch(ctx, folder, uidValidity, batch, quiet);
    // Awaited below (or settled before leaving); a failure meanwhile is not unhandled.
    fetching.catch(() => undefined);
    return fetching;
  };
  let next = batches.length ? fetch(batches[0]!) : undefined;
  for (const [b, batch] of batches.entries()) {
    const fetched = await next!;
    next = b + 1 < batches.length ? fetch(batches[b + 1]!) : undefined;
    try {
      await checkpoint(batch, await storeFetched(ctx, fetched, quiet));
    } catch (error) {
      // The fetch ahead ends before the connection is used again or closed.
      await next?.catch(() => undefined);
      throw error;
    }
    if (next && ctx.run.outOfTime()) {
      await next.catch(() => undefined);
      return 'more';
    }
  }
  return 'done';
}

/** Fetches a batch of UIDs of a folder and parses its messages (copies of the grant's own drafts left out). */
async function fetchBatch(
  ctx: RunContext,
  folder: ServerFolder,
  uidValidity: string,
  uids: number[],
  quiet: boolean,
): Promise<ParsedMessage[]> {
  const { grant } = ctx;
  const fetched: FetchMessageObject[] = [];
  for await (const message of ctx.client.fetch(
    uids.join(','),
    { uid: true, flags: true, internalDate: true, size: true, source: true },
    { uid: true },
  ))
    fetched.push(message);
  // Copies of the grant's own drafts (shared/imap/drafts.ts, which keeps their locations) are not mail.
  return (await Promise.all(fetched.map((message) => newMessageOf(grant, folder, uidValidity, message, quiet)))).filter(
    (p) => folder.id !== 'drafts' || !isDraftCopy(p.input.messageIdHeader!, grant.email),
  );
}

/** Stores a fetched batch of a folder; how many locations it added. */
async function storeFetched(ctx: RunContext, parsed: ParsedMessage[], quiet: boolean): Promise<number> {
  if (!parsed.length) return 0;
  const { grant } = ctx;
  // One read for the batch: which of its Message-IDs are stored (known already: in another folder,
  // or before a reset), what its messages refer to, and the threads referring to them.
  const lookups = await serverLookups(
    grant.id,
    parsed.map((p) => p.input),
  );
  const known = lookups.stored;
  // Known already, or twice in this batch: it joins this folder.
  const seen = new Set<string>();
  const fresh: ParsedMessage[] = [];
  const joining: ParsedMessage[] = [];
  for (const p of parsed) {
    const header = p.input.messageIdHeader!;
    if (known.has(header) || seen.has(header)) joining.push(p);
    else fresh.push(p);
    seen.add(header);
  }
  let added = 0;
  const stored = await storeServerMessages(
    grant,
    fresh.map((p) => p.input),
    lookups,
  );
  stored.forEach((s, i) => {
    if (s.outcome === 'stored') added++;
    else if (s.outcome === 'duplicate') joining.push(fresh[i]!);
  });
  if (!quiet && added) ctx.changed = true;
  for (const p of joining) {
    // Known before the batch (read above), or stored by it (a second copy in this batch, or a race).
    const existing =
      known.get(p.input.messageIdHeader!) ?? (await messages.getMessageIdHeader(grant.id, p.input.messageIdHeader!));
    if (existing && (await joinFolder(ctx, existing.message_id, p.location, quiet))) added++;
  }
  return added;
}

/** A message's Message-ID header, or (it has none) one made from its content: the same message gives the same one. */
export const messageIdHeaderOf = (messageId: string | undefined, raw: Buffer): string =>
  messageId ?? `<${createHash('sha256').update(raw).digest('hex')}@imap.switchboard>`;

/** A message's flags as kept: \\Recent is the session's, not the message's. */
export const keptFlags = (flags: Iterable<string> | undefined): string[] =>
  [...(flags ?? [])].filter((f) => f !== '\\Recent');

const dateOf = (value: Date | string | undefined) => (value ? Math.floor(new Date(value).getTime() / 1000) : undefined);

interface ParsedMessage {
  input: NewMessage;
  location: ServerLocation;
}

/** A fetched message as the store takes it, with its location in this folder. */
async function newMessageOf(
  grant: GrantRecord,
  folder: ServerFolder,
  uidValidity: string,
  message: FetchMessageObject,
  quiet: boolean,
): Promise<ParsedMessage> {
  const raw = message.source ?? Buffer.alloc(0);
  const mail = await parseMime(raw);
  const flags = keptFlags(message.flags);
  const header = messageIdHeaderOf(mail.messageId, raw);
  const date = mail.date ?? dateOf(message.internalDate) ?? clock.nowSeconds();
  const location: ServerLocation = {
    folder_id: folder.id,
    uid_validity: uidValidity,
    uid: message.uid,
    message_id: imapMessageId(header, date),
    flags,
  };
  // A reply to a tracked message, a bounce of a sent one: announced with the stored copy (news only).
  const notices = quiet ? undefined : await inboundNotices(grant, mail, raw);
  const input: NewMessage = {
    grant,
    id: location.message_id,
    ...parsedMessageFields(mail, raw),
    date,
    unread: !flags.includes('\\Seen'),
    starred: flags.includes('\\Flagged'),
    folders: [folder.id],
    messageIdHeader: header,
    server: { uids: { [folder.id]: serverPlace(uidValidity, message.uid) }, quiet },
    // Only the notices' notifications: a batch's messages share transactions, where two replies'
    // counts would be two writes of one item.
    also: (record) => ({
      items: [['location', locationPut(grant.id, location)]],
      outbox: notices?.(record).outbox ?? [],
    }),
  };
  return { input, location };
}

/** A message already stored (found in another folder, or again after a reset) is in this folder too. */
async function joinFolder(
  ctx: RunContext,
  messageId: MessageId,
  location: ServerLocation,
  quiet: boolean,
): Promise<boolean> {
  const place = serverPlace(location.uid_validity, location.uid);
  const { grant } = ctx;
  const record = await messages.getMessage(grant.id, messageId);
  if (!record) return false;
  const before = locationOf(record.server_uids, location.folder_id);
  if (before && before.uid_validity === location.uid_validity && before.uid === location.uid) return false;
  if (before && before.uid_validity === location.uid_validity) {
    // A second copy in the same folder: one more location of the same message.
    await transactWrite([['location', locationPut(grant.id, { ...location, message_id: record.id })]]);
    return true;
  }
  // Found again after a UIDVALIDITY change: its new location replaces the old one.
  const replaced = before
    ? [['old-location', locationDelete(grant.id, { folder_id: location.folder_id, ...before })] as const]
    : [];
  await changeMessage(
    grant,
    record,
    { folders: record.folders.includes(location.folder_id) ? record.folders : [...record.folders, location.folder_id] },
    {
      server: {
        uids: { ...record.server_uids, [location.folder_id]: place },
        also: [['location', locationPut(grant.id, { ...location, message_id: record.id })], ...replaced],
        announce: !quiet,
      },
    },
  );
  ctx.orphans.delete(record.id);
  if (!quiet) ctx.changed = true;
  return true;
}

/** A known message's flags in one folder, as the server now has them. */
async function flagsSeen(ctx: RunContext, location: ServerLocation, flags: string[]): Promise<void> {
  if ([...flags].sort().join(' ') === [...location.flags].sort().join(' ')) return;
  const record = await messages.getMessage(ctx.grant.id, location.message_id);
  if (!record) return;
  await changeMessage(
    ctx.grant,
    record,
    { unread: !flags.includes('\\Seen'), starred: flags.includes('\\Flagged') },
    {
      server: {
        uids: record.server_uids ?? {},
        also: [['location', locationPut(ctx.grant.id, { ...location, flags })]],
        announce: true,
      },
    },
  );
  ctx.changed = true;
}

/** A UID gone from a folder: its message leaves the folder. */
async function expunged(
  ctx: RunContext,
  folderId: string,
  uidValidity: string,
  uid: number,
  known?: ServerLocation,
): Promise<void> {
  const location = known ?? (await getLocation(ctx.grant.id, folderId, uidValidity, uid));
  if (location) await forget(ctx, folderId, location);
}

async function forget(ctx: RunContext, folderId: string, location: ServerLocation): Promise<void> {
  const { grant } = ctx;
  const drop = [['location', locationDelete(grant.id, location)] as const];
  const record = await messages.getMessage(grant.id, location.message_id);
  const current = locationOf(record?.server_uids, folderId);
  if (!record || !current || current.uid_validity !== location.uid_validity || current.uid !== location.uid) {
    // The message is elsewhere in this folder now (or gone): only this location goes.
    await transactWrite(drop);
    return;
  }
  await changeMessage(
    grant,
    record,
    { folders: record.folders.filter((f) => f !== folderId) },
    { server: { uids: withoutKey(record.server_uids, folderId), also: drop, announce: record.folders.length > 1 } },
  );
  if (record.folders.length <= 1) ctx.orphans.add(record.id);
  ctx.changed = true;
}

/** Messages left in no folder by this run are gone from the server: deleted, with message.deleted. */
async function settleOrphans(ctx: RunContext): Promise<void> {
  for (const id of ctx.orphans) {
    const record: MessageRecord | undefined = await messages.getMessage(ctx.grant.id, id);
    if (record && record.folders.length === 0) await hardDeleteMessage(ctx.grant, record, { also: [] });
  }
  ctx.orphans.clear();
}
