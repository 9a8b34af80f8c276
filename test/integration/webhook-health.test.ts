import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { clock } from '#shared/time';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication, uniqueEmail } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { sunkRaw, waitForSunk } from '../support/mail';
import { startReceiver, type Receiver } from '../support/receiver';
import { pipelineIdle } from '../support/pipeline';
import { createQueueWithDlq } from '../support/queues';
import { startQueueWorker } from '../support/sqs-worker';
import { createTable } from '../../scripts/local-stack/provision';
import { attemptRecord } from '../support/attempts';

// The health check judges every destination of the deployment, and this file moves the clock 72
// hours ahead: it gets a table of its own, so destinations of files running alongside are neither
// judged by it nor counted. (Modules read TABLE_NAME when they load, so this runs before imports.)
vi.hoisted(() => {
  process.env.TABLE_NAME = `${process.env.TABLE_NAME}-health-${process.pid}`;
});
const dynamodb = new DynamoDBClient({});

/**
 * Health of destinations: active → failing → failed, with email notices, driven by the injectable
 * clock (the workers and the health check run in this process and share it).
 */
let gateway: Gateway;
let api: ApiClient;
let receiver: Receiver;
let workers: { stop(): Promise<void> }[] = [];
let queues: string[] = [];
let evaluateHealth: typeof import('#shared/webhooks/health').evaluateHealth;
const HOUR = 3600;

/** Runs the health check (as the scheduled function does) and returns the status changes of one destination. */
async function evaluate(webhookId: string) {
  return (await evaluateHealth()).filter((c) => c.webhook_id === webhookId).map(({ from, to }) => `${from} → ${to}`);
}

/** Publishes `count` notifications and waits until their attempts are in the delivery log. */
async function publishAndWait(count: number, webhookId: string) {
  const before = (await api.get(`/v3/webhooks/${webhookId}/deliveries?limit=200`)).body.data.length;
  for (let i = 0; i < count; i++) await makeAgentGrant(api);
  const deadline = Date.now() + 15_000;
  let logged = before;
  while (
    (logged = (await api.get(`/v3/webhooks/${webhookId}/deliveries?limit=200`)).body.data.length) <
    before + count
  ) {
    if (Date.now() >= deadline) {
      throw new Error(
        `publishAndWait: ${logged - before} of ${count} delivery attempts of ${webhookId} logged after 15 s`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

beforeAll(async () => {
  await createTable(dynamodb, process.env.TABLE_NAME!);
  const fanout = await createQueueWithDlq('fanout', { visibilityTimeout: 30 });
  const delivery = await createQueueWithDlq('delivery', { visibilityTimeout: 30 });
  queues = [fanout.queue, delivery.queue];
  Object.assign(process.env, {
    FANOUT_QUEUE_URL: fanout.queue,
    DELIVERY_QUEUE_URL: delivery.queue,
    DELIVERY_DLQ_URL: delivery.dlq,
    WEBHOOK_RETRY_SCHEDULE: '1,1',
  });
  gateway = await startGateway();
  api = apiClient(gateway.url, (await makeApplication()).apiKey);
  receiver = await startReceiver();
  const { handler: fanoutHandler } = await import('#functions/webhook-fanout/handler');
  const { handler: deliveryHandler } = await import('#functions/webhook-delivery/handler');
  ({ evaluateHealth } = await import('#shared/webhooks/health'));
  workers = [
    startQueueWorker(fanout.queue, fanoutHandler, { batchSize: 10 }),
    startQueueWorker(delivery.queue, deliveryHandler, { batchSize: 10 }),
  ];
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await receiver?.close();
  await gateway?.close();
  await dynamodb.send(new DeleteTableCommand({ TableName: process.env.TABLE_NAME }));
});

describe('webhook health', () => {
  it('marks a destination failing, then failed after 72 hours, with notices, and only a manual PUT revives it', async () => {
    // Prepare: a destination whose endpoint answers 500 (a failure that is not retried).
    const watcher = uniqueEmail('ops');
    const created = await api.post('/v3/webhooks', {
      webhook_url: receiver.url,
      trigger_types: ['grant.created'],
      notification_email_addresses: [watcher],
    });
    const id = created.body.data.id;
    receiver.setDefault({ status: 500 });
    const t0 = clock.nowSeconds();

    // Act 1: three failed deliveries within 15 minutes.
    await publishAndWait(3, id);
    expect(await evaluate(id)).toEqual(['active → failing']);

    // Assess 1: failing, with a notice; deliveries go on.
    const failing = (await api.get(`/v3/webhooks/${id}`)).body.data;
    expect(failing.status).toBe('failing');
    const [notice] = await waitForSunk(watcher);
    expect(notice!.subject).toBe(`Webhook ${id} is failing`);
    expect(await sunkRaw(notice!.id)).toContain(receiver.url);
    await publishAndWait(1, id);

    // Act 2: 72 hours later the endpoint still fails.
    const restore = clock.set(() => (t0 + 72 * HOUR + 120) * 1000);
    try {
      await publishAndWait(3, id);
      expect(await evaluate(id)).toEqual(['failing → failed']);
      expect((await api.get(`/v3/webhooks/${id}`)).body.data.status).toBe('failed');
      expect((await waitForSunk(watcher)).map((m) => m.subject)).toContain(`Webhook ${id} is failed`);
    } finally {
      restore();
    }

    // Assess 2: a failed destination receives nothing, and the health check leaves it failed. A
    // sentinel (an active destination with the same trigger on its own receiver) shows the fan-out
    // has handled the notification; once the pipeline is idle, no delivery job of it is left anywhere
    // (jobs to different destinations run concurrently, or in different batches).
    const received = receiver.received.length;
    const sentinel = await startReceiver();
    try {
      const sentinelHook = await api.post('/v3/webhooks', {
        webhook_url: sentinel.url,
        trigger_types: ['grant.created'],
      });
      expect(sentinelHook.status, sentinelHook.text).toBe(200);
      const grant = await makeAgentGrant(api);
      expect((await sentinel.waitFor(1)).map((g) => JSON.parse(g.raw.toString()).data.grant_id)).toEqual([grant.id]);
      await pipelineIdle(queues);
      expect(receiver.received).toHaveLength(received);
      expect(await evaluate(id)).toEqual([]);
      expect((await api.delete(`/v3/webhooks/${sentinelHook.body.data.id}`)).status).toBe(200);
    } finally {
      await sentinel.close();
    }

    // Act 3: the endpoint is fixed; only PUT status active (re-verified) brings it back.
    receiver.setDefault({ status: 200 });
    const revived = await api.put(`/v3/webhooks/${id}`, { status: 'active' });
    expect(revived.body.data.status).toBe('active');
    await publishAndWait(1, id);
    // Every attempt before this one failed with 500. (Not `limit=1`, the newest by ID: attempt IDs
    // take their time from the clock, which stood 72 hours ahead for some of them.)
    const log = (await api.get(`/v3/webhooks/${id}/deliveries?limit=200`)).body.data as {
      outcome: string;
      status_code: number;
    }[];
    expect(log.filter((a) => a.outcome === 'delivered')).toEqual([
      expect.objectContaining({ outcome: 'delivered', status_code: 200 }),
    ]);
  }, 90_000);

  it('needs enough attempts to judge, and a failing destination that recovers becomes active again', async () => {
    const r = await startReceiver();
    try {
      const { id } = (await api.post('/v3/webhooks', { webhook_url: r.url, trigger_types: ['grant.created'] })).body
        .data;
      r.setDefault({ status: 500 });
      await publishAndWait(1, id);
      await evaluate(id);
      // One failure alone does not make a destination failing.
      expect((await api.get(`/v3/webhooks/${id}`)).body.data.status).toBe('active');
      await publishAndWait(2, id);
      await evaluate(id);
      expect((await api.get(`/v3/webhooks/${id}`)).body.data.status).toBe('failing');
      // 20 minutes later, deliveries succeed again.
      const restore = clock.set(() => Date.now() + 20 * 60 * 1000);
      try {
        r.setDefault({ status: 200 });
        await publishAndWait(1, id);
        await evaluate(id);
      } finally {
        restore();
      }
      expect((await api.get(`/v3/webhooks/${id}`)).body.data.status).toBe('active');
    } finally {
      await r.close();
    }
  }, 60_000);
});

describe('health of a failing destination', () => {
  it('keeps it failing while the few recent attempts all fail, and judges a PUT-revived one only on what came after', async () => {
    const r = await startReceiver();
    const later = (minutes: number) => clock.set(() => Date.now() + minutes * 60 * 1000);
    try {
      const { id } = (await api.post('/v3/webhooks', { webhook_url: r.url, trigger_types: ['grant.created'] })).body
        .data;
      r.setDefault({ status: 500 });
      await publishAndWait(3, id);
      expect(await evaluate(id)).toEqual(['active → failing']);

      // 20 minutes later one more attempt fails: too few to judge as failing, but nothing recovered.
      let restore = later(20);
      try {
        await publishAndWait(1, id);
        expect(await evaluate(id)).toEqual([]);
        expect((await api.get(`/v3/webhooks/${id}`)).body.data.status).toBe('failing');
      } finally {
        restore();
      }

      // 22 minutes later: revived by PUT (re-verified), then two more failures. With the failure of
      // minute 20 they would be three in 15 minutes; only the two after the PUT count.
      restore = later(22);
      try {
        r.setDefault({ status: 200 });
        expect((await api.put(`/v3/webhooks/${id}`, { status: 'active' })).body.data.status).toBe('active');
        r.setDefault({ status: 500 });
        await publishAndWait(2, id);
        expect(await evaluate(id)).toEqual([]);
        expect((await api.get(`/v3/webhooks/${id}`)).body.data.status).toBe('active');
      } finally {
        restore();
      }
    } finally {
      await r.close();
    }
  }, 60_000);
});

describe('attempt counters', () => {
  it('count by the minute inside hour items (also across an hour boundary) and by the hour', async () => {
    const { recordAttempts, countAttempts } = await import('#shared/db/webhooks');
    const { newId } = await import('#shared/ids');
    const webhookId = newId('webhook');
    const hour = 500_000 * HOUR; // an hour boundary
    const attempt = (time: number, outcome: 'delivered' | 'retrying') => attemptRecord(webhookId, time, outcome);
    // Two batches: 10:50–10:59 of one hour, then 11:00–11:05 of the next.
    await recordAttempts([
      attempt(hour - 600, 'delivered'),
      attempt(hour - 590, 'retrying'),
      attempt(hour - 30, 'retrying'),
    ]);
    await recordAttempts([
      attempt(hour + 10, 'retrying'),
      attempt(hour + 20, 'delivered'),
      attempt(hour + 300, 'retrying'),
    ]);
    const byMinute = async (from: number) => (await countAttempts(webhookId, from)).byMinute;
    const byHour = async (from: number) => (await countAttempts(webhookId, hour + 3000, from)).byHour;
    // From 10:55: the 10:59 attempt and the three after 11:00.
    expect(await byMinute(hour - 300)).toEqual({ attempts: 4, failures: 3 });
    // From 10:50: all six, by the minute.
    expect(await byMinute(hour - 600)).toEqual({ attempts: 6, failures: 4 });
    // From 11:01: only the 11:05 attempt.
    expect(await byMinute(hour + 60)).toEqual({ attempts: 1, failures: 1 });
    // By the hour, from any time in the first hour: both hours' totals.
    expect(await byHour(hour - 100)).toEqual({ attempts: 6, failures: 4 });
    expect(await byHour(hour)).toEqual({ attempts: 3, failures: 2 });
    // One query answers both windows: minutes from 11:01 and hours from 10:00.
    expect(await countAttempts(webhookId, hour + 60, hour - 100)).toEqual({
      byMinute: { attempts: 1, failures: 1 },
      byHour: { attempts: 6, failures: 4 },
    });
  });
});
