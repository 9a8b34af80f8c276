import type { DynamoDBRecord } from 'aws-lambda';
import { afterAll } from 'vitest';
import { startStreamRelay, type StreamRelay } from '../../scripts/local-stack/stream-relay';

/**
 * The outbox path of the platform for a test file: the table's stream → the real outbox consumer
 * (functions/outbox), in this process, as Lambda's event source mapping runs it when deployed. It
 * starts with the file's first application, reads from that moment on, and hands over only outbox
 * entries of applications this file created: test files run side by side on one table, each with
 * its own fan-out queue (FANOUT_QUEUE_URL), and must not receive each other's notifications.
 */
const applications = new Set<string>();
let relay: Promise<StreamRelay> | undefined;

const ownEntry = (record: DynamoDBRecord) => {
  const app = record.dynamodb?.NewImage?.application_id?.S;
  return record.dynamodb?.NewImage?.entity?.S === 'outbox' && app !== undefined && applications.has(app);
};

export async function registerApplication(applicationId: string): Promise<void> {
  applications.add(applicationId);
  relay ??= startStreamRelay({
    tableName: process.env.TABLE_NAME!,
    filter: ownEntry,
    // The consumer reads its queue URLs when it loads: after the test file has set them.
    consumer: async (event) => (await import('#functions/outbox/handler')).handler(event),
  });
  await relay;
}

/** Resolves once every outbox entry committed before the call has been published (or refused and retried). */
export async function outboxDrained(): Promise<void> {
  await (await relay)?.drained();
}

afterAll(async () => {
  await (await relay)?.stop();
  relay = undefined;
});
