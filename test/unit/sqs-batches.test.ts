import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { sendMessages } from '#shared/aws/sqs';

const sqsMock = mockClient(SQSClient);

describe('Function: sendMessages', () => {
  beforeEach(() => {
    sqsMock.reset();
    sqsMock.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
  });

  const batches = () =>
    sqsMock.commandCalls(SendMessageBatchCommand).map((c) => c.args[0].input.Entries!.map((e) => Number(e.Id)));

  it('sends at most 10 messages per request', async () => {
    const failed = await sendMessages(
      'http://queue',
      Array.from({ length: 25 }, (_, i) => ({ body: `m${i}` })),
    );
    expect(failed.size).toBe(0);
    expect(batches().map((b) => b.length)).toEqual([10, 10, 5]);
    expect(batches().flat()).toEqual(Array.from({ length: 25 }, (_, i) => i));
  });

  it('keeps each request within 1 MiB of bodies (SQS refuses larger batches)', async () => {
    const big = 'x'.repeat(400_000);
    await sendMessages('http://queue', [
      { body: big },
      { body: big },
      { body: big },
      { body: 'small' },
      { body: 'x'.repeat(1_000_000) },
    ]);
    expect(batches()).toEqual([[0, 1], [2, 3], [4]]);
    for (const c of sqsMock.commandCalls(SendMessageBatchCommand)) {
      expect(c.args[0].input.Entries!.reduce((n, e) => n + Buffer.byteLength(e.MessageBody!), 0)).toBeLessThanOrEqual(
        1_048_576,
      );
    }
  });

  it('reports refused and failed messages by their index', async () => {
    sqsMock
      .on(SendMessageBatchCommand)
      .resolvesOnce({
        Successful: [],
        Failed: [{ Id: '3', Code: 'InvalidParameterValue', Message: 'too big', SenderFault: true }],
      })
      .rejectsOnce(new Error('network down'));
    const failed = await sendMessages(
      'http://queue',
      Array.from({ length: 12 }, (_, i) => ({ body: `m${i}` })),
    );
    expect(failed.get(3)).toBe('too big');
    expect(failed.get(10)).toBe('network down');
    expect(failed.get(11)).toBe('network down');
    expect(failed.size).toBe(3);
  });
});
