import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { draftKey, sendQuotaKey } from '#shared/db/keys';
import type { DraftId, GrantId } from '#shared/ids';
import { clock } from '#shared/time';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication, uniqueEmail } from '../support/factories';
import { startGateway } from '../support/gateway';
import { waitForSunk } from '../support/mail';
import { dieAt, type DeathPoint } from '../support/process-death';

/**
 * Sends killed between their steps. A send claims what it needs right before its message leaves (the
 * draft it sends, a unit of the daily quota) by conditional writes that lapse by themselves, and the
 * transaction that stores its Sent copy converts them (the draft deleted, the unit counted). Here the
 * process dies right after the claim, or at that commit (test/support/process-death.ts): nothing the
 * request might still try (a catch block putting a draft back, refunding a unit) reaches the store.
 * What it leaves must need nothing restored: the draft is still there and, once the claim lapsed (the
 * injectable clock, never a sleep), sends; the quota unit the dead send held serves the next send
 * once it lapsed, and is counted once.
 *
 * The account's workspace allows one send a day, so a unit the dead send kept would refuse every
 * later send of the day.
 */
let api: ApiClient;

/** Past every claim's lapse (shared/mailbox/send.ts SEND_CLAIM_SECONDS: 15 minutes). */
const LAPSE_MS = 15 * 60 * 1000 + 1000;

beforeAll(async () => {
  const gateway = await startGateway();
  api = apiClient(gateway.url, (await makeApplication('send faults')).apiKey);
  const policy = await api.post('/v3/policies', { name: 'One a day', limits: { limit_count_daily_email_sent: 1 } });
  expect(policy.status, policy.text).toBe(201);
  const [workspace] = (await api.get('/v3/workspaces')).body.data;
  expect((await api.patch(`/v3/workspaces/${workspace.workspace_id}`, { policy_id: policy.body.data.id })).status).toBe(
    200,
  );
  return () => gateway.close();
});

// The clock runs from noon UTC today, so that moving it past a lapse never reaches the next day's quota.
let offset = 0;
let restoreClock: () => void = () => undefined;
beforeEach(() => {
  const noon = new Date();
  noon.setUTCHours(12, 0, 0, 0);
  offset = noon.getTime() - Date.now();
  restoreClock = clock.set(() => Date.now() + offset);
});
afterEach(() => {
  restoreClock();
  vi.restoreAllMocks();
});

/** Moves the clock on by `ms` (the injectable clock: nothing waits). */
const later = (ms: number) => void (offset += ms);

/** An address no Agent Account hosts: mail to it goes through the relay to the SMTP sink. */
const outside = (prefix: string) => uniqueEmail(prefix).replace('@agents.test', '@example.net');

const today = () => new Date(clock.nowMs()).toISOString().slice(0, 10);

async function sentCopies(grantId: string) {
  const sent = await api.get(`/v3/grants/${grantId}/messages?in=sent`);
  expect(sent.status, sent.text).toBe(200);
  return sent.body.data as { id: string; subject: string }[];
}

async function draftsCount(grantId: string) {
  const folder = await api.get(`/v3/grants/${grantId}/folders/drafts`);
  expect(folder.status, folder.text).toBe(200);
  return folder.body.data.total_count as number;
}

// ---- the tests -------------------------------------------------------------------------------

describe('a draft send killed between its claim and its commit', () => {
  it.each<DeathPoint>(['after-claim', 'at-commit'])(
    '%s: leaves the draft where it was, sendable once the claim lapsed, and its quota unit free',
    async (point) => {
      // Prepare
      const grant = await makeAgentGrant(api);
      const to = outside('draft-fault');
      const created = await api.post(`/v3/grants/${grant.id}/drafts`, {
        to: [{ email: to }],
        subject: 'Survives a crash',
        body: '<p>still here</p>',
      });
      expect(created.status, created.text).toBe(200);
      const draftId = created.body.data.id as string;
      const died = dieAt(point, grant.id, draftKey(grant.id as GrantId, draftId as DraftId));

      // Act: the send dies.
      const killed = await api.request('POST', `/v3/grants/${grant.id}/drafts/${draftId}`);
      vi.restoreAllMocks();

      // Assess: nothing was put back, and nothing needs to be. The draft is where it was, counted, unsent.
      expect(died()).toBe(true);
      expect(killed.status, killed.text).toBe(500);
      const kept = await api.get(`/v3/grants/${grant.id}/drafts/${draftId}`);
      expect(kept.status, kept.text).toBe(200);
      expect(kept.body.data).toMatchObject({ id: draftId, subject: 'Survives a crash', body: '<p>still here</p>' });
      expect(await draftsCount(grant.id)).toBe(1);
      expect(await sentCopies(grant.id)).toEqual([]);

      // While the dead send's claim holds, the draft is on its way out for any other send.
      const meanwhile = await api.request('POST', `/v3/grants/${grant.id}/drafts/${draftId}`);
      expect(meanwhile.status, meanwhile.text).toBe(404);

      // Once it lapsed, the draft sends, with the quota unit the dead send held (the day allows one).
      later(LAPSE_MS);
      const sent = await api.request('POST', `/v3/grants/${grant.id}/drafts/${draftId}`);
      expect(sent.status, sent.text).toBe(200);
      expect((await api.get(`/v3/grants/${grant.id}/drafts/${draftId}`)).status).toBe(404);
      expect(await draftsCount(grant.id)).toBe(0);
      expect((await sentCopies(grant.id)).map((m) => [m.id, m.subject])).toEqual([
        [sent.body.data.id, 'Survives a crash'],
      ]);
      expect(await waitForSunk(to)).not.toEqual([]);
      // That unit is counted once: the day's one send is used.
      expect(
        (
          await api.post(`/v3/grants/${grant.id}/messages/send`, {
            to: [{ email: outside('after') }],
            subject: 'second',
          })
        ).status,
      ).toBe(429);
    },
  );
});

describe('a quota-limited send killed between its hold and its commit', () => {
  it.each<DeathPoint>(['after-claim', 'at-commit'])(
    '%s: its unit is held until it lapses, then serves one next send, counted once',
    async (point) => {
      // Prepare
      const grant = await makeAgentGrant(api);
      const died = dieAt(point, grant.id, sendQuotaKey(grant.id as GrantId, today()));

      // Act: the send dies.
      const killed = await api.post(`/v3/grants/${grant.id}/messages/send`, {
        to: [{ email: outside('quota-fault') }],
        subject: 'dies',
      });
      vi.restoreAllMocks();

      // Assess: nothing stored, nothing given back by the dead request, and nothing to give back: the
      // unit is held (a send may be in flight) until the hold lapses.
      expect(died()).toBe(true);
      expect(killed.status, killed.text).toBe(500);
      expect(await sentCopies(grant.id)).toEqual([]);
      const held = await api.post(`/v3/grants/${grant.id}/messages/send`, {
        to: [{ email: outside('held') }],
        subject: 'held',
      });
      expect(held.status, held.text).toBe(429);
      expect(held.body.error.message).toContain('daily quota of 1 messages');

      // Once it lapsed, one send takes it over, however many try at once; then the day's one send is used.
      later(LAPSE_MS);
      const racing = await Promise.all(
        [1, 2, 3].map((n) =>
          api.post(`/v3/grants/${grant.id}/messages/send`, {
            to: [{ email: outside(`after-lapse-${n}`) }],
            subject: `after the lapse ${n}`,
          }),
        ),
      );
      expect(racing.map((r) => r.status).sort()).toEqual([200, 429, 429]);
      const winner = racing.find((r) => r.status === 200)!;
      expect((await sentCopies(grant.id)).map((m) => m.id)).toEqual([winner.body.data.id]);
      expect(await waitForSunk(winner.body.data.to[0].email)).toHaveLength(1);
      const next = await api.post(`/v3/grants/${grant.id}/messages/send`, {
        to: [{ email: outside('next') }],
        subject: 'over',
      });
      expect(next.status, next.text).toBe(429);
    },
  );

  it('a send the relay refused holds nothing: the next send has the unit at once', async () => {
    // The relay's refusal is an answer (nothing left), not a crash: the claims go with it.
    const grant = await makeAgentGrant(api);
    const created = await api.post(`/v3/grants/${grant.id}/drafts`, {
      to: [{ email: outside('refused') }],
      subject: 'Refused once',
      body: '<p>x</p>',
    });
    const transport = await import('#shared/mail/transport');
    const { DeliveryError } = transport;
    const relay = transport.mailTransport();
    vi.spyOn(relay, 'send').mockRejectedValueOnce(new DeliveryError('550 refused by the test'));

    const refused = await api.request('POST', `/v3/grants/${grant.id}/drafts/${created.body.data.id}`);
    expect(refused.status, refused.text).toBe(502);

    const sent = await api.request('POST', `/v3/grants/${grant.id}/drafts/${created.body.data.id}`);
    expect(sent.status, sent.text).toBe(200);
    expect(await draftsCount(grant.id)).toBe(0);
  });
});
