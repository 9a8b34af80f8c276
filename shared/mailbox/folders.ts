import { SYSTEM_FOLDERS } from '#shared/mailbox/system-folders';
import type { FolderRecord } from '#shared/mailbox/types';
export { isSystemFolder } from '#shared/mailbox/system-folders';
import { folderView } from '#shared/mailbox/views';
import { decodeOffsetCursor, encodeOffsetCursor } from '#shared/cursor';
import * as repo from '#shared/db/folders';
import { FolderChangedError, FolderNameTakenError } from '#shared/db/folders';
import type { GrantRecord } from '#shared/db/grants';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { newId, type GrantId } from '#shared/ids';
import { clock } from '#shared/time';
import type { CreateFolderBody, ListFoldersQuery, UpdateFolderBody } from '#schemas/mail';
import type { OutboxEntry } from '#shared/db/outbox';
import { newNotification } from '#shared/notifications/notification';
import type { FolderServer, FoldersProvider } from '#shared/providers/contract';

/** Folders of a stored mailbox (system folders: shared/mailbox/system-folders.ts); storedFolders below binds a mail server behind them. */
/** Custom folders per mailbox. */
const MAX_FOLDERS = 1000;

function ordered(folders: FolderRecord[]): FolderRecord[] {
  const system = SYSTEM_FOLDERS.map((s) => folders.find((f) => f.id === s.id)).filter((f): f is FolderRecord => !!f);
  const custom = folders
    .filter((f) => !f.system_folder)
    .sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  return [...system, ...custom];
}

const childCounts = (folders: FolderRecord[]) => {
  const counts = new Map<string, number>();
  for (const f of folders) if (f.parent_id) counts.set(f.parent_id, (counts.get(f.parent_id) ?? 0) + 1);
  return counts;
};

export async function requireFolder(grantId: GrantId, folderId: string): Promise<FolderRecord> {
  const folder = await repo.getFolder(grantId, folderId);
  if (!folder) throw new NotFoundError(`Folder '${folderId}' not found`);
  return folder;
}

/** Checks that every folder ID exists in the mailbox (404 naming the first unknown one). */
export async function requireFolders(grantId: GrantId, ids: string[]): Promise<void> {
  const found = new Set((await repo.getFolders(grantId, ids)).map((f) => f.id));
  const missing = ids.find((id) => !found.has(id));
  if (missing) throw new NotFoundError(`Folder '${missing}' not found`);
}

export async function listFolders(grant: GrantRecord, query: ListFoldersQuery, limit: number) {
  const all = await repo.listFolders(grant.id);
  const counts = childCounts(all);
  let folders = ordered(all);
  if (query.parent_id !== undefined) {
    if (!all.some((f) => f.id === query.parent_id)) throw new NotFoundError(`Folder '${query.parent_id}' not found`);
    folders = folders.filter((f) => f.parent_id === query.parent_id);
  } else if (query.single_level) {
    folders = folders.filter((f) => !f.parent_id);
  }
  // Agent Accounts have no hidden folders, so include_hidden_folders changes nothing.
  const offset = query.page_token ? decodeOffsetCursor(query.page_token, 'folders') : 0;
  const page = folders.slice(offset, offset + limit);
  const next = offset + limit < folders.length ? encodeOffsetCursor('folders', offset + limit) : undefined;
  return { items: page.map((f) => folderView(f, counts.get(f.id) ?? 0)), nextCursor: next };
}

/** Every folder of the mailbox (one Query) and the one asked for (404 if absent). */
async function withFolders(grantId: GrantId, folderId: string): Promise<{ folder: FolderRecord; all: FolderRecord[] }> {
  const all = await repo.listFolders(grantId);
  const folder = all.find((f) => f.id === folderId);
  if (!folder) throw new NotFoundError(`Folder '${folderId}' not found`);
  return { folder, all };
}

export async function getFolder(grant: GrantRecord, folderId: string) {
  const { folder, all } = await withFolders(grant.id, folderId);
  return folderView(folder, childCounts(all).get(folder.id) ?? 0);
}

function checkParent(all: FolderRecord[], parentId: string, selfId?: string) {
  const byId = new Map(all.map((f) => [f.id, f]));
  if (!byId.has(parentId)) throw new NotFoundError(`Parent folder '${parentId}' not found`);
  // Moving a folder under itself or one of its descendants would make a cycle.
  for (let cursor: string | undefined = parentId, depth = 0; cursor; cursor = byId.get(cursor)?.parent_id, depth++) {
    if (cursor === selfId) throw new InvalidRequestError("'parent_id' would make the folder its own ancestor");
    if (depth > 64) throw new InvalidRequestError('Folders can be nested at most 64 levels deep');
  }
}

/** folder.created/updated/deleted, committed with the change. */
const folderNotification = (
  grant: GrantRecord,
  type: 'folder.created' | 'folder.updated' | 'folder.deleted',
  object: ReturnType<typeof folderView>,
): OutboxEntry => ({
  notification: newNotification({ type, applicationId: grant.application_id, grantId: grant.id, object }),
});

/**
 * The folders of a stored mailbox: reads answer from its records; a change is made on its mail
 * server first when it has one (IMAP's CREATE, RENAME, DELETE), then committed in the mailbox with
 * its notification. The Agent Account's mailbox has no server. A folder keeps its ID when renamed.
 */
export function storedFolders(server?: FolderServer): FoldersProvider {
  return {
    list: listFolders,
    get: getFolder,
    create: (grant, body) => createFolder(grant, body, server),
    update: (grant, folderId, body) => updateFolder(grant, folderId, body, server),
    delete: (grant, folderId) => deleteFolder(grant, folderId, server),
  };
}

async function createFolder(grant: GrantRecord, body: CreateFolderBody, server?: FolderServer) {
  const name = body.name.trim();
  const all = await repo.listFolders(grant.id);
  if (body.parent_id) checkParent(all, body.parent_id);
  if (all.length >= MAX_FOLDERS + SYSTEM_FOLDERS.length)
    throw new ConflictError(`A mailbox can hold at most ${MAX_FOLDERS} folders`);
  const parent = body.parent_id ? all.find((f) => f.id === body.parent_id) : undefined;
  const onServer = server ? await server.create(grant, name, parent) : undefined;
  const now = clock.nowSeconds();
  const folder: FolderRecord = {
    id: onServer?.id ?? newId('folder'),
    grant_id: grant.id,
    name,
    ...(onServer ? { server_path: onServer.serverPath } : {}),
    parent_id: body.parent_id,
    background_color: body.background_color,
    text_color: body.text_color,
    system_folder: false,
    attributes: [],
    total_count: 0,
    unread_count: 0,
    created_at: now,
    updated_at: now,
  };
  const view = folderView(folder, 0);
  try {
    await repo.insertFolder(folder, [folderNotification(grant, 'folder.created', view)]);
  } catch (error) {
    if (error instanceof FolderNameTakenError) throw new ConflictError(`A folder named '${name}' already exists here`);
    throw error;
  }
  return view;
}

async function updateFolder(grant: GrantRecord, folderId: string, body: UpdateFolderBody, server?: FolderServer) {
  const { folder, all } = await withFolders(grant.id, folderId);
  if (folder.system_folder && (body.name !== undefined || body.parent_id !== undefined)) {
    throw new InvalidRequestError(
      `System folder '${folder.id}' cannot be renamed or moved; only its colours can change`,
    );
  }
  if (body.parent_id !== undefined && server?.refusesMoves) throw new InvalidRequestError(server.refusesMoves);
  if (body.parent_id) checkParent(all, body.parent_id, folder.id);
  const name = body.name?.trim() ?? folder.name;
  const serverPath =
    server && name !== folder.name && folder.server_path
      ? await server.rename(grant, folder, name)
      : folder.server_path;
  const after: FolderRecord = {
    ...folder,
    name,
    ...(serverPath ? { server_path: serverPath } : {}),
    parent_id: body.parent_id === null ? undefined : (body.parent_id ?? folder.parent_id),
    background_color: body.background_color ?? folder.background_color,
    text_color: body.text_color ?? folder.text_color,
    updated_at: clock.nowSeconds(),
  };
  const view = folderView(after, childCounts(all).get(after.id) ?? 0);
  try {
    await repo.updateFolder(folder, after, [folderNotification(grant, 'folder.updated', view)]);
  } catch (error) {
    if (error instanceof FolderNameTakenError)
      throw new ConflictError(`A folder named '${after.name}' already exists here`);
    if (error instanceof FolderChangedError)
      throw new ConflictError('The folder was changed by another request; fetch it again and retry');
    throw error;
  }
  return view;
}

async function deleteFolder(grant: GrantRecord, folderId: string, server?: FolderServer): Promise<void> {
  const { folder, all } = await withFolders(grant.id, folderId);
  if (folder.system_folder) throw new InvalidRequestError(`System folder '${folder.id}' cannot be deleted`);
  if (all.some((f) => f.parent_id === folder.id))
    throw new ConflictError(`Folder '${folder.id}' has subfolders; delete or move them first`);
  if (folder.total_count > 0) {
    throw new ConflictError(
      `Folder '${folder.id}' still holds ${folder.total_count} message(s); move or delete them first`,
    );
  }
  if (server && folder.server_path) await server.delete(grant, folder);
  try {
    await repo.deleteFolder(folder, [folderNotification(grant, 'folder.deleted', folderView(folder, 0))]);
  } catch (error) {
    if (error instanceof FolderChangedError)
      throw new ConflictError(`Folder '${folder.id}' received messages meanwhile; move or delete them first`);
    throw error;
  }
}
