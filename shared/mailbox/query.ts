import { storedBody } from '#shared/mailbox/blobs';
import { format1Split, kinds, normalAddress, searchTokens, tokens } from '#shared/mailbox/postings';
import { openSearchIndex, type IndexAnswer } from '#shared/mailbox/search-index';
import { bodyText, terms, words } from '#shared/mailbox/text';
import type { MessageRecord } from '#shared/mailbox/types';
import { messagesOfGrant, postingPartition } from '#shared/db/keys';
import { getMessages, queryIds } from '#shared/db/messages';
import { ID_PREFIXES, idBound, type GrantId } from '#shared/ids';
import { inPool } from '#shared/pool';
import { tokensMatch, type TokenQuery } from '#shared/search/plan';

/**
 * Message search for Agent Accounts. Filters that never change with the message (full text,
 * subject words, addresses, attachments) are answered by the mailbox's search index
 * (shared/mailbox/search-index.ts): it gives the matching message IDs newest first. Filters on
 * mutable state (folder, read and star state, metadata) and the thread have a posting partition
 * sorted newest first (shared/db/keys.ts). A query picks its *driver*: the thread or metadata
 * partition when filtered on, else the index when the filter has index tokens, else the most
 * selective posting partition; it reads candidates below the cursor page by page and checks the other
 * filters on them (the message item, read in one BatchGet, and the index). A filter never scans the
 * mailbox. Multi-filter pages evaluate at most CANDIDATE_BUDGET candidates and may return fewer than
 * `limit` results with a `next_cursor` to go on. Messages indexed before one-character words were
 * (the index answers 'unsure' for them, see shared/mailbox/search-index.ts) have those words decided
 * on the message: its subject, or its body read back when a full-text word has one character.
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

/** The filters the search index answers, as a token query (no required group: the index does not drive). */
export function indexQuery(filter: MessageFilter): TokenQuery {
  const all: string[][] = [];
  for (const a of filter.addresses) all.push([...new Set(a.emails.map((e) => tokens.address(a.field, e)))]);
  for (const w of filter.subjectWords) all.push([tokens.subject(w)]);
  for (const t of filter.textTerms) all.push([tokens.text(t)]);
  if (filter.hasAttachment === true) all.push([tokens.attachment]);
  return { all, none: filter.excludedTerms.map(tokens.text) };
}

/**
 * The posting partitions whose union holds every match, when a posting partition drives (undefined:
 * the index drives, or, without index tokens either, the mailbox's own listing).
 */
function postingDrivers(filter: MessageFilter, q: TokenQuery): string[] | undefined {
  if (filter.threadId) return [kinds.thread(filter.threadId)];
  if (filter.metadata) return [kinds.metadata(filter.metadata.key, filter.metadata.value)];
  if (q.all.length) return undefined;
  if (filter.starred === true) return [kinds.starred];
  if (filter.unread === true) return [kinds.unread];
  if (filter.folder) return [kinds.folder(filter.folder)];
  return undefined;
}

/** What deciding a filter on the message item reads (no body, no headers). */
const FILTER_FIELDS = [
  'id',
  'thread_id',
  'folders',
  'unread',
  'starred',
  'attachments',
  'metadata',
  'subject',
  'from',
  'to',
  'cc',
  'bcc',
] as const;
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
  const after =
    filter.receivedAfter !== undefined
      ? `${ID_PREFIXES.message}_${idBound((filter.receivedAfter + 1) * 1000, 'low')}`
      : undefined;
  const bound =
    filter.receivedBefore !== undefined
      ? `${ID_PREFIXES.message}_${idBound(filter.receivedBefore * 1000, 'low')}`
      : undefined;
  const before = cursor !== undefined && bound !== undefined ? (cursor < bound ? cursor : bound) : (cursor ?? bound);
  return { after, before };
}

/** Where a query's candidates come from: the next `n` IDs, newest first, below `range.before`. */
type CandidateSource = (
  range: { after?: string; before?: string },
  n: number,
) => Promise<{ ids: string[]; more: boolean }>;

/** The union of posting partitions (or the mailbox's listing). */
const partitionSource =
  (pks: string[]): CandidateSource =>
  async (range, n) => {
    const pages = await Promise.all(pks.map((pk) => queryIds(pk, range, n)));
    const merged = [...new Set(pages.flatMap((p) => p.ids))].sort().reverse();
    return { ids: merged.slice(0, n), more: merged.length > n || pages.some((p) => p.last !== undefined) };
  };

/** The index's matches, computed once per call for as many candidates as it can evaluate, handed out page by page. */
function indexSource(found: { ids: readonly string[]; more: boolean }): CandidateSource {
  return async (page, n) => {
    const below = page.before === undefined ? found.ids : found.ids.filter((id) => id < page.before!);
    return { ids: below.slice(0, n), more: below.length > n || found.more };
  };
}

/** Body texts read at once when 'unsure' messages need theirs (S3 reads of large bodies). */
const BODY_READS = 8;

/**
 * Which of `records`, format-1 documents of the index that matched every other part of the query,
 * match `rest` (its one-character words, format1Split): decided on their tokens as indexing them
 * today gives them. Subject words need the subject alone; full-text words the participants and body
 * (`complete` records hold them, others are read again), the body from S3 when stored there.
 */
async function confirmOnMessages(
  grantId: GrantId,
  records: readonly Pick<MessageRecord, FilterFields>[] | { complete: readonly MessageRecord[] },
  rest: TokenQuery,
): Promise<Set<string>> {
  const confirmed = new Set<string>();
  const needsText = [...rest.all.flat(), ...rest.none].some((t) => t.startsWith(tokens.text('')));
  const given = 'complete' in records ? records.complete : records;
  if (!needsText) {
    for (const m of given) if (tokensMatch(new Set(terms(m.subject).map(tokens.subject)), rest)) confirmed.add(m.id);
    return confirmed;
  }
  const full =
    'complete' in records
      ? records.complete
      : await getMessages(
          grantId,
          records.map((m) => m.id),
        );
  await inPool(full, BODY_READS, async (m) => {
    if (tokensMatch(new Set(searchTokens(m, bodyText(await storedBody(m), m.is_plaintext))), rest)) confirmed.add(m.id);
  });
  return confirmed;
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
export async function findMessages(
  grantId: GrantId,
  filter: MessageFilter,
  options: { limit: number; before?: string; budget?: number },
): Promise<FoundMessages>;
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
  const q = indexQuery(filter);
  const drivers = postingDrivers(filter, q);
  const indexDrives = !drivers && q.all.length > 0;
  // The index checks candidates it does not drive (a thread's messages with a search term, excluded terms).
  const index = q.all.length || q.none.length ? await openSearchIndex(grantId) : undefined;
  const found = indexDrives
    ? index!.matching(q, idRange(filter, options.before), budget + Math.max(options.limit, 100) + 1)
    : undefined;
  const next: CandidateSource = found
    ? indexSource(found)
    : partitionSource(drivers ? drivers.map((kind) => postingPartition(grantId, kind)) : [messagesOfGrant(grantId).pk]);
  const answer = (id: string): IndexAnswer =>
    found ? (found.unsure.has(id) ? 'unsure' : true) : index ? index.matches(id, q) : true;
  const rest = format1Split(q)?.rest;

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
    const { ids, more } = await next(range, n);
    if (!ids.length) {
      exhausted = true;
      break;
    }
    evaluated += ids.length;
    cursor = ids.at(-1);
    const complete = options.idsOnly ? undefined : await getMessages(grantId, ids);
    const read = complete ?? (await getMessages(grantId, ids, FILTER_FIELDS));
    const kept = read.filter((m) => matchesItem(m, filter));
    const answers = kept.map((m) => answer(m.id));
    const unsure = kept.filter((_, i) => answers[i] === 'unsure');
    const unsureIds = new Set(unsure.map((m) => m.id));
    const confirmed =
      unsure.length && rest
        ? await confirmOnMessages(
            grantId,
            complete ? { complete: complete.filter((m) => unsureIds.has(m.id)) } : unsure,
            rest,
          )
        : new Set<string>();
    results.push(...kept.filter((m, i) => answers[i] === true || confirmed.has(m.id)));
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
