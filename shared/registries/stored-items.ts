import { agentStoredItems } from '#shared/mailbox/message-events';
import type { StoredItemReader } from '#shared/providers/contract';

/**
 * Items a provider's store writes that are their own outbox entries (a stored message announces
 * itself): the outbox consumer (shared/services/outbox.ts) asks each provider's reader whether an
 * inserted item is one of its own and what it sends, so the consumer knows no provider's items.
 */
const readers: readonly StoredItemReader[] = [agentStoredItems];

export const storedItemReaderOf = (item: Record<string, unknown>): StoredItemReader | undefined =>
  readers.find((reader) => reader.owns(item));
