import { DeleteMessageCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { lambdaContext } from '../scripts/local-stack/api-gateway-event';

/**
 * The jobs worker as Lambda's event source mapping runs it, in the benchmark's process: `concurrency`
 * pollers side by side (Lambda runs as many instances as the queue keeps busy), each receiving one
 * message at a time (batch size 1, as serverless.yml says), invoking the real handler and deleting
 * what it did not report as failed.
 */
export function startJobsWorker(
  queueUrl: string,
  handler: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>,
  concurrency = 1,
) {
  const sqs = new SQSClient({});
  let running = true;
  let failures = 0;
  let handled = 0;
  const loop = async () => {
    while (running) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 1, WaitTimeSeconds: 0 }),
      );
      const [m] = Messages;
      if (!m) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        continue;
      }
      const record = {
        messageId: m.MessageId!,
        receiptHandle: m.ReceiptHandle!,
        body: m.Body!,
        attributes: {},
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
      } as unknown as SQSRecord;
      const result = await handler({ Records: [record] }, lambdaContext('jobs', 300_000));
      handled++;
      if (result.batchItemFailures.length) failures++;
      else await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
    }
  };
  const loops = Array.from({ length: concurrency }, loop);
  return {
    get failures() {
      return failures;
    },
    get handled() {
      return handled;
    },
    /** Resolves once the queue holds nothing, waiting or in flight. */
    async idle(): Promise<void> {
      for (;;) {
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
        if (
          Number(Attributes.ApproximateNumberOfMessages) +
            Number(Attributes.ApproximateNumberOfMessagesNotVisible) +
            Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0) ===
          0
        )
          return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async stop(): Promise<void> {
      running = false;
      await Promise.all(loops);
      sqs.destroy();
    },
  };
}
