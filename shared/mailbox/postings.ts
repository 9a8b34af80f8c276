import { FORMAT_1_MIN_TERM, terms } from '#shared/mailbox/text';
import type { TokenQuery } from '#shared/search/plan';
import { kinds, normalAddress } from '#shared/db/postings';
import type { AddressFields, MessageRecord } from '#shared/mailbox/types';

/**
 * What a message is found by. Two kinds of index:
 *
 * - **Postings** (DynamoDB items, see shared/db/keys.ts) for what changes or must be read by a Query:
 *   folders, read and star state, metadata (changed by PUT) and the thread (read by thread
 *   refreshes). They are written in the message's own transaction.
 * - **Search tokens** (the mailbox's search index, shared/mailbox/search-index.ts) for what never
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

/** Token names of the search index: one tokenizer (shared/mailbox/text.ts) for messages and queries. */
export const tokens = {
  text: (term: string) => `t:${term}`,
  subject: (word: string) => `s:${word}`,
  address: (field: 'from' | 'to' | 'cc' | 'bcc' | 'any', email: string) => `a:${field}:${normalAddress(email)}`,
  attachment: 'has:attachment',
} as const;

/**
 * The token every document indexed since format 2 holds (whole words of one character and more).
 * A document without it was indexed by format 1, which left words of one character out: its entry
 * or segment says nothing about them (see format1Split).
 */
export const FORMAT_TOKEN = 'format:2';

const WORD_TOKEN = /^[ts]:/;

/** Whether a format-1 document lacks `token` whatever its message says (a word of one character). */
const unknownToFormat1 = (token: string) => WORD_TOKEN.test(token) && token.length - 2 < FORMAT_1_MIN_TERM;

/**
 * A query split for documents of format 1: `known`, what their tokens answer (the query less its
 * one-character words), and `rest`, the groups and exclusions of one-character words, which only
 * the message itself can answer. Such a document matches the query when it matches both. Undefined
 * when the query has no one-character word: format 1 answers it as format 2 does.
 */
export function format1Split(q: TokenQuery): { known: TokenQuery; rest: TokenQuery } | undefined {
  const unknownGroup = (group: readonly string[]) => group.some(unknownToFormat1);
  if (!q.all.some(unknownGroup) && !q.none.some(unknownToFormat1)) return undefined;
  return {
    known: { all: q.all.filter((g) => !unknownGroup(g)), none: q.none.filter((t) => !unknownToFormat1(t)) },
    rest: { all: q.all.filter(unknownGroup), none: q.none.filter(unknownToFormat1) },
  };
}

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
export function messagePostings(
  message: Pick<MessageRecord, 'folders' | 'unread' | 'starred' | 'metadata' | 'thread_id'>,
): string[] {
  return [...mutablePostings(message), kinds.thread(message.thread_id)];
}

export function participantText(message: AddressFields): string {
  return [...message.from, ...message.to, ...message.cc, ...message.bcc, ...message.reply_to]
    .map((p) => `${p.name ?? ''} ${p.email}`)
    .join(' ');
}

/**
 * The search tokens of a message: FORMAT_TOKEN, `a:<field>:<address>` for from, to, cc, bcc and any
 * of them, `has:attachment`, `s:<word>` for subject words, `t:<term>` for terms of subject,
 * participants and body. At most MAX_TOKEN_BYTES of them (the entry is one DynamoDB item).
 */
export function searchTokens(
  message: Pick<MessageRecord, 'subject' | 'from' | 'to' | 'cc' | 'bcc' | 'reply_to' | 'attachments'>,
  bodyText: string,
): string[] {
  // First, so that the byte cap below never leaves it out.
  const out = new Set<string>([FORMAT_TOKEN]);
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
  for (const term of terms(`${message.subject} ${participantText(message)} ${bodyText}`, MAX_TEXT_TERMS))
    out.add(tokens.text(term));
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
  // As they were written: words of FORMAT_1_MIN_TERM characters and more.
  for (const word of terms(message.subject, Infinity, FORMAT_1_MIN_TERM)) out.add(kinds.subject(word));
  for (const term of terms(`${message.subject} ${participantText(message)} ${bodyText}`, 1000, FORMAT_1_MIN_TERM))
    out.add(kinds.text(term));
  return [...out];
}
