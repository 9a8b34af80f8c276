import type { GrantRecord } from '#shared/db/grants';
import type { OutboxEntry } from '#shared/db/outbox';
import type { ScheduleRecord } from '#shared/db/schedules';
import type { NamedItems } from '#shared/db/transact';

/**
 * What the scheduled-send worker (shared/scheduled-send/worker.ts) needs from the provider of a
 * schedule's grant. The worker owns the schedule's states (pending → sending → success | failed),
 * its lease, holds and retries; the provider owns the message: its quota, its transport, its sent
 * copy and what closing the schedule removes (its draft, its contents).
 */
export interface ScheduledSending {
  /**
   * Sends the due message of `record` once. `beforeRelay` runs right before the message is handed
   * to the transport (from then on it may have left); the sent copy commits with `scheduleItems()`
   * (the schedule's success) and the provider's own closing items, in one transaction. Throws
   * ScheduledSendRefusal when sending again cannot succeed (quota spent, relay refusal, a policy or
   * rule refusing it); anything else is transient. A quota unit taken is given back unless the
   * message may have left.
   */
  send(grant: GrantRecord, record: ScheduleRecord, hooks: { beforeRelay(): Promise<void>; scheduleItems(): NamedItems }): Promise<{ messageId: string }>;
  /** What ending the schedule as failed commits besides its state (its draft removed, `message.send_failed`), and does right after. */
  failure(grant: Pick<GrantRecord, 'id' | 'application_id'>, record: ScheduleRecord, reason: string): Promise<{ items: NamedItems; outbox: OutboxEntry[]; after(): Promise<void> }>;
}

/** A scheduled message that sending again cannot send: the schedule ends as failed with this reason. */
export class ScheduledSendRefusal extends Error {}
