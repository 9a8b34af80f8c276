import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { sqs } from '#shared/aws/sqs';
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

async function settle(job: DeliveryJob, result: DeliveryOutcome): Promise<void> {
  if (result.outcome === 'retry') {
    await sqs.send(
      new SendMessageCommand({ QueueUrl: DELIVERY_QUEUE_URL, MessageBody: JSON.stringify({ ...job, attempt: (job.attempt ?? 1) + 1 }), DelaySeconds: result.delaySeconds }),
    );
  } else if (result.outcome === 'given_up') {
    await sqs.send(new SendMessageCommand({ QueueUrl: DEAD_LETTER_QUEUE_URL, MessageBody: JSON.stringify({ ...job, given_up_at: clock.nowSeconds() }) }));
  }
}

export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const jobs = event.Records.map((record) => ({ ...(JSON.parse(record.body) as DeliveryJob) }));
  for (const job of jobs) job.attempt ??= 1;
  let results: DeliveryOutcome[];
  try {
    results = await deliverBatch(jobs);
  } catch (error) {
    // Our own failure (not a receiver's): SQS hands the batch out again after its visibility timeout.
    logger.error('delivery batch failed', { error });
    return { batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.messageId })) };
  }
  const failures: SQSBatchResponse['batchItemFailures'] = [];
  await Promise.all(
    event.Records.map(async (record, i) => {
      try {
        await settle(jobs[i]!, results[i]!);
      } catch (error) {
        logger.error('delivery follow-up failed', { message_id: record.messageId, error });
        failures.push({ itemIdentifier: record.messageId });
      }
    }),
  );
  return { batchItemFailures: failures };
};
