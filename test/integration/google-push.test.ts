import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnector, updateConnector } from '#shared/connectors/service';
import type { GrantRecord } from '#shared/db/grants';
import { getSyncState } from '#shared/db/mail-sync';
import { syncSoon } from '#shared/jobs/sync-runs';
import type { ApplicationId } from '#shared/ids';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { apiClient } from '../support/api';
import { makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { connectFakeGoogleGrant } from '../support/google';
import { jobsDone } from '../support/outbox-relay';
import { createTestQueue, drainQueue } from '../support/queues';
import { startQueueWorker } from '../support/sqs-worker';

/**
 * Provider A's push, end to end against the local Google fake: a grant's runs keep Gmail's watch on
 * the connector's Pub/Sub topic; the fake's Pub/Sub pushes each change to POST /v3/push/google/pubsub?application_id={app}
 * with a token signed by its "Google" key; the push is verified (signature, issuer, audience, service
 * account) and only brings the grant's next run forward, so the change is announced at once, once,
 * however many times it is pushed. A push that fails a check is refused with the error envelope and
 * changes nothing.
 */
const TOPIC = 'projects/switchboard-test/topics/gmail-changes';
const PUSHER = 'gmail-push@switchboard-test.iam.gserviceaccount.com';

let fake: GoogleFake;
let gateway: Gateway;
let fanout: string;
let appId: string;
let apiKey: string;
let grant: GrantRecord;
let email: string;
let endpoint: string;
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

const push = (body: unknown, token?: string, app = appId) =>
  apiClient(gateway.url).request('POST', `/v3/push/google/pubsub?application_id=${app}`, {
    body,
    ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
  });

const dataOf = (emailAddress: string, historyId = 1) => ({
  message: { data: Buffer.from(JSON.stringify({ emailAddress, historyId })).toString('base64'), messageId: '1' },
  subscription: 'projects/switchboard-test/subscriptions/gmail-changes-push',
});

const claims = (over: Record<string, unknown> = {}) => {
  const now = Math.floor(Date.now() / 1000);
  return {
    iss: 'https://accounts.google.com',
    aud: endpoint,
    email: PUSHER,
    email_verified: true,
    iat: now,
    exp: now + 3600,
    ...over,
  };
};

beforeAll(async () => {
  fanout = await createTestQueue('google-push-fanout');
  const mailSync = await createTestQueue('google-push-sync');
  Object.assign(process.env, { FANOUT_QUEUE_URL: fanout, MAIL_SYNC_QUEUE_URL: mailSync });
  const { handler } = await import('#functions/mail-sync/handler');
  worker = startQueueWorker(mailSync, handler as never, { functionName: 'mail-sync', timeoutMs: 120_000 });
  gateway = await startGateway();
  // Calendar channels push to this deployment's public URL.
  process.env.PUBLIC_BASE_URL = gateway.url;
  fake = await startGoogleFake();
  const app = await makeApplication('google push');
  appId = app.applicationId;
  apiKey = app.apiKey;
  await createConnector({ applicationId: appId as ApplicationId, credential: 'api_key' }, {
    provider: 'google',
    settings: {
      client_id: 'client-a',
      client_secret: 'secret-a',
      api_base_url: fake.url,
      topic_name: TOPIC,
      pubsub_service_account: PUSHER,
    },
  } as never);
  endpoint = `${gateway.url}/v3/push/google/pubsub?application_id=${appId}`;
  fake.subscribe(TOPIC, { endpoint, serviceAccount: PUSHER });
  ({ grant, email } = await connectFakeGoogleGrant(fake, 'google push', { applicationId: appId }));
  await jobsDone();
  // The first run takes the grant's cursors, asks Gmail to watch the mailbox, and schedules the next run.
  const firstRunDone = async () => {
    const state = await getSyncState(grant.id);
    return state?.gmail?.watch?.topic === TOPIC && state.people !== undefined && state.next_due !== undefined;
  };
  for (let i = 0; i < 200 && !(await firstRunDone()); i++) await new Promise((resolve) => setTimeout(resolve, 100));
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  expect(fake?.requestViolations).toEqual([]);
  expect(fake?.responseViolations).toEqual([]);
  await fake?.close();
  await gateway?.close();
});

describe("provider A's Gmail push", () => {
  it('keeps the watch on the connector’s topic, with the expiration Gmail gave', async () => {
    const watch = fake.watchOf(email);
    expect(watch).toMatchObject({ topicName: TOPIC, labelFilterBehavior: 'exclude', labelIds: ['SPAM'] });
    const state = await getSyncState(grant.id);
    expect(state?.gmail?.watch).toMatchObject({ topic: TOPIC, expires_at: Math.floor(watch!.expiration / 1000) });
    expect(state?.gmail?.watch?.error).toBeUndefined();
  });

  it('announces a delivered message through the push, once, though it is pushed three times', async () => {
    const before = fake.pushes.length;
    // The grant's next scheduled run: an announcement before it can only come from the push.
    const scheduled = (await getSyncState(grant.id))!.next_due!;
    const delivered = fake.deliver(
      email,
      `From: Ann <ann@example.org>\r\nTo: ${email}\r\nSubject: Pushed\r\nMessage-ID: <pushed@example.org>\r\n\r\nHi\r\n`,
    );
    const created = await noticesFor(delivered.id, 'message.created');
    expect(created).toHaveLength(1);
    expect(Date.now()).toBeLessThan(scheduled);
    expect(created[0]!.data.object).toMatchObject({ id: delivered.id, grant_id: grant.id });
    await fake.pushesSettled();
    expect(fake.pushes.slice(before).map((p) => [p.data.emailAddress, p.status])).toEqual([[email, 200]]);
    // The same push again, twice (Pub/Sub delivers at least once): verified, read, and nothing announced again.
    for (let i = 0; i < 2; i++) {
      const again = await push(dataOf(email, Number(fake.historyIdOf(email))), fake.signPushToken(claims()));
      expect(again.status, again.text).toBe(200);
      expect(again.body.data).toEqual({ received: true, grant_id: grant.id });
    }
    await jobsDone();
    expect(await noticesFor(delivered.id, 'message.created', 3_000)).toHaveLength(1);
    // The grant's health says so: the watch active, and when the last push arrived.
    const health = await apiClient(gateway.url, apiKey).get(`/v3/grants/${grant.id}`);
    expect(health.status, health.text).toBe(200);
    expect(health.body.data.sync).toMatchObject({
      last_push_at: expect.any(Number),
      last_change_at: expect.any(Number),
      push: { state: 'active', topic: TOPIC, expires_at: Math.floor(fake.watchOf(email)!.expiration / 1000) },
    });
  });

  it('refuses a push whose token fails a check, with the error envelope, and runs nothing', async () => {
    const body = dataOf(email);
    const refusals: [string | undefined, RegExp][] = [
      [undefined, /must carry its subscription’s token/],
      ['not-a-jwt', /not a JWT/],
      [fake.signPushToken(claims({ aud: 'https://elsewhere.example/push' })), /audience is not this push endpoint/],
      [fake.signPushToken(claims({ email: 'intruder@evil.example' })), /not from the service account/],
      [fake.signPushToken(claims({ email_verified: false })), /not from the service account/],
      [fake.signPushToken(claims({ iss: 'https://evil.example' })), /issuer is not expected/],
      [fake.signPushToken(claims({ exp: Math.floor(Date.now() / 1000) - 3600 })), /has expired/],
    ];
    const forged = fake.signPushToken(claims()).split('.');
    refusals.push([`${forged[0]}.${forged[1]}.${Buffer.from('forged').toString('base64url')}`, /signature/]);
    for (const [token, why] of refusals) {
      const answer = await push(body, token);
      expect(answer.status, answer.text).toBe(401);
      expect(answer.body).toMatchObject({ request_id: expect.any(String), error: { type: 'authentication_error' } });
      expect(answer.body.error.message).toMatch(why);
      expect(answer.headers.get('x-request-id')).toBe(answer.body.request_id);
    }
    const other = await makeApplication('no google push');
    const unknown = await push(body, fake.signPushToken(claims()), other.applicationId);
    expect(unknown.status, unknown.text).toBe(404);
    expect(unknown.body.error.message).toMatch(/no google connector with a settings.topic_name/);
    const garbled = await push(
      { message: { data: Buffer.from('not json').toString('base64') } },
      fake.signPushToken(claims()),
    );
    expect(garbled.status, garbled.text).toBe(400);
  });

  it('acknowledges a verified push for an address with no grant here, so that Pub/Sub does not send it again', async () => {
    const answer = await push(dataOf('stranger@gmail.com'), fake.signPushToken(claims()));
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.data).toEqual({ received: true });
  });

  it('keeps a Calendar channel per calendar; its notifications bring the events’ changes at once, once', async () => {
    const channels = fake.channelsOf(email);
    expect(channels).toHaveLength(1);
    expect(channels[0]).toMatchObject({ address: `${gateway.url}/v3/push/google/calendar`, type: 'web_hook' });
    const state = await getSyncState(grant.id);
    expect(state?.gcal?.calendars[email]?.channel).toMatchObject({ id: channels[0]!.id });
    // The channel's token is kept only as a hash.
    expect(JSON.stringify(state)).not.toContain(channels[0]!.token!);
    await fake.calendarPushesSettled();
    expect(fake.calendarPushes.map((p) => [p.state, p.status])).toEqual([['sync', 200]]);

    const scheduled = (await getSyncState(grant.id))!.next_due!;
    const event = fake.calendarChangedOutside(email, 'primary', {
      summary: 'Pushed meeting',
      start: { dateTime: '2027-02-01T10:00:00Z' },
      end: { dateTime: '2027-02-01T11:00:00Z' },
    });
    const created = await noticesFor(event.id as string, 'event.created');
    expect(created).toHaveLength(1);
    expect(Date.now()).toBeLessThan(scheduled);
    await fake.calendarPushesSettled();
    expect(fake.calendarPushes.map((p) => [p.state, p.status])).toEqual([
      ['sync', 200],
      ['exists', 200],
    ]);

    // A notification with another token, or for a channel that is not (or no longer) the grant's: 401, nothing run.
    const notify = (headers: Record<string, string>) =>
      apiClient(gateway.url).request('POST', '/v3/push/google/calendar', { headers });
    const base = {
      'x-goog-channel-id': channels[0]!.id,
      'x-goog-resource-id': channels[0]!.resourceId,
      'x-goog-resource-state': 'exists',
    };
    for (const headers of [
      { ...base, 'x-goog-channel-token': 'forged' },
      {
        ...base,
        'x-goog-channel-id': `${grant.id}-00000000-0000-0000-0000-000000000000`,
        'x-goog-channel-token': channels[0]!.token!,
      },
      { ...base },
    ]) {
      const answer = await notify(headers);
      expect(answer.status, answer.text).toBe(401);
      expect(answer.body.error).toMatchObject({ type: 'authentication_error' });
    }
    const genuine = await notify({ ...base, 'x-goog-channel-token': channels[0]!.token! });
    expect(genuine.status, genuine.text).toBe(200);
    expect(genuine.body.data).toEqual({ received: true, grant_id: grant.id });
    await jobsDone();
    expect(await noticesFor(event.id as string, 'event.created', 2_000)).toHaveLength(1);
  });

  it('stops the watch when the connector no longer names a topic', async () => {
    await updateConnector({ applicationId: appId as ApplicationId, credential: 'api_key' }, 'google', {
      settings: { client_id: 'client-a', api_base_url: fake.url },
    } as never);
    await syncSoon({ application_id: appId, id: grant.id });
    await expect.poll(async () => (await getSyncState(grant.id))?.gmail?.watch, { timeout: 20_000 }).toBeUndefined();
    expect(fake.watchOf(email)).toBeUndefined();
    const health = await apiClient(gateway.url, apiKey).get(`/v3/grants/${grant.id}`);
    expect(health.body.data.sync.push).toEqual({ state: 'off' });
  });

  it('stops the Calendar channels of a grant deleted, then forgets its cursors; its pushes are refused', async () => {
    const channel = fake.channelsOf(email)[0]!;
    const deleted = await apiClient(gateway.url, apiKey).request('DELETE', `/v3/grants/${grant.id}`);
    expect(deleted.status, deleted.text).toBe(200);
    await jobsDone();
    expect(fake.channelsOf(email)).toEqual([]);
    expect(await getSyncState(grant.id)).toBeUndefined();
    const late = await apiClient(gateway.url).request('POST', '/v3/push/google/calendar', {
      headers: {
        'x-goog-channel-id': channel.id,
        'x-goog-channel-token': channel.token!,
        'x-goog-resource-id': channel.resourceId,
        'x-goog-resource-state': 'exists',
      },
    });
    expect(late.status, late.text).toBe(401);
  });
});
