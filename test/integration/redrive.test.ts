import { execFile } from 'node:child_process';
import { DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { moveMessages } from '../../scripts/admin/redrive';
import { ROOT } from '../../scripts/local-stack/serverless-config';
import { createQueueWithDlq, drainQueue, messagesIn, sqs } from '../support/queues';

/**
 * `npm run admin -- redrive <queue>` against the SQS emulator: a dead-letter queue's messages go back
 * to their queue with their bodies and attributes, and leave the dead-letter queue.
 */

/** Three messages as SQS leaves them in a dead-letter queue: bodies and attributes of their own. */
async function deadLettered(dlq: string) {
  const sent = ['one', 'two', 'three'].map((n) => ({ id: `evt_${n}`, type: 'message.created' }));
  for (const [i, body] of sent.entries())
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: dlq,
        MessageBody: JSON.stringify(body),
        MessageAttributes: { attempt: { DataType: 'Number', StringValue: String(i + 1) } },
      }),
    );
  return sent;
}

/** `npm run admin -- redrive ...args` as an operator runs it, with `env` over this process's environment. */
function admin(args: string[], env: Record<string, string>) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      'sh',
      ['scripts/node24.sh', 'tsx', 'scripts/admin.ts', 'redrive', ...args],
      { cwd: ROOT, env: { ...process.env, ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
  });
}

describe('redrive', () => {
  it('moves every message of a dead-letter queue back to its queue, bodies and attributes kept', async () => {
    const { queue, dlq } = await createQueueWithDlq('redrive', { visibilityTimeout: 30 });
    const sent = await deadLettered(dlq);
    expect(await moveMessages(sqs, dlq, queue)).toEqual({ moved: 3, returned: 0 });
    const back = await drainQueue(queue, 3);
    expect(back.map((m) => m.body).sort((a, b) => a.id.localeCompare(b.id))).toEqual(
      [...sent].sort((a, b) => a.id.localeCompare(b.id)),
    );
    expect(back.map((m) => m.attributes.attempt).sort()).toEqual(['1', '2', '3']);
    expect(await messagesIn(dlq)).toBe(0);
  });

  it('npm run admin -- redrive fanout: finds the queues in the environment and says how many moved', async () => {
    const { queue, dlq } = await createQueueWithDlq('redrive-cli', { visibilityTimeout: 30 });
    await deadLettered(dlq);
    const run = await admin(['fanout'], { FANOUT_DLQ_URL: dlq, FANOUT_QUEUE_URL: queue });
    expect(run.stderr).toContain(`moving the messages of ${dlq} to ${queue}`);
    expect({ code: run.code, result: JSON.parse(run.stdout) }).toEqual({
      code: 0,
      result: { queue: 'fanout', moved: 3 },
    });
    expect(await messagesIn(queue)).toBe(3);
    expect(await messagesIn(dlq)).toBe(0);
  });

  it('refuses the dead-letter queues of on-failure records, which no move replays, and names that are not queues', async () => {
    const [outbox, inbound, unknown] = await Promise.all([
      admin(['outbox-failure'], {}),
      admin(['inbound'], {}),
      admin(['fanout-dlq'], {}),
    ]);
    expect(outbox.code).toBe(2);
    expect(outbox.stderr).toMatch(/^not moved: outbox-failure: .*stream records .*replays nothing/);
    expect(inbound.code).toBe(2);
    expect(inbound.stderr).toMatch(/^not moved: inbound: .*requestPayload is the SES event/);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^unknown dead-letter queue 'fanout-dlq': one of fanout, delivery, jobs/);
  });

  it('leaves a message it moved that failed again meanwhile in the dead-letter queue, instead of moving it in circles', async () => {
    // A stand-in SQS whose dead-letter queue answers the moved message again (SQS keeps its ID), then nothing new.
    let receives = 0;
    const calls: string[] = [];
    const client = {
      send: async (command: object) => {
        if (command instanceof ReceiveMessageCommand)
          return {
            Messages: [
              receives++ === 0
                ? { MessageId: 'failed-1', ReceiptHandle: 'first', Body: '{}' }
                : { MessageId: 'moved-1', ReceiptHandle: 'again', Body: '{}' },
            ],
          };
        if (command instanceof SendMessageCommand) {
          calls.push('send');
          return { MessageId: 'moved-1' };
        }
        if (command instanceof DeleteMessageCommand) calls.push(`delete ${command.input.ReceiptHandle}`);
        return {};
      },
    } as unknown as SQSClient;
    expect(await moveMessages(client, 'dlq', 'source')).toEqual({ moved: 1, returned: 1 });
    expect(calls).toEqual(['send', 'delete first']);
    expect(receives).toBe(3);
  });
});
