import { env } from '#shared/config';
import { newId, type ApplicationId, type GrantId, type NotificationId } from '#shared/ids';
import { clock } from '#shared/time';
import type { NotificationType } from '#schemas/notifications';

/**
 * A notification: a CloudEvents-shaped record of one change a webhook can report. It is created
 * with the change and committed in the same transaction (the outbox, shared/db/outbox.ts); the
 * outbox stream consumer publishes it. `id` is created here and stays the same across retries.
 */
export interface Notification<T = object> {
  specversion: '1.0';
  type: DeliveredType | `${DeliveredType}.truncated`;
  source: string;
  id: NotificationId;
  time: number;
  data: { application_id: ApplicationId; grant_id: GrantId | null; object: T };
}

/** A type as delivered: with the `.metadata` suffix for provider A grants with Gmail's metadata scope only. */
export type DeliveredType = NotificationType | `${NotificationType}.metadata`;

const SOURCE = env.notificationSource();

/** `id` and `time` are given when the notification is derived again from a committed change (the same each time). */
export function newNotification<T extends object>(input: {
  type: DeliveredType;
  applicationId: ApplicationId;
  grantId: GrantId | null;
  object: T;
  id?: NotificationId;
  time?: number;
}): Notification<T> {
  return {
    specversion: '1.0',
    type: input.type,
    source: SOURCE,
    id: input.id ?? newId('notification'),
    time: input.time ?? clock.nowSeconds(),
    data: { application_id: input.applicationId, grant_id: input.grantId, object: input.object },
  };
}

/**
 * Payloads over 1 MB are cut by removing body content, and `.truncated` is appended to the type: the
 * receiver fetches the object again. This also keeps every message within SQS's 1 MiB limit.
 */
export const MAX_PAYLOAD_BYTES = 1_000_000;
/** Fields that carry an object's content rather than its identity and state. */
export const BODY_FIELDS = ['body', 'raw_mime', 'conversation', 'headers'];
const IDENTITY_FIELDS = ['id', 'object', 'grant_id', 'thread_id'];

/** The notification as it is delivered: whole when it fits in 1 MB, else `.truncated` (see above). */
export function fitForDelivery(notification: Notification): { notification: Notification; body: string } {
  let body = JSON.stringify(notification);
  if (Buffer.byteLength(body) <= MAX_PAYLOAD_BYTES) return { notification, body };
  const base = notification.type.replace(/\.truncated$/, '') as DeliveredType;
  const cut: Notification = { ...notification, type: `${base}.truncated` };
  for (const keep of [(key: string) => !BODY_FIELDS.includes(key), (key: string) => IDENTITY_FIELDS.includes(key)]) {
    const object = Object.fromEntries(Object.entries(notification.data.object).filter(([key]) => keep(key)));
    cut.data = { ...notification.data, object };
    body = JSON.stringify(cut);
    // Still too large without its body content (huge headers or participant lists): only what
    // identifies the object is left, for the receiver to fetch it again.
    if (Buffer.byteLength(body) <= MAX_PAYLOAD_BYTES) break;
  }
  return { notification: cut, body };
}
