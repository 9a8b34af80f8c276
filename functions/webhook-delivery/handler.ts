import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { sendMessages, type OutgoingMessage } from '#shared/aws/sqs';
import { env } from '#shared/config';
import { logger } from '#shared/logger';
import { clock } from '#shared/time';
import { deliverBatch, type DeliveryJob, type DeliveryOutcome } from '#shared/webhooks/deliver';

/**
 * Delivery worker (delivery queue). Each job of a batch is attempted concurrently, so a slow receiver
 * costs the batch at most one timeout. A retry is the same job with the next attempt number, sent
 * back to the queue with the backoff as its delay; after the third failed attempt the job goes to
 * the dead-letter queue, recorded as given up. The queue's redrive policy (maxReceiveCount 3) moves a
 * job that makes this worker itself fail three times to the same dead-letter queue.
 *
 * Why a new message rather than a longer visibility timeout on the received one: the attempt number
 * then travels in the job (the local SQS emulator counts visibility changes as receives, and
 * ApproximateReceiveCount is approximate on SQS too), and every retry is an ordinary delayed message.
 */
const DELIVERY_QUEUE_URL = env.deliveryQueueUrl();
const DEAD_LETTER_QUEUE_URL = env.deliveryDeadLetterQueueUrl();

/** What follows an attempt, as a message: a retry with the next attempt number, or the job given up. */
function followUp(job: DeliveryJob, result: DeliveryOutcome): { queueUrl: string; message: OutgoingMessage } | undefined {
  if (result.outcome === 'retry') {
    return { queueUrl: DELIVERY_QUEUE_URL, message: { body: JSON.stringify({ ...job, attempt: job.attempt + 1 }), delaySeconds: result.delaySeconds } };
  }
  if (result.outcome === 'given_up') {
    return { queueUrl: DEAD_LETTER_QUEUE_URL, message: { body: JSON.stringify({ ...job, given_up_at: clock.nowSeconds() }) } };
  }
  return undefined;
}

export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const failures: SQSBatchResponse['batchItemFailures'] = [];
  // An unreadable job fails alone (the redrive policy moves it to the dead-letter queue).
  const readable: { record: SQSRecord; job: DeliveryJob }[] = [];
  for (const record of event.Records) {
    try {
      readable.push({ record, job: JSON.parse(record.body) as DeliveryJob });
    } catch (error) {
      logger.error('delivery: unreadable job', { message_id: record.messageId, error });
      failures.push({ itemIdentifier: record.messageId });
    }
  }
  let results: DeliveryOutcome[];
  try {
    results = await deliverBatch(readable.map((r) => r.job));
  } catch (error) {
    // Our own failure (not a receiver's): SQS hands the batch out again after its visibility timeout.
    logger.error('delivery batch failed', { error });
    return { batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.messageId })) };
  }
  // Follow-ups, one SendMessageBatch per queue; a record whose follow-up was not sent is received again.
  const byQueue = new Map<string, { messageId: string; message: OutgoingMessage }[]>();
  results.forEach((result, index) => {
    const { record, job } = readable[index]!;
    if (result.outcome === 'internal') return void failures.push({ itemIdentifier: record.messageId });
    const next = followUp(job, result);
    if (next) byQueue.set(next.queueUrl, [...(byQueue.get(next.queueUrl) ?? []), { messageId: record.messageId, message: next.message }]);
  });
  await Promise.all(
    [...byQueue].map(async ([queueUrl, items]) => {
      for (const [index, reason] of await sendMessages(queueUrl, items.map((i) => i.message))) {
        const messageId = items[index]!.messageId;
        logger.error('delivery follow-up failed', { message_id: messageId, error: reason });
        failures.push({ itemIdentifier: messageId });
      }
    }),
  );
  return { batchItemFailures: failures };
};
