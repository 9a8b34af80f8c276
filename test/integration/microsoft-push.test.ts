import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GrantRecord } from '#shared/db/grants';
import { pendingLifecycleEvents } from '#shared/db/graph-lifecycle';
import { getSyncState } from '#shared/db/mail-sync';
import { syncSoon } from '#shared/jobs/sync-runs';
import { clock } from '#shared/time';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';
import { apiClient } from '../support/api';
import { makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { connectFakeMicrosoftGrant } from '../support/microsoft';
import { jobsDone } from '../support/outbox-relay';
import { createTestQueue, drainQueue } from '../support/queues';
import { startQueueWorker } from '../support/sqs-worker';

/**
 * Provider B's change notifications, end to end against the local Graph fake: a grant's runs keep a
 * Graph subscription of its messages whose address is this deployment's `POST /v3/push/microsoft`
 * (validated by the fake as Graph does: the token echoed as text/plain); the fake POSTs each change
 * there with the subscription's clientState; a notification is verified by its clientState and only
 * brings the grant's next run forward, so the change is announced at once, once, however many times
 * it is notified, late or missed. Lifecycle notifications are acted on by the next run (reauthorize,
 * a new subscription). Forged notifications are refused with the error envelope and change nothing.
 */
let fake: GraphFake;
let gateway: Gateway;
let fanout: string;
let mailSync: string;
let grant: GrantRecord;
let email: string;
let apiKey: string;
let worker: ReturnType<typeof startQueueWorker>;

interface Notice {
  type: string;
  data: { object: { id: string; grant_id: string } };
}
const seen: Notice[] = [];

async function noticesFor(messageId: string, type: string, timeout = 20_000): Promise<Notice[]> {
  const until = Date.now() + timeout;
  while (Date.now() < until) {
    seen.push(...(await drainQueue(fanout, 10, 300)).map((m) => m.body as Notice));
    const found = seen.filter((n) => n.type === type && n.data.object.id === messageId);
    if (found.length) return found;
  }
  return [];
}

const notify = (body: unknown, query = '') =>
  apiClient(gateway.url).request('POST', `/v3/push/microsoft${query}`, { body });

const subscriptionOf = async () => (await getSyncState(grant.id))?.graph_push?.subscriptions.messages;

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

beforeAll(async () => {
  fanout = await createTestQueue('microsoft-push-fanout');
  mailSync = await createTestQueue('microsoft-push-sync');
  Object.assign(process.env, { FANOUT_QUEUE_URL: fanout, MAIL_SYNC_QUEUE_URL: mailSync });
  const { handler } = await import('#functions/mail-sync/handler');
  worker = startQueueWorker(mailSync, handler as never, { functionName: 'mail-sync', timeoutMs: 120_000 });
  gateway = await startGateway();
  // Subscriptions notify this deployment's public URL.
  process.env.PUBLIC_BASE_URL = gateway.url;
  // The fake keeps our clock, so that a test can move both ahead (the renewal).
  fake = await startGraphFake({ now: () => clock.nowMs() });
  const app = await makeApplication('microsoft push');
  apiKey = app.apiKey;
  // A token for a week: the renewal test moves the clock two days ahead, and no sign-in refreshes it here.
  ({ grant, email } = await connectFakeMicrosoftGrant(fake, 'microsoft push', {
    applicationId: app.applicationId,
    expiresIn: 7 * 86_400,
  }));
  await jobsDone();
  // The first run takes the delta links and subscribes to the mailbox's messages.
  await until(
    async () => !!(await subscriptionOf())?.id && !!(await getSyncState(grant.id))?.next_due,
    'the first run',
  );
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  expect(fake?.violations()).toEqual([]);
  await fake?.subscriptions.settled();
  await fake?.close();
  await gateway?.close();
});

describe("provider B's change notifications", () => {
  it('subscribes to the mailbox’s messages at the push address, validated, with a secret clientState kept as a hash', async () => {
    const [subscription] = [...fake.subscriptions.subscriptions.values()];
    expect(subscription).toMatchObject({
      notificationUrl: `${gateway.url}/v3/push/microsoft`,
      lifecycleNotificationUrl: `${gateway.url}/v3/push/microsoft`,
      resource: 'me/messages',
    });
    expect([...subscription!.changeTypes].sort()).toEqual(['created', 'deleted', 'updated']);
    // At most Graph's 4,230 minutes, and kept with the expiration Graph gave.
    expect(subscription!.expiresAt - Date.now()).toBeLessThanOrEqual(4230 * 60_000);
    expect(subscription!.expiresAt - Date.now()).toBeGreaterThan(4000 * 60_000);
    const held = await subscriptionOf();
    expect(held).toMatchObject({ id: subscription!.id, expires_at: Math.floor(subscription!.expiresAt / 1000) });
    expect(subscription!.clientState!.startsWith(`${grant.id}.`)).toBe(true);
    const secret = subscription!.clientState!.slice(grant.id.length + 1);
    expect(JSON.stringify(await getSyncState(grant.id))).not.toContain(secret);
  });

  it('answers Graph’s validation request with the token, as text/plain', async () => {
    const token = 'Validation: Testing client application reachability for subscription Request-Id: 123';
    const answer = await fetch(`${gateway.url}/v3/push/microsoft?validationToken=${encodeURIComponent(token)}`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain; charset=utf-8' },
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await answer.text()).toBe(token);
    expect(answer.headers.get('x-request-id')).toBeTruthy();
  });

  it('announces a delivered message through the notification, once, though it is notified twice', async () => {
    const scheduled = (await getSyncState(grant.id))!.next_due!;
    const subscription = [...fake.subscriptions.subscriptions.values()][0]!;
    fake.subscriptions.failNext(subscription.id, { kind: 'duplicate' });
    const before = fake.subscriptions.delivered.length;
    const delivered = fake.deliver(email, { from: 'ann@example.org', to: email, subject: 'Pushed', text: 'Hi' });
    const created = await noticesFor(delivered.id, 'message.created');
    expect(created).toHaveLength(1);
    // Before the grant's next scheduled run: only the notification can have brought it.
    expect(Date.now()).toBeLessThan(scheduled);
    await fake.subscriptions.settled();
    expect(fake.subscriptions.delivered.slice(before).map((d) => d.status)).toEqual([202, 202]);
    await jobsDone();
    expect(await noticesFor(delivered.id, 'message.created', 3_000)).toHaveLength(1);
    const health = await apiClient(gateway.url, apiKey).get(`/v3/grants/${grant.id}`);
    expect(health.status, health.text).toBe(200);
    expect(health.body.data.sync).toMatchObject({ last_push_at: expect.any(Number), push: { state: 'active' } });
  });

  it('loses nothing when a notification comes late or is missed (Graph then sends `missed`)', async () => {
    const subscription = [...fake.subscriptions.subscriptions.values()][0]!;
    fake.subscriptions.failNext(subscription.id, { kind: 'missed' });
    const missed = fake.deliver(email, { from: 'bob@example.org', to: email, subject: 'Missed', text: 'Hi' });
    expect(await noticesFor(missed.id, 'message.created')).toHaveLength(1);
    fake.subscriptions.failNext(subscription.id, { kind: 'late', delayMs: 1500 });
    const late = fake.deliver(email, { from: 'bob@example.org', to: email, subject: 'Late', text: 'Hi' });
    expect(await noticesFor(late.id, 'message.created')).toHaveLength(1);
    await fake.subscriptions.settled();
    await jobsDone();
    expect(await noticesFor(late.id, 'message.created', 2_000)).toHaveLength(1);
    expect(await noticesFor(missed.id, 'message.created', 1_000)).toHaveLength(1);
  });

  it('refuses a notification with another clientState, or of a subscription it does not hold, and runs nothing', async () => {
    const subscription = [...fake.subscriptions.subscriptions.values()][0]!;
    const item = (over: Record<string, unknown>) => ({
      value: [
        {
          subscriptionId: subscription.id,
          clientState: subscription.clientState,
          changeType: 'created',
          resource: 'Users/x/Messages/y',
          subscriptionExpirationDateTime: new Date(subscription.expiresAt).toISOString(),
          tenantId: '9188040d-6c67-4c5b-b112-36a304b66dad',
          ...over,
        },
      ],
    });
    await jobsDone();
    const pushedAt = (await getSyncState(grant.id))!.last_push_at;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    for (const body of [
      item({ clientState: `${grant.id}.${'x'.repeat(43)}` }),
      item({ clientState: 'secretClientValue' }),
      item({ clientState: undefined }),
      item({ subscriptionId: '7f105c7d-2dc5-4530-97cd-4e7ae6534c07' }),
    ]) {
      const answer = await notify(body);
      expect(answer.status, answer.text).toBe(401);
      expect(answer.body).toMatchObject({ request_id: expect.any(String), error: { type: 'authentication_error' } });
    }
    // Nothing was brought forward: the grant's last push is the one before.
    expect((await getSyncState(grant.id))!.last_push_at).toBe(pushedAt);
    // A genuine one beside a forged one: accepted, the forged one counted apart.
    const mixed = await notify({
      value: [...item({}).value, ...item({ clientState: `${grant.id}.${'y'.repeat(43)}` }).value],
    });
    expect(mixed.status, mixed.text).toBe(202);
    expect(mixed.body.data).toEqual({ received: true, accepted: 1, refused: 1 });
    const empty = await notify({ value: [] });
    expect(empty.status, empty.text).toBe(400);
  });

  it('acts on lifecycle notifications: reauthorizes, and subscribes again once Graph removed the subscription', async () => {
    const first = (await subscriptionOf())!;
    fake.subscriptions.lifecycle(first.id!, 'reauthorizationRequired');
    await fake.subscriptions.settled();
    await until(async () => (await pendingLifecycleEvents(grant.id)).length === 0, 'the reauthorization');
    await jobsDone();
    expect(
      fake.requests().some((r) => r.method === 'POST' && r.path.endsWith(`/subscriptions/${first.id}/reauthorize`)),
    ).toBe(true);
    expect((await subscriptionOf())!.id).toBe(first.id);

    fake.subscriptions.lifecycle(first.id!, 'subscriptionRemoved');
    await fake.subscriptions.settled();
    await until(async () => ((await subscriptionOf())?.id ?? first.id) !== first.id, 'a new subscription');
    const renewed = [...fake.subscriptions.subscriptions.values()];
    expect(renewed).toHaveLength(1);
    expect(renewed[0]!.id).toBe((await subscriptionOf())!.id);
    const after = fake.deliver(email, { from: 'cy@example.org', to: email, subject: 'After removal', text: 'Hi' });
    expect(await noticesFor(after.id, 'message.created')).toHaveLength(1);
  });

  it('renews the subscription within Graph’s 4,230 minutes once less than a day is left, keeping its ID', async () => {
    const before = (await subscriptionOf())!;
    await jobsDone();
    // Two days later (the fake keeps the same clock): the subscription ends in less than a day.
    const restore = clock.set(() => Date.now() + 2 * 86_400_000);
    try {
      await syncSoon({ application_id: grant.application_id, id: grant.id });
      await until(async () => ((await subscriptionOf())?.expires_at ?? 0) > before.expires_at!, 'the renewal');
      const after = (await subscriptionOf())!;
      expect(after.id).toBe(before.id);
      expect(fake.requests().some((r) => r.method === 'PATCH' && r.path.endsWith(`/subscriptions/${before.id}`))).toBe(
        true,
      );
      const held = fake.subscriptions.subscriptions.get(before.id!)!;
      expect(held.expiresAt - clock.nowMs()).toBeLessThanOrEqual(4230 * 60_000);
      expect(after.expires_at).toBe(Math.floor(held.expiresAt / 1000));
    } finally {
      restore();
    }
  });

  it('deletes the subscriptions when the deployment has no public URL any more; the runs poll', async () => {
    const before = process.env.PUBLIC_BASE_URL;
    delete process.env.PUBLIC_BASE_URL;
    try {
      await jobsDone();
      await syncSoon({ application_id: grant.application_id, id: grant.id });
      await until(async () => (await getSyncState(grant.id))?.graph_push === undefined, 'the subscriptions gone');
      expect(fake.subscriptions.subscriptions.size).toBe(0);
    } finally {
      process.env.PUBLIC_BASE_URL = before;
    }
  });
});
