import { decodeProviderCursor } from '#shared/cursor';
import { NotFoundError } from '#shared/errors';
import { MAX_BATCH } from '#shared/google/batch';
import type { GoogleClient } from '#shared/google/client';
import type { GmailListing } from '#shared/google/gmail-query';
import { inPool } from '#shared/pool';

/**
 * One page of a Gmail listing (users.messages.list, users.threads.list): the IDs Gmail lists for a
 * search, then each read (`get`, all at once: the client sends them as batches of MAX_BATCH), in
 * Gmail's order. One deleted between the list and its read is left out of the page. `next`:
 * Gmail's token of the next page.
 */
const GET_CONCURRENCY = MAX_BATCH;

export async function gmailPage<T, X = undefined>(
  client: GoogleClient,
  resource: 'messages' | 'threads',
  listing: GmailListing,
  page: { limit: number; token?: string | undefined; scope: string },
  get: (id: string) => Promise<T>,
  /** Read while the gets are under way, with the listed IDs (our own data of them). */
  alongside?: (ids: string[]) => Promise<X>,
): Promise<{ items: T[]; next?: string; alongside?: X }> {
  const answer = await client.call<Record<string, { id: string }[] | undefined> & { nextPageToken?: string }>({
    api: 'gmail',
    path: `/gmail/v1/users/me/${resource}`,
    query: {
      maxResults: page.limit,
      ...(listing.q !== undefined ? { q: listing.q } : {}),
      ...(listing.labelIds ? { labelIds: listing.labelIds } : {}),
      ...(page.token ? { pageToken: decodeProviderCursor(page.token, page.scope) } : {}),
    },
  });
  const ids = (answer[resource] ?? []).map((r) => r.id);
  const byId = new Map<string, T>();
  const [, extra] = await Promise.all([
    inPool(ids, GET_CONCURRENCY, async (id) => {
      try {
        byId.set(id, await get(id));
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
      }
    }),
    alongside?.(ids),
  ]);
  return {
    items: ids.flatMap((id) => (byId.has(id) ? [byId.get(id)!] : [])),
    ...(answer.nextPageToken ? { next: answer.nextPageToken } : {}),
    ...(extra !== undefined ? { alongside: extra } : {}),
  };
}
