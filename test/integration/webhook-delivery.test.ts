import { createHmac } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { startReceiver, type Receiver } from '../support/receiver';
import { pipelineIdle } from '../support/pipeline';
import { createQueueWithDlq, drainQueue } from '../support/queues';
import { startQueueWorker } from '../support/sqs-worker';

/**
 * The delivery pipeline for real: notifications published by the API land on this file's fan-out
 * queue, the fan-out worker enqueues delivery jobs, the delivery worker POSTs to local receivers.
 * Queues are created like serverless.yml declares them (DLQ after 3 receives); the retry schedule
 * is shortened to seconds through WEBHOOK_RETRY_SCHEDULE so retries happen within the test.
 */
let gateway: Gateway;
let api: ApiClient;
let applicationId: string;
let fanout: { queue: string; dlq: string };
let delivery: { queue: string; dlq: string };
let workers: { stop(): Promise<void> }[] = [];
const receivers: Receiver[] = [];

const hmac = (raw: Buffer, secret: string) => createHmac('sha256', secret).update(raw).digest('hex');

async function receiver() {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

/** Resolves once nothing more can arrive: no notification left to fan out, no delivery pending or scheduled. */
const idle = () => pipelineIdle([fanout.queue, delivery.queue]);

async function destination(url: string, extra: object = {}) {
  const r = await api.post('/v3/webhooks', {
    webhook_url: url,
    trigger_types: ['grant.created', 'grant.deleted', 'message.created'],
    ...extra,
  });
  expect(r.status, r.text).toBe(200);
  return r.body.data as { id: string; webhook_secret: string };
}

beforeAll(async () => {
  fanout = await createQueueWithDlq('fanout', { visibilityTimeout: 30 });
  delivery = await createQueueWithDlq('delivery', { visibilityTimeout: 30 });
  Object.assign(process.env, {
    FANOUT_QUEUE_URL: fanout.queue,
    DELIVERY_QUEUE_URL: delivery.queue,
    DELIVERY_DLQ_URL: delivery.dlq,
    WEBHOOK_RETRY_SCHEDULE: '1,2',
    WEBHOOK_TIMEOUT_MS: '1500',
  });
  gateway = await startGateway();
  const app = await makeApplication();
  applicationId = app.applicationId;
  api = apiClient(gateway.url, app.apiKey);
  const { handler: fanoutHandler } = await import('#functions/webhook-fanout/handler');
  const { handler: deliveryHandler } = await import('#functions/webhook-delivery/handler');
  workers = [
    startQueueWorker(fanout.queue, fanoutHandler, { batchSize: 10 }),
    startQueueWorker(delivery.queue, deliveryHandler, { batchSize: 10 }),
  ];
});

afterEach(async () => {
  // Destinations of one test must not receive the next test's notifications.
  const list = await api.get('/v3/webhooks');
  for (const w of list.body.data) await api.delete(`/v3/webhooks/${w.id}`);
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await Promise.all(receivers.map((r) => r.close()));
  await gateway?.close();
});

describe('delivery', () => {
  it('delivers a signed payload whose HMAC matches the raw bytes received', async () => {
    // Prepare
    const r = await receiver();
    const { webhook_secret: secret } = await destination(r.url);

    // Act
    const grant = await makeAgentGrant(api);

    // Assess
    const [got] = await r.waitFor(1);
    expect(got!.headers['x-service-signature']).toBe(hmac(got!.raw, secret));
    expect(got!.headers['content-type']).toBe('application/json');
    const payload = JSON.parse(got!.raw.toString());
    expect(Object.keys(payload)).toEqual([
      'specversion',
      'type',
      'source',
      'id',
      'time',
      'webhook_delivery_attempt',
      'data',
    ]);
    expect(payload).toMatchObject({
      specversion: '1.0',
      type: 'grant.created',
      webhook_delivery_attempt: 1,
      data: { application_id: applicationId, grant_id: grant.id, object: { id: grant.id } },
    });
    expect(payload.id).toMatch(/^ntf_/);
  });

  it('gzips the body with compressed_delivery and signs the bytes sent', async () => {
    const r = await receiver();
    const { webhook_secret: secret } = await destination(r.url, { compressed_delivery: true });
    await makeAgentGrant(api);
    const [got] = await r.waitFor(1);
    expect(got!.headers['content-encoding']).toBe('gzip');
    expect(got!.headers['x-service-signature']).toBe(hmac(got!.raw, secret));
    expect(JSON.parse(gunzipSync(got!.raw).toString()).type).toBe('grant.created');
  });

  it('delivers only subscribed types, and suffixed types to base subscribers', async () => {
    const grantsOnly = await receiver();
    const messages = await receiver();
    await destination(grantsOnly.url, { trigger_types: ['grant.deleted'] });
    await destination(messages.url, { trigger_types: ['message.created'] });
    const [a, b] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api)]);
    const big = `<p>${'x'.repeat(1_100_000)}</p>`;
    await api.post(`/v3/grants/${a.id}/messages/send`, { to: [{ email: b.email }], subject: 'Big', body: big });
    await api.delete(`/v3/grants/${a.id}`);
    const [deleted] = await grantsOnly.waitFor(1);
    expect(JSON.parse(deleted!.raw.toString()).type).toBe('grant.deleted');
    const got = await messages.waitFor(2);
    // Over 1 MB: body removed, `.truncated` appended, still delivered to message.created subscribers.
    expect(got.map((g) => JSON.parse(g.raw.toString()).type)).toEqual([
      'message.created.truncated',
      'message.created.truncated',
    ]);
    expect(got.every((g) => JSON.parse(g.raw.toString()).data.object.body === undefined)).toBe(true);
    await idle();
    expect(grantsOnly.received).toHaveLength(1);
    expect(messages.received).toHaveLength(2);
  });

  it.each([408, 429, 502, 503, 504, 507])(
    'retries HTTP %i with the same notification id and increasing attempt numbers',
    async (status) => {
      const r = await receiver();
      await destination(r.url);
      r.script({ status }, { status });
      await makeAgentGrant(api);
      const got = await r.waitFor(3, 20_000);
      expect(got).toHaveLength(3);
      const payloads = got.map((g) => JSON.parse(g.raw.toString()));
      expect(payloads.map((p) => p.webhook_delivery_attempt)).toEqual([1, 2, 3]);
      expect(new Set(payloads.map((p) => p.id)).size).toBe(1);
      // Backoff: the second retry waits longer than the first (1 s then 2 s, ±20 %).
      expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(700);
      expect(got[2]!.at - got[1]!.at).toBeGreaterThanOrEqual(1500);
    },
    30_000,
  );

  it('does not retry other statuses', async () => {
    const r = await receiver();
    const { id } = await destination(r.url);
    r.script({ status: 400 });
    await makeAgentGrant(api);
    await r.waitFor(1);
    // A retry would be a delayed job on the delivery queue: idle waits for it rather than for "long enough".
    await idle();
    expect(r.received).toHaveLength(1);
    const log = await api.get(`/v3/webhooks/${id}/deliveries`);
    expect(log.body.data).toEqual([
      expect.objectContaining({ outcome: 'failed', status_code: 400, attempt: 1, trigger_type: 'grant.created' }),
    ]);
  }, 20_000);

  it('honours Retry-After', async () => {
    const r = await receiver();
    await destination(r.url);
    r.script({ status: 429, headers: { 'retry-after': '4' } });
    await makeAgentGrant(api);
    const got = await r.waitFor(2, 15_000);
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(3800);
  }, 20_000);

  it('gives up after the third failure into the dead-letter queue, and later notifications still arrive', async () => {
    const r = await receiver();
    const { id } = await destination(r.url);
    r.script({ status: 503 }, { status: 503 }, { status: 503 });
    const first = await makeAgentGrant(api);
    await r.waitFor(3, 20_000);
    const dead = await drainQueue(delivery.dlq, 1, 10_000);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.body).toMatchObject({ attempt: 3, webhook_id: id, notification: { data: { grant_id: first.id } } });
    const second = await makeAgentGrant(api);
    const got = await r.waitFor(4, 10_000);
    expect(JSON.parse(got[3]!.raw.toString()).data.grant_id).toBe(second.id);
    // The worker records an attempt after the receiver has answered: wait for the fourth record.
    const outcomes = async () =>
      ((await api.get(`/v3/webhooks/${id}/deliveries`)).body.data as { outcome: string }[]).map((a) => a.outcome);
    await expect.poll(outcomes, { timeout: 5_000, interval: 100 }).toHaveLength(4);
    expect(await outcomes()).toEqual(['delivered', 'given_up', 'retrying', 'retrying']);
  }, 40_000);

  it('retries timeouts and connection resets, and a 10 MB answer does not stall anything', async () => {
    const slow = await receiver();
    const reset = await receiver();
    const huge = await receiver();
    const healthy = await receiver();
    slow.script({ hang: true });
    reset.script({ reset: true });
    huge.setDefault({ hugeBody: 10 * 1024 * 1024 });
    for (const r of [slow, reset, huge, healthy]) await destination(r.url);
    await makeAgentGrant(api);
    await healthy.waitFor(1);
    await huge.waitFor(1);
    // The healthy receiver is not held up by the hanging one: it is reached while the hanging request
    // is still open (it times out after 1.5 s here, 10 s by default), not after.
    const [hung] = await slow.waitFor(1);
    expect(healthy.received[0]!.seq).toBeLessThan(hung!.endedSeq ?? Infinity);
    const attempts = async (r: typeof slow) =>
      (await r.waitFor(2, 15_000)).map((g) => JSON.parse(g.raw.toString()).webhook_delivery_attempt);
    expect(await attempts(slow)).toEqual([1, 2]);
    expect(await attempts(reset)).toEqual([1, 2]);
    await idle();
    expect(huge.received).toHaveLength(1);
    expect(healthy.received).toHaveLength(1);
    expect(slow.received).toHaveLength(2);
    expect(reset.received).toHaveLength(2);
  }, 40_000);

  it('sends nothing to inactive destinations, and replays nothing when they are reactivated', async () => {
    const r = await receiver();
    const { id } = await destination(r.url);
    expect((await api.put(`/v3/webhooks/${id}`, { status: 'inactive' })).body.data.status).toBe('inactive');
    // A sentinel: an active destination with the same triggers on its own receiver. Once it has a
    // notification, the fan-out has handled that notification for every destination; once the
    // pipeline is idle, no delivery job of it is left anywhere (jobs of one notification to different
    // destinations run concurrently, or in different batches).
    const sentinel = await receiver();
    await destination(sentinel.url);
    const grantOf = (g: { raw: Buffer }) => JSON.parse(g.raw.toString()).data.grant_id as string;
    const first = await makeAgentGrant(api);
    expect((await sentinel.waitFor(1)).map(grantOf)).toEqual([first.id]);
    await idle();
    expect(r.received).toHaveLength(0);
    const reactivated = await api.put(`/v3/webhooks/${id}`, { status: 'active' });
    expect(reactivated.body.data.status).toBe('active');
    expect(reactivated.body.data.webhook_secret).toMatch(/^[0-9a-f]{64}$/);
    await idle();
    expect(r.received).toHaveLength(0);
    const second = await makeAgentGrant(api);
    await r.waitFor(1);
    expect((await sentinel.waitFor(2)).map(grantOf)).toEqual([first.id, second.id]);
    await idle();
    // Only the notification published after reactivation arrives: the missed one is not replayed.
    expect(r.received.map(grantOf)).toEqual([second.id]);
    expect(r.received[0]!.headers['x-service-signature']).toBe(
      hmac(r.received[0]!.raw, reactivated.body.data.webhook_secret),
    );
  }, 20_000);
});
