import { decodeProviderCursor, encodeProviderCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { liveMetadataOf, messagesWithLivePair } from '#shared/db/live-metadata';
import { NotFoundError } from '#shared/errors';
import type { GrantId } from '#shared/ids';
import { metadataPair } from '#shared/mailbox/metadata';
import { inPool } from '#shared/pool';
import type { Message, Page } from '#shared/providers/contract';

/**
 * `metadata` of live providers' messages (A, B): ours, not the provider's, kept beside each message's
 * provider ID (shared/db/live-metadata.ts) and answered with it; `metadata_pair` listings come from
 * its index, each message then read from the provider.
 */

/** The messages with our metadata, read in one batch. */
export async function withLiveMetadata(grant: GrantRecord, messages: Message[]): Promise<Message[]> {
  const found = await liveMetadataOf(
    grant.id as GrantId,
    messages.map((m) => m.id),
  );
  return messages.map((m) => ({ ...m, metadata: found.get(m.id) ?? {} }));
}

/**
 * A `metadata_pair` listing: the IDs from our index, `concurrency` messages at a time read with
 * `getOne` (one gone from the provider since is left out); the page token is scoped by `scope`.
 */
export async function listByLiveMetadata(
  grant: GrantRecord,
  query: { pair: string; pageToken: string | undefined; limit: number; scope: string; concurrency: number },
  getOne: (id: string) => Promise<Message>,
): Promise<Page<Message>> {
  const { key, value } = metadataPair(query.pair);
  const after = query.pageToken ? decodeProviderCursor(query.pageToken, query.scope) : undefined;
  const page = await messagesWithLivePair(grant.id as GrantId, key, value, query.limit, after);
  const byId = new Map<string, Message>();
  await inPool(page.ids, query.concurrency, async (id) => {
    try {
      byId.set(id, await getOne(id));
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
    }
  });
  return {
    items: await withLiveMetadata(
      grant,
      page.ids.flatMap((id) => byId.get(id) ?? []),
    ),
    ...(page.last ? { nextCursor: encodeProviderCursor(query.scope, page.last) } : {}),
  };
}
