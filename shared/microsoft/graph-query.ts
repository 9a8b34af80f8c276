import type { ListMessagesQuery } from '#schemas/mail';
import { givenAddresses } from '#shared/mailbox/filters';
import { InvalidRequestError, NotFoundError } from '#shared/errors';

/**
 * A message listing's filters as Graph's `GET …/messages` (or `…/mailFolders/{id}/messages` for
 * `in`) takes them. Graph answers either a `$filter` (OData comparisons on the message's properties)
 * or a `$search` (Outlook's KQL), never both in one request, and a `$search` answers at most 1,000
 * messages, sorted by their sent time. So:
 *   - `unread`, `starred`, `has_attachment`, `received_after`/`received_before`, `from` and
 *     `thread_id` are a `$filter` (ANDed);
 *   - `subject`, `to`, `cc`, `bcc` and `any_email` have no `$filter` form on Graph (no `contains`, no
 *     filter on recipients): they are a `$search` (KQL property terms, ANDed), and so is `from` when
 *     one of them is given (the filters of the first group are not: KQL has no exact form of them);
 *   - `search_query_native` is Graph's `$search` itself, taken as it is: it takes no other filter.
 * A combination Graph cannot answer is a 400 naming the filters, never a wider listing. `metadata_pair`
 * is answered from our own store (the specification's rule: with no provider filter), and
 * `query_imap` is for IMAP grants.
 */

export interface GraphListing {
  /** The folder whose messages are listed (a Graph ID or a well-known name); the whole mailbox when absent. */
  folder?: string;
  /** OData `$filter`. */
  filter?: string;
  /** Outlook's `$search`, quoted as Graph takes it. */
  search?: string;
}

/**
 * Outlook's well-known folder names, as a path takes them in place of a folder's ID, with the
 * system folder IDs our other providers use for them (`sent`, `trash`, `spam`).
 */
const FOLDER_ALIASES: Readonly<Record<string, string>> = {
  sent: 'sentitems',
  trash: 'deleteditems',
  spam: 'junkemail',
  junk: 'junkemail',
};

/** Graph's own well-known folder names that name a folder of every mailbox. */
export const WELL_KNOWN_FOLDERS = [
  'inbox',
  'drafts',
  'sentitems',
  'deleteditems',
  'junkemail',
  'archive',
  'outbox',
  'msgfolderroot',
] as const;
export type WellKnownFolder = (typeof WELL_KNOWN_FOLDERS)[number];

const WELL_KNOWN = new Set<string>(WELL_KNOWN_FOLDERS);

/** The well-known folder a folder reference names (Graph's name or our alias, any case), if it names one. */
export function wellKnownFolder(ref: string): WellKnownFolder | undefined {
  const name = ref.toLowerCase();
  const known = FOLDER_ALIASES[name] ?? name;
  return WELL_KNOWN.has(known) ? (known as WellKnownFolder) : undefined;
}

/**
 * A folder reference as a path segment: a well-known name as Graph spells it, or a Graph ID.
 * Graph IDs are URL-safe base64; anything else is no folder of the mailbox (and must not reach a path).
 */
export function folderRef(ref: string): string {
  const known = wellKnownFolder(ref);
  if (known) return known;
  if (!/^[A-Za-z0-9_=-]{1,512}$/.test(ref)) throw new NotFoundError(`No folder '${ref}' in this grant's mailbox`);
  return ref;
}

/** Filters that are not searches: paging and the shape of the answer. */
const NOT_FILTERS = new Set(['limit', 'page_token', 'fields', 'select', 'query_imap', 'in']);
/** Filters only `$search` can express on Graph. */
const SEARCH_ONLY = ['subject', 'to', 'cc', 'bcc', 'any_email'] as const;
/** Filters `$filter` expresses and KQL cannot say exactly: never part of a `$search`. */
const FILTER_ONLY = ['unread', 'starred', 'has_attachment', 'received_after', 'received_before', 'thread_id'] as const;

/** The filters given (defined values), by name. */
const given = (query: ListMessagesQuery) =>
  (Object.entries(query) as [keyof ListMessagesQuery, unknown][])
    .filter(([name, value]) => value !== undefined && !NOT_FILTERS.has(name))
    .map(([name]) => name);

const named = (names: readonly string[]) => names.map((n) => `'${n}'`).join(', ');

/** An OData string literal (a quote doubled). */
const literal = (value: string) => `'${value.replace(/'/g, "''")}'`;

/** Epoch seconds as an OData DateTimeOffset (UTC, whole seconds). */
const dateTime = (seconds: number) => new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** A value of a KQL property term: quoted when it has spaces; its own quotes dropped (KQL has no escape). */
function term(name: string, value: string): string {
  const clean = value.replace(/["()]/g, ' ').replace(/\s+/g, ' ').trim();
  if (!clean) throw new InvalidRequestError(`'${name}' holds nothing Graph can search for`);
  return /[\s:]/.test(clean) ? `"${clean}"` : clean;
}

/** Several alternatives as one clause: one stands alone, more are ORed in brackets. */
const anyOf = (clauses: string[], or: string) => (clauses.length === 1 ? clauses[0]! : `(${clauses.join(` ${or} `)})`);

/** The `$search` of `search_query_native`: Graph takes a search in double quotes. */
function nativeSearch(native: string): string {
  const text = native.trim();
  if (!text) throw new InvalidRequestError("'search_query_native' holds nothing to search for");
  return /^".*"$/s.test(text) ? text : `"${text}"`;
}

export function graphListing(query: ListMessagesQuery): GraphListing {
  const filters = given(query);
  const folder = query.in !== undefined ? { folder: folderRef(query.in) } : {};
  if (query.metadata_pair !== undefined) {
    if (filters.length > 1)
      throw new InvalidRequestError(
        `'metadata_pair' cannot be combined with provider filters (${named(filters.filter((n) => n !== 'metadata_pair'))})`,
      );
    if (query.in !== undefined) throw new InvalidRequestError("'metadata_pair' cannot be combined with 'in'");
    return {};
  }
  if (query.search_query_native !== undefined) {
    const others = filters.filter((n) => n !== 'search_query_native');
    if (others.length)
      throw new InvalidRequestError(
        `'search_query_native' is Graph's $search (KQL), which takes no other filter on a microsoft grant: put ${named(others)} in the search itself, or drop them`,
      );
    return { ...folder, search: nativeSearch(query.search_query_native) };
  }
  const searched = SEARCH_ONLY.filter((n) => query[n] !== undefined);
  if (searched.length) {
    const filtered = FILTER_ONLY.filter((n) => query[n] !== undefined);
    if (filtered.length)
      throw new InvalidRequestError(
        `${named(searched)} can only be searched on a microsoft grant (Graph's $search), and a search takes no ${named(filtered)} (Graph's $filter): list with one group of filters or the other`,
      );
    const terms: string[] = [];
    if (query.subject !== undefined) terms.push(`subject:${term('subject', query.subject)}`);
    for (const field of ['from', 'to', 'cc', 'bcc'] as const) {
      const value = query[field];
      if (value !== undefined)
        terms.push(
          anyOf(
            givenAddresses(field, value).map((a) => `${field}:${term(field, a)}`),
            'OR',
          ),
        );
    }
    if (query.any_email !== undefined)
      terms.push(
        anyOf(
          givenAddresses('any_email', query.any_email).map((a) => `participants:${term('any_email', a)}`),
          'OR',
        ),
      );
    return { ...folder, search: `"${terms.join(' ')}"` };
  }
  const clauses: string[] = [];
  if (query.unread !== undefined) clauses.push(`isRead eq ${!query.unread}`);
  if (query.starred !== undefined) clauses.push(`flag/flagStatus ${query.starred ? 'eq' : 'ne'} 'flagged'`);
  if (query.has_attachment !== undefined) clauses.push(`hasAttachments eq ${query.has_attachment}`);
  // Ours are whole seconds: after is `>` (from the next second on), before is `<`.
  if (query.received_after !== undefined) clauses.push(`receivedDateTime ge ${dateTime(query.received_after + 1)}`);
  if (query.received_before !== undefined) clauses.push(`receivedDateTime lt ${dateTime(query.received_before)}`);
  if (query.from !== undefined)
    clauses.push(
      anyOf(
        givenAddresses('from', query.from).map((a) => `from/emailAddress/address eq ${literal(a)}`),
        'or',
      ),
    );
  if (query.thread_id !== undefined) clauses.push(`conversationId eq ${literal(query.thread_id)}`);
  return { ...folder, ...(clauses.length ? { filter: clauses.join(' and ') } : {}) };
}
