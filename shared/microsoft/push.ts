import { createHash, timingSafeEqual } from 'node:crypto';
import type { GraphPushBody } from '#schemas/push';
import { addLifecycleEvents, LIFECYCLE_EVENTS, type PendingLifecycle } from '#shared/db/graph-lifecycle';
import { getSyncState } from '#shared/db/mail-sync';
import { AuthenticationError, InvalidRequestError } from '#shared/errors';
import type { GrantId } from '#shared/ids';
import { syncSoon } from '#shared/jobs/sync-runs';
import { logger } from '#shared/logger';
import { countMetric, METRICS } from '#shared/metrics';

/**
 * Provider B's notifications (`POST /v3/push/microsoft`; the subscriptions are kept by the grants'
 * runs: shared/microsoft/subscriptions.ts). A module of its own: the push function bundles no Graph client.
 *   - Graph's validation of a new subscription's address (`?validationToken=`) is answered with the
 *     token as plain text, as Graph requires, before anything else.
 *   - Each notification is accepted only when its subscription is one its grant holds now and its
 *     clientState's secret hashes to that subscription's (the grant is named by the clientState); any
 *     other is refused and changes nothing. A request with none accepted is a 401.
 *   - Accepted ones are answered 202 at once: change notifications bring the grant's next run forward
 *     (through the sync queue: the run reads the delta, so a duplicate, late or missed notification
 *     announces nothing twice and loses nothing); lifecycle notifications are left for that run
 *     (shared/db/graph-lifecycle.ts), which reauthorizes or recreates the subscription.
 */

const log = logger.child({ function: 'push' });
const CLIENT_STATE = /^(grant_[0-9a-hjkmnp-tv-z]{26})\.([A-Za-z0-9_-]{20,200})$/;

type Notification = NonNullable<GraphPushBody['value']>[number];

export type GraphPushAnswer =
  { kind: 'validation'; token: string } | { kind: 'notifications'; received: true; accepted: number; refused: number };

export async function receiveGraphPush(
  query: { validationToken?: string },
  body: GraphPushBody,
): Promise<GraphPushAnswer> {
  if (query.validationToken !== undefined) return { kind: 'validation', token: query.validationToken };
  const notifications = body.value ?? [];
  if (!notifications.length)
    throw new InvalidRequestError("A notification body holds Graph's notifications in 'value' (none were given)");
  const byGrant = new Map<GrantId, { secret: string; notification: Notification }[]>();
  let refused = 0;
  for (const notification of notifications) {
    const named = CLIENT_STATE.exec(notification.clientState ?? '');
    if (!named) {
      refused++;
      continue;
    }
    const grantId = named[1] as GrantId;
    byGrant.set(grantId, [...(byGrant.get(grantId) ?? []), { secret: named[2]!, notification }]);
  }
  let accepted = 0;
  await Promise.all(
    [...byGrant].map(async ([grantId, items]) => {
      const state = await getSyncState(grantId);
      const held = Object.values(state?.graph_push?.subscriptions ?? {});
      const genuine = items.filter(({ secret, notification }) => {
        const subscription = held.find((s) => s.id !== undefined && s.id === notification.subscriptionId);
        return subscription?.secret_hash !== undefined && sameHash(subscription.secret_hash, secret);
      });
      refused += items.length - genuine.length;
      if (!state || !genuine.length) return;
      accepted += genuine.length;
      const lifecycle: PendingLifecycle[] = genuine.flatMap(({ notification }) =>
        (LIFECYCLE_EVENTS as readonly string[]).includes(notification.lifecycleEvent ?? '')
          ? [
              {
                subscriptionId: notification.subscriptionId,
                event: notification.lifecycleEvent as PendingLifecycle['event'],
              },
            ]
          : [],
      );
      await addLifecycleEvents(grantId, lifecycle);
      log.info('graph notifications', { grant_id: grantId, count: genuine.length, lifecycle: lifecycle.length });
      countMetric(METRICS.pushArrivals, { provider: 'microsoft' });
      await syncSoon({ application_id: state.application_id, id: grantId });
    }),
  );
  if (!accepted) {
    log.warn('graph notifications refused', { count: refused });
    throw new AuthenticationError(
      "No notification is of a subscription this deployment holds, with that subscription's clientState",
    );
  }
  return { kind: 'notifications', received: true, accepted, refused };
}

/** How a clientState's secret is kept (never the secret itself). */
export const secretHash = (secret: string) => createHash('sha256').update(secret).digest('base64url');

function sameHash(expected: string, secret: string): boolean {
  const given = Buffer.from(secretHash(secret));
  const held = Buffer.from(expected);
  return given.length === held.length && timingSafeEqual(given, held);
}
