import { getFolder as storedFolder, listFolders as storedFolders } from '#shared/mailbox/folders';
import { folderView } from '#shared/mailbox/views';
import * as repo from '#shared/db/folders';
import type { GrantRecord } from '#shared/db/grants';
import type { FolderRecord } from '#shared/db/mail-records';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { imapFolderId } from '#shared/imap/sync';
import { withImap } from '#shared/imap/session';
import { newNotification } from '#shared/notifications/notification';
import type { FoldersProvider } from '#shared/providers/contract';
import { clock } from '#shared/time';
import type { CreateFolderBody, UpdateFolderBody } from '#schemas/mail';

/**
 * Folders and threads of an IMAP grant. Folders are the server's mailboxes: reads answer from the
 * synced records; create, rename and delete happen on the server first (CREATE, RENAME, DELETE), then
 * in the store with their notification, keeping the folder's ID (a rename changes its path, not its
 * ID). Colours are ours alone (IMAP has none).
 */

const refused = (error: unknown, what: string) => {
  const e = error as { responseText?: string; message?: string };
  return new InvalidRequestError(`The IMAP server refused to ${what}: ${e.responseText ?? e.message ?? String(error)}`);
};

const notify = (grant: GrantRecord, type: 'folder.created' | 'folder.updated' | 'folder.deleted', folder: FolderRecord) => ({
  notification: newNotification({ type, applicationId: grant.application_id, grantId: grant.id, object: folderView(folder, 0) }),
});

async function requireFolder(grant: GrantRecord, folderId: string): Promise<FolderRecord> {
  const folder = await repo.getFolder(grant.id, folderId);
  if (!folder) throw new NotFoundError(`Folder '${folderId}' not found`);
  return folder;
}

async function createImapFolder(grant: GrantRecord, body: CreateFolderBody) {
  const name = body.name.trim();
  const parent = body.parent_id ? await requireFolder(grant, body.parent_id) : undefined;
  if (parent && !parent.server_path) throw new InvalidRequestError(`Folder '${parent.id}' is not on the server`);
  const created = await withImap(grant, async (client) => {
    try {
      return await client.mailboxCreate(parent ? [parent.server_path!, name] : name);
    } catch (error) {
      throw refused(error, `create the folder '${name}'`);
    }
  });
  const now = clock.nowSeconds();
  const folder: FolderRecord = {
    id: imapFolderId(created.path),
    grant_id: grant.id,
    name,
    server_path: created.path,
    ...(parent ? { parent_id: parent.id } : {}),
    ...(body.background_color ? { background_color: body.background_color } : {}),
    ...(body.text_color ? { text_color: body.text_color } : {}),
    system_folder: false,
    attributes: [],
    total_count: 0,
    unread_count: 0,
    created_at: now,
    updated_at: now,
  };
  try {
    await repo.insertFolder(folder, [notify(grant, 'folder.created', folder)]);
  } catch (error) {
    if (error instanceof repo.FolderNameTakenError) throw new ConflictError(`A folder named '${name}' already exists here`);
    throw error;
  }
  return folderView(folder, 0);
}

async function updateImapFolder(grant: GrantRecord, folderId: string, body: UpdateFolderBody) {
  const folder = await requireFolder(grant, folderId);
  if (folder.system_folder && (body.name !== undefined || body.parent_id !== undefined)) {
    throw new InvalidRequestError(`System folder '${folder.id}' cannot be renamed or moved; only its colours can change`);
  }
  if (body.parent_id !== undefined) throw new InvalidRequestError("Moving a folder under another ('parent_id') is not available for IMAP grants; rename it instead");
  let path = folder.server_path;
  const name = body.name?.trim();
  if (name !== undefined && name !== folder.name && folder.server_path) {
    path = await withImap(grant, async (client) => {
      const listed = (await client.list()).find((box) => box.path === folder.server_path);
      const delimiter = listed?.delimiter ?? '/';
      const parentPath = folder.server_path!.includes(delimiter) ? folder.server_path!.slice(0, folder.server_path!.lastIndexOf(delimiter) + 1) : '';
      try {
        return (await client.mailboxRename(folder.server_path!, `${parentPath}${name}`)).newPath;
      } catch (error) {
        throw refused(error, `rename the folder to '${name}'`);
      }
    });
  }
  const after: FolderRecord = {
    ...folder,
    name: name ?? folder.name,
    ...(path ? { server_path: path } : {}),
    background_color: body.background_color ?? folder.background_color,
    text_color: body.text_color ?? folder.text_color,
    updated_at: clock.nowSeconds(),
  };
  await repo.updateFolder(folder, after, [notify(grant, 'folder.updated', after)]);
  return folderView(after, 0);
}

async function deleteImapFolder(grant: GrantRecord, folderId: string): Promise<void> {
  const folder = await requireFolder(grant, folderId);
  if (folder.system_folder) throw new InvalidRequestError(`System folder '${folder.id}' cannot be deleted`);
  if (folder.total_count > 0) throw new ConflictError(`Folder '${folder.id}' still holds ${folder.total_count} message(s); move or delete them first`);
  if (folder.server_path) {
    await withImap(grant, async (client) => {
      try {
        await client.mailboxDelete(folder.server_path!);
      } catch (error) {
        throw refused(error, `delete the folder '${folder.name}'`);
      }
    });
  }
  await repo.deleteFolder(folder, [notify(grant, 'folder.deleted', folder)]);
}

export const imapFolders: FoldersProvider = { list: storedFolders, get: storedFolder, create: createImapFolder, update: updateImapFolder, delete: deleteImapFolder };
