import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApplicationId, GrantId } from '#shared/ids';
import { publish } from '#shared/notifications/publisher';
import { clock } from '#shared/time';

const sqsMock = mockClient(SQSClient);

describe('Function: publish', () => {
  let restoreClock: () => void;
  beforeEach(() => {
    sqsMock.reset();
    sqsMock.on(SendMessageCommand).resolves({ MessageId: 'm-1' });
    restoreClock = clock.set(() => Date.UTC(2026, 10, 22, 12, 0, 0));
  });
  afterEach(() => restoreClock());

  it('sends one CloudEvents-shaped message to the fan-out queue', async () => {
    // Prepare
    const object = { id: 'grant_x', email: 'a@b.c' };

    // Act
    const notification = await publish({
      type: 'grant.created',
      applicationId: 'app_1' as ApplicationId,
      grantId: 'grant_x' as GrantId,
      object,
    });

    // Assess
    const calls = sqsMock.commandCalls(SendMessageCommand);
    expect(calls).toHaveLength(1);
    const input = calls[0]!.args[0].input;
    expect(input.QueueUrl).toBe(process.env.FANOUT_QUEUE_URL);
    expect(JSON.parse(input.MessageBody!)).toEqual({
      specversion: '1.0',
      type: 'grant.created',
      source: '/switchboard',
      id: notification.id,
      time: Date.UTC(2026, 10, 22, 12, 0, 0) / 1000,
      data: { application_id: 'app_1', grant_id: 'grant_x', object },
    });
    expect(input.MessageAttributes).toEqual({
      type: { DataType: 'String', StringValue: 'grant.created' },
      application_id: { DataType: 'String', StringValue: 'app_1' },
    });
  });

  it('gives every notification its own id', async () => {
    const a = await publish({ type: 'grant.deleted', applicationId: 'app_1' as ApplicationId, grantId: null, object: {} });
    const b = await publish({ type: 'grant.deleted', applicationId: 'app_1' as ApplicationId, grantId: null, object: {} });
    expect(a.id).not.toBe(b.id);
  });

  it('truncates over 1 MB: body content first, then all but the identity of the object', async () => {
    const withBody = await publish({
      type: 'message.created',
      applicationId: 'app_1' as ApplicationId,
      grantId: 'grant_x' as GrantId,
      object: { id: 'msg_1', object: 'message', subject: 'big', body: 'x'.repeat(1_100_000) },
    });
    expect(withBody.type).toBe('message.created.truncated');
    expect(withBody.data.object).toEqual({ id: 'msg_1', object: 'message', subject: 'big' });

    const huge = { id: 'msg_2', object: 'message', grant_id: 'grant_x', thread_id: 'thr_1', to: Array.from({ length: 30_000 }, (_, i) => ({ email: `r${i}@example.com`, name: 'Recipient' })) };
    const identityOnly = await publish({ type: 'message.created', applicationId: 'app_1' as ApplicationId, grantId: 'grant_x' as GrantId, object: huge });
    expect(identityOnly.type).toBe('message.created.truncated');
    expect(identityOnly.data.object).toEqual({ id: 'msg_2', object: 'message', grant_id: 'grant_x', thread_id: 'thr_1' });
    const sent = sqsMock.commandCalls(SendMessageCommand).map((c) => Buffer.byteLength(c.args[0].input.MessageBody!));
    expect(sent.every((bytes) => bytes <= 1_000_000)).toBe(true);
  });

  it('surfaces a queue failure to the caller', async () => {
    sqsMock.on(SendMessageCommand).rejects(new Error('queue unavailable'));
    await expect(publish({ type: 'grant.created', applicationId: 'app_1' as ApplicationId, grantId: null, object: {} })).rejects.toThrow('queue unavailable');
  });
});
