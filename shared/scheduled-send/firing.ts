import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { FromSchema } from 'json-schema-to-ts';
import type { ScheduledSendFiring } from '#schemas/queues';
import { createOneShotSchedule } from '#shared/aws/scheduler';
import { sqs } from '#shared/aws/sqs';
import { env } from '#shared/config';
import { clock } from '#shared/time';
import { logger } from '#shared/logger';

/**
 * When a scheduled message fires, for every provider. One EventBridge Scheduler `at()` schedule per
 * message, whose target is the scheduled-send queue.
 *
 * On time to the second: the Scheduler fires anywhere in the minute after a schedule's time. The
 * schedule is therefore set for `send_at − 62 s`, so its whole minute ends at least 2 s before
 * `send_at`; the worker that receives the firing holds the remaining seconds as an SQS delay
 * (DelaySeconds, never a sleeping function) and sends when the delayed message arrives, within the
 * second after `send_at`. A message due too soon for that (the schedule must lie ahead) gets the
 * same delayed queue message right away as well; whichever arrives first sends, the other finds the
 * record no longer pending. The worker: shared/services/scheduled-send.ts.
 */
/** The Scheduler's precision: a schedule fires within this many seconds after its time. */
const SCHEDULER_WINDOW_SECONDS = 60;
/** The firing's minute ends at least this long before send_at. */
const FIRING_MARGIN_SECONDS = 2;
/** A schedule is never set sooner than this from now. */
const SCHEDULE_LEAD_SECONDS = 5;
/** SQS's longest DelaySeconds. */
const MAX_DELAY_SECONDS = 900;

/**
 * What a firing carries: the queue message of the schedule, of a hold, and of a retry (schemas/queues.ts).
 * Firings of schedules created before the tag existed carry no `kind`.
 */
export type Firing = FromSchema<typeof ScheduledSendFiring>;

/**
 * When to set the schedule for a message due at `sendAt`, and whether it also needs the delayed
 * queue message at once (its schedule's minute could end after the margin before `sendAt`).
 */
export function planFiring(sendAt: number, now: number): { fireAt: number; direct: boolean } {
  const fireAt = Math.max(sendAt - SCHEDULER_WINDOW_SECONDS - FIRING_MARGIN_SECONDS, now + SCHEDULE_LEAD_SECONDS);
  return { fireAt, direct: fireAt + SCHEDULER_WINDOW_SECONDS > sendAt - FIRING_MARGIN_SECONDS };
}

/** Whole seconds to hold a message due at `sendAt` so that it arrives at or after it (at most SQS's 900). */
export const holdSeconds = (sendAt: number, nowMs: number) =>
  Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.ceil((sendAt * 1000 - nowMs) / 1000)));

export async function enqueueFiring(firing: Firing, delaySeconds: number): Promise<void> {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: env.scheduledSendQueueUrl(),
      MessageBody: JSON.stringify(firing),
      DelaySeconds: delaySeconds,
    }),
  );
}

/**
 * Arms a schedule's firing, before its record commits (a schedule whose record never committed
 * fires into a worker that finds nothing to send, whereas a record without its schedule would never
 * be sent). Returns what to do once the record has committed: queue the early firing of a message
 * due soon (the schedule stays the durable trigger; that one only makes it leave on time).
 */
export async function armFiring(firing: Firing, now: number): Promise<() => Promise<void>> {
  const plan = planFiring(firing.send_at, now);
  await createOneShotSchedule(firing.schedule_id, plan.fireAt, firing);
  return async () => {
    if (!plan.direct) return;
    await enqueueFiring(firing, holdSeconds(firing.send_at, clock.nowMs())).catch((error) =>
      logger.warn('scheduled send: early firing not queued; the schedule fires it', {
        schedule_id: firing.schedule_id,
        error,
      }),
    );
  };
}
