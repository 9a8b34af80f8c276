import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { gmailMailChanges } from '#shared/google/mail-changes';
import { googleClientOf, type GoogleClient } from '#shared/google/client';
import type { GrantRecord } from '#shared/db/grants';
import { createSyncState, releaseSyncLease, saveSyncState, takeSyncLease } from '#shared/db/mail-sync';
import type { OutboxEntry } from '#shared/db/outbox';
import type { Notification } from '#shared/notifications/notification';
import type { GrantId } from '#shared/ids';
import { clock } from '#shared/time';
import { startGoogleFake, type FaultStatus, type GoogleFake } from '../../scripts/local-stack/google/server';
import { connectFakeGoogleGrant } from '../support/google';
import { rng } from '../support/rng';

/**
 * Provider A's mail changes under faults (shared/google/mail-changes.ts against the local Google fake):
 * 1,000 runs, seeded, each after a few random changes to the mailbox (mail arriving, labels changed,
 * messages deleted) and with random faults armed at Gmail (429 and 403 rate limits, 5xx, on history,
 * message and profile reads, some outlasting the client's retries). A run either commits pages of
 * notifications with the cursor, or fails and commits nothing of the page it was on. At the end, with
 * the faults gone, every message is announced created exactly once, every deletion of an announced
 * message once, and no notification twice: no change lost, none announced twice. The runs follow each
 * other as fast as this machine goes, far beyond an account's Gmail quota: the allowance is raised for
 * this file (the pacing is tested in google-batch-limits.test.ts), or most of the time would be waits.
 */
const RUNS = 1000;
let fake: GoogleFake;
let grant: GrantRecord;
let email: string;
let client: GoogleClient;

beforeAll(async () => {
  vi.stubEnv('GOOGLE_GMAIL_UNITS_PER_MINUTE', '100000000');
  fake = await startGoogleFake();
  ({ grant, email } = await connectFakeGoogleGrant(fake, 'google change faults'));
  client = await googleClientOf(grant);
  await createSyncState(grant.id as GrantId, grant.application_id as never, clock.nowSeconds());
});

afterAll(async () => {
  vi.unstubAllEnvs();
  await fake?.close();
});

/** One run as the service makes it; the notifications it committed (none when it failed mid-page). */
async function run(): Promise<{ committed: Notification[]; failed: boolean }> {
  const leaseId = randomUUID();
  const state = (await takeSyncLease(grant.id as GrantId, leaseId, clock.nowSeconds(), 60))!;
  const committed: OutboxEntry[] = [];
  let failed = false;
  try {
    await gmailMailChanges.run(grant, {
      state,
      save: async (next, outbox = []) => {
        await saveSyncState(next, leaseId, outbox);
        committed.push(...outbox);
      },
      outOfTime: () => false,
    });
  } catch {
    failed = true;
  }
  await releaseSyncLease(state, leaseId, 0);
  return { committed: committed.map((e) => (e as { notification: Notification }).notification), failed };
}

describe("provider A's mail changes under faults", () => {
  it(`loses no change and announces none twice over ${RUNS} seeded runs`, async () => {
    const random = rng(34);
    const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
    const all: Notification[] = [];
    expect((await run()).committed).toEqual([]); // the first run takes the cursor
    const live = new Set<string>();
    let failures = 0;
    for (let i = 0; i < RUNS; i++) {
      for (let c = Math.floor(random() * 3); c > 0; c--) {
        const action = random();
        if (action < 0.5 || live.size === 0) {
          live.add(fake.deliver(email, `From: a@example.org\r\nTo: ${email}\r\nSubject: Run ${i}\r\n\r\nBody ${i}`).id);
        } else if (action < 0.8) {
          const id = pick([...live]);
          const star = random() < 0.5;
          await client.call({
            api: 'gmail',
            method: 'POST',
            path: `/gmail/v1/users/me/messages/${id}/modify`,
            body: star ? { addLabelIds: ['STARRED'] } : { removeLabelIds: ['STARRED', 'UNREAD'] },
          });
        } else {
          const id = pick([...live]);
          live.delete(id);
          await client.call({ api: 'gmail', method: 'DELETE', path: `/gmail/v1/users/me/messages/${id}` });
        }
      }
      for (let f = Math.floor(random() * 3); f > 0; f--) {
        const status = pick<FaultStatus>([429, 403, 500, 503]);
        fake.inject({
          method: pick(['gmail.users.history.list', 'gmail.users.messages.get', 'gmail.users.getProfile']),
          status,
          ...(status === 403 ? { reason: 'userRateLimitExceeded' } : {}),
          // Some outlast the client's four attempts: the run fails and commits nothing of its page.
          times: 1 + Math.floor(random() * 5),
          retryAfter: 0,
        });
      }
      const outcome = await run();
      if (outcome.failed) failures++;
      all.push(...outcome.committed);
    }
    // The faults left are spent by the next runs (each fault a few requests); then a run succeeds and catches up.
    for (let catchUp = 0; catchUp < 50; catchUp++) {
      const outcome = await run();
      all.push(...outcome.committed);
      if (!outcome.failed) break;
    }
    expect(failures).toBeGreaterThan(50);
    expect(failures).toBeLessThan(RUNS);
    const ids = all.map((n) => n.id);
    expect(new Set(ids).size, 'a notification committed twice').toBe(ids.length);
    const count = (type: string, id: string) =>
      all.filter((n) => n.type === type && (n.data.object as { id: string }).id === id).length;
    const created = new Set(
      all.filter((n) => n.type === 'message.created').map((n) => (n.data.object as { id: string }).id),
    );
    for (const id of created) expect(count('message.created', id), `message.created ${id}`).toBe(1);
    for (const n of all.filter((x) => x.type === 'message.deleted')) {
      const id = (n.data.object as { id: string }).id;
      expect(count('message.deleted', id), `message.deleted ${id}`).toBe(1);
      expect(created.has(id), `message.deleted ${id} of a message never announced`).toBe(true);
    }
    // Every message there now was announced (none lost), once.
    for (const id of live) expect(created.has(id), `message ${id} never announced`).toBe(true);
    expect(created.size).toBeGreaterThan(100);
  }, 600_000);
});
