import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApplicationId, GrantId } from '#shared/ids';
import { fitForDelivery, newNotification } from '#shared/notifications/notification';
import { publishNotifications } from '#shared/notifications/publisher';
import { clock } from '#shared/time';

const sqsMock = mockClient(SQSClient);
const app = 'app_1' as ApplicationId;

describe('Function: newNotification', () => {
  let restoreClock: () => void;
  beforeEach(() => (restoreClock = clock.set(() => Date.UTC(2026, 10, 22, 12, 0, 0))));
  afterEach(() => restoreClock());

  it('builds a CloudEvents-shaped notification with its own id and the time of the change', () => {
    const object = { id: 'grant_x', email: 'a@b.c' };
    const a = newNotification({ type: 'grant.created', applicationId: app, grantId: 'grant_x' as GrantId, object });
    const b = newNotification({ type: 'grant.created', applicationId: app, grantId: 'grant_x' as GrantId, object });
    expect(a).toEqual({
      specversion: '1.0',
      type: 'grant.created',
      source: '/switchboard',
      id: a.id,
      time: Date.UTC(2026, 10, 22, 12, 0, 0) / 1000,
      data: { application_id: app, grant_id: 'grant_x', object },
    });
    expect(a.id).toMatch(/^ntf_/);
    expect(a.id).not.toBe(b.id);
  });
});

describe('Function: fitForDelivery', () => {
  it('keeps a notification of 1 MB or less whole', () => {
    const n = newNotification({
      type: 'message.created',
      applicationId: app,
      grantId: null,
      object: { id: 'msg_1', body: 'x'.repeat(900_000) },
    });
    expect(fitForDelivery(n)).toEqual({ notification: n, body: JSON.stringify(n) });
  });

  it('truncates over 1 MB: body content first, then all but the identity of the object', () => {
    const withBody = fitForDelivery(
      newNotification({
        type: 'message.created',
        applicationId: app,
        grantId: 'grant_x' as GrantId,
        object: { id: 'msg_1', object: 'message', subject: 'big', body: 'x'.repeat(1_100_000) },
      }),
    );
    expect(withBody.notification.type).toBe('message.created.truncated');
    expect(withBody.notification.data.object).toEqual({ id: 'msg_1', object: 'message', subject: 'big' });
    expect(JSON.parse(withBody.body)).toEqual(withBody.notification);

    const huge = {
      id: 'msg_2',
      object: 'message',
      grant_id: 'grant_x',
      thread_id: 'thr_1',
      to: Array.from({ length: 30_000 }, (_, i) => ({ email: `r${i}@example.com`, name: 'Recipient' })),
    };
    const identityOnly = fitForDelivery(
      newNotification({ type: 'message.created', applicationId: app, grantId: 'grant_x' as GrantId, object: huge }),
    );
    expect(identityOnly.notification.type).toBe('message.created.truncated');
    expect(identityOnly.notification.data.object).toEqual({
      id: 'msg_2',
      object: 'message',
      grant_id: 'grant_x',
      thread_id: 'thr_1',
    });
    expect(Buffer.byteLength(identityOnly.body)).toBeLessThanOrEqual(1_000_000);
  });
});

describe('Function: publishNotifications', () => {
  beforeEach(() => {
    sqsMock.reset();
    sqsMock.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
  });

  it('sends each notification to the fan-out queue, with its type and application as attributes', async () => {
    const a = newNotification({ type: 'grant.created', applicationId: app, grantId: null, object: {} });
    const b = newNotification({ type: 'grant.deleted', applicationId: app, grantId: null, object: {} });
    expect(await publishNotifications([a, b])).toEqual(new Map());
    const [call] = sqsMock.commandCalls(SendMessageBatchCommand);
    expect(call!.args[0].input.QueueUrl).toBe(process.env.FANOUT_QUEUE_URL);
    expect(call!.args[0].input.Entries!.map((e) => JSON.parse(e.MessageBody!))).toEqual([a, b]);
    expect(call!.args[0].input.Entries![1]!.MessageAttributes).toEqual({
      type: { DataType: 'String', StringValue: 'grant.deleted' },
      application_id: { DataType: 'String', StringValue: 'app_1' },
    });
  });

  it('reports what the queue refused, by index, and sends nothing for an empty list', async () => {
    sqsMock.on(SendMessageBatchCommand).resolves({
      Successful: [{ Id: '0', MessageId: 'm', MD5OfMessageBody: '' }],
      Failed: [{ Id: '1', Code: 'x', Message: 'throttled', SenderFault: false }],
    });
    const list = [0, 1].map(() =>
      newNotification({ type: 'grant.created', applicationId: app, grantId: null, object: {} }),
    );
    expect(await publishNotifications(list)).toEqual(new Map([[1, 'throttled']]));
    sqsMock.reset();
    expect(await publishNotifications([])).toEqual(new Map());
    expect(sqsMock.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });

  it('reports every notification when the queue cannot be reached', async () => {
    sqsMock.on(SendMessageBatchCommand).rejects(new Error('queue unavailable'));
    const list = [newNotification({ type: 'grant.created', applicationId: app, grantId: null, object: {} })];
    expect(await publishNotifications(list)).toEqual(new Map([[0, 'queue unavailable']]));
  });
});
