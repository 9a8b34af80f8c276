import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { MessageObject } from '#schemas/mail';
import { graphMailChanges, type GraphMailCursors } from '#shared/microsoft/mail-changes';
import { graphMessages } from '#shared/microsoft/messages';
import { graphFolders } from '#shared/microsoft/folders';
import { graphClientOf } from '#shared/microsoft/client';
import type { GrantRecord } from '#shared/db/grants';
import { createSyncState, getSyncState, releaseSyncLease, saveSyncState, takeSyncLease } from '#shared/db/mail-sync';
import type { Notification } from '#shared/notifications/notification';
import type { GrantId } from '#shared/ids';
import { ProviderError, RateLimitError } from '#shared/errors';
import { clock } from '#shared/time';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';
import { connectFakeMicrosoftGrant } from '../support/microsoft';
import { rng } from '../support/rng';
import { syncRun, syncRunFor } from '../support/sync-run';

/**
 * Provider B's mail changes (shared/microsoft/mail-changes.ts) against the local Graph fake: each
 * folder's messages/delta since its deltaLink becomes message.created / updated / deleted, committed
 * with the link under the run's lease, as shared/services/mail-sync.ts runs it. Each run here takes
 * the lease, runs, and gives it back as the service does; what it committed is read back. Every
 * request and answer is checked by the fake against Graph's descriptions.
 */
let fake: GraphFake;
let grant: GrantRecord;
let email: string;
/** How far both clocks (ours and the fake's) have been moved on: time passing between runs. */
let ahead = 0;
let restoreClock: () => void;

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
const validMessage = ajv.compile(MessageObject);

beforeAll(async () => {
  restoreClock = clock.set(() => Date.now() + ahead);
  fake = await startGraphFake({ now: () => Date.now() + ahead });
  ({ grant, email } = await connectFakeMicrosoftGrant(fake, 'microsoft mail changes'));
  await createSyncState(grant.id as GrantId, grant.application_id as never, clock.nowSeconds());
});

afterEach(() => {
  expect(fake.violations()).toEqual([]);
});

afterAll(async () => {
  restoreClock?.();
  vi.unstubAllEnvs();
  await fake?.close();
});

/** One run, as the service makes it: the notifications it committed, in order. */
const run = () => syncRun(grant, graphMailChanges);

/** One run that is out of time after `checks` questions; its outcome and what it committed. */
const runFor = (checks: number) => syncRunFor(grant, graphMailChanges, checks);

/** Ten minutes pass, with a run that finds nothing new: what was received before is not new any more. */
async function later(): Promise<void> {
  ahead += 10 * 60_000;
  expect(await run()).toEqual([]);
}

const kinds = (notifications: Notification[]) =>
  notifications.map((n) => `${n.type} ${(n.data.object as { id: string }).id}`);
const cursors = async () =>
  ((await getSyncState(grant.id as GrantId)) as unknown as { graph_mail?: GraphMailCursors }).graph_mail!;
const deliver = (subject: string, folder?: string) =>
  fake.deliver(email, {
    from: { name: 'Ann', address: 'ann@example.org' },
    to: email,
    subject,
    text: `Body of ${subject}`,
    ...(folder ? { folder } : {}),
  });

describe("provider B's mail changes", () => {
  it('reads every folder but drafts and outbox on its first run and announces nothing that was there before', async () => {
    deliver('Old news');
    deliver('Old archive', 'archive');
    expect(await run()).toEqual([]);
    const graph = await cursors();
    const watched = Object.keys(graph.folders);
    expect(watched).toContain(fake.folderId(email, 'inbox'));
    expect(watched).toContain(fake.folderId(email, 'archive'));
    expect(watched).not.toContain(fake.folderId(email, 'drafts'));
    expect(watched).not.toContain(fake.folderId(email, 'outbox'));
    expect(Object.values(graph.folders).every((c) => c.delta_link && !c.silent && !c.next_link)).toBe(true);
    expect((await getSyncState(grant.id as GrantId))!.seeded).toBe(true);
    expect(await run()).toEqual([]);
  });

  it('announces a delivered message once, as GET answers it', async () => {
    const { id } = fake.deliver(email, {
      from: 'bob@example.org',
      to: email,
      subject: 'With a file',
      html: '<p>See the file</p>',
      attachments: [{ name: 'notes.txt', contentType: 'text/plain', content: 'some notes' }],
    });
    const created = await run();
    expect(kinds(created)).toEqual([`message.created ${id}`]);
    expect(created[0]!.data.object).toEqual(await graphMessages.get(grant, id, {}));
    expect(validMessage(created[0]!.data.object), JSON.stringify(validMessage.errors)).toBe(true);
    expect(created[0]!.data.object).toMatchObject({ attachments: [{ filename: 'notes.txt' }] });
    expect(await run()).toEqual([]);
  });

  it('announces a flag or read change made elsewhere as message.updated', async () => {
    const { id } = deliver('To be read');
    expect(kinds(await run())).toEqual([`message.created ${id}`]);
    fake.changeOutside(email, { kind: 'read', id });
    fake.changeOutside(email, { kind: 'flag', id, flagStatus: 'flagged' });
    const updated = await run();
    expect(kinds(updated)).toEqual([`message.updated ${id}`]);
    expect(updated[0]!.data.object).toMatchObject({ unread: false, starred: true });
    expect(await run()).toEqual([]);
  });

  it('announces a move once, as message.updated in its new folder under the same (immutable) ID', async () => {
    const { id } = deliver('To be filed');
    expect(kinds(await run())).toEqual([`message.created ${id}`]);
    await later();
    const archive = fake.folderId(email, 'archive');
    // Another client's move: with immutable IDs the item keeps its ID whoever moved it.
    const moved = fake.changeOutside(email, { kind: 'move', id, folder: 'archive', immutableId: true })!;
    expect(moved.id).toBe(id);
    const notes = await run();
    expect(kinds(notes)).toEqual([`message.updated ${id}`]);
    expect(notes[0]!.data.object).toMatchObject({ id, folders: [archive], subject: 'To be filed' });
    expect(await run()).toEqual([]);
  });

  it('announces a deletion as message.deleted', async () => {
    const { id } = deliver('To be deleted');
    await run();
    fake.changeOutside(email, { kind: 'delete', id });
    const notes = await run();
    expect(kinds(notes)).toEqual([`message.deleted ${id}`]);
    expect(notes[0]!.data.object).toEqual({ id, object: 'message', grant_id: grant.id });
    expect(await run()).toEqual([]);
  });

  it('announces no draft, and a sent message as message.created in Sent Items', async () => {
    const client = await graphClientOf(grant);
    await client.call({
      method: 'POST',
      path: `${client.mailbox}/messages`,
      body: { subject: 'A draft', toRecipients: [{ emailAddress: { address: 'zed@example.org' } }] },
    });
    expect(await run()).toEqual([]);
    await client.call({
      method: 'POST',
      path: `${client.mailbox}/sendMail`,
      body: {
        message: {
          subject: 'Sent now',
          body: { contentType: 'Text', content: 'Hello' },
          toRecipients: [{ emailAddress: { address: 'zed@example.org' } }],
        },
      },
    });
    const sent = await run();
    expect(sent.map((n) => n.type)).toEqual(['message.created']);
    expect(sent[0]!.data.object).toMatchObject({ subject: 'Sent now', folders: [fake.folderId(email, 'sentitems')] });
    expect(await run()).toEqual([]);
  });

  it('reads a folder made since the last run from its start: moved in is updated, new mail created', async () => {
    const old = deliver('Moved into the new folder');
    expect(kinds(await run())).toEqual([`message.created ${old.id}`]);
    await later();
    const projects = (await graphFolders.create(grant, { name: 'Projects' })).id;
    fake.changeOutside(email, { kind: 'move', id: old.id, folder: projects, immutableId: true });
    const fresh = deliver('New in the new folder', projects);
    const notes = await run();
    expect(kinds(notes).sort()).toEqual([`message.updated ${old.id}`, `message.created ${fresh.id}`].sort());
    expect((await cursors()).folders[projects]?.delta_link).toBeDefined();
    expect(await run()).toEqual([]);
  });

  it('drops the cursor of a folder deleted', async () => {
    const gone = (await graphFolders.create(grant, { name: 'Short-lived' })).id;
    await run();
    expect((await cursors()).folders[gone]).toBeDefined();
    await graphFolders.delete(grant, gone);
    await run();
    expect((await cursors()).folders[gone]).toBeUndefined();
  });

  it('follows every nextLink of a long round, each change announced once', async () => {
    const before = fake.requests().length;
    const delivered = Array.from({ length: 200 }, (_, i) => deliver(`Many ${i}`).id);
    const notes = await run();
    expect(kinds(notes).sort()).toEqual(delivered.map((id) => `message.created ${id}`).sort());
    const deltas = fake
      .requests()
      .slice(before)
      .filter((r) => r.path.includes('/messages/delta'));
    expect(deltas.filter((r) => r.path.includes('$skiptoken=')).length).toBeGreaterThanOrEqual(2);
    expect(await run()).toEqual([]);
  });

  it('goes on where a run out of time stopped, announcing nothing twice and losing nothing', async () => {
    const delivered = Array.from({ length: 200 }, (_, i) => deliver(`Interrupted ${i}`).id);
    const first = await runFor(2);
    expect(first.outcome.status).toBe('more');
    expect(first.committed.length).toBeGreaterThan(0);
    expect(first.committed.length).toBeLessThan(delivered.length);
    expect((await cursors()).folders[fake.folderId(email, 'inbox')]?.next_link).toBeDefined();
    const rest = await run();
    const all = kinds([...first.committed, ...rest]);
    expect(all.sort()).toEqual(delivered.map((id) => `message.created ${id}`).sort());
  });

  it('after an expired deltaLink, reads the folder again and announces what arrived since its last round, once', async () => {
    const seen = deliver('Seen before the expiry');
    expect(kinds(await run())).toEqual([`message.created ${seen.id}`]);
    const late = deliver('While the link expired');
    fake.changeOutside(email, { kind: 'read', id: seen.id });
    fake.expireDelta(email);
    const before = fake.requests().length;
    const recovered = await run();
    expect(
      fake
        .requests()
        .slice(before)
        .some((r) => r.status === 410),
    ).toBe(true);
    expect(kinds(recovered)).toEqual([`message.created ${late.id}`]);
    const inbox = (await cursors()).folders[fake.folderId(email, 'inbox')]!;
    expect(inbox.silent).toBeUndefined();
    expect(inbox.recover_since).toBeUndefined();
    expect(await run()).toEqual([]);
    // The new link works: later changes are announced as before.
    fake.changeOutside(email, { kind: 'flag', id: late.id, flagStatus: 'flagged' });
    expect(kinds(await run())).toEqual([`message.updated ${late.id}`]);
  });

  it('an expired link in the middle of a round starts the round again without announcing a page twice', async () => {
    const delivered = Array.from({ length: 120 }, (_, i) => deliver(`Expiring ${i}`).id);
    const first = await runFor(2);
    expect(first.outcome.status).toBe('more');
    fake.expireDelta(email);
    const before = fake.requests().length;
    const rest = await run();
    expect(
      fake
        .requests()
        .slice(before)
        .some((r) => r.status === 410 && r.path.includes('$skiptoken=')),
    ).toBe(true);
    expect(kinds([...first.committed, ...rest]).sort()).toEqual(delivered.map((id) => `message.created ${id}`).sort());
    expect(await run()).toEqual([]);
  });

  it("retries Graph's 429 and 503 on delta and message reads", async () => {
    const { id } = deliver('Through the limits');
    fake.inject({ path: /\/messages\/delta$/, status: 429, retryAfter: 0 });
    fake.inject({ path: /\/messages\/[^/]+$/, method: 'GET', status: 503, retryAfter: 0 });
    expect(kinds(await run())).toEqual([`message.created ${id}`]);
    expect(fake.requests().filter((r) => r.status === 429 || r.status === 503)).toHaveLength(2);
    expect(await run()).toEqual([]);
  });
});

describe("provider B's mail changes under faults", () => {
  const RUNS = 1000;

  it(`loses no change and announces none twice over ${RUNS} seeded runs`, async () => {
    // The runs follow each other as fast as this machine goes, far beyond a mailbox's Graph limit: the
    // pace is raised for this grant (the pacing is tested in microsoft-client.test.ts), or most of the time would be waits.
    vi.stubEnv('MICROSOFT_GRAPH_REQUESTS_PER_10_MINUTES', '100000000');
    const faulty = await connectFakeMicrosoftGrant(fake, 'microsoft mail change faults');
    await createSyncState(faulty.grant.id as GrantId, faulty.grant.application_id as never, clock.nowSeconds());
    const work = (await graphFolders.create(faulty.grant, { name: 'Work' })).id;
    const folders = ['inbox', 'archive', work];
    const random = rng(35);
    const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
    /** One run as the service makes it; what it committed (up to the page it failed on, if it did). */
    const runOnce = async () => {
      const leaseId = randomUUID();
      const state = (await takeSyncLease(faulty.grant.id as GrantId, leaseId, clock.nowSeconds(), 60))!;
      const committed: Notification[] = [];
      let failed = false;
      try {
        await graphMailChanges.run(faulty.grant, {
          state,
          save: async (next, outbox = []) => {
            await saveSyncState(next, leaseId, outbox);
            committed.push(...outbox.map((e) => (e as { notification: Notification }).notification));
          },
          outOfTime: () => false,
        });
      } catch {
        failed = true;
      }
      await releaseSyncLease(state, leaseId, 0);
      return { committed, failed };
    };
    expect((await runOnce()).committed).toEqual([]);
    const all: Notification[] = [];
    const live = new Set<string>();
    let failures = 0;
    for (let i = 0; i < RUNS; i++) {
      for (let c = Math.floor(random() * 3); c > 0; c--) {
        const action = random();
        if (action < 0.45 || live.size === 0) {
          const { id } = fake.deliver(faulty.email, {
            from: 'a@example.org',
            to: faulty.email,
            subject: `Run ${i}`,
            text: `Body ${i}`,
            folder: pick(folders),
          });
          live.add(id);
        } else if (action < 0.7) {
          const id = pick([...live]);
          if (random() < 0.5) fake.changeOutside(faulty.email, { kind: 'read', id, isRead: random() < 0.5 });
          else fake.changeOutside(faulty.email, { kind: 'flag', id, flagStatus: pick(['flagged', 'notFlagged']) });
        } else if (action < 0.85) {
          const id = pick([...live]);
          live.delete(id);
          live.add(
            fake.changeOutside(faulty.email, { kind: 'move', id, folder: pick(folders), immutableId: true })!.id,
          );
        } else {
          const id = pick([...live]);
          live.delete(id);
          fake.changeOutside(faulty.email, { kind: 'delete', id });
        }
      }
      for (let f = Math.floor(random() * 3); f > 0; f--) {
        fake.inject({
          path: pick([/\/messages\/delta$/, /\/messages\/[^/]+$/, /\/mailFolders$/]),
          status: pick([429, 503] as const),
          // Some outlast the client's attempts: the run fails and commits nothing of the page it was on.
          times: 1 + Math.floor(random() * 5),
          retryAfter: 0,
        });
      }
      const outcome = await runOnce();
      if (outcome.failed) failures++;
      all.push(...outcome.committed);
    }
    // The faults left are spent by the next runs; then a run succeeds and catches up.
    for (let catchUp = 0; catchUp < 50; catchUp++) {
      const outcome = await runOnce();
      all.push(...outcome.committed);
      if (!outcome.failed) break;
    }
    fake.clearViolations();
    /** GET now, once the faults still armed are spent (each failed attempt spends one). */
    const settled = async (id: string) => {
      for (let attempt = 1; ; attempt++)
        try {
          return await graphMessages.get(faulty.grant, id, {});
        } catch (error) {
          if (attempt > 20 || !(error instanceof ProviderError || error instanceof RateLimitError)) throw error;
        }
    };
    expect(failures).toBeGreaterThan(10);
    expect(failures).toBeLessThan(RUNS);
    const ids = all.map((n) => n.id);
    expect(new Set(ids).size, 'a notification committed twice').toBe(ids.length);
    const of = (n: Notification) => (n.data.object as { id: string }).id;
    const count = (type: string, id: string) => all.filter((n) => n.type === type && of(n) === id).length;
    for (const n of all.filter((x) => x.type !== 'message.updated'))
      expect(count(n.type, of(n)), `${n.type} ${of(n)}`).toBe(1);
    // Every message there now was announced, and the last word on it is what GET answers now (nothing lost).
    for (const id of live) {
      const last = all.filter((n) => of(n) === id).at(-1);
      expect(last?.type, `message ${id} never announced`).toMatch(/^message\.(created|updated)$/);
      const now = await settled(id);
      expect(last!.data.object, `message ${id}`).toMatchObject({
        unread: now.unread,
        starred: now.starred,
        folders: now.folders,
      });
    }
    // Every message announced and gone since was last announced deleted.
    for (const id of new Set(all.map(of)))
      if (!live.has(id)) expect(all.filter((n) => of(n) === id).at(-1)?.type, `gone ${id}`).toBe('message.deleted');
    expect(live.size).toBeGreaterThan(25);
  }, 600_000);
});
