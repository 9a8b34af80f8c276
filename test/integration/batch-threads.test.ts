import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeServerMessages, type NewMessage } from '#shared/mailbox/store';
import { refreshBatchThreads, refreshThread } from '#shared/mailbox/thread-refresh';
import { getThread } from '#shared/db/threads';
import type { GrantRecord } from '#shared/db/grants';
import type { MessageId, ThreadId } from '#shared/ids';
import { apiClient, type ApiClient } from '../support/api';
import { makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { inboundMail, storedMailbox } from '../support/stored-mail';
import { createTestQueue } from '../support/queues';

/**
 * The threads of a batch of synced messages, brought up to date by its messages-stored job
 * (shared/mailbox/thread-refresh.ts refreshBatchThreads): new threads are aggregated from the batch
 * without reading their postings, and whatever order a thread's batches' jobs run in, each thread
 * ends as a whole refresh computes it. The jobs are run here by hand, in the order each test says.
 */
let gateway: Gateway;
let api: ApiClient;
let applicationId: string;

beforeAll(async () => {
  process.env.JOBS_QUEUE_URL = await createTestQueue('batch-threads-jobs');
  process.env.FANOUT_QUEUE_URL = await createTestQueue('batch-threads-fanout');
  gateway = await startGateway();
  const app = await makeApplication('batch threads');
  applicationId = app.applicationId;
  api = apiClient(gateway.url, app.apiKey);
});

afterAll(async () => {
  await gateway?.close();
});

const mailbox = () => storedMailbox(api, applicationId);
let uid = 0;

/** A synced message of a first sync (quiet); `parent`: the Message-ID it replies to. */
function synced(grant: GrantRecord, subject: string, parent?: string): NewMessage {
  const mail = inboundMail(grant, subject, `body of ${subject}`, {
    server: { uids: { inbox: String(++uid) }, quiet: true },
  });
  return parent ? { ...mail, inReplyTo: parent, references: [parent] } : mail;
}

/** Stores a batch as the sync does; answers what its messages-stored job would be given. */
async function storeBatch(grant: GrantRecord, inputs: NewMessage[]) {
  const stored = await storeServerMessages(grant, inputs);
  expect(stored.every((s) => s.outcome === 'stored')).toBe(true);
  return {
    threadIds: [...new Set(stored.map((s) => s.record.thread_id))] as ThreadId[],
    messageIds: stored.map((s) => s.record.id) as MessageId[],
    byThread: (threadId: string) => stored.filter((s) => s.record.thread_id === threadId).map((s) => s.record.id),
    records: stored.map((s) => s.record),
  };
}

/** The thread as a whole refresh from its postings computes it: unchanged (same version) when already right. */
async function expectWhole(grant: GrantRecord, threadId: ThreadId, messageIds: string[]) {
  const thread = await getThread(grant.id, threadId);
  expect(thread, `thread ${threadId}`).toBeDefined();
  expect([...thread!.message_ids].sort()).toEqual([...messageIds].sort());
  const whole = await refreshThread(grant.id, threadId);
  expect(whole!.version, 'a whole refresh found something to change').toBe(thread!.version);
}

describe('the threads of a batch of synced messages', () => {
  it('aggregates new threads from the batch alone, as a whole refresh would', async () => {
    const grant = await mailbox();
    const root = synced(grant, 'Plans');
    const reply = synced(grant, 'Re: Plans', root.messageIdHeader);
    const other = synced(grant, 'Lunch');
    const batch = await storeBatch(grant, [root, reply, other]);
    expect(batch.threadIds).toHaveLength(2);
    for (const threadId of batch.threadIds) expect(await getThread(grant.id, threadId)).toBeUndefined();

    await refreshBatchThreads(grant.id, batch.threadIds, batch.messageIds);
    for (const threadId of batch.threadIds) await expectWhole(grant, threadId, batch.byThread(threadId));
    const plans = await getThread(grant.id, batch.threadIds[0]!);
    // The subject of the thread's first message, by ID (IDs minted in one millisecond may sort either way).
    const first = batch.records
      .filter((r) => r.thread_id === batch.threadIds[0])
      .sort((a, b) => (a.id < b.id ? -1 : 1))[0]!;
    expect(plans!.subject).toBe(first.subject);
    expect(plans!.message_ids).toHaveLength(2);
    expect(plans!.unread).toBe(true);
  });

  it('ends whole whichever of a thread’s two batches has its job run first', async () => {
    for (const order of ['earlier first', 'later first'] as const) {
      const grant = await mailbox();
      const root = synced(grant, `Thread ${order}`);
      const first = await storeBatch(grant, [root]);
      const second = await storeBatch(grant, [synced(grant, `Re: Thread ${order}`, root.messageIdHeader)]);
      const threadId = first.threadIds[0]!;
      expect(second.threadIds, 'the reply joined its parent’s thread').toEqual([threadId]);
      const jobs = order === 'earlier first' ? [first, second] : [second, first];
      for (const job of jobs) await refreshBatchThreads(grant.id, job.threadIds, job.messageIds);
      await expectWhole(grant, threadId, [...first.messageIds, ...second.messageIds]);
    }
  });

  it('leaves an aggregate that holds the batch already, and converges when the same job runs twice at once', async () => {
    const grant = await mailbox();
    const root = synced(grant, 'Twice');
    const batch = await storeBatch(grant, [root, synced(grant, 'Re: Twice', root.messageIdHeader)]);
    await Promise.all([
      refreshBatchThreads(grant.id, batch.threadIds, batch.messageIds),
      refreshBatchThreads(grant.id, batch.threadIds, batch.messageIds),
    ]);
    const threadId = batch.threadIds[0]!;
    await expectWhole(grant, threadId, batch.messageIds);
    const version = (await getThread(grant.id, threadId))!.version;
    await refreshBatchThreads(grant.id, batch.threadIds, batch.messageIds);
    expect((await getThread(grant.id, threadId))!.version).toBe(version);
  });

  it('refreshes whole the threads of a job that names no messages (committed by an earlier version)', async () => {
    const grant = await mailbox();
    const root = synced(grant, 'Older job');
    const first = await storeBatch(grant, [root]);
    await refreshBatchThreads(grant.id, first.threadIds, first.messageIds);
    const second = await storeBatch(grant, [synced(grant, 'Re: Older job', root.messageIdHeader)]);
    await refreshBatchThreads(grant.id, second.threadIds, []);
    await expectWhole(grant, first.threadIds[0]!, [...first.messageIds, ...second.messageIds]);
  });
});
