import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { sendMessages, type OutgoingMessage } from '#shared/aws/sqs';
import { env } from '#shared/config';
import { BatchFailures, readBodies } from '#shared/jobs/batch';
import { readDelivery } from '#shared/jobs/payloads';
import { emitMetrics, METRICS, MetricUnit } from '#shared/metrics';
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
function followUp(
  job: DeliveryJob,
  result: DeliveryOutcome,
): { queueUrl: string; message: OutgoingMessage } | undefined {
  if (result.outcome === 'retry') {
    return {
      queueUrl: DELIVERY_QUEUE_URL,
      message: { body: JSON.stringify({ ...job, attempt: job.attempt + 1 }), delaySeconds: result.delaySeconds },
    };
  }
  if (result.outcome === 'given_up') {
    return {
      queueUrl: DEAD_LETTER_QUEUE_URL,
      message: { body: JSON.stringify({ ...job, given_up_at: clock.nowSeconds() }) },
    };
  }
  return undefined;
}

export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const failures = new BatchFailures();
  const readable = readBodies(event, failures, 'delivery: unreadable job', readDelivery);
  let results: DeliveryOutcome[];
  try {
    results = await deliverBatch(readable.map((r) => r.body));
  } catch (error) {
    // Our own failure (not a receiver's): SQS hands the batch out again after its visibility timeout.
    failures.failAll(event.Records, 'delivery batch failed', error);
    return failures.response;
  }
  const count = (outcome: DeliveryOutcome['outcome']) => results.filter((r) => r.outcome === outcome).length;
  emitMetrics({}, [
    [METRICS.deliveries, MetricUnit.Count, count('delivered')],
    [METRICS.deliveryRetries, MetricUnit.Count, count('retry')],
    [METRICS.deliveryDeadLettered, MetricUnit.Count, count('given_up')],
  ]);
  // Follow-ups, one SendMessageBatch per queue; a record whose follow-up was not sent is received again.
  const byQueue = new Map<string, { messageId: string; message: OutgoingMessage }[]>();
  results.forEach((result, index) => {
    const { record, body: job } = readable[index]!;
    // Logged by deliverBatch where it failed.
    if (result.outcome === 'internal') return void failures.report(record.messageId);
    const next = followUp(job, result);
    if (next)
      byQueue.set(next.queueUrl, [
        ...(byQueue.get(next.queueUrl) ?? []),
        { messageId: record.messageId, message: next.message },
      ]);
  });
  await Promise.all(
    [...byQueue].map(async ([queueUrl, items]) => {
      for (const [index, reason] of await sendMessages(
        queueUrl,
        items.map((i) => i.message),
      ))
        failures.fail(items[index]!.messageId, 'delivery follow-up failed', reason);
    }),
  );
  return failures.response;
};
