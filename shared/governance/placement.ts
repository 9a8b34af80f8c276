import type { GrantRecord } from '#shared/db/grants';
import type { AppliedActions } from '#shared/governance/engine';
import type { Folder, FoldersProvider } from '#shared/providers/contract';

/**
 * What the actions of matched rules do to a mailbox's copy of a message, before it is stored, for
 * every provider: the folder it lands in (spam, trash, archive, or the folder an assign_to_folder
 * names, by name or path; system folders by ID, name or role too) and its read and starred flags.
 * Folders are listed through the provider contract (the caller passes its provider's
 * `FoldersProvider.list`) and found by their SPECIAL-USE attributes for the roles, so a provider's own
 * folder IDs never matter here.
 */
export interface Placement {
  folders: string[];
  unread: boolean;
  starred: boolean;
  /** The folder IDs the rules put it in (for the evaluation record). */
  folderIds: string[];
}

/** Roles (RFC 6154 SPECIAL-USE attributes) by the names rules may use for them. */
const ROLES = new Map<string, string>([
  ['inbox', '\\Inbox'],
  ['sent', '\\Sent'],
  ['drafts', '\\Drafts'],
  ['trash', '\\Trash'],
  ['spam', '\\Junk'],
  ['junk', '\\Junk'],
  ['archive', '\\Archive'],
]);

const PAGE = 1000;

/** Every folder of the mailbox, through its provider. */
async function foldersIn(grant: GrantRecord, list: FoldersProvider['list']): Promise<Folder[]> {
  const all: Folder[] = [];
  let pageToken: string | undefined;
  do {
    const page = await list(grant, pageToken ? { page_token: pageToken } : {}, PAGE);
    all.push(...page.items);
    pageToken = page.nextCursor;
  } while (pageToken);
  return all;
}

const withRole = (all: Folder[], role: string) =>
  all.find((f) => f.system_folder && f.attributes?.includes(role)) ?? all.find((f) => f.attributes?.includes(role));

/** The folder a name or path (`Clients/Acme`) names in this mailbox, if any. */
function folderNamed(all: Folder[], value: string): string | undefined {
  const path = value
    .split('/')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  if (path.length === 1) {
    const segment = path[0]!;
    const system = all.find(
      (f) => f.system_folder && (f.id.toLowerCase() === segment || f.name.toLowerCase() === segment),
    );
    if (system) return system.id;
    const role = ROLES.get(segment);
    const byRole = role ? withRole(all, role) : undefined;
    if (byRole) return byRole.id;
  }
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

export async function placementOf(
  grant: GrantRecord,
  actions: AppliedActions,
  base: { folders: string[]; unread: boolean; starred: boolean },
  listFolders: FoldersProvider['list'],
): Promise<Placement> {
  const role = actions.marked_as_spam
    ? '\\Junk'
    : actions.trashed
      ? '\\Trash'
      : actions.archived
        ? '\\Archive'
        : undefined;
  let destination: string | undefined;
  if (role || actions.folder_ids.length) {
    const all = await foldersIn(grant, listFolders);
    if (role) destination = withRole(all, role)?.id;
    else {
      for (const value of actions.folder_ids) {
        destination = folderNamed(all, value);
        if (destination) break;
      }
    }
  }
  return {
    folders: destination ? [destination] : base.folders,
    unread: actions.marked_as_read ? false : base.unread,
    starred: actions.marked_starred || base.starred,
    folderIds: destination ? [destination] : [],
  };
}
