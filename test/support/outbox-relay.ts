import type { DynamoDBRecord } from 'aws-lambda';
import { afterAll, inject } from 'vitest';
import { isOutboxInsert, startStreamRelay, type StreamRelay } from '../../scripts/local-stack/stream-relay';
import { createQueueWithDlq, drainQueue, messagesIn } from './queues';
import { startQueueWorker } from './sqs-worker';

/**
 * The outbox path of the platform for a test file: the table's stream → the real outbox consumer
 * (functions/outbox), in this process, as Lambda's event source mapping runs it when deployed. It
 * starts with the file's first application, reads from that moment on, and hands over only outbox
 * entries of applications this file created: test files run side by side on one table, each with
 * its own fan-out queue (FANOUT_QUEUE_URL), and must not receive each other's notifications.
 */
const applications = new Set<string>();
let relay: Promise<StreamRelay> | undefined;

/**
 * The jobs this file's changes commit (local deliveries, thread refreshes) run on a jobs queue of
 * the file's own, through the real jobs worker in the background, as Lambda runs it. A file that
 * sets JOBS_QUEUE_URL itself runs its jobs by hand instead.
 */
let jobs: { queue: string; stop(): Promise<void> } | undefined;

async function startJobs(): Promise<void> {
  if (process.env.JOBS_QUEUE_URL !== inject('stackEnv').JOBS_QUEUE_URL) return;
  const { queue } = await createQueueWithDlq('jobs', { visibilityTimeout: 30 });
  process.env.JOBS_QUEUE_URL = queue;
  const { handler } = await import('#functions/jobs/handler');
  const worker = startQueueWorker(queue, handler, { functionName: 'jobs', timeoutMs: 300_000 });
  jobs = { queue, stop: worker.stop };
}

const ownEntry = (record: DynamoDBRecord) => {
  const app = record.dynamodb?.NewImage?.application_id?.S;
  return isOutboxInsert(record) && app !== undefined && applications.has(app);
};

export async function registerApplication(applicationId: string): Promise<void> {
  applications.add(applicationId);
  relay ??= startJobs().then(() =>
    startStreamRelay({
      tableName: process.env.TABLE_NAME!,
      filter: ownEntry,
      // The consumer reads its queue URLs when it loads: after the test file has set them.
      consumer: async (event) => (await import('#functions/outbox/handler')).handler(event),
    }),
  );
  await relay;
}

/** Resolves once every outbox entry committed before the call has been published (or refused and retried). */
export async function outboxDrained(): Promise<void> {
  await (await relay)?.drained();
}

/**
 * The notifications published on `queueUrl` since its last drain, but the relay's answers to sends
 * (`message.delivered`: every send to an outside address publishes one; deliverability.test.ts
 * checks them), sorted by type then time. Once the outbox is drained they are all on the queue, so
 * the count taken then is all there is.
 */
export async function publishedBesidesDeliveries(queueUrl: string) {
  await outboxDrained();
  return (await drainQueue(queueUrl, await messagesIn(queueUrl)))
    .map((e) => e.body)
    .filter((e) => e.type !== 'message.delivered')
    .sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : a.time - b.time));
}

/**
 * Resolves once every job committed before the call has run to its end, and the jobs those jobs'
 * own changes committed: the outbox is drained and this file's jobs queue holds nothing, waiting or
 * in flight (a job's continuation is sent before the job is deleted), twice in a row. Tests wait on this for local deliveries, never on a fixed sleep.
 */
export async function jobsDone(timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await outboxDrained();
    if (!jobs) return;
    const left = await messagesIn(jobs.queue);
    // A job that has just ended may have committed changes of its own (a delivered copy announces
    // itself and sends its message-stored job): drained and empty once more, then it is done.
    if (left === 0) {
      await outboxDrained();
      if ((await messagesIn(jobs.queue)) === 0) return;
      continue;
    }
    if (Date.now() > deadline)
      throw new Error(`jobsDone: ${left} job(s) still on the jobs queue after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

afterAll(async () => {
  await (await relay)?.stop();
  await jobs?.stop();
  relay = undefined;
  jobs = undefined;
});
