import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { sqs } from '#shared/aws/sqs';
import { env } from '#shared/config';
import { newId, type ApplicationId, type GrantId, type NotificationId } from '#shared/ids';
import { clock } from '#shared/time';
import type { NotificationType } from '#schemas/notifications';

/**
 * The one notification publisher. Every change a webhook can report goes through `publish`, which
 * puts a CloudEvents-shaped payload on the fan-out queue; the webhooks fan-out worker turns it into
 * one delivery per subscribed destination. `id` is created here and stays the same across retries.
 */

/**
 * Payloads over 1 MB are cut by removing body content, and `.truncated` is appended to the type: the
 * receiver fetches the object again. This also keeps every message within SQS's 1 MiB limit.
 */
const MAX_PAYLOAD_BYTES = 1_000_000;
const BODY_FIELDS = ['body', 'raw_mime', 'conversation', 'headers'];
const IDENTITY_FIELDS = ['id', 'object', 'grant_id', 'thread_id'];

export interface Notification<T = object> {
  specversion: '1.0';
  type: NotificationType | `${NotificationType}.truncated`;
  source: string;
  id: NotificationId;
  time: number;
  data: { application_id: ApplicationId; grant_id: GrantId | null; object: T };
}

const QUEUE_URL = env.fanoutQueueUrl();
const SOURCE = env.notificationSource();

export async function publish<T extends object>(input: {
  type: NotificationType;
  applicationId: ApplicationId;
  grantId: GrantId | null;
  object: T;
}): Promise<Notification<T>> {
  const notification: Notification<T> = {
    specversion: '1.0',
    type: input.type,
    source: SOURCE,
    id: newId('notification'),
    time: clock.nowSeconds(),
    data: { application_id: input.applicationId, grant_id: input.grantId, object: input.object },
  };
  let body = JSON.stringify(notification);
  if (Buffer.byteLength(body) > MAX_PAYLOAD_BYTES) {
    notification.type = `${input.type}.truncated`;
    for (const keep of [(key: string) => !BODY_FIELDS.includes(key), (key: string) => IDENTITY_FIELDS.includes(key)]) {
      const object = Object.fromEntries(Object.entries(input.object).filter(([key]) => keep(key))) as T;
      notification.data = { ...notification.data, object };
      body = JSON.stringify(notification);
      // Still too large without its body content (huge headers or participant lists): only what
      // identifies the object is left, for the receiver to fetch it again.
      if (Buffer.byteLength(body) <= MAX_PAYLOAD_BYTES) break;
    }
  }
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: QUEUE_URL,
      MessageBody: body,
      MessageAttributes: {
        type: { DataType: 'String', StringValue: notification.type },
        application_id: { DataType: 'String', StringValue: input.applicationId },
      },
    }),
  );
  return notification;
}
