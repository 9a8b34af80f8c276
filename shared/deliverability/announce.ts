import { createHash } from 'node:crypto';
import { TABLE_NAME } from '#shared/aws/dynamodb';
import { deliverabilityEventKey } from '#shared/db/keys';
import { outboxItems, type OutboxEntry } from '#shared/db/outbox';
import { TransactionConditionError, transactWrite } from '#shared/db/transact';
import type { ApplicationId, GrantId } from '#shared/ids';
import { newNotification } from '#shared/notifications/notification';
import { clock } from '#shared/time';
import type { MessageBounced, MessageComplaint, MessageDelivered, MessageRejected } from '#schemas/deliverability';

/**
 * Announcing the deliverability events of the outgoing transport. An event is about one message of
 * an Agent Account (`message.<kind>`) or of a transactional send (`message.transactional.<kind>`, no
 * grant). Each is committed with a marker keyed by what the event is (`identity`), on the condition
 * that the marker is new: a redelivered queue message, or the same SES event published twice,
 * announces nothing more. Markers expire after the longest a copy can come back: the queue's and its
 * dead-letter queue's retention (4 + 14 days), redriven.
 */
const MARKER_TTL_SECONDS = 19 * 24 * 3600;

export type DeliverabilityEvent =
  | { kind: 'delivered'; object: MessageDelivered }
  | { kind: 'bounced'; object: MessageBounced }
  | { kind: 'complaint'; object: MessageComplaint }
  | { kind: 'rejected'; object: MessageRejected };

/** Whose message an event is about: an Agent Account's (its grant) or a transactional send (no grant). */
export interface Sender {
  applicationId: ApplicationId;
  grantId: GrantId | null;
}

/** The outbox entry of one event: `message.<kind>`, or `message.transactional.<kind>` without a grant. */
export function deliverabilityEntry(sender: Sender, event: DeliverabilityEvent): OutboxEntry {
  const type = sender.grantId ? (`message.${event.kind}` as const) : (`message.transactional.${event.kind}` as const);
  return {
    notification: newNotification({
      type,
      applicationId: sender.applicationId,
      grantId: sender.grantId,
      object: event.object,
    }),
  };
}

/** A short, fixed-length identity of an event from the parts that make it one event. */
export const eventIdentity = (...parts: readonly (string | number)[]) =>
  createHash('sha256').update(JSON.stringify(parts)).digest('base64url');

/**
 * Commits the notification of an event unless one with the same identity was committed before;
 * answers whether it was announced now.
 */
export async function announceOnce(identity: string, sender: Sender, event: DeliverabilityEvent): Promise<boolean> {
  try {
    await transactWrite([
      [
        'marker',
        {
          Put: {
            TableName: TABLE_NAME,
            Item: {
              ...deliverabilityEventKey(identity),
              entity: 'deliverability_event',
              application_id: sender.applicationId,
              type: event.kind,
              expires_at: clock.nowSeconds() + MARKER_TTL_SECONDS,
            },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
      ],
      ...outboxItems([deliverabilityEntry(sender, event)]),
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError && error.has('marker')) return false;
    throw error;
  }
}
