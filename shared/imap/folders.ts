import { storedFolders } from '#shared/mailbox/folders';
import type { GrantRecord } from '#shared/db/grants';
import type { FolderRecord } from '#shared/db/mail-records';
import { InvalidRequestError } from '#shared/errors';
import { imapFolderId } from '#shared/imap/sync';
import { withImap } from '#shared/imap/session';
import type { FolderServer, FoldersProvider } from '#shared/providers/contract';

/**
 * Folders of an IMAP grant: the stored mailbox's (shared/mailbox/folders.ts), with the account's
 * server behind it. Create, rename and delete happen on the server first (CREATE, RENAME, DELETE),
 * then in the store with their notification, keeping the folder's ID (a rename changes its path, not
 * its ID). Colours are ours alone (IMAP has none).
 */

const refused = (error: unknown, what: string) => {
  const e = error as { responseText?: string; message?: string };
  return new InvalidRequestError(`The IMAP server refused to ${what}: ${e.responseText ?? e.message ?? String(error)}`);
};

export const imapFolderServer: FolderServer = {
  async create(grant: GrantRecord, name: string, parent: FolderRecord | undefined) {
    if (parent && !parent.server_path) throw new InvalidRequestError(`Folder '${parent.id}' is not on the server`);
    const created = await withImap(grant, async (client) => {
      try {
        return await client.mailboxCreate(parent ? [parent.server_path!, name] : name);
      } catch (error) {
        throw refused(error, `create the folder '${name}'`);
      }
    });
    return { id: imapFolderId(created.path), serverPath: created.path };
  },
  async rename(grant, folder, name) {
    const path = folder.server_path!;
    return withImap(grant, async (client) => {
      const listed = (await client.list()).find((box) => box.path === path);
      const delimiter = listed?.delimiter ?? '/';
      const parentPath = path.includes(delimiter) ? path.slice(0, path.lastIndexOf(delimiter) + 1) : '';
      try {
        return (await client.mailboxRename(path, `${parentPath}${name}`)).newPath;
      } catch (error) {
        throw refused(error, `rename the folder to '${name}'`);
      }
    });
  },
  async delete(grant, folder) {
    await withImap(grant, async (client) => {
      try {
        await client.mailboxDelete(folder.server_path!);
      } catch (error) {
        throw refused(error, `delete the folder '${folder.name}'`);
      }
    });
  },
  refusesMoves: "Moving a folder under another ('parent_id') is not available for IMAP grants; rename it instead",
};

export const imapFolders: FoldersProvider = storedFolders(imapFolderServer);
