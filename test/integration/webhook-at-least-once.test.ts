import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { startReceiver, type Receiver } from '../support/receiver';
import { createQueueWithDlq, sqs } from '../support/queues';
import { drainThroughHandler, startQueueWorker } from '../support/sqs-worker';

/**
 * At least once: a delivery worker killed in the middle of a batch leaves its jobs on the queue; when
 * their visibility timeout ends another worker delivers them. Nothing is lost, and the duplicates of
 * what the killed worker had already sent carry the same notification id.
 */
let gateway: Gateway;
let api: ApiClient;
let receiver: Receiver;
let delivery: { queue: string; dlq: string };
let fanoutQueue: string;

beforeAll(async () => {
  const fanout = await createQueueWithDlq('fanout', { visibilityTimeout: 30 });
  fanoutQueue = fanout.queue;
  // A short visibility timeout, so the killed worker's jobs come back within the test.
  delivery = await createQueueWithDlq('delivery', { visibilityTimeout: 2 });
  Object.assign(process.env, {
    FANOUT_QUEUE_URL: fanout.queue,
    DELIVERY_QUEUE_URL: delivery.queue,
    DELIVERY_DLQ_URL: delivery.dlq,
  });
  gateway = await startGateway();
  api = apiClient(gateway.url, (await makeApplication()).apiKey);
  receiver = await startReceiver();
});

afterAll(async () => {
  await receiver?.close();
  await gateway?.close();
});

describe('delivery worker killed mid-batch', () => {
  it('loses no notification; duplicates share their id', async () => {
    // Prepare: five notifications fanned out into five delivery jobs.
    await api.post('/v3/webhooks', { webhook_url: receiver.url, trigger_types: ['grant.created'] });
    for (let i = 0; i < 5; i++) await makeAgentGrant(api);
    const { handler: fanoutHandler } = await import('#functions/webhook-fanout/handler');
    await drainThroughHandler(fanoutQueue, fanoutHandler);
    const { deliverBatch } = await import('#shared/webhooks/deliver');

    // Act 1: a worker takes a batch, delivers two jobs, and dies before acknowledging any.
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: delivery.queue, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    expect(Messages.length).toBeGreaterThanOrEqual(2);
    await deliverBatch(Messages.slice(0, 2).map((message) => JSON.parse(message.Body!)));

    // Act 2: the jobs come back after the visibility timeout; a healthy worker runs.
    const { handler: deliveryHandler } = await import('#functions/webhook-delivery/handler');
    const worker = startQueueWorker(delivery.queue, deliveryHandler, { batchSize: 10 });
    try {
      await receiver.waitFor(7, 15_000);
    } finally {
      await worker.stop();
    }

    // Assess
    const ids = receiver.received.map((r) => JSON.parse(r.raw.toString()).id as string);
    expect(ids).toHaveLength(7);
    expect(new Set(ids).size).toBe(5);
    const counts = [...new Set(ids)].map((id) => ids.filter((x) => x === id).length).sort();
    expect(counts).toEqual([1, 1, 1, 2, 2]);
  }, 40_000);
});
