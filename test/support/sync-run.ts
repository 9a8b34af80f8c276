import { randomUUID } from 'node:crypto';
import type { GrantRecord } from '#shared/db/grants';
import { releaseSyncLease, saveSyncState, takeSyncLease } from '#shared/db/mail-sync';
import type { OutboxEntry } from '#shared/db/outbox';
import type { GrantId } from '#shared/ids';
import type { Notification } from '#shared/notifications/notification';
import type { SyncOutcome, SyncSource } from '#shared/providers/contract';
import { clock } from '#shared/time';

/**
 * One run of a grant's sync source, as shared/services/mail-sync.ts makes it: the lease taken, each
 * save committed under it, the lease given back. Answers the notifications it committed, in order.
 */
export async function syncRun(grant: GrantRecord, source: SyncSource): Promise<Notification[]> {
  const leaseId = randomUUID();
  const state = (await takeSyncLease(grant.id as GrantId, leaseId, clock.nowSeconds(), 60))!;
  const committed: OutboxEntry[] = [];
  await source.run(grant, {
    state,
    save: async (next, outbox = []) => {
      await saveSyncState(next, leaseId, outbox);
      committed.push(...outbox);
    },
    outOfTime: () => false,
  });
  await releaseSyncLease(state, leaseId, 0);
  return committed.flatMap((e) => ('notification' in e ? [e.notification as Notification] : []));
}

/**
 * The same run, out of time once it has asked `checks` times whether it is (a run that stops between
 * pages): its outcome and the notifications it committed.
 */
export async function syncRunFor(
  grant: GrantRecord,
  source: SyncSource,
  checks: number,
): Promise<{ outcome: SyncOutcome; committed: Notification[] }> {
  const leaseId = randomUUID();
  const state = (await takeSyncLease(grant.id as GrantId, leaseId, clock.nowSeconds(), 60))!;
  const committed: OutboxEntry[] = [];
  let asked = 0;
  const outcome = await source.run(grant, {
    state,
    save: async (next, outbox = []) => {
      await saveSyncState(next, leaseId, outbox);
      committed.push(...outbox);
    },
    outOfTime: () => ++asked > checks,
  });
  await releaseSyncLease(state, leaseId, 0);
  return {
    outcome,
    committed: committed.flatMap((e) => ('notification' in e ? [e.notification as Notification] : [])),
  };
}
