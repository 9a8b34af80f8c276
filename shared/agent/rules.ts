import { SYSTEM_FOLDERS } from '#shared/agent/system-folders';
import * as folders from '#shared/db/folders';
import type { GrantRecord } from '#shared/db/grants';
import type { AppliedActions } from '#shared/governance/engine';

/**
 * What the actions of matched rules do to an Agent Account's copy of a message, before it is
 * stored: the folder it lands in (spam, trash, archive, or the folder an assign_to_folder names, by
 * name or path; system folders by name too) and its read and starred flags.
 */
export interface Placement {
  folders: string[];
  unread: boolean;
  starred: boolean;
  /** The folder IDs the rules put it in (for the evaluation record). */
  folderIds: string[];
}

const SYSTEM_NAMES = new Map<string, string>([
  ...SYSTEM_FOLDERS.flatMap(
    (f) =>
      [
        [f.id, f.id],
        [f.name.toLowerCase(), f.id],
      ] as [string, string][],
  ),
  ['junk', 'spam'],
]);

/** The folder a name or path (`Clients/Acme`) names in this mailbox, if any. */
async function folderNamed(grant: GrantRecord, value: string): Promise<string | undefined> {
  const path = value
    .split('/')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  if (path.length === 1 && SYSTEM_NAMES.has(path[0]!)) return SYSTEM_NAMES.get(path[0]!);
  const all = await folders.listFolders(grant.id);
  let parent: string | undefined;
  let found: string | undefined;
  for (const segment of path) {
    const match = all.find((f) => (f.parent_id ?? undefined) === parent && f.name.toLowerCase() === segment);
    if (!match) return undefined;
    found = match.id;
    parent = match.id;
  }
  return found;
}

export async function placementOf(grant: GrantRecord, actions: AppliedActions, base: { folders: string[]; unread: boolean; starred: boolean }): Promise<Placement> {
  let destination: string | undefined;
  if (actions.marked_as_spam) destination = 'spam';
  else if (actions.trashed) destination = 'trash';
  else if (actions.archived) destination = 'archive';
  else {
    for (const value of actions.folder_ids) {
      destination = await folderNamed(grant, value);
      if (destination) break;
    }
  }
  return {
    folders: destination ? [destination] : base.folders,
    unread: actions.marked_as_read ? false : base.unread,
    starred: actions.marked_starred || base.starred,
    folderIds: destination ? [destination] : [],
  };
}
