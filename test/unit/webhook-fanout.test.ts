import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { handler } from '#functions/webhook-fanout/handler';

const sqsMock = mockClient(SQSClient);
const dynamoMock = mockClient(DynamoDBDocumentClient);

const destination = (app: string, n: number, extra: object = {}) => ({
  pk: `app#${app}`,
  sk: `webhook#${n}`,
  id: `webhook_${app}_${n}`,
  application_id: app,
  status: 'active',
  trigger_types: ['grant.created'],
  ...extra,
});
const notification = (app: string, n: number, type = 'grant.created') => ({
  messageId: `msg-${app}-${n}`,
  body: JSON.stringify({
    specversion: '1.0',
    type,
    source: '/switchboard',
    id: `ntf_${app}_${n}`,
    time: 0,
    data: { application_id: app, grant_id: null, object: {} },
  }),
});
const event = (...records: { messageId: string; body: string }[]) => ({ Records: records }) as unknown as SQSEvent;
const enqueued = () =>
  sqsMock
    .commandCalls(SendMessageBatchCommand)
    .flatMap((c) => c.args[0].input.Entries!.map((e) => JSON.parse(e.MessageBody!)));

describe('Handler: webhook fan-out', () => {
  beforeEach(() => {
    sqsMock.reset();
    dynamoMock.reset();
    sqsMock.on(SendMessageBatchCommand).callsFake((input: { Entries: { Id: string }[] }) => ({
      Successful: input.Entries.map((e) => ({ Id: e.Id })),
      Failed: [],
    }));
  });

  it("reads each application's destinations once per batch and packs jobs into full batches", async () => {
    // Prepare: 4 notifications of one application with 6 subscribed destinations, 1 inactive, 1 not subscribed
    const items = [
      ...Array.from({ length: 6 }, (_, i) => destination('app_a', i)),
      destination('app_a', 6, { status: 'inactive' }),
      destination('app_a', 7, { trigger_types: ['grant.deleted'] }),
    ];
    dynamoMock.on(QueryCommand).resolves({ Items: items });

    // Act
    const result = await handler(event(...[0, 1, 2, 3].map((n) => notification('app_a', n))));

    // Assess
    expect(result.batchItemFailures).toEqual([]);
    expect(dynamoMock.commandCalls(QueryCommand)).toHaveLength(1);
    const batches = sqsMock.commandCalls(SendMessageBatchCommand).map((c) => c.args[0].input.Entries!.length);
    expect(batches.sort()).toEqual([10, 10, 4]);
    const jobs = enqueued();
    expect(jobs).toHaveLength(24);
    expect(new Set(jobs.map((j) => j.webhook_id))).toEqual(new Set(items.slice(0, 6).map((i) => i.id)));
    expect(jobs.every((j) => j.attempt === 1 && j.application_id === 'app_a')).toBe(true);
  });

  it('fails only the notifications whose jobs were not enqueued', async () => {
    // Prepare: two applications, one destination each; the entry of app_b's job is refused
    dynamoMock.on(QueryCommand).callsFake((input: { ExpressionAttributeValues: Record<string, string> }) => ({
      Items: [destination(input.ExpressionAttributeValues[':pk']!.includes('app_a') ? 'app_a' : 'app_b', 0)],
    }));
    sqsMock.on(SendMessageBatchCommand).callsFake((input: { Entries: { Id: string; MessageBody: string }[] }) => ({
      Successful: input.Entries.filter((e) => !e.MessageBody.includes('app_b')).map((e) => ({ Id: e.Id })),
      Failed: input.Entries.filter((e) => e.MessageBody.includes('app_b')).map((e) => ({
        Id: e.Id,
        Code: 'InternalError',
        SenderFault: false,
        Message: 'try again',
      })),
    }));

    // Act
    const result = await handler(event(notification('app_a', 0), notification('app_b', 0)));

    // Assess
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'msg-app_b-0' }]);
  });

  it("fails an application's notifications when its destinations cannot be read, and an unreadable body alone", async () => {
    dynamoMock.on(QueryCommand).callsFake((input: { ExpressionAttributeValues: Record<string, string> }) => {
      if (input.ExpressionAttributeValues[':pk']!.includes('app_b')) throw new Error('throttled');
      return { Items: [destination('app_a', 0)] };
    });

    const result = await handler(
      event(notification('app_a', 0), notification('app_b', 0), notification('app_b', 1), {
        messageId: 'garbage',
        body: '{',
      }),
    );

    expect(result.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual([
      'garbage',
      'msg-app_b-0',
      'msg-app_b-1',
    ]);
    expect(enqueued().map((j) => j.notification.id)).toEqual(['ntf_app_a_0']);
  });

  it('fans a batch of 25 notifications out to one destination in 3 SendMessageBatch requests, with one destination read', async () => {
    // Prepare
    dynamoMock.on(QueryCommand).resolves({ Items: [destination('app_a', 0)] });

    // Act
    const result = await handler(event(...Array.from({ length: 25 }, (_, n) => notification('app_a', n))));

    // Assess
    expect(result.batchItemFailures).toEqual([]);
    const reads = dynamoMock.commandCalls(QueryCommand);
    expect(reads).toHaveLength(1);
    // Only what the fan-out needs of a destination is read: never its URL or secret.
    expect(Object.values(reads[0]!.args[0].input.ExpressionAttributeNames ?? {}).sort()).toEqual([
      'application_id',
      'id',
      'status',
      'trigger_types',
    ]);
    expect(
      sqsMock
        .commandCalls(SendMessageBatchCommand)
        .map((c) => c.args[0].input.Entries!.length)
        .sort(),
    ).toEqual([10, 10, 5]);
    expect(
      enqueued()
        .map((j) => j.notification.id)
        .sort(),
    ).toEqual(Array.from({ length: 25 }, (_, n) => `ntf_app_a_${n}`).sort());
  });

  it('reports a partial batch failure per notification: refused entries and a failed request fail only their own', async () => {
    // Prepare: 25 notifications, one destination; one entry of one request refused, another request failing whole
    dynamoMock.on(QueryCommand).resolves({ Items: [destination('app_a', 0)] });
    let requests = 0;
    sqsMock.on(SendMessageBatchCommand).callsFake((input: { Entries: { Id: string; MessageBody: string }[] }) => {
      if (++requests === 3) throw new Error('connection reset');
      const refused = input.Entries.filter((e) => JSON.parse(e.MessageBody).notification.id === 'ntf_app_a_4');
      return {
        Successful: input.Entries.filter((e) => !refused.includes(e)).map((e) => ({ Id: e.Id })),
        Failed: refused.map((e) => ({ Id: e.Id, Code: 'InternalError', SenderFault: false, Message: 'try again' })),
      };
    });

    // Act
    const result = await handler(event(...Array.from({ length: 25 }, (_, n) => notification('app_a', n))));

    // Assess: the refused entry's notification, and the 5 of the failed request (the last 5), are received again; nothing else
    const failedRequest = sqsMock
      .commandCalls(SendMessageBatchCommand)[2]!
      .args[0].input.Entries!.map((e) => `msg-app_a-${JSON.parse(e.MessageBody!).notification.id.split('_').at(-1)}`);
    expect(failedRequest).toHaveLength(5);
    expect(result.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(
      ['msg-app_a-4', ...failedRequest].sort(),
    );
  });
});
