import { parseId, type DraftId } from '#shared/ids';

/**
 * The Message-ID header of an IMAP grant's draft as its copy on the server carries it: the draft's
 * ID at the grant's domain, the same for every version. The sync recognises these copies by the
 * header alone (no read, and no window between the APPEND and the draft's commit in which a sync
 * could take the copy for mail), so they never become messages; drafts other clients put in the
 * folder do. Kept apart from shared/imap/drafts.ts so that the sync's bundle takes nothing more.
 */
const domainOf = (email: string) => email.slice(email.lastIndexOf('@') + 1).toLowerCase();

export const draftCopyHeader = (draftId: DraftId, email: string): string => `<${draftId}@${domainOf(email)}>`;

/** Whether a Message-ID header is that of one of the grant's own drafts' copies. */
export function isDraftCopy(header: string, email: string): boolean {
  const match = /^<([^@>]+)@([^>]+)>$/.exec(header.trim());
  return match !== null && parseId('draft', match[1]!) !== undefined && match[2]!.toLowerCase() === domainOf(email);
}
