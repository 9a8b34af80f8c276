import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { graphLifecycleKey } from '#shared/db/keys';
import type { GrantId } from '#shared/ids';

/**
 * Provider B's lifecycle notifications (`reauthorizationRequired`, `subscriptionRemoved`, `missed`),
 * kept until the grant's next run acts on them: an item of their own beside the sync state, added to
 * by the push endpoint and taken from by the run, so that neither overwrites the other (a run saves
 * its whole state; a notification arriving meanwhile would be lost in it). Each is
 * `<subscription ID> <event>`, a set: the same notification twice is one.
 */

export const LIFECYCLE_EVENTS = ['reauthorizationRequired', 'subscriptionRemoved', 'missed'] as const;
export type LifecycleEvent = (typeof LIFECYCLE_EVENTS)[number];

export interface PendingLifecycle {
  subscriptionId: string;
  event: LifecycleEvent;
}

const entry = (p: PendingLifecycle) => `${p.subscriptionId} ${p.event}`;

export async function addLifecycleEvents(grantId: GrantId, events: readonly PendingLifecycle[]): Promise<void> {
  if (!events.length) return;
  await dynamo.send(
    new UpdateCommand({
      TableName: TABLE_NAME,
      Key: graphLifecycleKey(grantId),
      UpdateExpression: 'ADD events :events',
      ExpressionAttributeValues: { ':events': new Set(events.map(entry)) },
    }),
  );
}

export async function pendingLifecycleEvents(grantId: GrantId): Promise<PendingLifecycle[]> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: graphLifecycleKey(grantId), ConsistentRead: true }),
  );
  const events = (Item?.events as Set<string> | undefined) ?? new Set<string>();
  return [...events].flatMap((value) => {
    const [subscriptionId, event] = value.split(' ');
    return subscriptionId && (LIFECYCLE_EVENTS as readonly string[]).includes(event ?? '')
      ? [{ subscriptionId, event: event as LifecycleEvent }]
      : [];
  });
}

/** Forgets the events a run acted on (those that arrived since stay for the next run). */
export async function lifecycleEventsHandled(grantId: GrantId, events: readonly PendingLifecycle[]): Promise<void> {
  if (!events.length) return;
  await dynamo.send(
    new UpdateCommand({
      TableName: TABLE_NAME,
      Key: graphLifecycleKey(grantId),
      UpdateExpression: 'DELETE events :events',
      ExpressionAttributeValues: { ':events': new Set(events.map(entry)) },
    }),
  );
}
