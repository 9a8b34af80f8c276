import type { FolderRecord } from '#shared/mailbox/types';
import type { GrantId } from '#shared/ids';

/**
 * Folders of an Agent Account. Every mailbox starts with the six system folders below; their IDs
 * are stable (the same in every mailbox) and they can be recoloured but not renamed or deleted.
 */
export const SYSTEM_FOLDERS = [
  { id: 'inbox', name: 'Inbox', attributes: ['\\Inbox'] },
  { id: 'sent', name: 'Sent', attributes: ['\\Sent'] },
  { id: 'drafts', name: 'Drafts', attributes: ['\\Drafts'] },
  { id: 'trash', name: 'Trash', attributes: ['\\Trash'] },
  { id: 'spam', name: 'Spam', attributes: ['\\Junk'] },
  { id: 'archive', name: 'Archive', attributes: ['\\Archive'] },
] as const;
const SYSTEM_IDS = new Set<string>(SYSTEM_FOLDERS.map((f) => f.id));
export const isSystemFolder = (id: string) => SYSTEM_IDS.has(id);

export function systemFolderRecords(grantId: GrantId, now: number): FolderRecord[] {
  return SYSTEM_FOLDERS.map((f) => ({
    id: f.id,
    grant_id: grantId,
    name: f.name,
    system_folder: true,
    attributes: [...f.attributes],
    total_count: 0,
    unread_count: 0,
    created_at: now,
    updated_at: now,
  }));
}
