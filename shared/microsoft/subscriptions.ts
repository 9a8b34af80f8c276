import { randomBytes } from 'node:crypto';
import { env } from '#shared/config';
import type { GrantRecord } from '#shared/db/grants';
import { lifecycleEventsHandled, pendingLifecycleEvents, type PendingLifecycle } from '#shared/db/graph-lifecycle';
import type { GraphSubscriptionCheckpoint, MailSyncRecord } from '#shared/db/mail-sync';
import { ForbiddenError, InvalidRequestError } from '#shared/errors';
import { logger } from '#shared/logger';
import { GRAPH_VERSION } from '#shared/microsoft/batch';
import { graphClientOf, GraphNotFoundError, mailboxPath, type GraphClient } from '#shared/microsoft/client';
import type { SyncSource } from '#shared/providers/contract';
import { secretHash } from '#shared/microsoft/push';
import { clock } from '#shared/time';

/**
 * Provider B's change notifications: a Graph subscription per resource kind of the grant (its
 * messages; its events and contacts where the grant reads them), kept by the grant's runs as provider
 * A's watch channels are (shared/google/calendar-channels.ts). Notifications only bring the grant's
 * next run forward: what changed is read from the delta links (shared/microsoft/mail-changes.ts), so a
 * notification that comes twice, late or never changes nothing that is announced.
 *   - The address (notifications and lifecycle notifications both) is this deployment's
 *     PUBLIC_BASE_URL + `/v3/push/microsoft`; without a public URL there are none, and the runs poll.
 *   - The clientState is `<grant ID>.<random secret>`; only the secret's SHA-256 is kept. Graph sends it
 *     back with each notification (shared/microsoft/push.ts checks it).
 *   - Graph ends these subscriptions after 4,230 minutes at most: each is asked for 4,200, and renewed
 *     (PATCH of its expirationDateTime) once less than a day is left; one Graph no longer knows (404)
 *     is created again.
 *   - Lifecycle notifications, left for the run by the push endpoint (shared/db/graph-lifecycle.ts):
 *     `reauthorizationRequired` → reauthorize, then renew; `subscriptionRemoved` → a new subscription
 *     (the run that acts on it also reads the delta, so nothing missed meanwhile is lost); `missed` →
 *     nothing more than the run itself.
 *   - A subscription Graph refuses (its 400 or 403: the address failed validation, the grant lacks the
 *     permission) is kept with the reason and asked for again an hour later; the runs poll meanwhile.
 */

export const GRAPH_PUSH_PATH = '/v3/push/microsoft';
/** Graph's longest lifetime for messages, events and contacts (minutes), and what is asked for. */
export const MAX_LIFETIME_MINUTES = 4230;
const LIFETIME_SECONDS = 4200 * 60;
const RENEW_BEFORE_SECONDS = 86_400;
const RETRY_REFUSED_SECONDS = 3600;

export type SubscriptionKind = 'messages' | 'events' | 'contacts';

const log = logger.child({ module: 'graph-subscriptions' });

/** Where subscriptions notify, or undefined when this deployment has no public URL. */
export function notificationAddress(): string | undefined {
  const base = env.publicBaseUrl();
  return base ? `${base.replace(/\/+$/, '')}${GRAPH_PUSH_PATH}` : undefined;
}

/** The resource of a kind, as Graph's subscriptions name it (no version, no leading slash). */
export const resourceOf = (grant: GrantRecord, kind: SubscriptionKind) =>
  `${mailboxPath(grant).slice(GRAPH_VERSION.length + 1)}/${kind}`;

const isoAt = (seconds: number) => new Date(seconds * 1000).toISOString();

interface GraphSubscription {
  id: string;
  expirationDateTime?: string;
}

/**
 * The grant's subscriptions as they should be now, for the kinds given: kept, renewed, created again,
 * or deleted when there is no address any more or a kind is no longer wanted. Answers what to keep in
 * the sync state (undefined: none), and acts on the lifecycle notifications waiting for this run.
 */
export async function keepSubscriptions(
  client: GraphClient,
  grant: GrantRecord,
  current: MailSyncRecord['graph_push'],
  kinds: readonly SubscriptionKind[],
): Promise<MailSyncRecord['graph_push']> {
  const address = notificationAddress();
  const now = clock.nowSeconds();
  const held = current?.subscriptions ?? {};
  // No address and nothing held: nothing to keep, and no lifecycle notification can concern this grant.
  if (!address && !Object.keys(held).length) return undefined;
  const pending = await pendingLifecycleEvents(grant.id);
  const kept: Record<string, GraphSubscriptionCheckpoint> = {};
  for (const [kind, subscription] of Object.entries(held)) {
    if ((!address || !kinds.includes(kind as SubscriptionKind)) && subscription.id)
      await deleteSubscription(client, subscription.id);
  }
  if (address) {
    for (const kind of kinds) {
      const events = new Set(pending.filter((p) => p.subscriptionId === held[kind]?.id).map((p) => p.event));
      const next = await keepOne(client, grant, kind, held[kind], events, address, now);
      if (next) kept[kind] = next;
    }
  }
  await lifecycleEventsHandled(grant.id, pending satisfies PendingLifecycle[]);
  return Object.keys(kept).length ? { subscriptions: kept } : undefined;
}

async function keepOne(
  client: GraphClient,
  grant: GrantRecord,
  kind: SubscriptionKind,
  held: GraphSubscriptionCheckpoint | undefined,
  events: ReadonlySet<string>,
  address: string,
  now: number,
): Promise<GraphSubscriptionCheckpoint | undefined> {
  let subscription = held;
  if (subscription && !subscription.id) {
    // Refused last time: asked for again an hour later.
    if (now - (subscription.refused_at ?? 0) < RETRY_REFUSED_SECONDS) return subscription;
    subscription = undefined;
  }
  if (subscription?.id && events.has('subscriptionRemoved')) {
    log.info('subscription removed by provider B', { grant_id: grant.id, kind });
    subscription = undefined;
  }
  if (subscription?.id && events.has('reauthorizationRequired')) {
    if (
      !(await exists(() =>
        client.call({ method: 'POST', path: `${GRAPH_VERSION}/subscriptions/${subscription!.id}/reauthorize` }),
      ))
    )
      subscription = undefined;
    else subscription = { ...subscription, expires_at: 0 };
  }
  if (subscription?.id && (subscription.expires_at ?? 0) - now <= RENEW_BEFORE_SECONDS) {
    const expires = now + LIFETIME_SECONDS;
    const renewed = await exists(() =>
      client.call<GraphSubscription>({
        method: 'PATCH',
        path: `${GRAPH_VERSION}/subscriptions/${subscription!.id}`,
        body: { expirationDateTime: isoAt(expires) },
      }),
    );
    subscription = renewed ? { ...subscription, expires_at: expiresOf(renewed, expires) } : undefined;
  }
  if (subscription?.id) return subscription;
  return create(client, grant, kind, address, now);
}

async function create(
  client: GraphClient,
  grant: GrantRecord,
  kind: SubscriptionKind,
  address: string,
  now: number,
): Promise<GraphSubscriptionCheckpoint> {
  const resource = resourceOf(grant, kind);
  const secret = randomBytes(32).toString('base64url');
  const expires = now + LIFETIME_SECONDS;
  try {
    const created = await client.call<GraphSubscription>({
      method: 'POST',
      path: `${GRAPH_VERSION}/subscriptions`,
      body: {
        changeType: 'created,updated,deleted',
        notificationUrl: address,
        lifecycleNotificationUrl: address,
        resource,
        expirationDateTime: isoAt(expires),
        clientState: `${grant.id}.${secret}`,
      },
    });
    return { id: created.id, resource, secret_hash: secretHash(secret), expires_at: expiresOf(created, expires) };
  } catch (error) {
    if (!(error instanceof InvalidRequestError || error instanceof ForbiddenError)) throw error;
    log.warn('subscription refused by provider B', { grant_id: grant.id, kind, reason: error.message });
    return { resource, error: error.message.slice(0, 300), refused_at: now };
  }
}

/** Deletes a subscription (one Graph no longer knows is deleted already). */
export async function deleteSubscription(client: GraphClient, id: string): Promise<void> {
  await exists(() => client.call({ method: 'DELETE', path: `${GRAPH_VERSION}/subscriptions/${id}` }));
}

/** The call's answer, or undefined when Graph does not know the subscription (404). */
async function exists<T>(call: () => Promise<T>): Promise<T | undefined> {
  try {
    return (await call()) ?? ({} as T);
  } catch (error) {
    if (error instanceof GraphNotFoundError) return undefined;
    throw error;
  }
}

function expiresOf(answer: GraphSubscription | undefined, asked: number): number {
  const given = answer?.expirationDateTime ? Date.parse(answer.expirationDateTime) : NaN;
  return Number.isFinite(given) ? Math.floor(given / 1000) : asked;
}

const SCOPE_OF: Record<SubscriptionKind, RegExp> = {
  messages: /(^|\/)Mail\.(Read|ReadWrite)/i,
  events: /(^|\/)Calendars\.(Read|ReadWrite)/i,
  contacts: /(^|\/)Contacts\.(Read|ReadWrite)/i,
};

/** Whether the grant's scopes read a kind (application permissions, `.default`, read what the app was given). */
const reaches = (grant: GrantRecord, kind: SubscriptionKind) =>
  grant.scope.some((scope) => scope.endsWith('.default') || SCOPE_OF[kind].test(scope));

/**
 * The part of a grant's run that keeps its subscriptions (after its changes were read): saved only
 * when something changed, so a run that finds them in order writes nothing more.
 */
export const graphSubscriptionsOf = (kinds: readonly SubscriptionKind[]): SyncSource => ({
  async run(grant, run) {
    const current = run.state.graph_push;
    const next = await keepSubscriptions(
      await graphClientOf(grant),
      grant,
      current,
      kinds.filter((kind) => reaches(grant, kind)),
    );
    if (JSON.stringify(next) !== JSON.stringify(current)) {
      const { graph_push: _old, ...rest } = run.state;
      const state = next ? { ...rest, graph_push: next } : rest;
      await run.save(state);
      delete run.state.graph_push;
      Object.assign(run.state, state);
    }
    return { status: 'done', changed: false };
  },
});
