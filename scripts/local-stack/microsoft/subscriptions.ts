import { randomBytes, randomUUID } from 'node:crypto';
import { GraphError, itemNotFound } from './errors';
import type { GraphState, Mailbox } from './mail';

/**
 * The local Graph fake's change notifications: `/subscriptions` (create, get, list, renew, delete,
 * reauthorize, as ChangeNotifications.yml describes them) for a user's messages, events or contacts, and the
 * notifications Graph would POST to each subscription's address when its resource changes, with the
 * lifecycle notifications (`reauthorizationRequired`, `subscriptionRemoved`, `missed`) tests ask for.
 *
 * As Graph does: a new subscription's address is validated first (a POST with `?validationToken=`
 * that must answer 200, text/plain, the token, within 10 s; otherwise the create is a 400); the
 * lifetime is at most 4,230 minutes; a subscription past its expiration notifies nothing more;
 * clientState (at most 128 characters) comes back in every notification. Unlike Graph, addresses on
 * loopback may be http (Graph takes https only): the fake never calls anything else.
 *
 * Changes are found by comparing each user's items (and their versions) with what was last notified
 * (`sweep`, which the server runs after every request and every change a test makes): an item not
 * notified before is `created`, one whose version changed since is `updated`, one gone is `deleted`. Faults: the next
 * notifications of a subscription can be duplicated, delayed, or dropped (then a `missed` lifecycle
 * notification follows, as Graph sends when it could not deliver).
 */

/** Graph's limit for messages, events and contacts. */
export const MAX_LIFETIME_MINUTES = 4230;
const VALIDATION_TIMEOUT_MS = 10_000;
export type Kind = 'messages' | 'events' | 'contacts';

/** What a kind of resource holds for a user now: each item's ID and version (undefined: no such user). */
export type ItemSource = (userId: string) => Iterable<readonly [string, string]> | undefined;

const ODATA_TYPES: Record<Kind, string> = {
  messages: '#Microsoft.Graph.Message',
  events: '#Microsoft.Graph.Event',
  contacts: '#Microsoft.Graph.Contact',
};
const SEGMENTS: Record<Kind, string> = { messages: 'Messages', events: 'Events', contacts: 'Contacts' };
const CHANGE_TYPES = new Set(['created', 'updated', 'deleted']);
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

export interface FakeSubscription {
  id: string;
  resource: string;
  kind: Kind;
  userId: string;
  mailboxEmail: string;
  changeTypes: Set<string>;
  notificationUrl: string;
  lifecycleNotificationUrl?: string;
  clientState?: string;
  /** Epoch ms. */
  expiresAt: number;
  /** Item IDs and their versions as last notified. */
  seen: Map<string, string>;
}

export type NotificationFault =
  | { kind: 'duplicate' }
  | { kind: 'late'; delayMs: number }
  /** Dropped, then a `missed` lifecycle notification (Graph's word for notifications it could not deliver). */
  | { kind: 'missed' };

export interface Delivered {
  subscriptionId: string;
  url: string;
  status: number;
  body: { value: Record<string, unknown>[] };
}

export interface SubscriptionCall {
  mailbox: Mailbox;
  state: GraphState;
  operationId: string;
  params: Record<string, string>;
  body: unknown;
  /** `http://127.0.0.1:<port>/v1.0`. */
  base: string;
}

const TENANT = '9188040d-6c67-4c5b-b112-36a304b66dad';

export class SubscriptionState {
  readonly subscriptions = new Map<string, FakeSubscription>();
  readonly delivered: Delivered[] = [];
  private readonly faults = new Map<string, NotificationFault[]>();
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly now: () => number,
    private readonly sources: Readonly<Record<Kind, ItemSource>>,
  ) {}

  reset(): void {
    this.subscriptions.clear();
    this.delivered.length = 0;
    this.faults.clear();
  }

  /** The next notification of the subscription (or of every subscription: `*`) meets this fault. */
  failNext(subscriptionId: string, fault: NotificationFault): void {
    this.faults.set(subscriptionId, [...(this.faults.get(subscriptionId) ?? []), fault]);
  }

  /** Every notification posted so far has had its answer. */
  async settled(): Promise<void> {
    while (this.inFlight.size) await Promise.all([...this.inFlight]);
  }

  async handle(call: SubscriptionCall): Promise<{ status: number; body?: unknown }> {
    switch (call.operationId) {
      case 'subscription_CreateSubscription':
        return { status: 201, body: this.answer(await this.create(call)) };
      case 'subscription_ListSubscription':
        return {
          status: 200,
          body: {
            value: [...this.subscriptions.values()]
              .filter((s) => s.mailboxEmail === call.mailbox.user.mail.toLowerCase())
              .map((s) => this.answer(s)),
          },
        };
      case 'subscription_GetSubscription':
        return { status: 200, body: this.answer(this.owned(call)) };
      case 'subscription_UpdateSubscription': {
        const subscription = this.owned(call);
        const { expirationDateTime, notificationUrl } = (call.body ?? {}) as Record<string, unknown>;
        if (notificationUrl !== undefined) {
          const url = this.address(notificationUrl, 'notificationUrl');
          await this.validate(url);
          subscription.notificationUrl = url;
        }
        if (expirationDateTime !== undefined) subscription.expiresAt = this.expiration(expirationDateTime);
        return { status: 200, body: this.answer(subscription) };
      }
      case 'subscription_DeleteSubscription':
        this.subscriptions.delete(this.owned(call).id);
        return { status: 204 };
      case 'subscription_reauthorize':
        this.owned(call);
        return { status: 204 };
      default:
        throw new GraphError(501, 'NotImplemented', `${call.operationId} is not implemented by the local Graph fake`);
    }
  }

  /** Sends a lifecycle notification now (`subscriptionRemoved` also removes the subscription, as Graph does). */
  lifecycle(subscriptionId: string, event: 'reauthorizationRequired' | 'subscriptionRemoved' | 'missed'): void {
    const subscription = this.subscriptions.get(subscriptionId);
    if (!subscription) throw new Error(`the Graph fake has no subscription ${subscriptionId}`);
    if (event === 'subscriptionRemoved') this.subscriptions.delete(subscriptionId);
    this.post(subscription, subscription.lifecycleNotificationUrl ?? subscription.notificationUrl, [
      {
        subscriptionId,
        subscriptionExpirationDateTime: new Date(subscription.expiresAt).toISOString(),
        tenantId: TENANT,
        ...(subscription.clientState !== undefined ? { clientState: subscription.clientState } : {}),
        lifecycleEvent: event,
      },
    ]);
  }

  /** Notifies what changed for each subscription since the last sweep. */
  sweep(): void {
    const now = this.now();
    for (const subscription of this.subscriptions.values()) {
      if (subscription.expiresAt <= now) {
        this.subscriptions.delete(subscription.id);
        continue;
      }
      const items = this.sources[subscription.kind](subscription.userId);
      if (!items) continue;
      const changes: Record<string, unknown>[] = [];
      const present = new Set<string>();
      for (const [id, version] of items) {
        present.add(id);
        const last = subscription.seen.get(id);
        if (last === version) continue;
        subscription.seen.set(id, version);
        const changeType = last === undefined ? 'created' : 'updated';
        if (subscription.changeTypes.has(changeType)) changes.push(this.change(subscription, id, changeType));
      }
      for (const id of [...subscription.seen.keys()]) {
        if (present.has(id)) continue;
        subscription.seen.delete(id);
        if (subscription.changeTypes.has('deleted')) changes.push(this.change(subscription, id, 'deleted'));
      }
      if (changes.length) this.post(subscription, subscription.notificationUrl, changes);
    }
  }

  private change(subscription: FakeSubscription, id: string, changeType: string) {
    const resource = `Users/${subscription.userId}/${SEGMENTS[subscription.kind]}/${id}`;
    return {
      subscriptionId: subscription.id,
      subscriptionExpirationDateTime: new Date(subscription.expiresAt).toISOString(),
      changeType,
      resource,
      tenantId: TENANT,
      ...(subscription.clientState !== undefined ? { clientState: subscription.clientState } : {}),
      resourceData: {
        '@odata.type': ODATA_TYPES[subscription.kind],
        '@odata.id': resource,
        '@odata.etag': `W/"${randomBytes(12).toString('base64')}"`,
        id,
      },
    };
  }

  private post(subscription: FakeSubscription, url: string, value: Record<string, unknown>[]): void {
    const queue = this.faults.get(subscription.id) ?? this.faults.get('*') ?? [];
    const fault = queue.shift();
    const body = { value };
    const deliver = async () => {
      if (fault?.kind === 'late') await new Promise((resolve) => setTimeout(resolve, fault.delayMs));
      if (fault?.kind === 'missed') {
        // Not delivered; Graph tells the subscription's owner it missed some.
        if (this.subscriptions.has(subscription.id)) this.lifecycle(subscription.id, 'missed');
        return;
      }
      for (let i = 0; i < (fault?.kind === 'duplicate' ? 2 : 1); i++) {
        let status = 0;
        try {
          const response = await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
            signal: AbortSignal.timeout(VALIDATION_TIMEOUT_MS),
          });
          status = response.status;
          await response.arrayBuffer();
        } catch {
          status = 0;
        }
        this.delivered.push({ subscriptionId: subscription.id, url, status, body });
      }
    };
    const done = deliver().finally(() => this.inFlight.delete(done));
    this.inFlight.add(done);
  }

  private answer(s: FakeSubscription) {
    return {
      id: s.id,
      resource: s.resource,
      applicationId: '24d3b144-21ae-4080-943f-7067b395b913',
      changeType: [...s.changeTypes].join(','),
      clientState: s.clientState ?? null,
      notificationUrl: s.notificationUrl,
      lifecycleNotificationUrl: s.lifecycleNotificationUrl ?? null,
      expirationDateTime: new Date(s.expiresAt).toISOString(),
      creatorId: s.mailboxEmail,
      latestSupportedTlsVersion: 'v1_2',
    };
  }

  private owned(call: SubscriptionCall): FakeSubscription {
    const subscription = this.subscriptions.get(call.params['subscription-id'] ?? '');
    if (!subscription || subscription.mailboxEmail !== call.mailbox.user.mail.toLowerCase()) throw itemNotFound();
    return subscription;
  }

  private async create(call: SubscriptionCall): Promise<FakeSubscription> {
    const body = (call.body ?? {}) as Record<string, unknown>;
    const changeTypes = String(body.changeType ?? '')
      .split(',')
      .map((t) => t.trim());
    if (!changeTypes.length || changeTypes.some((t) => !CHANGE_TYPES.has(t)))
      throw invalid(`changeType '${String(body.changeType)}' is not a list of created, updated, deleted`);
    const kind = this.kindOf(String(body.resource ?? ''), call.mailbox);
    if (typeof body.clientState === 'string' && body.clientState.length > 128)
      throw invalid('clientState is longer than 128 characters');
    const notificationUrl = this.address(body.notificationUrl, 'notificationUrl');
    const lifecycleNotificationUrl =
      body.lifecycleNotificationUrl != null
        ? this.address(body.lifecycleNotificationUrl, 'lifecycleNotificationUrl')
        : undefined;
    const expiresAt = this.expiration(body.expirationDateTime);
    await this.validate(notificationUrl);
    if (lifecycleNotificationUrl && lifecycleNotificationUrl !== notificationUrl)
      await this.validate(lifecycleNotificationUrl);
    const subscription: FakeSubscription = {
      id: randomUUID(),
      resource: String(body.resource),
      kind,
      userId: call.mailbox.user.id,
      mailboxEmail: call.mailbox.user.mail.toLowerCase(),
      changeTypes: new Set(changeTypes),
      notificationUrl,
      ...(lifecycleNotificationUrl ? { lifecycleNotificationUrl } : {}),
      ...(typeof body.clientState === 'string' ? { clientState: body.clientState } : {}),
      expiresAt,
      // What the user holds now is not a change.
      seen: new Map(this.sources[kind](call.mailbox.user.id) ?? []),
    };
    this.subscriptions.set(subscription.id, subscription);
    return subscription;
  }

  /** `me/messages` (events, contacts) or `users/{id or address}/messages` of the caller's own mailbox. */
  private kindOf(resource: string, mailbox: Mailbox): Kind {
    const match = /^\/?(?:me|users\/([^/]+))\/(messages|events|contacts)$/i.exec(resource);
    const owner = match?.[1];
    if (
      !match ||
      (owner !== undefined &&
        ![mailbox.user.id, mailbox.user.mail, mailbox.user.userPrincipalName].some(
          (v) => v.toLowerCase() === decodeURIComponent(owner).toLowerCase(),
        ))
    )
      throw invalid(
        `resource '${resource}' is not one the local Graph fake notifies (me/messages, me/events or me/contacts of the caller)`,
      );
    return match[2]!.toLowerCase() as Kind;
  }

  private address(value: unknown, name: string): string {
    let url: URL;
    try {
      url = new URL(String(value));
    } catch {
      throw invalid(`${name} '${String(value)}' is not a URL`);
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.has(url.hostname)))
      throw invalid(`${name} must be https (the local fake also takes http on loopback)`);
    if (!LOOPBACK.has(url.hostname)) throw invalid(`${name}: the local Graph fake posts to loopback addresses only`);
    return url.href;
  }

  private expiration(value: unknown): number {
    const at = Date.parse(String(value));
    if (!Number.isFinite(at)) throw invalid(`expirationDateTime '${String(value)}' is not a date and time`);
    const now = this.now();
    if (at <= now) throw invalid('Subscription expiration must be in the future.');
    if (at > now + MAX_LIFETIME_MINUTES * 60_000)
      throw invalid(`Subscription expiration can only be ${MAX_LIFETIME_MINUTES} minutes in the future.`);
    return at;
  }

  /** Graph's validation request: 200, text/plain, the token (decoded) as the body, within 10 s. */
  private async validate(url: string): Promise<void> {
    const token = `Validation: Testing client application reachability for subscription Request-Id: ${randomUUID()}`;
    const target = new URL(url);
    target.searchParams.set('validationToken', token);
    let problem: string | undefined;
    try {
      const response = await fetch(target, {
        method: 'POST',
        headers: { 'content-type': 'text/plain; charset=utf-8' },
        signal: AbortSignal.timeout(VALIDATION_TIMEOUT_MS),
      });
      const text = await response.text();
      if (response.status !== 200) problem = `answered ${response.status}`;
      else if (!/^text\/plain\b/i.test(response.headers.get('content-type') ?? ''))
        problem = `answered ${response.headers.get('content-type')}, not text/plain`;
      else if (text !== token) problem = 'did not answer the validation token';
    } catch (error) {
      problem = `could not be reached (${error instanceof Error ? error.message : String(error)})`;
    }
    if (problem)
      throw new GraphError(
        400,
        'ValidationError',
        `Subscription validation request failed. Notification endpoint must respond with 200 OK to validation request: ${url} ${problem}.`,
      );
  }
}

const invalid = (message: string) => new GraphError(400, 'ExtensionError', message);
