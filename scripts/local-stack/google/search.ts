/**
 * Search for the local Gmail fake: Gmail's `q` parsed into terms (the part of it the fake understands;
 * the rest is refused with a 400) and compiled into a matcher over stored messages, plus the rule that
 * hides SPAM and TRASH from a listing.
 */

import { DateTime } from 'luxon';
import { invalid } from './errors';
import type { Mailbox, StoredMessage } from './gmail';

/** Gmail's system label IDs; `in:`/`label:` name them in lower case. */
export const SYSTEM_LABELS = [
  'INBOX',
  'SENT',
  'DRAFT',
  'TRASH',
  'SPAM',
  'STARRED',
  'UNREAD',
  'IMPORTANT',
  'CHAT',
  'CATEGORY_PERSONAL',
  'CATEGORY_SOCIAL',
  'CATEGORY_PROMOTIONS',
  'CATEGORY_UPDATES',
  'CATEGORY_FORUMS',
] as const;

const OPERATORS = ['from', 'to', 'cc', 'bcc', 'subject', 'in', 'label', 'is', 'has', 'after', 'before'] as const;
type Operator = (typeof OPERATORS)[number];

interface Term {
  negate: boolean;
  operator?: Operator;
  value: string;
}

/** A parsed `q`: terms combined as Gmail combines them. */
export type Query =
  | { kind: 'term'; term: Term }
  | { kind: 'all'; items: Query[] }
  | { kind: 'any'; items: Query[] }
  | { kind: 'not'; item: Query };

/**
 * Parses `q` as Gmail reads it: items separated by spaces must all match; `a OR b` (or `a | b`)
 * and `{a b}` match either; `(a b)` groups; `-` negates an item or a group. Items are words,
 * "quoted phrases" and `operator:value`. What the fake does not understand (other operators, `AND`,
 * unbalanced brackets) is refused with a 400 rather than searched wrongly.
 */
export function parseQuery(q: string): Query {
  let pos = 0;
  const unsupported = (what: string) => invalid(`Invalid query: the local fake does not support ${what} (q=${q})`);
  const skip = () => {
    while (pos < q.length && /\s/.test(q[pos]!)) pos++;
  };
  const orWord = () => {
    const m = /^(OR|\|)(?=\s|$)/.exec(q.slice(pos));
    return m ? m[0] : undefined;
  };

  /** Items up to `close` (or the end), `OR` joining neighbours. */
  function sequence(close: ')' | '}' | undefined): Query[] {
    const items: Query[] = [];
    for (;;) {
      skip();
      if (pos >= q.length) {
        if (close) throw invalid(`Invalid query: '${close}' missing (q=${q})`);
        return items;
      }
      if (q[pos] === ')' || q[pos] === '}') {
        if (q[pos] !== close) throw invalid(`Invalid query: unexpected '${q[pos]}' (q=${q})`);
        pos++;
        return items;
      }
      const word = orWord();
      if (word) {
        const left = items.pop();
        pos += word.length;
        skip();
        if (!left || pos >= q.length || ')}'.includes(q[pos]!))
          throw invalid(`Invalid query: ${word} needs an item on each side (q=${q})`);
        const right = item();
        items.push({ kind: 'any', items: left.kind === 'any' ? [...left.items, right] : [left, right] });
        continue;
      }
      items.push(item());
    }
  }

  function item(): Query {
    const negate = q[pos] === '-';
    if (negate) pos++;
    let node: Query;
    if (q[pos] === '(' || q[pos] === '{') {
      const open = q[pos]!;
      pos++;
      const items = sequence(open === '(' ? ')' : '}');
      if (!items.length) throw invalid(`Invalid query: empty '${open}' (q=${q})`);
      node = open === '(' ? { kind: 'all', items } : { kind: 'any', items };
      return negate ? { kind: 'not', item: node } : node;
    }
    const op = /^([A-Za-z_]+):/.exec(q.slice(pos));
    let operator: Operator | undefined;
    if (op) {
      const name = op[1]!.toLowerCase();
      if (!(OPERATORS as readonly string[]).includes(name)) throw unsupported(`the operator ${name}:`);
      operator = name as Operator;
      pos += op[0].length;
    }
    let value: string;
    if (q[pos] === '"') {
      const close = q.indexOf('"', pos + 1);
      if (close < 0) throw invalid(`Invalid query: unterminated quote (q=${q})`);
      value = q.slice(pos + 1, close);
      pos = close + 1;
    } else {
      value = /^[^\s(){}]*/.exec(q.slice(pos))?.[0] ?? '';
      pos += value.length;
    }
    if (!operator && value === 'AND') throw unsupported(value);
    if (value === '')
      throw invalid(`Invalid query: ${operator ? `${operator}: without a value` : 'an empty item'} (q=${q})`);
    return { kind: 'term', term: { negate, ...(operator ? { operator } : {}), value } };
  }

  return { kind: 'all', items: sequence(undefined) };
}

/** Lower case, words separated by single spaces, padded: `includes(' word ')` matches whole words and phrases. */
const words = (text: string) =>
  ` ${text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()} `;
const hasWords = (text: string, phrase: string) => words(phrase).trim() === '' || words(text).includes(words(phrase));

/** `in:`/`label:` values: system names (inbox, drafts…) and user label names, `-` standing for space or `/`. */
function labelIdFor(mailbox: Mailbox, value: string): string | undefined {
  const wanted = value.toLowerCase();
  const alias: Record<string, string> = { drafts: 'DRAFT', chats: 'CHAT' };
  if (alias[wanted]) return alias[wanted];
  const system = SYSTEM_LABELS.find((id) => id.toLowerCase() === wanted.replace(/[-/]/g, '_'));
  if (system) return system;
  const key = (name: string) => name.toLowerCase().replace(/[\s/-]+/g, '-');
  return [...mailbox.labels.values()].find((l) => l.type === 'user' && key(l.name) === key(value))?.id;
}

/** Midnight in Pacific time, as Gmail reads a date without a zone; epoch seconds as they are. */
function searchDate(value: string, q: string): number {
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const m = /^(\d{4})[/-](\d{1,2})[/-](\d{1,2})$/.exec(value);
  const date = m
    ? DateTime.fromObject({ year: +m[1]!, month: +m[2]!, day: +m[3]! }, { zone: 'America/Los_Angeles' })
    : undefined;
  if (!date?.isValid) throw invalid(`Invalid query: bad date ${value} (q=${q})`);
  return date.toMillis();
}

export interface Search {
  matches: (m: StoredMessage) => boolean;
  /** Labels the search names on purpose: TRASH or SPAM here are searched even without includeSpamTrash. */
  explicit: Set<string>;
  anywhere: boolean;
}

export function compileSearch(mailbox: Mailbox, q: string, labelIds: string[]): Search {
  const explicit = new Set(labelIds);
  let anywhere = false;
  /** `negated`: under a `-`: labels named there are not searched on purpose. */
  const compileTerm = (term: Term, negated: boolean): ((m: StoredMessage) => boolean) => {
    const v = term.value;
    switch (term.operator) {
      case undefined:
        return (m) => hasWords(m.search.all, v);
      case 'from':
      case 'to':
      case 'cc':
      case 'bcc': {
        const field = term.operator;
        return (m) => hasWords(m.search[field], v);
      }
      case 'subject':
        return (m) => hasWords(m.search.subject, v);
      case 'in':
      case 'label': {
        if (term.operator === 'in' && v.toLowerCase() === 'anywhere') {
          anywhere = !negated || anywhere;
          return () => true;
        }
        const id = labelIdFor(mailbox, v);
        if (id && !negated) explicit.add(id);
        return (m) => !!id && m.labelIds.includes(id);
      }
      case 'is': {
        const flag: Record<string, (m: StoredMessage) => boolean> = {
          unread: (m) => m.labelIds.includes('UNREAD'),
          read: (m) => !m.labelIds.includes('UNREAD'),
          starred: (m) => m.labelIds.includes('STARRED'),
          important: (m) => m.labelIds.includes('IMPORTANT'),
        };
        const f = flag[v.toLowerCase()];
        if (!f) throw invalid(`Invalid query: the local fake does not support is:${v} (q=${q})`);
        return f;
      }
      case 'has':
        if (v.toLowerCase() !== 'attachment')
          throw invalid(`Invalid query: the local fake does not support has:${v} (q=${q})`);
        return (m) => m.hasAttachment;
      case 'after': {
        const t = searchDate(v, q);
        return (m) => m.internalDate >= t;
      }
      case 'before': {
        const t = searchDate(v, q);
        return (m) => m.internalDate < t;
      }
    }
  };
  const compile = (node: Query, negated: boolean): ((m: StoredMessage) => boolean) => {
    switch (node.kind) {
      case 'term': {
        const test = compileTerm(node.term, negated !== node.term.negate);
        return node.term.negate ? (m) => !test(m) : test;
      }
      case 'not': {
        const test = compile(node.item, !negated);
        return (m) => !test(m);
      }
      case 'all': {
        const tests = node.items.map((i) => compile(i, negated));
        return (m) => tests.every((t) => t(m));
      }
      case 'any': {
        const tests = node.items.map((i) => compile(i, negated));
        return (m) => tests.some((t) => t(m));
      }
    }
  };
  const test = compile(parseQuery(q), false);
  return {
    matches: (m) => labelIds.every((l) => m.labelIds.includes(l)) && test(m),
    explicit,
    anywhere,
  };
}

/** Whether a message is hidden in SPAM/TRASH for this listing. */
export function hiddenAway(m: StoredMessage, search: Search, includeSpamTrash: boolean): boolean {
  if (includeSpamTrash || search.anywhere) return false;
  return (['SPAM', 'TRASH'] as const).some((l) => m.labelIds.includes(l) && !search.explicit.has(l));
}
