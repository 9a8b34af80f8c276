import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { eachMessage } from '#shared/jobs/batch';
import { logger } from '#shared/logger';
import { enqueueFiring, type Firing } from '#shared/scheduled-send/firing';
import { runFiring } from '#shared/scheduled-send/worker';
import { isReminderFiring, runReminder } from '#shared/scheduling/reminders';

/**
 * The scheduled-send queue's consumer: every firing of an EventBridge schedule, every hold and every
 * retry arrives here. A firing before its send_at is held: sent back to the queue with the remaining
 * seconds as its delay. At send_at the message is sent once, whatever the number of firings. A
 * transient failure is retried after a delay the same way; a message SQS gives up on (its last
 * receive) ends as failed. Booking reminders' schedules fire into the same queue
 * (shared/scheduling/reminders.ts).
 */
const MAX_RECEIVES = 3;

// A firing not handled (e.g. DynamoDB unavailable) fails alone: SQS delivers it again after its visibility timeout.
export const consumeScheduledSendQueue = (event: SQSEvent): Promise<SQSBatchResponse> =>
  eachMessage<unknown>(event, 'scheduled send: firing failed', async (body, record) => {
    if (isReminderFiring(body)) {
      logger.info('booking reminder', { booking_id: body.booking_id, outcome: await runReminder(body) });
      return;
    }
    const firing = body as Firing;
    const lastDelivery = Number(record.attributes.ApproximateReceiveCount ?? '1') >= MAX_RECEIVES;
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
  });
