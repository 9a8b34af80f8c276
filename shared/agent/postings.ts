import { terms } from '#shared/agent/text';
import { kinds, normalAddress } from '#shared/db/postings';
import type { AddressFields, MessageRecord } from '#shared/agent/types';

/**
 * The filter indexes of a message, as posting kinds (see shared/db/keys.ts). Mutable kinds change
 * with PUT (folders, read and star state, metadata) and are written in the same transaction as the
 * message; immutable kinds (thread, participants, subject and text terms) never change after the
 * message is stored. Both are pure functions of the message, so a delete can recompute them.
 */
export const INDEXED_METADATA_KEYS = ['key1', 'key2', 'key3', 'key4', 'key5'] as const;
/** Full-text terms indexed per message (the first distinct ones of subject, participants and body). */
export const MAX_TEXT_TERMS = 1000;

export { kinds, normalAddress };

export function mutablePostings(message: Pick<MessageRecord, 'folders' | 'unread' | 'starred' | 'metadata'>): string[] {
  const out = message.folders.map(kinds.folder);
  if (message.unread) out.push(kinds.unread);
  if (message.starred) out.push(kinds.starred);
  for (const key of INDEXED_METADATA_KEYS) {
    const value = message.metadata[key];
    if (value !== undefined) out.push(kinds.metadata(key, value));
  }
  return out;
}

export function participantText(message: AddressFields): string {
  return [...message.from, ...message.to, ...message.cc, ...message.bcc, ...message.reply_to].map((p) => `${p.name ?? ''} ${p.email}`).join(' ');
}

export function immutablePostings(message: MessageRecord, bodyText: string): string[] {
  const out = new Set<string>([kinds.thread(message.thread_id)]);
  if (message.attachments.length) out.add(kinds.attachment);
  for (const field of ['from', 'to', 'cc', 'bcc'] as const) {
    for (const p of message[field]) {
      out.add(kinds.address(field, p.email));
      out.add(kinds.address('any', p.email));
    }
  }
  for (const word of terms(message.subject)) out.add(kinds.subject(word));
  for (const term of terms(`${message.subject} ${participantText(message)} ${bodyText}`, MAX_TEXT_TERMS)) out.add(kinds.text(term));
  return [...out];
}
