import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { eachMessage } from '#shared/jobs/batch';
import { readFiring } from '#shared/jobs/payloads';
import { logger } from '#shared/logger';
import { enqueueFiring, type Firing } from '#shared/scheduled-send/firing';
import { runFiring } from '#shared/scheduled-send/worker';
import { runReminder } from '#shared/scheduling/reminders';

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
  eachMessage<unknown>(event, 'scheduled send: firing failed', async (body, record) => {
    const payload = readFiring(body);
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
      logger.warn('scheduled send: attempt failed, retrying', { schedule_id: firing.schedule_id, delay_seconds: outcome.delaySeconds, error: outcome.error });
      await enqueueFiring(firing, outcome.delaySeconds);
      break;
    default:
      logger.info('scheduled send', { schedule_id: firing.schedule_id, ...outcome });
  }
}
