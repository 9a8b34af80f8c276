import { randomBytes } from 'node:crypto';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApplication } from '#shared/applications/service';
import { startStreamRelay, type StreamRelay } from '../../scripts/local-stack/stream-relay';
import { apiClient, type ApiClient } from '../support/api';
import { uniqueEmail } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { createTestQueue, drainQueue, sqs } from '../support/queues';

/**
 * The outbox under faults: a change that committed is published at least once, with the same
 * notification `id` on every retry, whatever fails between the commit and the fan-out queue. The
 * application here is made without the test factories, so that this file drives the stream with a
 * relay of its own (the fault goes between the stream and the real consumer).
 */
let gateway: Gateway;
let api: ApiClient;
let applicationId: string;
let relay: StreamRelay | undefined;

type Handler = (event: DynamoDBStreamEvent) => Promise<unknown>;
let consumer: Handler = async () => undefined;

beforeAll(async () => {
  gateway = await startGateway();
  const app = await createApplication({ name: 'outbox faults' });
  applicationId = app.application_id;
  api = apiClient(gateway.url, app.api_key);
});

afterAll(async () => {
  await relay?.stop();
  await gateway?.close();
});

async function startRelay() {
  relay = await startStreamRelay({
    tableName: process.env.TABLE_NAME!,
    filter: (r: DynamoDBRecord) =>
      r.dynamodb?.NewImage?.entity?.S === 'outbox' && r.dynamodb?.NewImage?.application_id?.S === applicationId,
    consumer: (event) => consumer(event) as never,
    onError: () => undefined,
  });
}

const createGrant = () =>
  api.post('/v3/connect/custom', { provider: 'nylas', settings: { email: uniqueEmail('outbox') } });

describe('outbox faults', () => {
  it('publishes what committed while the fan-out queue was unreachable, once it is back, once each', async () => {
    // Prepare: the consumer's queue does not exist yet, so every send to it fails.
    const existing = await createTestQueue('outbox-later-probe');
    const name = `outbox-later-${randomBytes(6).toString('hex')}`;
    process.env.FANOUT_QUEUE_URL = existing.replace(/[^/]+$/, name);
    const { handler } = await import('#functions/outbox/handler');
    let attempts = 0;
    consumer = async (event) => {
      attempts++;
      return handler(event);
    };
    await startRelay();

    // Act: the requests succeed although nothing can be published.
    const created = await createGrant();
    const deleted = await api.delete(`/v3/grants/${(await createGrant()).body.data.id}`);
    expect(created.status).toBe(201);
    expect(deleted.status).toBe(200);
    while (attempts < 3) await new Promise((resolve) => setTimeout(resolve, 50));

    // The queue comes back.
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
    expect(QueueUrl).toBe(process.env.FANOUT_QUEUE_URL);

    // Assess: the three notifications arrive, each once.
    const received = await drainQueue(QueueUrl!, 3, 20_000);
    await relay!.drained();
    received.push(...(await drainQueue(QueueUrl!, 1, 500)));
    const types = received.map((m) => m.body.type).sort();
    expect(types).toEqual(['grant.created', 'grant.created', 'grant.deleted']);
    expect(new Set(received.map((m) => m.body.id)).size).toBe(3);
    expect(
      received.find((m) => m.body.type === 'grant.created' && m.body.data.object.id === created.body.data.id),
    ).toBeDefined();
  }, 60_000);

  it('loses nothing when the consumer dies in the middle of a batch: what it redoes keeps its ids', async () => {
    // Prepare: the consumer publishes the first half of its first batch, then dies.
    await relay?.stop();
    const queueUrl = await createTestQueue('outbox-killed');
    process.env.FANOUT_QUEUE_URL = queueUrl;
    // The consumer reads its queue URL when it loads: a fresh copy for this test's queue.
    vi.resetModules();
    const { handler } = await import('#functions/outbox/handler');
    let killed = false;
    consumer = async (event) => {
      if (!killed && event.Records.length >= 2) {
        killed = true;
        await handler({ Records: event.Records.slice(0, Math.floor(event.Records.length / 2)) });
        throw new Error('the function was killed');
      }
      return handler(event);
    };
    await startRelay();

    // Act: several changes committed together, so the first batch holds more than one.
    const grants = await Promise.all(Array.from({ length: 6 }, () => createGrant()));
    expect(grants.every((g) => g.status === 201)).toBe(true);

    // Assess: every notification arrived; the ones published twice carry one id each time.
    const received = await drainQueue(queueUrl, 6, 20_000);
    await relay!.drained();
    received.push(...(await drainQueue(queueUrl, 100, 500)));
    expect(killed).toBe(true);
    const ids = new Set(received.map((m) => m.body.id));
    const objects = new Set(received.map((m) => m.body.data.object.id));
    expect(objects).toEqual(new Set(grants.map((g) => g.body.data.id)));
    expect(ids.size).toBe(6);
  }, 60_000);
});
