import { agentStoredItems } from '#shared/agent/message-events';
import type { Job } from '#shared/jobs/job';
import type { Notification } from '#shared/notifications/notification';

/**
 * Items a provider's store writes that are their own outbox entries (a stored message announces
 * itself): the outbox consumer (shared/outbox/consumer.ts) asks each provider's reader whether an
 * inserted item is one of its own and what it sends, so the consumer knows no provider's items.
 */
export type Outgoing = { kind: 'notification'; notification: Notification } | { kind: 'job'; job: Job };

export interface StoredItemReader {
  /** Whether an inserted item (as the stream carries it, unmarshalled) is one of this provider's self-announcing items. */
  owns(item: Record<string, unknown>): boolean;
  /** What the item sends; the same on every retry. `readBody` reads a body kept in the mail bucket. */
  outgoing(item: Record<string, unknown>, readBody: (key: string) => Promise<string>): Promise<Outgoing[]>;
}

const readers: readonly StoredItemReader[] = [agentStoredItems];

export const storedItemReaderOf = (item: Record<string, unknown>): StoredItemReader | undefined => readers.find((reader) => reader.owns(item));
