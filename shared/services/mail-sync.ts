import { randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { SyncPayload } from '#schemas/queues';
import { getGrant, setGrantStatus, StaleWriteError, type GrantRecord } from '#shared/db/grants';
import {
  graphWatch,
  createSyncState,
  getSyncState,
  releaseSyncLease,
  saveSyncState,
  SyncStateChangedError,
  takeSyncLease,
  type MailSyncRecord,
} from '#shared/db/mail-sync';
import { toGrantResource } from '#shared/accounts/grant-resource';
import { pushedRunAgain, queueRun } from '#shared/jobs/sync-runs';
import type { ApplicationId, GrantId } from '#shared/ids';
import { eachMessage } from '#shared/jobs/batch';
import { readSync } from '#shared/jobs/payloads';
import { logger } from '#shared/logger';
import { newNotification } from '#shared/notifications/notification';
import type { SyncOutcome } from '#shared/providers/contract';
import { mailSyncOf } from '#shared/registries/mail-sync';
import { clock } from '#shared/time';
import { emitMetrics, METRICS, MetricUnit } from '#shared/metrics';

/**
 * Sync runs of grants whose mail lives on another server, on Lambda: no long-lived connection.
 * - Serialized per grant: a run takes the grant's lease (a conditional write on its sync state) and
 *   gives it back when it ends; a second run finding it taken ends at once (the holder schedules
 *   what follows). A crashed run's lease lapses after LEASE_SECONDS.
 * - Bounded: a run stops between batches RESERVE_MS before its function's timeout, checkpointed,
 *   and queues its continuation at once.
 * - Scheduled adaptively, by a delayed queue message per grant: SYNC_INTERVALS.active while the
 *   grant changed in the last ACTIVE_SECONDS (on its server or through the API), idle for a day,
 *   then dormant. A queued run that its grant's state no longer expects (`due` is not the state's
 *   `next_due` while that is still ahead) is stale and dropped: one schedule per grant, however many
 *   requests to sync came in.
 * - Failures back off (30 s doubling to 15 min); a login the server refuses for good makes the grant
 *   `invalid` with grant.expired, and its runs stop until it is connected again.
 */
export const SYNC_INTERVALS = { active: 20, idle: 120, dormant: 600 } as const;
export const ACTIVE_SECONDS = 15 * 60;
const DORMANT_AFTER_SECONDS = 86_400;
/** Longer than any run (the function's timeout): a lease outliving its run only delays the next one. */
const LEASE_SECONDS = 15 * 60;
const RESERVE_MS = 20_000;
const MAX_BACKOFF_SECONDS = 900;

const log = logger.child({ function: 'mail-sync' });

/** The start-mail-sync job: the grant's sync state, and its first run at once. */
export async function startMailSync(job: { application_id: string; grant_id: string }): Promise<void> {
  await createSyncState(job.grant_id as GrantId, job.application_id as ApplicationId, clock.nowSeconds());
  await queueRun({ application_id: job.application_id, id: job.grant_id });
}

/** Seconds until a grant's next run after a run that succeeded: by how long ago the grant last changed. */
export function nextInterval(state: MailSyncRecord, now: number): number {
  const quietFor = now - state.last_change_at;
  if (quietFor < ACTIVE_SECONDS) return SYNC_INTERVALS.active;
  return quietFor < DORMANT_AFTER_SECONDS ? SYNC_INTERVALS.idle : SYNC_INTERVALS.dormant;
}

/** Why a failed run failed, for the state and the log (never a credential: imapflow's error text and codes only). */
const reasonOf = (error: unknown) => {
  const e = error as { code?: string; serverResponseCode?: string; responseText?: string; message?: string };
  return [e.serverResponseCode ?? e.code, e.responseText ?? e.message].filter(Boolean).join(': ').slice(0, 300);
};

/** A login the server refused: the credentials no longer work (a transient refusal says UNAVAILABLE, LIMIT or INUSE instead). */
const refusedForGood = (error: unknown) => {
  const e = error as { authenticationFailed?: boolean; serverResponseCode?: string };
  return e.authenticationFailed === true || e.serverResponseCode === 'AUTHENTICATIONFAILED';
};

export async function runMailSync(payload: SyncPayload, remainingMs: () => number): Promise<void> {
  const grantId = payload.grant_id as GrantId;
  const grant = await getGrant(payload.application_id as ApplicationId, grantId);
  const sync = grant && mailSyncOf(grant);
  if (!grant || !sync || grant.grant_status !== 'valid') return;
  const now = clock.nowMs();
  const current = await getSyncState(grantId);
  if (!current) return;
  if (payload.due !== undefined) {
    // Stale: its grant expects a run at another time that is still ahead (that run's message is queued).
    if (current.next_due !== undefined && current.next_due !== payload.due && current.next_due > now) return;
    // Held longer than SQS holds a message: held again.
    if (payload.due > now + 1000) return queueRun(grant, payload.due);
  }
  const leaseId = randomUUID();
  const state = await takeSyncLease(grantId, leaseId, clock.nowSeconds(), LEASE_SECONDS);
  if (!state) {
    if (payload.pushed !== undefined) await pushedRunAgain(grant, payload.pushed);
    return;
  }
  let outcome: SyncOutcome = { status: 'done', changed: false };
  try {
    outcome = await sync.run(grant, {
      state,
      save: async (next, outbox = []) => {
        try {
          await saveSyncState(next, leaseId, outbox);
        } catch (error) {
          // A write may land and still throw (a lost answer): what ends the run is what is stored now,
          // never the state before it, which would put back a cursor and announce its changes again.
          const stored = await getSyncState(grantId).catch(() => undefined);
          if (stored?.lease_id === leaseId) Object.assign(state, stored);
          throw error;
        }
      },
      outOfTime: () => remainingMs() < RESERVE_MS,
    });
    state.failures = 0;
    delete state.last_error;
    if (outcome.changed) state.last_change_at = clock.nowSeconds();
  } catch (error) {
    if (error instanceof SyncStateChangedError) return;
    state.failures += 1;
    state.last_error = reasonOf(error);
    log.warn('sync run failed', { grant_id: grantId, failures: state.failures, reason: state.last_error });
    if (refusedForGood(error)) {
      await releaseSyncLease(state, leaseId, 0);
      return expire(grant);
    }
  }
  state.last_run_at = clock.nowSeconds();
  // A push (Gmail's watch, Graph's subscriptions) that lapsed or was refused: the grant is polled until it is back.
  const watch = state.gmail?.watch ?? graphWatch(state);
  const pushLapsed = !!watch && (!!watch.error || watch.expires_at <= state.last_run_at);
  emitMetrics({ provider: grant.provider }, [
    [METRICS.syncRuns, MetricUnit.Count, 1],
    ...(pushLapsed ? [[METRICS.pushLapsed, MetricUnit.Count, 1] as const] : []),
  ]);
  const delay = state.failures
    ? Math.min(MAX_BACKOFF_SECONDS, 30 * 2 ** (state.failures - 1))
    : outcome.status === 'more'
      ? 0
      : nextInterval(state, clock.nowSeconds());
  const due = clock.nowMs() + delay * 1000;
  await releaseSyncLease(state, leaseId, due);
  await queueRun(grant, due);
}

/** The server refuses the grant's login: invalid until connected again, with grant.expired. */
async function expire(grant: GrantRecord): Promise<void> {
  try {
    await setGrantStatus(grant, 'invalid', clock.nowSeconds(), [], (next) => [
      {
        notification: newNotification({
          type: 'grant.expired',
          applicationId: grant.application_id,
          grantId: grant.id,
          object: toGrantResource(next),
        }),
      },
    ]);
  } catch (error) {
    if (!(error instanceof StaleWriteError)) throw error;
  }
}

/** The mail-sync queue's consumer (functions/mail-sync): one run per message. */
export const consumeMailSyncQueue = (event: SQSEvent, context: Context): Promise<SQSBatchResponse> =>
  eachMessage(event, 'sync run failed', readSync, (payload) =>
    runMailSync(payload, () => context.getRemainingTimeInMillis()),
  );
