import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway } from '../support/gateway';
import { outboxDrained } from '../support/outbox-relay';
import { createTestQueue } from '../support/queues';
import { drainThroughHandler } from '../support/sqs-worker';

/**
 * Many changes to one thread at once. Each change commits with a refresh job for its thread (an
 * outbox entry); the request refreshes the thread at once too, and does not fail when concurrent
 * refreshes keep winning: a change that committed answers 2xx, and the aggregate converges.
 */
let api: ApiClient;
let jobsQueue: string;
type Grant = Awaited<ReturnType<typeof makeAgentGrant>>;
let alice: Grant;
let bob: Grant;

beforeAll(async () => {
  jobsQueue = await createTestQueue('thread-jobs');
  process.env.JOBS_QUEUE_URL = jobsQueue;
  process.env.FANOUT_QUEUE_URL = await createTestQueue('thread-fanout');
  const gateway = await startGateway();
  api = apiClient(gateway.url, (await makeApplication('threads under load')).apiKey);
  [alice, bob] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api)]);
  return () => gateway.close();
});

/** A thread of five messages in Alice's mailbox: a send and four replies to it. */
async function threadOfFive() {
  const first = await api.post(`/v3/grants/${alice.id}/messages/send`, {
    to: [{ email: bob.email }],
    subject: 'Busy thread',
    body: 'one',
  });
  expect(first.status).toBe(200);
  const ids = [first.body.data.id as string];
  for (let i = 0; i < 4; i++) {
    const reply = await api.post(`/v3/grants/${alice.id}/messages/send`, {
      to: [{ email: bob.email }],
      subject: 'Re: Busy thread',
      body: `reply ${i}`,
      reply_to_message_id: first.body.data.id,
    });
    expect(reply.status).toBe(200);
    ids.push(reply.body.data.id);
  }
  return { threadId: first.body.data.thread_id as string, ids };
}

/** Runs the committed refresh jobs, as the jobs worker does, until none is left. */
async function converge() {
  await outboxDrained();
  const { handler } = await import('#functions/jobs/handler');
  await drainThroughHandler(jobsQueue, handler, { functionName: 'jobs', maxBatches: 500 });
}

async function expectConsistent(threadId: string, ids: string[]) {
  const thread = (await api.get(`/v3/grants/${alice.id}/threads/${threadId}`)).body.data;
  const messages = await Promise.all(
    ids.map(async (id) => (await api.get(`/v3/grants/${alice.id}/messages/${id}`)).body.data),
  );
  expect(thread.message_ids).toEqual(ids);
  expect(thread.unread).toBe(messages.some((m) => m.unread));
  expect(thread.starred).toBe(messages.some((m) => m.starred));
  expect([...thread.folders].sort()).toEqual([...new Set(messages.flatMap((m) => m.folders))].sort());
}

describe('one thread, many changes at once', () => {
  it('answers 2xx to 50 concurrent thread updates, and the thread matches its messages afterwards', async () => {
    const { threadId, ids } = await threadOfFive();
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        api.put(
          `/v3/grants/${alice.id}/threads/${threadId}`,
          i % 2 ? { starred: i % 4 === 1 } : { unread: i % 4 === 0 },
        ),
      ),
    );
    expect(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.text.slice(0, 200)}`)).toEqual([]);
    await converge();
    await expectConsistent(threadId, ids);
  }, 120_000);

  it('answers 2xx to 50 concurrent message updates in one thread, and the thread converges', async () => {
    const { threadId, ids } = await threadOfFive();
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        api.put(
          `/v3/grants/${alice.id}/messages/${ids[i % ids.length]}`,
          i % 3 ? { starred: i % 2 === 0 } : { unread: i % 2 === 1 },
        ),
      ),
    );
    expect(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.text.slice(0, 200)}`)).toEqual([]);
    await converge();
    await expectConsistent(threadId, ids);
  }, 120_000);

  it('keeps the aggregate right when a message is stored while the thread is being updated', async () => {
    const { threadId, ids } = await threadOfFive();
    const [, reply] = await Promise.all([
      Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          api.put(`/v3/grants/${alice.id}/threads/${threadId}`, { starred: i % 2 === 0 }),
        ),
      ),
      api.post(`/v3/grants/${alice.id}/messages/send`, {
        to: [{ email: bob.email }],
        subject: 'Re: Busy thread',
        body: 'late reply',
        reply_to_message_id: ids[0],
      }),
    ]);
    expect(reply.status).toBe(200);
    await converge();
    await expectConsistent(threadId, [...ids, reply.body.data.id]);
  }, 120_000);
});
