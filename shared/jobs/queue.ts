import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { sqs } from '#shared/aws/sqs';
import { env } from '#shared/config';

/**
 * Background work that must not hold up a request goes through the jobs queue (SQS with a DLQ) to
 * the `jobs` worker. Jobs are a discriminated union handled by an exhaustive switch there, and must
 * be idempotent: SQS delivers at least once.
 */
export type Job =
  /** Deletes everything a deleted grant stored: mailbox items, indexes, contents in S3. */
  | { kind: 'purge-grant'; application_id: string; grant_id: string; provider: string }
  /** Deletes the delivery log and counters of a deleted webhook destination. */
  | { kind: 'purge-webhook'; webhook_id: string };

const QUEUE_URL = env.jobsQueueUrl();

export async function enqueueJob(job: Job): Promise<void> {
  await sqs.send(new SendMessageCommand({ QueueUrl: QUEUE_URL, MessageBody: JSON.stringify(job), MessageAttributes: { kind: { DataType: 'String', StringValue: job.kind } } }));
}
