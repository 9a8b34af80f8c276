import {
  DeleteMessageCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type Message,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { DEAD_LETTER_QUEUES, NOT_REDRIVABLE, type DeadLetterQueueName } from '../infra/dead-letter-queues';
import { QUEUE_ENV } from '../local-stack/index';
import { resolveName, type ServerlessConfig } from '../local-stack/serverless-config';

/**
 * `npm run admin -- redrive <queue>`: moves every message of a dead-letter queue back to the queue it
 * came from, to be worked again (after the cause of its failures is fixed). Each message is sent with
 * its body and message attributes and deleted from the dead-letter queue only once that send succeeded,
 * so a failure midway loses nothing (it may leave a message on both queues: every worker's messages
 * are idempotent or deduplicated, as they must be for SQS's own redeliveries).
 */

export const isDeadLetterQueueName = (name: string): name is DeadLetterQueueName => name in DEAD_LETTER_QUEUES;

/** The queue whose RedrivePolicy targets `dlq` (logical IDs), if any. */
export function sourceOf(config: ServerlessConfig, dlq: string): string | undefined {
  return Object.entries(config.resources.Resources).find(
    ([, r]) =>
      r.Type === 'AWS::SQS::Queue' &&
      (r.Properties?.RedrivePolicy as { deadLetterTargetArn?: { 'Fn::GetAtt'?: string[] } } | undefined)
        ?.deadLetterTargetArn?.['Fn::GetAtt']?.[0] === dlq,
  )?.[0];
}

export interface RedrivePlan {
  /** Logical IDs in serverless.yml. */
  dlq: string;
  source: string;
}

/** What `redrive <name>` moves where, or why it moves nothing. */
export function planRedrive(config: ServerlessConfig, name: DeadLetterQueueName): RedrivePlan | { refused: string } {
  const refused = NOT_REDRIVABLE[name];
  if (refused) return { refused: `${name}: ${refused}` };
  const dlq = DEAD_LETTER_QUEUES[name];
  const source = sourceOf(config, dlq);
  if (!source) throw new Error(`serverless.yml: no queue redrives to ${dlq}`);
  return { dlq, source };
}

/** The environment variable holding a queue's URL (scripts/local-stack/index.ts, and the deployed functions'). */
export const urlVariableOf = (logicalId: string) => QUEUE_ENV[logicalId as keyof typeof QUEUE_ENV];

/**
 * A queue's URL: its environment variable's, or else, given a stage, the URL of the queue that stage's
 * stack names as serverless.yml does (`switchboard-<stage>-fanout-dlq`).
 */
export async function queueUrl(
  sqs: SQSClient,
  config: ServerlessConfig,
  logicalId: string,
  stage: string | undefined,
  environment: NodeJS.ProcessEnv = process.env,
): Promise<string | undefined> {
  const variable = urlVariableOf(logicalId);
  if (variable && environment[variable]) return environment[variable];
  if (stage === undefined) return undefined;
  const name = resolveName(String(config.resources.Resources[logicalId]!.Properties!.QueueName), config.service, stage);
  return (await sqs.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl;
}

/** Only what SendMessage takes back: its type and value (the list forms are reserved by SQS). */
function attributesOf(message: Message): Record<string, MessageAttributeValue> | undefined {
  const entries = Object.entries(message.MessageAttributes ?? {});
  if (!entries.length) return undefined;
  return Object.fromEntries(
    entries.map(([key, value]) => [
      key,
      {
        DataType: value.DataType,
        ...(value.StringValue !== undefined ? { StringValue: value.StringValue } : {}),
        ...(value.BinaryValue !== undefined ? { BinaryValue: value.BinaryValue } : {}),
      },
    ]),
  );
}

export interface MoveResult {
  moved: number;
  /** Messages this run moved that failed again and were back in the dead-letter queue before it ended (left there). */
  returned: number;
}

/**
 * Moves the messages of `from` to `to` until `from` answers empty twice in a row. A message this run
 * already moved that comes back (it failed again meanwhile) is left in `from`, not moved in circles.
 */
export async function moveMessages(
  sqs: SQSClient,
  from: string,
  to: string,
  options: { waitTimeSeconds?: number; visibilityTimeout?: number } = {},
): Promise<MoveResult> {
  const sent = new Set<string>();
  const returned = new Set<string>();
  let moved = 0;
  let empty = 0;
  while (empty < 2) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: from,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: options.waitTimeSeconds ?? 1,
        // Long enough to send and delete; a message whose send failed is received again after it.
        VisibilityTimeout: options.visibilityTimeout ?? 30,
        MessageAttributeNames: ['All'],
      }),
    );
    const fresh = Messages.filter((m) => {
      // SQS keeps a message's ID when it moves it to the dead-letter queue.
      if (!sent.has(m.MessageId!)) return true;
      returned.add(m.MessageId!);
      return false;
    });
    if (!fresh.length) {
      empty++;
      continue;
    }
    empty = 0;
    const results = await Promise.allSettled(
      fresh.map(async (message) => {
        const { MessageId } = await sqs.send(
          new SendMessageCommand({
            QueueUrl: to,
            MessageBody: message.Body!,
            MessageAttributes: attributesOf(message),
          }),
        );
        sent.add(MessageId!);
        await sqs.send(new DeleteMessageCommand({ QueueUrl: from, ReceiptHandle: message.ReceiptHandle! }));
        moved++;
      }),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed)
      throw Object.assign(
        new Error(`${(failed.reason as Error).message} (moved ${moved} before it; the others stay in the DLQ)`),
        { moved },
      );
  }
  return { moved, returned: returned.size };
}
