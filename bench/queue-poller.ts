import { setTimeout as sleep } from 'node:timers/promises';
import { DeleteMessageCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { lambdaContext } from '../scripts/local-stack/api-gateway-event';

/** An SQS-triggered function's handler, as the suites call them in process. */
export type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | void>;

/**
 * One poller of a queue, as Lambda's event source mapping runs it: long polls, batches of one, delete
 * unless reported failed (`onRecord` sees each body first). Answers the function that stops it.
 */
export function pollQueue(
  sqs: SQSClient,
  queueUrl: string,
  handler: SqsHandler,
  fn: string,
  timeoutMs: number,
  onRecord?: (body: string) => void,
) {
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: 1,
            WaitTimeSeconds: 1,
            AttributeNames: ['All'],
          }),
        );
        const [m] = Messages;
        if (!m) continue;
        onRecord?.(m.Body!);
        const record = {
          messageId: m.MessageId!,
          receiptHandle: m.ReceiptHandle!,
          body: m.Body!,
          attributes: m.Attributes ?? {},
          messageAttributes: {},
          eventSource: 'aws:sqs',
        } as unknown as SQSRecord;
        const result = await handler({ Records: [record] }, lambdaContext(fn, timeoutMs));
        if (!result?.batchItemFailures.length)
          await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
        else console.error(`${fn}: a message failed; it comes back after the queue's visibility timeout`);
      } catch (error) {
        if (!running) break;
        console.error(`${fn}: ${(error as Error).stack ?? String(error)}`);
        await sleep(100);
      }
    }
  })();
  return async () => {
    running = false;
    await loop;
  };
}
