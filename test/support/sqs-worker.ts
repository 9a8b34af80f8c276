import { DeleteMessageCommand, ReceiveMessageCommand, type Message } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { lambdaContext } from '../../scripts/local-stack/api-gateway-event';
import { sqs } from './queues';

/**
 * What Lambda's SQS event source mapping (and serverless-offline-sqs locally) does for a queue-
 * triggered function: receive a batch, invoke the handler with the SQS event, delete the messages
 * it did not report as failed. Runs until the queue is empty.
 */
const toRecord = (queueUrl: string) => (m: Message) =>
  ({
    messageId: m.MessageId!,
    receiptHandle: m.ReceiptHandle!,
    body: m.Body!,
    attributes: m.Attributes ?? {},
    messageAttributes: {},
    md5OfBody: m.MD5OfBody!,
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:us-east-1:123456789012:${queueUrl.split('/').pop()}`,
    awsRegion: 'us-east-1',
  }) as unknown as SQSRecord;

type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | void>;

export async function drainThroughHandler(
  queueUrl: string,
  handler: SqsHandler,
  options: { functionName?: string; maxBatches?: number; timeoutMs?: number } = {},
) {
  let handled = 0;
  for (let batch = 0; batch < (options.maxBatches ?? 100); batch++) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 1,
        WaitTimeSeconds: 1,
        AttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    if (!Messages.length) break;
    const records = Messages.map(toRecord(queueUrl));
    const result = await handler(
      { Records: records },
      lambdaContext(options.functionName ?? 'worker', options.timeoutMs ?? 300_000),
    );
    const failed = new Set((result?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    for (const m of Messages)
      if (!failed.has(m.MessageId!))
        await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
    handled += Messages.length;
  }
  return handled;
}

/**
 * A worker that keeps polling a queue in the background, as the event source mapping does, until
 * stopped. `batchSize` records per invocation. When the handler throws, the error is reported and
 * the worker goes on polling; the batch is not deleted, so its messages become visible again after
 * the queue's visibility timeout (and reach the dead-letter queue after maxReceiveCount), as with
 * Lambda. `errors` keeps what was thrown.
 */
export function startQueueWorker(
  queueUrl: string,
  handler: SqsHandler,
  options: { functionName?: string; batchSize?: number; timeoutMs?: number } = {},
) {
  let running = true;
  let invocations = 0;
  const errors: unknown[] = [];
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const report = (what: string, error: unknown) => {
    errors.push(error);
    console.error(`sqs-worker ${options.functionName ?? 'worker'} on ${queueUrl}: ${what}`, error);
  };
  const loop = (async () => {
    while (running) {
      let Messages: Message[];
      try {
        // Short polls: the local SQS emulator holds a batch receive for its whole wait time.
        ({ Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: options.batchSize ?? 1,
            WaitTimeSeconds: 0,
            AttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
        ));
      } catch (error) {
        if (!running) break;
        report('receiving failed', error);
        await pause(200);
        continue;
      }
      if (!Messages.length || !running) {
        await pause(20);
        continue;
      }
      const records = Messages.map(toRecord(queueUrl));
      let result: SQSBatchResponse | void;
      try {
        result = await handler(
          { Records: records },
          lambdaContext(options.functionName ?? 'worker', options.timeoutMs ?? 30_000),
        );
      } catch (error) {
        // As with Lambda: the whole batch stays on the queue and is received again later.
        invocations++;
        report(
          `handler threw for ${Messages.length} message(s) (${Messages.map((m) => m.MessageId).join(', ')}); they become visible again after the visibility timeout`,
          error,
        );
        continue;
      }
      invocations++;
      const failed = new Set((result?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
      try {
        for (const m of Messages)
          if (!failed.has(m.MessageId!))
            await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
      } catch (error) {
        report('deleting handled messages failed', error);
      }
    }
  })();
  return {
    get invocations() {
      return invocations;
    },
    get errors() {
      return errors;
    },
    stop: async () => {
      running = false;
      await loop;
    },
  };
}
