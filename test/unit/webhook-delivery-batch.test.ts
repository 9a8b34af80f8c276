import { createHmac } from 'node:crypto';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { BatchGetCommand, BatchWriteCommand, DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { handler } from '#functions/webhook-delivery/handler';
import { encryptSecret, sign, signingKey } from '#shared/webhooks/secrets';
import { startReceiver, type Receiver } from '../support/receiver';

/**
 * The delivery worker's batches: one destination read and one BatchWriteItem (the attempt records
 * and each destination's counters) for the whole batch, and a failure to store some attempts costing
 * only their own jobs. DynamoDB and SQS are mocked; the receivers are real, on loopback, so signatures are checked
 * on the bytes that arrived.
 */
const sqsMock = mockClient(SQSClient);
const dynamoMock = mockClient(DynamoDBDocumentClient);
const SECRETS = { webhook_a: 'a'.repeat(64), webhook_b: 'b'.repeat(64) } as const;
type Destination = keyof typeof SECRETS;

let receivers: Record<Destination, Receiver>;
let items: Record<string, unknown>[];

const job = (webhookId: Destination, n: number, attempt = 1) => ({
  messageId: `${webhookId}-${n}`,
  body: JSON.stringify({
    application_id: 'app_1',
    webhook_id: webhookId,
    attempt,
    notification: {
      specversion: '1.0',
      type: 'grant.created',
      source: '/switchboard',
      id: `ntf_${webhookId}_${n}`,
      time: 0,
      data: { application_id: 'app_1', grant_id: null, object: {} },
    },
  }),
});
const event = (...records: { messageId: string; body: string }[]) => ({ Records: records }) as unknown as SQSEvent;
/** Five jobs for each destination, interleaved. */
const mixedBatch = () => event(...[0, 1, 2, 3, 4].flatMap((n) => [job('webhook_a', n), job('webhook_b', n)]));
/** The items a BatchWriteItem call put. */
const written = (call: {
  args: [{ input: { RequestItems?: Record<string, { PutRequest?: { Item?: Record<string, unknown> } }[]> } }];
}) => Object.values(call.args[0].input.RequestItems!)[0]!.map((r) => r.PutRequest!.Item!);
const signedWith = (secret: string) => (r: Receiver['received'][number]) =>
  r.headers['x-service-signature'] === createHmac('sha256', secret).update(r.raw).digest('hex');

beforeAll(async () => {
  receivers = { webhook_a: await startReceiver(), webhook_b: await startReceiver() };
  items = await Promise.all(
    (Object.keys(SECRETS) as Destination[]).map(async (id) => ({
      pk: 'app#app_1',
      sk: `webhook#${id}`,
      id,
      application_id: 'app_1',
      status: 'active',
      trigger_types: ['grant.created'],
      webhook_url: receivers[id].url,
      compressed_delivery: false,
      secret: await encryptSecret(SECRETS[id]),
    })),
  );
});

afterAll(async () => {
  await Promise.all(Object.values(receivers ?? {}).map((r) => r.close()));
});

describe('Handler: webhook delivery, batches', () => {
  beforeEach(() => {
    sqsMock.reset();
    dynamoMock.reset();
    for (const r of Object.values(receivers)) r.received.length = 0;
    sqsMock.on(SendMessageBatchCommand).callsFake((input: { Entries: { Id: string }[] }) => ({
      Successful: input.Entries.map((e) => ({ Id: e.Id })),
      Failed: [],
    }));
    dynamoMock.on(BatchGetCommand).resolves({ Responses: { [process.env.TABLE_NAME!]: items } });
    dynamoMock.on(BatchWriteCommand).resolves({});
    dynamoMock.on(UpdateCommand).resolves({});
  });

  it('reads the destinations once, and writes the attempt records and the counts in one request', async () => {
    // Act
    const result = await handler(mixedBatch());

    // Assess
    expect(result.batchItemFailures).toEqual([]);
    expect(receivers.webhook_a.received).toHaveLength(5);
    expect(receivers.webhook_b.received).toHaveLength(5);
    expect(receivers.webhook_a.received.every(signedWith(SECRETS.webhook_a))).toBe(true);
    expect(receivers.webhook_b.received.every(signedWith(SECRETS.webhook_b))).toBe(true);
    expect(dynamoMock.commandCalls(BatchGetCommand)).toHaveLength(1);
    expect(dynamoMock.commandCalls(UpdateCommand)).toHaveLength(0);
    const writes = dynamoMock.commandCalls(BatchWriteCommand);
    expect(writes).toHaveLength(1);
    const items = written(writes[0]!);
    // One stored record per attempt...
    const records = items.filter((i) => String(i.pk).endsWith('#attempts'));
    expect(records.map((r) => r.notification_id).sort()).toEqual(
      [0, 1, 2, 3, 4].flatMap((n) => [`ntf_webhook_a_${n}`, `ntf_webhook_b_${n}`]).sort(),
    );
    // ...and one counters item per destination, beside them.
    const counters = items.filter((i) => String(i.pk).endsWith('#stats'));
    expect(counters.map((c) => c.pk).sort()).toEqual(['webhook#webhook_a#stats', 'webhook#webhook_b#stats']);
    // (First batch of this container's writer: its counts so far are this batch's.)
    expect(counters.map((c) => [c.attempts, c.failures])).toEqual([
      [5, 0],
      [5, 0],
    ]);
    expect(sqsMock.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });

  it("adds each batch's counts to what its writer stored before, in the same item", async () => {
    // Act: two batches in turn, as one container takes them
    await handler(mixedBatch());
    for (const r of Object.values(receivers)) r.script(...Array.from({ length: 5 }, () => ({ status: 503 })));
    await handler(mixedBatch());

    // Assess
    const [first, second] = dynamoMock
      .commandCalls(BatchWriteCommand)
      .map((c) => written(c).find((i) => i.pk === 'webhook#webhook_a#stats')!);
    expect(second!.sk).toBe(first!.sk);
    // (The writer lives as long as the container: earlier tests' batches are in its counts too.)
    expect([
      Number(second!.attempts) - Number(first!.attempts),
      Number(second!.failures) - Number(first!.failures),
    ]).toEqual([5, 5]);
  });

  it('fails only the jobs whose attempt records could not be written', async () => {
    // Prepare: 30 jobs, so two requests (25 records, then 5 records and the counters); the first fails
    let writes = 0;
    dynamoMock.on(BatchWriteCommand).callsFake(() => {
      if (++writes === 1) throw new Error('connection reset');
      return {};
    });

    // Act
    const result = await handler(event(...Array.from({ length: 30 }, (_, n) => job('webhook_a', n))));

    // Assess: the 25 jobs of the failed request are received again, and not the other 5
    const failed = written(dynamoMock.commandCalls(BatchWriteCommand)[0]!).map(
      (r) => `webhook_a-${String(r.notification_id).split('_').at(-1)}`,
    );
    expect(failed).toHaveLength(25);
    expect(result.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(failed.sort());
  });

  it('receives again every job an unwritten counters item counted, and sends none of their follow-ups', async () => {
    // Prepare: every attempt answered 503 (a retry each), and nothing can be written
    for (const r of Object.values(receivers)) r.script(...Array.from({ length: 5 }, () => ({ status: 503 })));
    dynamoMock.on(BatchWriteCommand).rejects(new Error('throttled'));

    // Act
    const result = await handler(mixedBatch());

    // Assess: no retry was queued for attempts that were neither recorded nor counted
    expect(result.batchItemFailures).toHaveLength(10);
    expect(sqsMock.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });
});

describe('Function: signingKey', () => {
  it('decrypts a stored secret once per container into a key that signs as the secret does', async () => {
    // Prepare
    const stored = await encryptSecret(SECRETS.webhook_a);
    const body = Buffer.from('{"id":"ntf_1"}');

    // Act
    const [first, second] = await Promise.all([signingKey(stored), signingKey(stored)]);
    const again = await signingKey(stored);

    // Assess: one key, shared; the same signature as the plain secret gives
    expect(second).toBe(first);
    expect(again).toBe(first);
    expect(sign(body, first)).toBe(createHmac('sha256', SECRETS.webhook_a).update(body).digest('hex'));
  });

  it('keys a rotated secret by its new ciphertext, and forgets one that does not decrypt', async () => {
    const before = await signingKey(await encryptSecret(SECRETS.webhook_a));
    const rotated = await signingKey(await encryptSecret(SECRETS.webhook_b));
    expect(sign(Buffer.from('x'), rotated)).not.toBe(sign(Buffer.from('x'), before));

    const broken = 'v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA:AAAA';
    const first = signingKey(broken);
    await expect(first).rejects.toThrow();
    // Tried again (and refused again), not answered from a cached failure.
    const second = signingKey(broken);
    expect(second).not.toBe(first);
    await expect(second).rejects.toThrow();
  });
});
