/**
 * Posting kinds: the names of a mailbox's filter indexes (see shared/db/keys.ts `postingKey`). The
 * Agent code derives which kinds a message or draft has (shared/mailbox/postings.ts); storage and
 * queries name them through these builders.
 */
export const normalAddress = (email: string) => email.trim().toLowerCase();

export const kinds = {
  folder: (folderId: string) => `in:${folderId}`,
  thread: (threadId: string) => `thread:${threadId}`,
  unread: 'unread',
  starred: 'starred',
  attachment: 'attach',
  metadata: (key: string, value: string) => `meta:${key}=${value}`,
  address: (field: 'from' | 'to' | 'cc' | 'bcc' | 'any', email: string) => `${field}:${normalAddress(email)}`,
  subject: (word: string) => `subj:${word}`,
  text: (term: string) => `text:${term}`,
  draftThread: (threadId: string) => `draftthread:${threadId}`,
} as const;
