import { INDEXED_METADATA_KEYS } from '#shared/mailbox/postings';
import { InvalidRequestError } from '#shared/errors';

/**
 * `metadata_pair=<key>:<value>`, the metadata filter of every list (messages, threads, drafts,
 * calendars, events). Apart from the message filters (shared/mailbox/filters.ts) so that the calendar
 * and event functions do not bundle message search.
 */
export function metadataPair(value: string): { key: string; value: string } {
  const colon = value.indexOf(':');
  const key = colon > 0 ? value.slice(0, colon) : '';
  if (!(INDEXED_METADATA_KEYS as readonly string[]).includes(key) || colon === value.length - 1) {
    throw new InvalidRequestError(
      `'metadata_pair' must be '<key>:<value>' with key one of ${INDEXED_METADATA_KEYS.join(', ')}`,
    );
  }
  return { key, value: value.slice(colon + 1) };
}
