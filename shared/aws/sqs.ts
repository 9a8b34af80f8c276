import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { requestHandler } from '#shared/aws/http';
import { traced } from '#shared/aws/tracing';

/**
 * One SQS client per container; the endpoint comes from `AWS_ENDPOINT_URL_SQS` when set. Its
 * middleware stack is never changed after construction, so each command class resolves it once
 * (`cacheMiddleware`) instead of on every send: notifications are published on most requests.
 */
export const sqs = traced(new SQSClient({ requestHandler, cacheMiddleware: true }));

const SQS_BATCH = 10;
/** SQS refuses a SendMessageBatch whose bodies add up to more than 1 MiB. */
const SQS_BATCH_BYTES = 1_048_576;

export interface OutgoingMessage {
  body: string;
  delaySeconds?: number;
  /** String message attributes (filtering and tracing; never needed to read the body). */
  attributes?: Record<string, string>;
}

/**
 * Sends messages to one queue in SendMessageBatch requests (at most 10 messages and 1 MiB each),
 * side by side. Returns why each message SQS did not take was refused, by its index in `messages`
 * (empty when all were sent).
 */
export async function sendMessages(queueUrl: string, messages: OutgoingMessage[]): Promise<Map<number, string>> {
  const failed = new Map<number, string>();
  const chunks: number[][] = [];
  let bytes = 0;
  messages.forEach((message, index) => {
    const size = Buffer.byteLength(message.body);
    const current = chunks.at(-1);
    if (!current || current.length === SQS_BATCH || bytes + size > SQS_BATCH_BYTES) {
      chunks.push([index]);
      bytes = size;
    } else {
      current.push(index);
      bytes += size;
    }
  });
  await Promise.all(
    chunks.map(async (indexes) => {
      try {
        const result = await sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: indexes.map((index) => {
              const message = messages[index]!;
              return {
                Id: String(index),
                MessageBody: message.body,
                DelaySeconds: message.delaySeconds,
                ...(message.attributes
                  ? {
                      MessageAttributes: Object.fromEntries(
                        Object.entries(message.attributes).map(([name, value]) => [
                          name,
                          { DataType: 'String', StringValue: value },
                        ]),
                      ),
                    }
                  : {}),
              };
            }),
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
