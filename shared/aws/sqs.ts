import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { requestHandler } from '#shared/aws/http';

/**
 * One SQS client per container; the endpoint comes from `AWS_ENDPOINT_URL_SQS` when set. Its
 * middleware stack is never changed after construction, so each command class resolves it once
 * (`cacheMiddleware`) instead of on every send: notifications are published on most requests.
 */
export const sqs = new SQSClient({ requestHandler, cacheMiddleware: true });

const SQS_BATCH = 10;

export interface OutgoingMessage {
  body: string;
  delaySeconds?: number;
}

/**
 * Sends messages to one queue in SendMessageBatch requests of 10, side by side. Returns why each
 * message SQS did not take was refused, by its index in `messages` (empty when all were sent).
 */
export async function sendMessages(queueUrl: string, messages: OutgoingMessage[]): Promise<Map<number, string>> {
  const failed = new Map<number, string>();
  const chunks: number[][] = [];
  for (let i = 0; i < messages.length; i += SQS_BATCH) chunks.push(messages.slice(i, i + SQS_BATCH).map((_, j) => i + j));
  await Promise.all(
    chunks.map(async (indexes) => {
      try {
        const result = await sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: indexes.map((index) => ({ Id: String(index), MessageBody: messages[index]!.body, DelaySeconds: messages[index]!.delaySeconds })),
          }),
        );
        for (const f of result.Failed ?? []) failed.set(Number(f.Id), f.Message ?? f.Code ?? 'refused');
      } catch (error) {
        for (const index of indexes) failed.set(index, (error as Error).message);
      }
    }),
  );
  return failed;
}
