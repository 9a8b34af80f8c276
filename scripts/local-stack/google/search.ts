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

/**
 * Splits `q` into terms: words, "quoted phrases", `operator:value`, each optionally negated with `-`.
 * What the fake does not understand (OR, braces, parentheses, other operators) is refused with a 400
 * rather than searched wrongly.
 */
export function parseQuery(q: string): Term[] {
  const terms: Term[] = [];
  let pos = 0;
  const unsupported = (what: string) => invalid(`Invalid query: the local fake does not support ${what} (q=${q})`);
  while (pos < q.length) {
    if (/\s/.test(q[pos]!)) {
      pos++;
      continue;
    }
    const negate = q[pos] === '-';
    if (negate) pos++;
    if ('(){}'.includes(q[pos] ?? '')) throw unsupported(`'${q[pos]}'`);
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
      const word = /^[^\s]+/.exec(q.slice(pos))?.[0] ?? '';
      value = word;
      pos += word.length;
    }
    if (!operator && (value === 'OR' || value === 'AND' || value === '|')) throw unsupported(value);
    if (operator && value === '') throw invalid(`Invalid query: ${operator}: without a value (q=${q})`);
    if (!operator && value === '') continue;
    terms.push({ negate, operator, value });
  }
  return terms;
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
  const tests = parseQuery(q).map((term): ((m: StoredMessage) => boolean) => {
    const test = ((): ((m: StoredMessage) => boolean) => {
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
            anywhere = !term.negate || anywhere;
            return () => true;
          }
          const id = labelIdFor(mailbox, v);
          if (id && !term.negate) explicit.add(id);
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
    })();
    return term.negate ? (m) => !test(m) : test;
  });
  return {
    matches: (m) => labelIds.every((l) => m.labelIds.includes(l)) && tests.every((t) => t(m)),
    explicit,
    anywhere,
  };
}

/** Whether a message is hidden in SPAM/TRASH for this listing. */
export function hiddenAway(m: StoredMessage, search: Search, includeSpamTrash: boolean): boolean {
  if (includeSpamTrash || search.anywhere) return false;
  return (['SPAM', 'TRASH'] as const).some((l) => m.labelIds.includes(l) && !search.explicit.has(l));
}
