import { randomBytes } from 'node:crypto';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll } from 'vitest';

/** Test queues on the SQS emulator: a fresh queue per test file, so files never read each other's messages. */
export const sqs = new SQSClient({});

/** Queues this test file created, deleted after it (they would outlive the run on LocalStack). */
const created: string[] = [];
afterAll(async () => {
  await Promise.all(
    created.splice(0).map((QueueUrl) => sqs.send(new DeleteQueueCommand({ QueueUrl })).catch(() => undefined)),
  );
});

export async function createTestQueue(prefix = 'test', attributes: Record<string, string> = {}): Promise<string> {
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({ QueueName: `${prefix}-${randomBytes(6).toString('hex')}`, Attributes: attributes }),
  );
  created.push(QueueUrl!);
  return QueueUrl!;
}

/** A queue with a dead-letter queue after `maxReceiveCount` receives, as serverless.yml declares them. */
export async function createQueueWithDlq(
  prefix: string,
  options: { visibilityTimeout: number; maxReceiveCount?: number },
) {
  const dlq = await createTestQueue(`${prefix}-dlq`);
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq, AttributeNames: ['QueueArn'] }));
  const queue = await createTestQueue(prefix, {
    VisibilityTimeout: String(options.visibilityTimeout),
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: Attributes!.QueueArn,
      maxReceiveCount: options.maxReceiveCount ?? 3,
    }),
  });
  return { queue, dlq };
}

/**
 * How many messages a queue holds in any state: waiting, in flight (received, not yet deleted) or
 * delayed. Zero means nothing is left to do on that queue and nothing is being done.
 */
export async function messagesIn(queueUrl: string): Promise<number> {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: [
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
      ],
    }),
  );
  return (
    Number(Attributes.ApproximateNumberOfMessages ?? 0) +
    Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0) +
    Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0)
  );
}

/** Receives (and deletes) messages until `count` arrived or `timeoutMs` passed. */
export async function drainQueue(queueUrl: string, count: number, timeoutMs = 5000) {
  const messages: { body: any; attributes: Record<string, string | undefined> }[] = [];
  const deadline = Date.now() + timeoutMs;
  while (messages.length < count && Date.now() < deadline) {
    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 1,
        WaitTimeSeconds: 1,
        MessageAttributeNames: ['All'],
      }),
    );
    for (const m of Messages ?? []) {
      messages.push({
        body: JSON.parse(m.Body!),
        attributes: Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue])),
      });
      await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
    }
  }
  return messages;
}
