import type { CreateFolderBody, ListFoldersQuery, UpdateFolderBody } from '#schemas/mail';
import { decodeOffsetCursor, encodeOffsetCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { graphClientOf, GraphNotFoundError, GraphRequestError, type GraphClient } from '#shared/microsoft/client';
import { folderRef, WELL_KNOWN_FOLDERS, wellKnownFolder, type WellKnownFolder } from '#shared/microsoft/graph-query';
import { MAX_BATCH } from '#shared/microsoft/batch';
import { inPool } from '#shared/pool';
import type { Folder, FoldersProvider, Page } from '#shared/providers/contract';

/**
 * Provider B's folders, live: Outlook's mail folders through Graph (`…/mailFolders` and each one's
 * `childFolders`). A child folder is named by its own display name, its parent by `parent_id`; the
 * folders at the top of the mailbox (under Outlook's hidden root, `msgfolderroot`) have none. Outlook's
 * well-known folders are system folders with the attributes IMAP gives the same roles (\Inbox,
 * \Drafts, \Sent, \Trash, \Junk, \Archive): Graph v1.0 does not say which folder is which, so their
 * IDs are read by name (`mailFolders/inbox`…), all in one `$batch`, beside the folders themselves.
 * A folder is named by its Graph ID or by a well-known name (`inbox`, `sentitems`, or our `sent`,
 * `trash`, `spam`). Counts are Graph's own. Outlook folders have no colours: setting one is a 400.
 */

interface GraphFolder {
  id: string;
  displayName?: string | null;
  parentFolderId?: string | null;
  childFolderCount?: number | null;
  unreadItemCount?: number | null;
  totalItemCount?: number | null;
  isHidden?: boolean | null;
}

const SCOPE = 'graph-folders';
const FOLDER_SELECT = [
  'id',
  'displayName',
  'parentFolderId',
  'childFolderCount',
  'unreadItemCount',
  'totalItemCount',
  'isHidden',
] as const;
/** Folders asked for at once per page of a listing (Graph's page size is 10 unless asked). */
const PAGE_SIZE = 250;
/** Child folder listings read at once: they travel as one batch. */
const CHILD_CONCURRENCY = MAX_BATCH;

/** The attribute of each well-known folder's role, in the order system folders are listed. */
const ROLES: Partial<Record<WellKnownFolder, string | undefined>> = {
  inbox: '\\Inbox',
  drafts: '\\Drafts',
  sentitems: '\\Sent',
  deleteditems: '\\Trash',
  junkemail: '\\Junk',
  archive: '\\Archive',
  outbox: undefined,
};
const SYSTEM_ORDER = Object.keys(ROLES) as WellKnownFolder[];

/** Which folder of the mailbox each well-known name is (those the mailbox has), and its root. */
interface WellKnown {
  byId: Map<string, WellKnownFolder>;
  rootId: string | undefined;
}

const folderPath = (client: GraphClient, ref: string) =>
  `${client.mailbox}/mailFolders/${encodeURIComponent(folderRef(ref))}`;

const noFolder = (id: string) => new NotFoundError(`No folder '${id}' in this grant's mailbox`);

/** The IDs of the well-known folders, read by name in one batch (a mailbox without one, an archive say, answers 404 for it). */
async function wellKnown(client: GraphClient): Promise<WellKnown> {
  const names = WELL_KNOWN_FOLDERS;
  const answers = await client.all<{ id: string }>(
    names.map((name) => ({ path: `${client.mailbox}/mailFolders/${name}`, query: { $select: ['id'] } })),
  );
  const byId = new Map<string, WellKnownFolder>();
  let rootId: string | undefined;
  answers.forEach((answer, i) => {
    if (answer.status === 'rejected') {
      if (answer.reason instanceof GraphNotFoundError) return;
      throw answer.reason;
    }
    if (names[i] === 'msgfolderroot') rootId = answer.value.id;
    else byId.set(answer.value.id, names[i]!);
  });
  return { byId, rootId };
}

function folderOf(grant: GrantRecord, f: GraphFolder, known: WellKnown): Folder {
  const role = known.byId.get(f.id);
  const parent = f.parentFolderId && f.parentFolderId !== known.rootId ? f.parentFolderId : undefined;
  const attribute = role ? ROLES[role] : undefined;
  return {
    id: f.id,
    object: 'folder',
    grant_id: grant.id,
    name: f.displayName ?? '',
    ...(parent ? { parent_id: parent } : {}),
    system_folder: role !== undefined,
    attributes: attribute ? [attribute] : [],
    ...(f.totalItemCount != null ? { total_count: f.totalItemCount } : {}),
    ...(f.unreadItemCount != null ? { unread_count: f.unreadItemCount } : {}),
    ...(f.childFolderCount != null ? { child_count: f.childFolderCount } : {}),
  };
}

/** Every folder of a collection (`mailFolders`, or a folder's `childFolders`), every page. */
async function collection(client: GraphClient, path: string, hidden: boolean): Promise<GraphFolder[]> {
  const found: GraphFolder[] = [];
  for await (const page of client.pages<GraphFolder>({
    path,
    query: { $top: PAGE_SIZE, $select: FOLDER_SELECT, ...(hidden ? { includeHiddenFolders: 'true' } : {}) },
    batch: true,
  }))
    found.push(...page.value);
  return found;
}

/** The folders under the top ones, level by level (each level's child listings together), parents before their children. */
async function tree(client: GraphClient, top: GraphFolder[], hidden: boolean): Promise<GraphFolder[]> {
  const children = new Map<string, GraphFolder[]>();
  let level = top;
  while (level.length) {
    const next: GraphFolder[] = [];
    await inPool(
      level.filter((f) => (f.childFolderCount ?? 0) > 0),
      CHILD_CONCURRENCY,
      async (f) => {
        const found = await collection(client, `${folderPath(client, f.id)}/childFolders`, hidden);
        children.set(f.id, found);
        next.push(...found);
      },
    );
    level = next;
  }
  const ordered: GraphFolder[] = [];
  const visit = (f: GraphFolder) => {
    ordered.push(f);
    for (const child of children.get(f.id) ?? []) visit(child);
  };
  top.forEach(visit);
  return ordered;
}

/** Outlook's system folders first (of one level), in their usual order, then the others as Graph lists them. */
function systemFirst(folders: GraphFolder[], known: WellKnown): GraphFolder[] {
  const rank = (f: GraphFolder) => {
    const role = known.byId.get(f.id);
    return role ? SYSTEM_ORDER.indexOf(role) : SYSTEM_ORDER.length;
  };
  return folders
    .map((f, i) => ({ f, i }))
    .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
    .map(({ f }) => f);
}

async function readFolder(client: GraphClient, id: string): Promise<GraphFolder> {
  try {
    return await client.call<GraphFolder>({
      path: folderPath(client, id),
      query: { $select: FOLDER_SELECT },
      batch: true,
    });
  } catch (error) {
    if (error instanceof NotFoundError) throw noFolder(id);
    throw error;
  }
}

async function list(grant: GrantRecord, query: ListFoldersQuery, limit: number): Promise<Page<Folder>> {
  const client = await graphClientOf(grant);
  const hidden = query.include_hidden_folders === true;
  // The well-known names' IDs and the first level (the top, or the parent's children), in one batch.
  const [known, level] = await Promise.all([
    wellKnown(client),
    (async () => {
      if (query.parent_id === undefined) return collection(client, `${client.mailbox}/mailFolders`, hidden);
      const parent = folderPath(client, query.parent_id);
      try {
        return await collection(client, `${parent}/childFolders`, hidden);
      } catch (error) {
        if (error instanceof NotFoundError) throw noFolder(query.parent_id);
        throw error;
      }
    })(),
  ]);
  const first = systemFirst(level, known);
  const all = query.parent_id !== undefined || query.single_level ? first : await tree(client, first, hidden);
  const offset = query.page_token ? decodeOffsetCursor(query.page_token, SCOPE) : 0;
  return {
    items: all.slice(offset, offset + limit).map((f) => folderOf(grant, f, known)),
    ...(offset + limit < all.length ? { nextCursor: encodeOffsetCursor(SCOPE, offset + limit) } : {}),
  };
}

async function get(grant: GrantRecord, folderId: string): Promise<Folder> {
  const client = await graphClientOf(grant);
  const [folder, known] = await Promise.all([readFolder(client, folderId), wellKnown(client)]);
  return folderOf(grant, folder, known);
}

function refuseColours(body: { background_color?: string | undefined; text_color?: string | undefined }): void {
  if (body.background_color !== undefined || body.text_color !== undefined)
    throw new InvalidRequestError(
      "Outlook folders have no colours: 'background_color' and 'text_color' are not available for microsoft grants",
    );
}

async function create(grant: GrantRecord, body: CreateFolderBody): Promise<Folder> {
  refuseColours(body);
  const client = await graphClientOf(grant);
  const name = body.name.trim();
  let created: GraphFolder;
  try {
    created = await client.call<GraphFolder>({
      method: 'POST',
      path:
        body.parent_id !== undefined
          ? `${folderPath(client, body.parent_id)}/childFolders`
          : `${client.mailbox}/mailFolders`,
      body: { displayName: name },
    });
  } catch (error) {
    if (error instanceof NotFoundError && body.parent_id !== undefined)
      throw new InvalidRequestError(`'parent_id' names no folder of this grant: '${body.parent_id}'`);
    throw error;
  }
  // A new folder has no role; one made at the top has the root as its parent, which we do not name.
  return folderOf(grant, body.parent_id === undefined ? { ...created, parentFolderId: null } : created, {
    byId: new Map(),
    rootId: undefined,
  });
}

async function update(grant: GrantRecord, folderId: string, body: UpdateFolderBody): Promise<Folder> {
  refuseColours(body);
  if (body.parent_id === folderId) throw new InvalidRequestError("A folder cannot be its own 'parent_id'");
  const client = await graphClientOf(grant);
  const [current, known] = await Promise.all([readFolder(client, folderId), wellKnown(client)]);
  if (known.byId.has(current.id) || current.id === known.rootId)
    throw new InvalidRequestError(`'${folderId}' is a system folder: it cannot be renamed or moved`);
  let folder = current;
  const name = body.name?.trim();
  if (name !== undefined && name !== folder.displayName) {
    folder = await client.call<GraphFolder>({
      method: 'PATCH',
      path: folderPath(client, folder.id),
      body: { displayName: name },
    });
  }
  if (body.parent_id !== undefined) {
    // `null`: back to the top of the mailbox.
    const destination = body.parent_id === null ? 'msgfolderroot' : folderRef(body.parent_id);
    const there =
      body.parent_id === null ? folder.parentFolderId === known.rootId : folder.parentFolderId === body.parent_id;
    if (!there) {
      try {
        folder = await client.call<GraphFolder>({
          method: 'POST',
          path: `${folderPath(client, folder.id)}/move`,
          body: { destinationId: destination },
        });
      } catch (error) {
        if (error instanceof NotFoundError)
          throw new InvalidRequestError(`'parent_id' names no folder of this grant: '${body.parent_id}'`);
        throw error;
      }
    }
  }
  return folderOf(grant, folder, known);
}

async function remove(grant: GrantRecord, folderId: string): Promise<void> {
  const systemRefusal = new InvalidRequestError(`'${folderId}' is a system folder: it cannot be deleted`);
  if (wellKnownFolder(folderId)) throw systemRefusal;
  const client = await graphClientOf(grant);
  try {
    await client.call({ method: 'DELETE', path: folderPath(client, folderId) });
  } catch (error) {
    if (error instanceof NotFoundError) throw noFolder(folderId);
    // A well-known folder named by its ID: Graph refuses it by name.
    if (error instanceof GraphRequestError && error.graphCode === 'ErrorDeleteDistinguishedFolder') throw systemRefusal;
    throw error;
  }
}

export const graphFolders: FoldersProvider = { list, get, create, update, delete: remove };
