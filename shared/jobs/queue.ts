import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { sqs } from '#shared/aws/sqs';
import { env } from '#shared/config';
import type { Job } from '#shared/jobs/job';

export type { Job } from '#shared/jobs/job';

const QUEUE_URL = env.jobsQueueUrl();

/**
 * Sends a job now: a job's own continuation, or work no stored change depends on. A job that a
 * change needs is committed with it instead (an outbox entry, shared/db/outbox.ts).
 */
export async function enqueueJob(job: Job): Promise<void> {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: QUEUE_URL,
      MessageBody: JSON.stringify(job),
      MessageAttributes: { kind: { DataType: 'String', StringValue: job.kind } },
    }),
  );
}
