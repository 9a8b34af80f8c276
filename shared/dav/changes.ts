import { DavError, SyncTokenInvalid, type DavClient } from '#shared/dav/client';

/**
 * What changed in a collection (a calendar, an address book) since a sync token: RFC 6578
 * sync-collection, its truncated answers followed. Without a token, or when the server no longer
 * knows it, the answer is every member with its ETag and a fresh token (`full`: what the caller stores
 * and the listing lacks is gone). A server without sync-collection gets a PROPFIND listing instead,
 * and no token. The calendar and the contacts syncs both start here.
 */
export interface CollectionChanges {
  /** Where the next sync starts; absent from a server without sync-collection. */
  token?: string;
  /** Members changed (every member when `full`), with their ETags, by URL. */
  changed: Map<string, string | undefined>;
  /** Members removed since the token (a full answer names none: the caller compares). */
  deleted: Set<string>;
  full: boolean;
}

/** Rounds of a truncated answer followed in one run. */
const MAX_ROUNDS = 50;

async function sinceToken(client: DavClient, url: string, token: string | undefined): Promise<CollectionChanges> {
  const changes: CollectionChanges = { changed: new Map(), deleted: new Set(), full: token === undefined };
  let from = token;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const page = await client.syncCollection(url, from);
    for (const { url: member, etag } of page.changed) {
      changes.changed.set(member, etag);
      changes.deleted.delete(member);
    }
    for (const member of page.deleted) {
      changes.deleted.add(member);
      changes.changed.delete(member);
    }
    changes.token = from = page.token;
    if (!page.truncated) break;
  }
  return changes;
}

export async function collectionChanges(
  client: DavClient,
  url: string,
  token: string | undefined,
): Promise<CollectionChanges> {
  try {
    return await sinceToken(client, url, token);
  } catch (error) {
    if (error instanceof SyncTokenInvalid) return sinceToken(client, url, undefined);
    // No sync-collection REPORT here: a listing, compared by ETag by the caller.
    if (error instanceof DavError && (error.kind === 'conflict' || error.kind === 'not_found')) {
      const listed = await client.listObjects(url);
      return { changed: new Map(listed.map((member) => [member.url, member.etag])), deleted: new Set(), full: true };
    }
    throw error;
  }
}
