import { terms } from '#shared/agent/text';
import { kinds, normalAddress } from '#shared/db/postings';
import type { AddressFields, MessageRecord } from '#shared/agent/types';

/**
 * What a message is found by. Two kinds of index:
 *
 * - **Postings** (DynamoDB items, see shared/db/keys.ts) for what changes or must be read by a Query:
 *   folders, read and star state, metadata (changed by PUT) and the thread (read by thread
 *   refreshes). They are written in the message's own transaction.
 * - **Search tokens** (the mailbox's search index, shared/agent/search-index.ts) for what never
 *   changes: full-text terms, subject words, addresses and attachments, written as one search entry
 *   in the same transaction, whatever their number.
 *
 * Both are pure functions of the message, so a delete or a purge recomputes them.
 */
export const INDEXED_METADATA_KEYS = ['key1', 'key2', 'key3', 'key4', 'key5'] as const;
/**
 * Full-text terms indexed per message (the first distinct ones of subject, participants and body).
 * Terms cost no writes any more (one entry holds them all): the cap only keeps an entry well inside
 * DynamoDB's 400 KB item limit, with MAX_TOKEN_BYTES.
 */
export const MAX_TEXT_TERMS = 10_000;
/** Bytes of tokens one search entry holds at most (terms beyond are left out, last first). */
export const MAX_TOKEN_BYTES = 256 * 1024;

export { kinds, normalAddress };

/** Token names of the search index: one tokenizer (shared/agent/text.ts) for messages and queries. */
export const tokens = {
  text: (term: string) => `t:${term}`,
  subject: (word: string) => `s:${word}`,
  address: (field: 'from' | 'to' | 'cc' | 'bcc' | 'any', email: string) => `a:${field}:${normalAddress(email)}`,
  attachment: 'has:attachment',
} as const;

/** Postings that change with the message (written, moved and removed in its transactions). */
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

/** Every posting of a stored message: its mutable ones and its thread membership. */
export function messagePostings(message: Pick<MessageRecord, 'folders' | 'unread' | 'starred' | 'metadata' | 'thread_id'>): string[] {
  return [...mutablePostings(message), kinds.thread(message.thread_id)];
}

export function participantText(message: AddressFields): string {
  return [...message.from, ...message.to, ...message.cc, ...message.bcc, ...message.reply_to].map((p) => `${p.name ?? ''} ${p.email}`).join(' ');
}

/**
 * The search tokens of a message: `a:<field>:<address>` for from, to, cc, bcc and any of them,
 * `has:attachment`, `s:<word>` for subject words, `t:<term>` for terms of subject, participants and
 * body. At most MAX_TOKEN_BYTES of them (the entry is one DynamoDB item).
 */
export function searchTokens(message: Pick<MessageRecord, 'subject' | 'from' | 'to' | 'cc' | 'bcc' | 'reply_to' | 'attachments'>, bodyText: string): string[] {
  const out = new Set<string>();
  if (message.attachments.length) out.add(tokens.attachment);
  for (const field of ['from', 'to', 'cc', 'bcc'] as const) {
    for (const p of message[field]) {
      // An address with a line break could never be asked for (filters refuse whitespace), and would split the entry.
      if (/[\r\n]/.test(p.email)) continue;
      out.add(tokens.address(field, p.email));
      out.add(tokens.address('any', p.email));
    }
  }
  for (const word of terms(message.subject)) out.add(tokens.subject(word));
  for (const term of terms(`${message.subject} ${participantText(message)} ${bodyText}`, MAX_TEXT_TERMS)) out.add(tokens.text(term));
  const list: string[] = [];
  let bytes = 0;
  for (const token of out) {
    bytes += Buffer.byteLength(token) + 1;
    if (bytes > MAX_TOKEN_BYTES) break;
    list.push(token);
  }
  return list;
}

/**
 * The postings messages stored before the search index had besides the above (text, subject,
 * addresses, attachment): still removed with such a message, so that nothing of it stays behind.
 */
export function legacyPostings(message: MessageRecord, bodyText: string): string[] {
  const out = new Set<string>();
  if (message.attachments.length) out.add(kinds.attachment);
  for (const field of ['from', 'to', 'cc', 'bcc'] as const) {
    for (const p of message[field]) {
      out.add(kinds.address(field, p.email));
      out.add(kinds.address('any', p.email));
    }
  }
  for (const word of terms(message.subject)) out.add(kinds.subject(word));
  for (const term of terms(`${message.subject} ${participantText(message)} ${bodyText}`, 1000)) out.add(kinds.text(term));
  return [...out];
}
