/**
 * Text handling for mailbox search: one tokenizer for indexing and for queries, so "whole keyword,
 * case-insensitive" means the same thing on both sides.
 */
import { decodeEntities } from '#shared/mail/entities';

const TOKEN = /[\p{L}\p{N}]+/gu;
export const MAX_TERM = 64;
/**
 * The shortest word the search index held before format 2 (shared/mailbox/postings.ts, FORMAT_TOKEN):
 * words of one character were left out then, on both sides. Only what must reproduce that format
 * passes it (the postings of messages stored before the search index, removed with them).
 */
export const FORMAT_1_MIN_TERM = 2;

/**
 * Lowercased whole words of letters or digits, in order of appearance, duplicates kept: one
 * character ("7", "a") to MAX_TERM (longer runs are no word anyone searches for). `minLength` is
 * FORMAT_1_MIN_TERM only where the old format must be reproduced.
 */
export function words(text: string, minLength = 1): string[] {
  const out: string[] = [];
  for (const match of text.toLowerCase().normalize('NFC').matchAll(TOKEN)) {
    const word = match[0];
    if (word.length >= minLength && word.length <= MAX_TERM) out.push(word);
  }
  return out;
}

/** Distinct words, first occurrence first, at most `max`. */
export function terms(text: string, max = Infinity, minLength = 1): string[] {
  const seen = new Set<string>();
  for (const word of words(text, minLength)) {
    if (seen.size >= max) break;
    seen.add(word);
  }
  return [...seen];
}

/** Readable text of an HTML body, for search and snippets (not for display). */
export function htmlToText(html: string): string {
  return decodeEntities(
    html
      .replace(/<(script|style|head|title)\b[\s\S]*?<\/\1\s*>/gi, ' ')
      .replace(/<!--[\s\S]*?-->/g, ' ')
      .replace(/<(br|\/p|\/div|\/li|\/tr|\/h[1-6])\b[^>]*>/gi, '\n')
      .replace(/<[^>]*>/g, ' '),
  )
    .replace(/[ \t\f\v\u00a0]+/g, ' ')
    .replace(/\s*\n\s*/g, '\n')
    .trim();
}

export function bodyText(body: string, isPlaintext: boolean): string {
  return isPlaintext ? body : htmlToText(body);
}

export function snippetOf(text: string, length = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= length ? flat : `${flat.slice(0, length - 1)}…`;
}
