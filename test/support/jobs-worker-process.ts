import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { lambdaContext } from '../../scripts/local-stack/api-gateway-event';
import { captureLogs } from './secrets';

/**
 * The jobs worker in a process of its own (`node --import tsx test/support/jobs-worker-process.ts`),
 * so a test can kill it with SIGKILL in the middle of a job, as Lambda's runtime dies: no catch
 * block, no finally, the SQS message neither deleted nor released. Polls JOBS_QUEUE_URL one message
 * at a time, as the event source mapping does for the `jobs` function (batch size 1).
 */
// What this process logs goes where every test worker's logs go (test/support/secrets.ts).
if (process.env.SWITCHBOARD_TEST_ARTIFACTS)
  captureLogs(process.env.SWITCHBOARD_TEST_ARTIFACTS, process.env.TEST_LOG_LEVEL ?? 'silent');
const queueUrl = process.env.JOBS_QUEUE_URL!;
const sqs = new SQSClient({});
const { handler } = await import('#functions/jobs/handler');

process.send?.('ready');
for (;;) {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 1, WaitTimeSeconds: 0 }),
  );
  const [m] = Messages;
  if (!m) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    continue;
  }
  const record = {
    messageId: m.MessageId!,
    receiptHandle: m.ReceiptHandle!,
    body: m.Body!,
    attributes: {},
    messageAttributes: {},
    md5OfBody: m.MD5OfBody!,
    eventSource: 'aws:sqs',
  } as unknown as SQSRecord;
  const result = await handler({ Records: [record] }, lambdaContext('jobs', 300_000));
  if (!result.batchItemFailures.length)
    await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
}
