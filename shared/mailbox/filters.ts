import { metadataPair } from '#shared/mailbox/metadata';
import { normalAddress } from '#shared/mailbox/postings';
import { emptyFilter, type MessageFilter } from '#shared/mailbox/query';
import { words } from '#shared/mailbox/text';
import { InvalidRequestError } from '#shared/errors';
import type { ListMessagesQuery, ListThreadsQuery } from '#schemas/mail';

/**
 * Query parameters of message, thread and draft lists turned into a MessageFilter (shared/mailbox/query.ts),
 * with a 400 naming the parameter for anything malformed.
 */
const MAX_ADDRESSES = 25;

/** `in` takes a folder ID; keywords and attributes (`in:inbox`, `\\Inbox`) are refused as the spec says. */
export function folderFilter(value: string): string {
  if (/^[a-z]+:/i.test(value) || value.startsWith('\\')) {
    throw new InvalidRequestError(`'in' takes a folder ID such as 'inbox', not a keyword or attribute ('${value}')`);
  }
  return value;
}

/**
 * A comma-separated address filter as a live provider passes it on: each address trimmed and kept as
 * given (the provider matches it its own way), at least one, at most 25.
 */
export function givenAddresses(name: string, value: string): string[] {
  const list = value
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  if (!list.length) throw new InvalidRequestError(`'${name}' names no address`);
  if (list.length > MAX_ADDRESSES)
    throw new InvalidRequestError(`'${name}' names more than ${MAX_ADDRESSES} addresses`);
  return list;
}

export function addressList(name: string, value: string): string[] {
  const emails = [...new Set(value.split(',').map(normalAddress).filter(Boolean))];
  if (!emails.length) throw new InvalidRequestError(`'${name}' must name at least one email address`);
  if (emails.length > MAX_ADDRESSES)
    throw new InvalidRequestError(`'${name}' takes at most ${MAX_ADDRESSES} addresses`);
  const bad = emails.find((e) => e.length > 254 || !/^[^\s@]+@[^\s@]+$/.test(e));
  if (bad)
    throw new InvalidRequestError(
      `'${name}' must be a comma-separated list of email addresses ('${bad.slice(0, 100)}' is not one)`,
    );
  return emails;
}

export function keywordList(name: string, value: string): string[] {
  const list = [...new Set(words(value))];
  if (!list.length) throw new InvalidRequestError(`'${name}' must contain a word (letters or digits)`);
  return list;
}

/**
 * Full-text syntax of `search_query_native` for Agent Accounts: words (whole keywords, one character
 * and more) must all appear (subject, participants, body); "quoted phrases" contribute their words;
 * `-word` excludes; `from:`, `to:`, `cc:`, `bcc:`, `subject:`, `in:`,
 * `is:unread|read|starred|unstarred` and `has:attachment` narrow.
 */
export function parseSearchQuery(query: string, into: MessageFilter): MessageFilter {
  const tokens = query.match(/-?(?:[a-z]+:)?(?:"[^"]*"|\S+)/gi) ?? [];
  let positive = 0;
  for (const raw of tokens) {
    const negative = raw.startsWith('-');
    const token = negative ? raw.slice(1) : raw;
    const field = /^([a-z]+):(.+)$/i.exec(token);
    const value = (field ? field[2]! : token).replace(/^"|"$/g, '');
    if (field && !negative) {
      const name = field[1]!.toLowerCase();
      if (name === 'from' || name === 'to' || name === 'cc' || name === 'bcc') {
        into.addresses.push({ field: name, emails: addressList(`search_query_native ${name}:`, value) });
        positive++;
        continue;
      }
      if (name === 'subject') {
        into.subjectWords.push(...keywordList('search_query_native subject:', value));
        positive++;
        continue;
      }
      if (name === 'in') {
        into.folder = folderFilter(value);
        positive++;
        continue;
      }
      if (name === 'is' || name === 'has') {
        const flag = `${name}:${value.toLowerCase()}`;
        if (flag === 'is:unread') into.unread = true;
        else if (flag === 'is:read') into.unread = false;
        else if (flag === 'is:starred') into.starred = true;
        else if (flag === 'is:unstarred') into.starred = false;
        else if (flag === 'has:attachment') into.hasAttachment = true;
        else
          throw new InvalidRequestError(
            `search_query_native: unknown operator '${token}'; use is:unread, is:read, is:starred, is:unstarred or has:attachment`,
          );
        positive++;
        continue;
      }
    }
    const terms = words(field ? token : value);
    if (negative) into.excludedTerms.push(...terms);
    else {
      into.textTerms.push(...terms);
      positive += terms.length;
    }
  }
  if (!positive) {
    throw new InvalidRequestError(
      'search_query_native must contain at least one word of letters or digits, or an operator, to match (a -word only excludes)',
    );
  }
  into.textTerms = [...new Set(into.textTerms)];
  into.excludedTerms = [...new Set(into.excludedTerms)];
  return into;
}

const PAGING = new Set(['limit', 'page_token', 'select', 'fields']);

/** The filters message and thread lists share: folder, addresses, subject and full-text search. */
type SharedFilterQuery = Pick<
  ListMessagesQuery & ListThreadsQuery,
  'in' | 'from' | 'to' | 'cc' | 'bcc' | 'any_email' | 'subject' | 'search_query_native'
>;

function addSharedFilters(query: SharedFilterQuery, filter: MessageFilter): MessageFilter {
  if (query.in !== undefined) filter.folder = folderFilter(query.in);
  for (const field of ['from', 'to', 'cc', 'bcc'] as const) {
    if (query[field] !== undefined) filter.addresses.push({ field, emails: addressList(field, query[field]) });
  }
  if (query.any_email !== undefined)
    filter.addresses.push({ field: 'any', emails: addressList('any_email', query.any_email) });
  if (query.subject !== undefined) filter.subjectWords = keywordList('subject', query.subject);
  if (query.search_query_native !== undefined) parseSearchQuery(query.search_query_native, filter);
  return filter;
}

export function messageFilter(query: ListMessagesQuery): MessageFilter {
  const filter = emptyFilter();
  if (query.metadata_pair !== undefined) {
    const others = Object.keys(query).filter((k) => k !== 'metadata_pair' && !PAGING.has(k));
    if (others.length)
      throw new InvalidRequestError(`'metadata_pair' cannot be combined with other filters (${others.join(', ')})`);
    filter.metadata = metadataPair(query.metadata_pair);
    return filter;
  }
  if (query.unread !== undefined) filter.unread = query.unread;
  if (query.starred !== undefined) filter.starred = query.starred;
  if (query.thread_id !== undefined) filter.threadId = query.thread_id;
  if (query.has_attachment !== undefined) filter.hasAttachment = query.has_attachment;
  if (query.received_after !== undefined) filter.receivedAfter = query.received_after;
  if (query.received_before !== undefined) filter.receivedBefore = query.received_before;
  return addSharedFilters(query, filter);
}

/**
 * Message-level filters that find candidate threads (a thread matches if one of its messages does);
 * undefined when the query has none. "Has an unread/starred message" narrows candidates; the exact
 * thread-level check follows on the thread aggregate.
 */
export function threadCandidateFilter(query: ListThreadsQuery): MessageFilter | undefined {
  const filter = addSharedFilters(query, emptyFilter());
  if (query.unread === true) filter.unread = true;
  if (query.starred === true) filter.starred = true;
  if (query.has_attachment === true) filter.hasAttachment = true;
  const shared: (keyof SharedFilterQuery)[] = [
    'in',
    'from',
    'to',
    'cc',
    'bcc',
    'any_email',
    'subject',
    'search_query_native',
  ];
  const any =
    shared.some((k) => query[k] !== undefined) ||
    query.unread === true ||
    query.starred === true ||
    query.has_attachment === true;
  return any ? filter : undefined;
}
