import type { CreateFolderBody, ListFoldersQuery, UpdateFolderBody } from '#schemas/mail';
import { decodeOffsetCursor, encodeOffsetCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { googleClientOf, GoogleNotFoundError, type GoogleClient } from '#shared/google/client';
import { inPool } from '#shared/pool';
import { MAX_BATCH } from '#shared/google/batch';
import type { Folder, FoldersProvider, Page } from '#shared/providers/contract';

/**
 * Provider A's folders, live: Gmail's labels (users.labels). A label named `Parent/Child` is the
 * folder `Child` whose `parent_id` is the label `Parent`; system labels are system folders, with the
 * attributes IMAP gives the same roles (\Inbox, \Sent, \Drafts, \Trash, \Junk, \Flagged, \Important).
 * Counts come from each label's own get (Gmail's list has none). Labels hidden from the label list
 * (`labelHide`) are listed only with `include_hidden_folders=true`.
 */

interface GmailLabel {
  id: string;
  name: string;
  type?: 'system' | 'user';
  labelListVisibility?: 'labelShow' | 'labelShowIfUnread' | 'labelHide';
  messageListVisibility?: 'show' | 'hide';
  messagesTotal?: number;
  messagesUnread?: number;
  color?: { backgroundColor?: string; textColor?: string };
}

const SCOPE = 'gmail-folders';
const LABELS = '/gmail/v1/users/me/labels';
/** Labels read at once (for their counts): one batch. */
const GET_CONCURRENCY = MAX_BATCH;
const ROLES: Record<string, string> = {
  INBOX: '\\Inbox',
  SENT: '\\Sent',
  DRAFT: '\\Drafts',
  TRASH: '\\Trash',
  SPAM: '\\Junk',
  STARRED: '\\Flagged',
  IMPORTANT: '\\Important',
};

const labelPath = (id: string) => {
  if (!/^[0-9A-Za-z_-]{1,128}$/.test(id)) throw new NotFoundError(`No folder '${id}' in this grant's mailbox`);
  return `${LABELS}/${id}`;
};

const parentName = (name: string) => (name.includes('/') ? name.slice(0, name.lastIndexOf('/')) : undefined);
const leafName = (name: string) => name.slice(name.lastIndexOf('/') + 1);

function folderOf(grant: GrantRecord, label: GmailLabel, all: readonly GmailLabel[]): Folder {
  const parent = parentName(label.name);
  const parentId = parent !== undefined ? all.find((l) => l.name === parent)?.id : undefined;
  const role = ROLES[label.id];
  return {
    id: label.id,
    object: 'folder',
    grant_id: grant.id,
    name: label.type === 'system' ? label.name : leafName(label.name),
    ...(parentId ? { parent_id: parentId } : {}),
    ...(label.color?.backgroundColor ? { background_color: label.color.backgroundColor } : {}),
    ...(label.color?.textColor ? { text_color: label.color.textColor } : {}),
    system_folder: label.type === 'system',
    attributes: role ? [role] : [],
    ...(label.messagesTotal !== undefined ? { total_count: label.messagesTotal } : {}),
    ...(label.messagesUnread !== undefined ? { unread_count: label.messagesUnread } : {}),
    child_count: all.filter((l) => parentName(l.name) === label.name).length,
  };
}

async function allLabels(client: GoogleClient): Promise<GmailLabel[]> {
  return (await client.call<{ labels?: GmailLabel[] }>({ api: 'gmail', path: LABELS })).labels ?? [];
}

async function getLabel(client: GoogleClient, id: string): Promise<GmailLabel> {
  try {
    return await client.call<GmailLabel>({ api: 'gmail', path: labelPath(id), batch: true });
  } catch (error) {
    if (error instanceof GoogleNotFoundError) throw new NotFoundError(`No folder '${id}' in this grant's mailbox`);
    throw error;
  }
}

/** The full name of a label under `parentId` (a label of this mailbox, or a 400 naming it). */
function nameUnder(labels: readonly GmailLabel[], parentId: string | null | undefined, name: string): string {
  if (name.includes('/'))
    throw new InvalidRequestError("A google folder's 'name' may not contain '/': use 'parent_id'");
  if (!parentId) return name;
  const parent = labels.find((l) => l.id === parentId);
  if (!parent) throw new InvalidRequestError(`'parent_id' names no folder of this grant: '${parentId}'`);
  if (parent.type === 'system') throw new InvalidRequestError('A system folder cannot hold folders on google grants');
  return `${parent.name}/${name}`;
}

const colorOf = (body: { background_color?: string | undefined; text_color?: string | undefined }) =>
  body.background_color !== undefined || body.text_color !== undefined
    ? {
        color: {
          ...(body.background_color !== undefined ? { backgroundColor: body.background_color.toLowerCase() } : {}),
          ...(body.text_color !== undefined ? { textColor: body.text_color.toLowerCase() } : {}),
        },
      }
    : {};

async function list(grant: GrantRecord, query: ListFoldersQuery, limit: number): Promise<Page<Folder>> {
  const client = await googleClientOf(grant);
  const labels = await allLabels(client);
  const shown = labels.filter((l) => query.include_hidden_folders || l.labelListVisibility !== 'labelHide');
  let folders = shown.map((l) => folderOf(grant, l, labels));
  if (query.parent_id !== undefined) folders = folders.filter((f) => f.parent_id === query.parent_id);
  else if (query.single_level) folders = folders.filter((f) => f.parent_id === undefined);
  const offset = query.page_token ? decodeOffsetCursor(query.page_token, SCOPE) : 0;
  const page = folders.slice(offset, offset + limit);
  // Counts: each label's own get (in parallel, bounded).
  const counted = new Map<string, GmailLabel>();
  await inPool(page, GET_CONCURRENCY, async (f) => void counted.set(f.id, await getLabel(client, f.id)));
  return {
    items: page.map((f) => folderOf(grant, counted.get(f.id)!, labels)),
    ...(offset + limit < folders.length ? { nextCursor: encodeOffsetCursor(SCOPE, offset + limit) } : {}),
  };
}

async function get(grant: GrantRecord, folderId: string): Promise<Folder> {
  const client = await googleClientOf(grant);
  const [label, labels] = await Promise.all([getLabel(client, folderId), allLabels(client)]);
  return folderOf(grant, label, labels);
}

async function create(grant: GrantRecord, body: CreateFolderBody): Promise<Folder> {
  const client = await googleClientOf(grant);
  const labels = await allLabels(client);
  const created = await client.call<GmailLabel>({
    api: 'gmail',
    method: 'POST',
    path: LABELS,
    body: {
      name: nameUnder(labels, body.parent_id, body.name),
      labelListVisibility: 'labelShow',
      messageListVisibility: 'show',
      ...colorOf(body),
    },
  });
  return folderOf(grant, created, [...labels, created]);
}

async function update(grant: GrantRecord, folderId: string, body: UpdateFolderBody): Promise<Folder> {
  const client = await googleClientOf(grant);
  const [label, labels] = await Promise.all([getLabel(client, folderId), allLabels(client)]);
  if (label.type === 'system' && (body.name !== undefined || body.parent_id !== undefined))
    throw new InvalidRequestError(`'${folderId}' is a system folder: it cannot be renamed or moved`);
  const renamed = body.name !== undefined || body.parent_id !== undefined;
  if (body.parent_id === folderId) throw new InvalidRequestError("A folder cannot be its own 'parent_id'");
  const name = renamed
    ? nameUnder(
        labels,
        body.parent_id === undefined ? labels.find((l) => l.name === parentName(label.name))?.id : body.parent_id,
        body.name ?? leafName(label.name),
      )
    : undefined;
  const changed = await client.call<GmailLabel>({
    api: 'gmail',
    method: 'PATCH',
    path: labelPath(folderId),
    body: { ...(name !== undefined ? { name } : {}), ...colorOf(body) },
  });
  return folderOf(
    grant,
    changed,
    labels.map((l) => (l.id === changed.id ? changed : l)),
  );
}

async function remove(grant: GrantRecord, folderId: string): Promise<void> {
  const client = await googleClientOf(grant);
  const label = await getLabel(client, folderId);
  if (label.type === 'system') throw new InvalidRequestError(`'${folderId}' is a system folder: it cannot be deleted`);
  await client.call({ api: 'gmail', method: 'DELETE', path: labelPath(folderId) });
}

export const gmailFolders: FoldersProvider = { list, get, create, update, delete: remove };
