import { kinds, normalAddress } from '#shared/agent/postings';
import { words } from '#shared/agent/text';
import type { MessageRecord } from '#shared/agent/types';
import { messagesOfGrant, postingPartition } from '#shared/db/keys';
import { existingPostings, getMessages, postingId, queryIds } from '#shared/db/messages';
import { ID_PREFIXES, idBound, type GrantId } from '#shared/ids';

/**
 * Message search for Agent Accounts. Every filter value has a posting partition sorted newest first
 * (shared/db/keys.ts), so a query picks the most selective filter as its *driver*, reads that
 * partition page by page below the cursor, and checks the other filters on the candidates. A filter
 * never scans the mailbox: a single-filter page costs one Query and one BatchGet whatever the size
 * of the mailbox. Multi-filter pages evaluate at most CANDIDATE_BUDGET candidates and may return
 * fewer than `limit` results with a `next_cursor` to go on.
 */
export const CANDIDATE_BUDGET = 1000;

export type AddressField = 'from' | 'to' | 'cc' | 'bcc' | 'any';

export interface MessageFilter {
  folder?: string;
  unread?: boolean;
  starred?: boolean;
  threadId?: string;
  hasAttachment?: boolean;
  /** AND across entries, OR within one entry's addresses. */
  addresses: { field: AddressField; emails: string[] }[];
  /** Whole words that must all appear in the subject. */
  subjectWords: string[];
  /** Terms that must all appear in subject, participants or body. */
  textTerms: string[];
  /** Terms that must not appear. */
  excludedTerms: string[];
  metadata?: { key: string; value: string };
  receivedAfter?: number;
  receivedBefore?: number;
}

export const emptyFilter = (): MessageFilter => ({ addresses: [], subjectWords: [], textTerms: [], excludedTerms: [] });

/** The partitions whose union holds every match (undefined: the mailbox's own listing). */
function drivers(filter: MessageFilter): string[] | undefined {
  const longest = (list: string[]) => [...list].sort((a, b) => b.length - a.length)[0]!;
  if (filter.threadId) return [kinds.thread(filter.threadId)];
  if (filter.metadata) return [kinds.metadata(filter.metadata.key, filter.metadata.value)];
  if (filter.addresses.length) {
    const narrowest = [...filter.addresses].sort((a, b) => a.emails.length - b.emails.length)[0]!;
    return narrowest.emails.map((e) => kinds.address(narrowest.field, e));
  }
  if (filter.subjectWords.length) return [kinds.subject(longest(filter.subjectWords))];
  if (filter.textTerms.length) return [kinds.text(longest(filter.textTerms))];
  if (filter.hasAttachment === true) return [kinds.attachment];
  if (filter.starred === true) return [kinds.starred];
  if (filter.unread === true) return [kinds.unread];
  if (filter.folder) return [kinds.folder(filter.folder)];
  return undefined;
}

/** What deciding a filter on the message item reads (no body, no headers). */
const FILTER_FIELDS = ['id', 'thread_id', 'folders', 'unread', 'starred', 'attachments', 'metadata', 'subject', 'from', 'to', 'cc', 'bcc'] as const;
type FilterFields = (typeof FILTER_FIELDS)[number];

function participantsOf(m: Pick<MessageRecord, FilterFields>, field: AddressField): string[] {
  const list = field === 'any' ? [...m.from, ...m.to, ...m.cc, ...m.bcc] : m[field];
  return list.map((p) => normalAddress(p.email));
}

/** The filters that can be decided from the message item alone. */
function matchesItem(m: Pick<MessageRecord, FilterFields>, f: MessageFilter): boolean {
  if (f.folder !== undefined && !m.folders.includes(f.folder)) return false;
  if (f.unread !== undefined && m.unread !== f.unread) return false;
  if (f.starred !== undefined && m.starred !== f.starred) return false;
  if (f.threadId !== undefined && m.thread_id !== f.threadId) return false;
  if (f.hasAttachment !== undefined && m.attachments.length > 0 !== f.hasAttachment) return false;
  if (f.metadata && m.metadata[f.metadata.key] !== f.metadata.value) return false;
  for (const a of f.addresses) {
    const present = new Set(participantsOf(m, a.field));
    if (!a.emails.some((e) => present.has(normalAddress(e)))) return false;
  }
  if (f.subjectWords.length) {
    const subject = new Set(words(m.subject));
    if (!f.subjectWords.every((w) => subject.has(w))) return false;
  }
  return true;
}

function idRange(filter: MessageFilter, cursor?: string): { after?: string; before?: string } {
  const after = filter.receivedAfter !== undefined ? `${ID_PREFIXES.message}_${idBound((filter.receivedAfter + 1) * 1000, 'low')}` : undefined;
  const bound = filter.receivedBefore !== undefined ? `${ID_PREFIXES.message}_${idBound(filter.receivedBefore * 1000, 'low')}` : undefined;
  const before = cursor !== undefined && bound !== undefined ? (cursor < bound ? cursor : bound) : (cursor ?? bound);
  return { after, before };
}

/** The next `n` candidate IDs of the union of partitions, newest first, below `range.before`. */
async function nextCandidates(pks: string[], range: { after?: string; before?: string }, n: number): Promise<{ ids: string[]; more: boolean }> {
  const pages = await Promise.all(pks.map((pk) => queryIds(pk, range, n)));
  const merged = [...new Set(pages.flatMap((p) => p.ids))].sort().reverse();
  return { ids: merged.slice(0, n), more: merged.length > n || pages.some((p) => p.last !== undefined) };
}

export interface FoundMessages<T = MessageRecord> {
  records: T[];
  /** Continue below this message ID (a `before` cursor), when more may match. */
  next?: string;
  /** Candidates read for this page (for tests and diagnostics). */
  evaluated: number;
}

/**
 * Messages matching a filter, newest first. With `idsOnly`, the records hold only what the filter
 * needed (thread listings use IDs and thread IDs, not bodies or headers).
 */
export async function findMessages(grantId: GrantId, filter: MessageFilter, options: { limit: number; before?: string; budget?: number }): Promise<FoundMessages>;
export async function findMessages(
  grantId: GrantId,
  filter: MessageFilter,
  options: { limit: number; before?: string; budget?: number; idsOnly: true },
): Promise<FoundMessages<Pick<MessageRecord, FilterFields>>>;
export async function findMessages(
  grantId: GrantId,
  filter: MessageFilter,
  options: { limit: number; before?: string; budget?: number; idsOnly?: boolean },
): Promise<FoundMessages<Pick<MessageRecord, FilterFields>>> {
  const budget = options.budget ?? CANDIDATE_BUDGET;
  const driver = drivers(filter);
  const pks = driver ? driver.map((kind) => postingPartition(grantId, kind)) : [messagesOfGrant(grantId).pk];
  const driverTerms = new Set(driver ?? []);
  const extraTerms = filter.textTerms.map(kinds.text).filter((k) => !driverTerms.has(k));
  const excluded = filter.excludedTerms.map(kinds.text);

  const results: Pick<MessageRecord, FilterFields>[] = [];
  let cursor = options.before;
  let evaluated = 0;
  let exhausted = false;
  while (results.length <= options.limit && evaluated < budget) {
    const range = idRange(filter, cursor);
    if (range.after !== undefined && range.before !== undefined && range.after >= range.before) {
      exhausted = true;
      break;
    }
    const n = Math.min(100, Math.max(options.limit + 1 - results.length, 10));
    const { ids, more } = await nextCandidates(pks, range, n);
    if (!ids.length) {
      exhausted = true;
      break;
    }
    evaluated += ids.length;
    cursor = ids.at(-1);
    const read = options.idsOnly ? await getMessages(grantId, ids, FILTER_FIELDS) : await getMessages(grantId, ids);
    let candidates = read.filter((m) => matchesItem(m, filter));
    if (candidates.length && (extraTerms.length || excluded.length)) {
      // Terms are checked against their postings: exact, and no body has to be read.
      const pairs = candidates.flatMap((m) => [...extraTerms, ...excluded].map((kind) => ({ kind, id: m.id })));
      const present = await existingPostings(grantId, pairs);
      candidates = candidates.filter(
        (m) => extraTerms.every((k) => present.has(postingId(grantId, k, m.id))) && !excluded.some((k) => present.has(postingId(grantId, k, m.id))),
      );
    }
    results.push(...candidates);
    if (!more) {
      exhausted = true;
      break;
    }
  }
  if (results.length > options.limit) {
    const page = results.slice(0, options.limit);
    return { records: page, next: page.at(-1)!.id, evaluated };
  }
  return { records: results, next: exhausted ? undefined : cursor, evaluated };
}
