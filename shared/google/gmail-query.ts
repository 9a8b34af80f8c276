import type { ListMessagesQuery } from '#schemas/mail';
import { givenAddresses } from '#shared/mailbox/filters';
import { InvalidRequestError } from '#shared/errors';

/**
 * A message listing's filters as Gmail's `users.messages.list` takes them: `labelIds` for the
 * folder, `q` for the rest, in Gmail's own search syntax (operators ANDed; `{a b}` is OR). A filter
 * Gmail cannot express answers 400 naming it, never a silently wider listing:
 *   - `thread_id` is a thread's own listing (users.threads.get), not a search, so it takes no other filter;
 *   - `metadata_pair` is answered from our own store of metadata, so it takes no provider filter
 *     (the specification's rule);
 *   - `query_imap` is for IMAP grants (refused by shared/registries/parameters.ts).
 * `search_query_native` is Gmail's syntax already: it is ANDed with the other filters, in brackets.
 */

export interface GmailListing {
  q?: string;
  labelIds?: string[];
}

/** Filters that are not searches: paging and the shape of the answer. */
const NOT_FILTERS = new Set(['limit', 'page_token', 'fields', 'select', 'query_imap']);

/** A value inside a Gmail operator: quoted when it has spaces, its own quotes and brackets dropped (Gmail has no escape). */
function term(value: string): string {
  const clean = value
    .replace(/["{}()]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (!clean) throw new InvalidRequestError(`'${value}' holds nothing Gmail can search for`);
  return /\s/.test(clean) ? `"${clean}"` : clean;
}

/** Comma-separated addresses, each as given (no more than 25), as Gmail search terms. */
const addresses = (name: string, value: string) => givenAddresses(name, value).map(term);

/** Several alternatives as one Gmail clause: `{a b}` is OR, a single one stands alone. */
const anyOf = (clauses: string[]) => (clauses.length === 1 ? clauses[0]! : `{${clauses.join(' ')}}`);

const flag = (on: boolean, clause: string) => (on ? clause : `-${clause}`);

/** The filters given (defined values), by name. */
const given = (query: ListMessagesQuery) =>
  Object.entries(query).filter(([, v]) => v !== undefined) as [keyof ListMessagesQuery, unknown][];

export function gmailListing(query: ListMessagesQuery): GmailListing {
  const filters = given(query)
    .map(([name]) => name)
    .filter((n) => !NOT_FILTERS.has(n));
  if (query.thread_id !== undefined && filters.length > 1)
    throw new InvalidRequestError(
      `'thread_id' takes no other filter on a google grant (it lists the thread's messages); remove ${filters
        .filter((n) => n !== 'thread_id')
        .map((n) => `'${n}'`)
        .join(', ')}`,
    );
  if (query.metadata_pair !== undefined && filters.length > 1)
    throw new InvalidRequestError(
      `'metadata_pair' cannot be combined with provider filters (${filters
        .filter((n) => n !== 'metadata_pair')
        .map((n) => `'${n}'`)
        .join(', ')})`,
    );
  const q: string[] = [];
  if (query.subject !== undefined) q.push(`subject:${term(query.subject)}`);
  for (const field of ['from', 'to', 'cc', 'bcc'] as const) {
    const value = query[field];
    if (value !== undefined) q.push(anyOf(addresses(field, value).map((a) => `${field}:${a}`)));
  }
  if (query.any_email !== undefined)
    q.push(
      anyOf(
        addresses('any_email', query.any_email).flatMap((a) => ['from', 'to', 'cc', 'bcc'].map((f) => `${f}:${a}`)),
      ),
    );
  if (query.unread !== undefined) q.push(flag(query.unread, 'is:unread'));
  if (query.starred !== undefined) q.push(flag(query.starred, 'is:starred'));
  if (query.has_attachment !== undefined) q.push(flag(query.has_attachment, 'has:attachment'));
  // Gmail's after:/before: take epoch seconds; `before` is exclusive as ours is.
  if (query.received_after !== undefined) q.push(`after:${query.received_after}`);
  if (query.received_before !== undefined) q.push(`before:${query.received_before}`);
  if (query.search_query_native !== undefined) q.push(`(${query.search_query_native})`);
  return {
    ...(q.length ? { q: q.join(' ') } : {}),
    ...(query.in !== undefined ? { labelIds: [query.in] } : {}),
  };
}
