import type { SyncPayload } from '#schemas/queues';
import { sendMessages } from '#shared/aws/sqs';
import { env } from '#shared/config';
import { touchSyncState } from '#shared/db/mail-sync';
import type { GrantId } from '#shared/ids';
import { clock } from '#shared/time';

/**
 * Sync runs, queued (the mail-sync queue's messages; shared/services/mail-sync.ts runs them): a
 * module of its own, light enough for what only asks for a run (a provider's push) to bundle.
 */

/** SQS holds a message at most 15 minutes; a run due later is held again when it arrives early. */
const MAX_DELAY_SECONDS = 900;
const queueUrl = () => env.mailSyncQueueUrl();

/** Queues a run: now (no `due`), or at `due` (epoch ms); `pushed` for a run a push asked for (see syncSoon). */
export async function queueRun(
  grant: { application_id: string; id: string },
  due?: number,
  pushed?: { attempt: number; delaySeconds: number },
): Promise<void> {
  const body: SyncPayload = {
    application_id: grant.application_id,
    grant_id: grant.id,
    ...(due !== undefined ? { due } : {}),
    ...(pushed ? { pushed: pushed.attempt } : {}),
  };
  const delaySeconds = pushed
    ? pushed.delaySeconds
    : due === undefined
      ? 0
      : Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.ceil((due - clock.nowMs()) / 1000)));
  const refused = await sendMessages(queueUrl(), [{ body: JSON.stringify(body), delaySeconds }]);
  if (refused.size) throw new Error(`mail-sync queue refused a run: ${[...refused.values()][0]}`);
}

/** A pushed run finding another run under way comes back this many seconds later, at most PUSH_ATTEMPTS times. */
const PUSH_RETRY_SECONDS = 2;
const PUSH_ATTEMPTS = 5;

/**
 * A run as soon as possible, because the provider pushed a change (shared/google/push.ts):
 * the grant is active again (its scheduled runs come sooner). A run already under way may have read
 * past the change or not, so a pushed run that finds the lease taken comes back shortly (a few
 * times) instead of ending; runs stay one at a time, and reading from the cursor twice announces nothing twice.
 */
export async function syncSoon(grant: { application_id: string; id: string }): Promise<void> {
  await touchSyncState(grant.id as GrantId, clock.nowSeconds(), true);
  await queueRun(grant, undefined, { attempt: 1, delaySeconds: 0 });
}

/** A pushed run that found another run under way: queued again shortly, PUSH_ATTEMPTS times at most. */
export async function pushedRunAgain(grant: { application_id: string; id: string }, attempt: number): Promise<void> {
  if (attempt < PUSH_ATTEMPTS)
    await queueRun(grant, undefined, { attempt: attempt + 1, delaySeconds: PUSH_RETRY_SECONDS });
}
