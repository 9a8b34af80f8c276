import type { GrantRecord } from '#shared/db/grants';
import { getGrant } from '#shared/db/grants';
import * as schedules from '#shared/db/schedules';
import type { ScheduleRecord } from '#shared/db/schedules';
import { parseId, type ApplicationId, type ScheduleId } from '#shared/ids';
import { eachMessage } from '#shared/jobs/batch';
import { readFiring } from '#shared/jobs/payloads';
import { logger } from '#shared/logger';
import { scheduledSendingOf } from '#shared/registries/scheduled-sending';
import { enqueueFiring, holdSeconds, type Firing } from '#shared/scheduled-send/firing';
import { ScheduledSendRefusal } from '#shared/scheduled-send/refusal';
import { runReminder } from '#shared/scheduling/reminders';
import { clock } from '#shared/time';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { emitMetrics, METRICS, MetricUnit } from '#shared/metrics';

/**
 * The scheduled-send worker's logic (functions/scheduled-send), for every provider: a firing of a
 * schedule, a hold or a retry arrives; before send_at it is held (queued again with the remaining
 * seconds as its delay), at send_at the message is sent once, through the provider of the
 * schedule's grant (ScheduledSending, shared/providers/contract.ts). See firing.ts for the timing and
 * shared/db/schedules.ts for the states.
 */
/** A worker's hold on a record it is sending: longer than the worker function can run. */
const LEASE_MS = 120_000;
/** Attempts (transient failures, each retried after a delay) before a scheduled send fails. */
export const MAX_ATTEMPTS = 5;

export type FiringOutcome =
  | { kind: 'hold'; delaySeconds: number }
  | { kind: 'retry'; delaySeconds: number; error: unknown }
  | { kind: 'sent'; messageId: string }
  | { kind: 'failed'; reason: string }
  | { kind: 'skipped'; why: string };

class LostLeaseError extends Error {}

async function fail(
  grant: GrantRecord,
  record: ScheduleRecord,
  attempt: number,
  reason: string,
): Promise<FiringOutcome> {
  const closing = await scheduledSendingOf(grant).failure(grant, record, reason);
  const done = await schedules.failSchedule(record, attempt, reason, clock.nowSeconds(), closing.items, closing.outbox);
  if (!done) return { kind: 'skipped', why: 'the record changed while failing it' };
  await closing.after();
  return { kind: 'failed', reason };
}

const INTERRUPTED =
  'the send was interrupted after the message was handed to the mail relay, which may have delivered it; it is not sent again, so that no recipient gets it twice';

/**
 * Handles one firing of a scheduled send (see the module comment): holds it until send_at, then
 * sends it once. `lastDelivery`: the queue will not deliver this message again, so a transient
 * failure ends the schedule as failed instead of being retried.
 */
export async function runFiring(firing: Firing, options: { lastDelivery: boolean }): Promise<FiringOutcome> {
  const grantId = parseId('grant', String(firing.grant_id));
  const scheduleId = parseId('schedule', String(firing.schedule_id));
  if (!grantId || !scheduleId) return { kind: 'skipped', why: 'malformed firing' };
  const record = await schedules.getSchedule(grantId, scheduleId as ScheduleId);
  if (!record || record.application_id !== firing.application_id)
    return { kind: 'skipped', why: 'no such schedule (never committed, or its grant was deleted)' };
  if (record.status !== 'pending' && record.status !== 'sending')
    return { kind: 'skipped', why: `already ${record.status}` };
  const nowMs = clock.nowMs();
  const hold = holdSeconds(record.send_at, nowMs);
  if (hold > 0) return { kind: 'hold', delaySeconds: hold };
  if (record.status === 'sending' && (record.lease_until ?? 0) >= nowMs)
    return { kind: 'skipped', why: 'another worker is sending it' };
  if (!(await schedules.takeForSending(record, nowMs, LEASE_MS)))
    return { kind: 'skipped', why: 'taken by another worker' };
  const attempt = record.attempts + 1;
  const grant = await getGrant(record.application_id as ApplicationId, record.grant_id);
  if (!grant) return { kind: 'skipped', why: 'the grant was deleted' };
  if (record.relay_started_at) return fail(grant, record, attempt, INTERRUPTED);

  let relayStarted = false;
  try {
    const sent = await scheduledSendingOf(grant).send(grant, record, {
      beforeRelay: async () => {
        relayStarted = true;
        if (!(await schedules.markRelayStarted(record, attempt, clock.nowMs())))
          throw new LostLeaseError('The schedule was taken over while sending');
      },
      scheduleItems: () => schedules.successItems(record, attempt, clock.nowSeconds()),
    });
    // How late it left after its send_at (epoch seconds), in ms: the template's lateness alarm reads it.
    emitMetrics({}, [
      [METRICS.scheduledSendLateness, MetricUnit.Milliseconds, Math.max(0, clock.nowMs() - record.send_at * 1000)],
    ]);
    return { kind: 'sent', messageId: sent.messageId };
  } catch (error) {
    if (error instanceof ScheduledSendRefusal) return fail(grant, record, attempt, error.message);
    if (error instanceof LostLeaseError) return { kind: 'skipped', why: error.message };
    // Handed to the relay, then something failed: it may have left, so it is not sent again.
    if (relayStarted) {
      logger.warn('scheduled send: failed after the relay call', { schedule_id: record.id, error });
      return fail(grant, record, attempt, INTERRUPTED);
    }
    if (options.lastDelivery || attempt >= MAX_ATTEMPTS) {
      return fail(
        grant,
        record,
        attempt,
        `sending failed ${attempt} times (last: ${error instanceof Error ? error.message : String(error)})`,
      );
    }
    await schedules.releaseAttempt(record, attempt);
    return { kind: 'retry', delaySeconds: Math.min(60, 2 ** attempt), error };
  }
}

/**
 * The scheduled-send queue's consumer: every firing of an EventBridge schedule, every hold and every
 * retry arrives here, read at the queue boundary (shared/jobs/payloads.ts). A firing before its send_at is held: sent back to the queue with the remaining
 * seconds as its delay. At send_at the message is sent once, whatever the number of firings. A
 * transient failure is retried after a delay the same way; a message SQS gives up on (its last
 * receive) ends as failed. Booking reminders' schedules fire into the same queue
 * (shared/scheduling/reminders.ts).
 */
const MAX_RECEIVES = 3;

// A firing not handled (e.g. DynamoDB unavailable) fails alone: SQS delivers it again after its visibility timeout.
export const consumeScheduledSendQueue = (event: SQSEvent): Promise<SQSBatchResponse> =>
  eachMessage(event, 'scheduled send: firing failed', readFiring, async (payload, record) => {
    switch (payload.kind) {
      case 'booking-reminder':
        logger.info('booking reminder', { booking_id: payload.booking_id, outcome: await runReminder(payload) });
        return;
      case 'scheduled-send':
      case undefined:
        return fire(payload, Number(record.attributes.ApproximateReceiveCount ?? '1') >= MAX_RECEIVES);
      default: {
        const exhaustive: never = payload;
        throw new Error(`Unknown firing ${JSON.stringify(exhaustive)}`);
      }
    }
  });

async function fire(firing: Firing, lastDelivery: boolean): Promise<void> {
  const outcome = await runFiring(firing, { lastDelivery });
  switch (outcome.kind) {
    case 'hold':
      await enqueueFiring(firing, outcome.delaySeconds);
      break;
    case 'retry':
      logger.warn('scheduled send: attempt failed, retrying', {
        schedule_id: firing.schedule_id,
        delay_seconds: outcome.delaySeconds,
        error: outcome.error,
      });
      await enqueueFiring(firing, outcome.delaySeconds);
      break;
    default:
      logger.info('scheduled send', { schedule_id: firing.schedule_id, ...outcome });
  }
}
