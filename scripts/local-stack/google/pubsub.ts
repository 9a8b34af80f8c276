import { createSign, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import type { HistoryRecord, Mailbox } from './gmail';

/**
 * Provider A's push, played locally: Gmail publishes a watched mailbox's changes to its topic, and the
 * topic's push subscription POSTs each one, as Pub/Sub does, to an endpoint with an OIDC token signed
 * by "Google" (this fake's RSA key, whose JWKS it serves at /oauth2/v3/certs like www.googleapis.com):
 * `iss` https://accounts.google.com, `aud` the subscription's audience (default: the endpoint's URL),
 * `email` the service account it pushes as. A push answered other than 102/200/201/202/204 is sent
 * again (up to `attempts` times, a short backoff apart), as Pub/Sub retries; every attempt is kept.
 */

export interface PushSubscription {
  endpoint: string;
  serviceAccount: string;
  /** Default: the endpoint's URL (Pub/Sub's default audience). */
  audience?: string;
  /** Tries per message (default 3). */
  attempts?: number;
}

export interface PushAttempt {
  topic: string;
  endpoint: string;
  data: { emailAddress: string; historyId: number };
  status: number | 'unreachable';
  at: number;
}

const ACK = new Set([102, 200, 201, 202, 204]);
export const GOOGLE_ISSUER = 'https://accounts.google.com';

export class PubSub {
  readonly attempts: PushAttempt[] = [];
  private readonly subscriptions = new Map<string, PushSubscription>();
  private readonly privateKey: KeyObject;
  private readonly publicJwk: Record<string, unknown>;
  private readonly kid = randomBytes(8).toString('hex');
  private pending = new Set<Promise<void>>();
  private paused = false;
  private held: (() => void)[] = [];

  constructor(
    private readonly now: () => number,
    private readonly signal: AbortSignal,
  ) {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.privateKey = privateKey;
    this.publicJwk = { ...publicKey.export({ format: 'jwk' }), kid: this.kid, alg: 'RS256', use: 'sig' };
  }

  /** Google's signing keys, as https://www.googleapis.com/oauth2/v3/certs answers them. */
  jwks(): { keys: Record<string, unknown>[] } {
    return { keys: [this.publicJwk] };
  }

  subscribe(topicName: string, subscription: PushSubscription): void {
    this.subscriptions.set(topicName, subscription);
  }

  /** Pushes wait (in order) until `resume`: a test can hold them, as a slow Pub/Sub would. */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    for (const go of this.held.splice(0)) go();
  }

  /** Resolves once every push under way (retries included) has ended. */
  async settled(): Promise<void> {
    while (this.pending.size) await Promise.all([...this.pending]);
  }

  /** A token as Pub/Sub's push authentication signs it. */
  token(claims: Record<string, unknown>): string {
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const head = `${part({ alg: 'RS256', kid: this.kid, typ: 'JWT' })}.${part(claims)}`;
    const signature = createSign('RSA-SHA256').update(head).sign(this.privateKey).toString('base64url');
    return `${head}.${signature}`;
  }

  /** Gmail's side: a change in a watched mailbox is published to its topic, when the watch's label filter lets it. */
  mailboxChanged(mailbox: Mailbox, entry: HistoryRecord): void {
    const watch = mailbox.watch;
    if (!watch || watch.expiration < this.now()) return;
    // include: only changes to messages with one of the labels; exclude: none of messages that have one.
    const listed = (ids: readonly string[]) => ids.some((l) => watch.labelIds.includes(l));
    if (watch.labelIds.length) {
      const touched = listed(entry.labelIds) || listed(entry.added ?? []) || listed(entry.removed ?? []);
      if (watch.labelFilterBehavior === 'include' ? !touched : listed(entry.labelIds)) return;
    }
    const subscription = this.subscriptions.get(watch.topicName);
    if (!subscription) return;
    const data = { emailAddress: mailbox.email, historyId: entry.id };
    const push = this.deliver(watch.topicName, subscription, data).finally(() => this.pending.delete(push));
    this.pending.add(push);
  }

  private async deliver(topic: string, subscription: PushSubscription, data: PushAttempt['data']): Promise<void> {
    if (this.paused) await new Promise<void>((resolve) => this.held.push(resolve));
    const messageId = String(BigInt(`0x${randomBytes(6).toString('hex')}`));
    const tries = subscription.attempts ?? 3;
    for (let attempt = 1; attempt <= tries && !this.signal.aborted; attempt++) {
      const issuedAt = Math.floor(this.now() / 1000);
      const token = this.token({
        iss: GOOGLE_ISSUER,
        aud: subscription.audience ?? subscription.endpoint,
        azp: '111111111111111111111',
        sub: '111111111111111111111',
        email: subscription.serviceAccount,
        email_verified: true,
        iat: issuedAt,
        exp: issuedAt + 3600,
      });
      let status: PushAttempt['status'];
      try {
        const answer = await fetch(subscription.endpoint, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            message: {
              data: Buffer.from(JSON.stringify(data)).toString('base64'),
              messageId,
              message_id: messageId,
              publishTime: new Date(this.now()).toISOString(),
            },
            subscription: `${topic.replace('/topics/', '/subscriptions/')}-push`,
            ...(attempt > 1 ? { deliveryAttempt: attempt } : {}),
          }),
          signal: this.signal,
        });
        await answer.arrayBuffer();
        status = answer.status;
      } catch {
        status = 'unreachable';
      }
      this.attempts.push({ topic, endpoint: subscription.endpoint, data, status, at: this.now() });
      if (typeof status === 'number' && ACK.has(status)) return;
      await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt));
    }
  }
}
