import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFERRED_MERGE_MAX, mergeSearchIndex, loadSegment, searchPrefix } from '#shared/mailbox/search-index';
import { storeMessage } from '#shared/mailbox/store';
import type { MessageRecord } from '#shared/mailbox/types';
import type { GrantRecord } from '#shared/db/grants';
import { COMMIT_MARGIN_MS, getSearchManifest, readSearchEntries } from '#shared/db/search';
import type { GrantId } from '#shared/ids';
import { clock } from '#shared/time';
import { apiClient, type ApiClient } from '../support/api';
import { makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { inboundMail, storedMailbox } from '../support/stored-mail';
import { outboxDrained } from '../support/outbox-relay';
import { createTestQueue, messagesIn } from '../support/queues';
import { drainThroughHandler } from '../support/sqs-worker';

/**
 * The search index of an Agent Account mailbox (shared/mailbox/search-index.ts): a stored message is
 * searchable at once from its entry, before any job ran; merges fold entries into segments, under
 * concurrent stores and merges, without losing or doubling a message; deletes and tiered merges;
 * replaced segment objects are removed later. Jobs run only where a test says (this file's own jobs
 * queue, drained by hand).
 */
let gateway: Gateway;
let api: ApiClient;
let applicationId: string;
let jobsQueue: string;
const s3 = new S3Client({ forcePathStyle: true });

beforeAll(async () => {
  jobsQueue = await createTestQueue('search-jobs');
  process.env.JOBS_QUEUE_URL = jobsQueue;
  process.env.FANOUT_QUEUE_URL = await createTestQueue('search-fanout');
  gateway = await startGateway();
  const app = await makeApplication('search index');
  applicationId = app.applicationId;
  api = apiClient(gateway.url, app.apiKey);
});

afterAll(async () => {
  await gateway?.close();
  s3.destroy();
});

const mailbox = () => storedMailbox(api, applicationId);

async function search(grant: GrantRecord, query: string): Promise<string[]> {
  const response = await api.get(`/v3/grants/${grant.id}/messages?limit=200&${query}`);
  expect(response.status, response.text).toBe(200);
  return (response.body.data as { subject: string }[]).map((m) => m.subject);
}

/** Runs the jobs committed so far (message-stored: thread, then search merge) to their end. */
async function runJobs(): Promise<void> {
  await outboxDrained();
  const { handler } = await import('#functions/jobs/handler');
  while ((await messagesIn(jobsQueue)) > 0)
    await drainThroughHandler(jobsQueue, handler, { functionName: 'jobs', maxBatches: 1000 });
}

/** Every document of the mailbox's live segments (IDs, with repeats if a message were held twice). */
async function segmentDocs(grantId: GrantId): Promise<string[]> {
  const manifest = await getSearchManifest(grantId);
  const ids: string[] = [];
  for (const id of Object.keys(manifest.segments)) {
    const segment = await loadSegment(grantId, id);
    for (let n = 0; n < segment.docCount; n++) ids.push(segment.idAt(n));
  }
  return ids;
}

/** Moves the clock the handlers and merges share ahead by `ms` for the rest of the test. */
function later(ms: number): () => void {
  return clock.set(() => Date.now() + ms);
}

describe('search freshness', () => {
  it('finds a stored message at once, by every index filter, before its job ran; then from its segment alone', async () => {
    // Prepare
    const grant = await mailbox();
    const attachment = { filename: 'plan.txt', contentType: 'text/plain', content: Buffer.from('plan'), inline: false };

    // Act: stored; no job has run.
    await storeMessage(
      inboundMail(grant, 'Pineapple forecast', 'Sunny with a chance of pineapples', {
        attachments: [attachment],
        cc: [{ email: 'cy@example.org' }],
      }),
    );

    // Assess: every filter the index answers sees it, and nothing was merged yet (its job is queued, not run).
    await outboxDrained();
    expect(await messagesIn(jobsQueue)).toBeGreaterThan(0);
    expect(Object.keys((await getSearchManifest(grant.id)).segments)).toEqual([]);
    for (const query of [
      'search_query_native=pineapples',
      'subject=pineapple',
      'from=ann%40example.net',
      'cc=cy%40example.org',
      'any_email=cy%40example.org',
      'has_attachment=true',
      'search_query_native=chance%20has%3Aattachment',
    ]) {
      expect(await search(grant, query), query).toEqual(['Pineapple forecast']);
    }
    expect(await search(grant, 'search_query_native=apple')).toEqual([]);

    // Act: its job leaves a lone entry unmerged (fewer than DEFERRED_MERGE_MAX wait), still found.
    await runJobs();
    expect(Object.keys((await getSearchManifest(grant.id)).segments)).toEqual([]);
    expect(await search(grant, 'search_query_native=pineapples')).toEqual(['Pineapple forecast']);
    // A merge folds it into a segment; later merges move the watermark past it.
    await mergeSearchIndex(grant.id, { wait: true });
    const restore = later(COMMIT_MARGIN_MS + 60_000);
    try {
      await storeMessage(inboundMail(grant, 'Second', 'nothing in common'));
      await runJobs();
      await mergeSearchIndex(grant.id, { wait: true });
      // Assess: the first entry is below the watermark: queries no longer read it, the segment answers.
      const manifest = await getSearchManifest(grant.id);
      const entries = await readSearchEntries(grant.id, manifest.watermark);
      expect(entries.map((e) => e.tokens.includes('t:pineapples'))).not.toContain(true);
      expect(await search(grant, 'search_query_native=pineapples')).toEqual(['Pineapple forecast']);
      expect(await search(grant, 'has_attachment=true&search_query_native=sunny')).toEqual(['Pineapple forecast']);
      expect(await search(grant, 'search_query_native=nothing')).toEqual(['Second']);
    } finally {
      restore();
    }
  });
});

describe('merges by the message-stored job', () => {
  it('leaves fewer than DEFERRED_MERGE_MAX entries to later jobs, and merges them all once that many wait', async () => {
    // Prepare
    const grant = await mailbox();

    // Act: one message short of the threshold, then their jobs.
    for (let i = 0; i < DEFERRED_MERGE_MAX - 1; i++)
      await storeMessage(inboundMail(grant, `Trickle ${i}`, `quince ${i}`));
    await runJobs();

    // Assess: nothing merged, everything found.
    expect(Object.keys((await getSearchManifest(grant.id)).segments)).toEqual([]);
    expect(await search(grant, 'search_query_native=quince')).toHaveLength(DEFERRED_MERGE_MAX - 1);

    // Act: the message that makes DEFERRED_MERGE_MAX.
    await storeMessage(inboundMail(grant, 'Trickle last', 'quince last'));
    await runJobs();

    // Assess: one segment holds every message once, and the answers are the same.
    expect((await segmentDocs(grant.id)).length).toBe(DEFERRED_MERGE_MAX);
    expect(new Set(await segmentDocs(grant.id)).size).toBe(DEFERRED_MERGE_MAX);
    expect(await search(grant, 'search_query_native=quince')).toHaveLength(DEFERRED_MERGE_MAX);
  });
});

describe('merges under concurrency', () => {
  it('loses and doubles nothing when messages are stored while several merges run at once', async () => {
    // Prepare
    const grant = await mailbox();
    const count = 40;

    // Act: 40 stores, 5 at a time, while 4 mergers loop.
    let storing = true;
    const mergers = Array.from({ length: 4 }, async () => {
      let merges = 0;
      while (storing) {
        if ((await mergeSearchIndex(grant.id, { wait: false })).outcome === 'merged') merges++;
      }
      return merges;
    });
    const subjects = Array.from({ length: count }, (_, i) => `Concurrent ${i}`);
    for (let i = 0; i < count; i += 5) {
      await Promise.all(
        subjects
          .slice(i, i + 5)
          .map((subject, k) => storeMessage(inboundMail(grant, subject, `unique${i + k}term shared`))),
      );
    }
    storing = false;
    const merged = (await Promise.all(mergers)).reduce((a, b) => a + b, 0);
    await mergeSearchIndex(grant.id, { wait: true });

    // Assess: merges happened, each message is searchable, and held once by the segments.
    expect(merged).toBeGreaterThan(0);
    for (let i = 0; i < count; i++)
      expect(await search(grant, `search_query_native=unique${i}term`), `message ${i}`).toEqual([`Concurrent ${i}`]);
    expect((await search(grant, 'search_query_native=shared')).sort()).toEqual([...subjects].sort());
    const docs = await segmentDocs(grant.id);
    expect(docs).toHaveLength(count);
    expect(new Set(docs).size).toBe(count);
    // With the watermark past every entry, the segments alone still answer for all of them.
    const restore = later(COMMIT_MARGIN_MS + 60_000);
    try {
      await storeMessage(inboundMail(grant, 'Last', 'last one'));
      await mergeSearchIndex(grant.id, { wait: true });
      expect(
        (await readSearchEntries(grant.id, (await getSearchManifest(grant.id)).watermark)).length,
      ).toBeLessThanOrEqual(1);
      expect((await search(grant, 'search_query_native=shared')).length).toBe(count);
    } finally {
      restore();
    }
  }, 120_000);
});

describe('deletes', () => {
  it('drops a hard-deleted message from results at once, then from its segment', async () => {
    // Prepare: ten messages, merged into one segment.
    const grant = await mailbox();
    const stored: MessageRecord[] = [];
    for (let i = 0; i < 10; i++)
      stored.push((await storeMessage(inboundMail(grant, `Walrus ${i}`, `walrus number${i}`))).record);
    await mergeSearchIndex(grant.id, { wait: true });
    expect(await search(grant, 'search_query_native=walrus')).toHaveLength(10);
    const hardDelete = async (i: number) =>
      expect((await api.delete(`/v3/grants/${grant.id}/messages/${stored[i]!.id}?hard_delete=true`)).status).toBe(200);

    // Act
    await hardDelete(3);

    // Assess: gone from results at once (its tombstone); the next merge records it as deleted in its segment.
    expect(await search(grant, 'search_query_native=walrus')).not.toContain('Walrus 3');
    expect(await search(grant, 'search_query_native=number3')).toEqual([]);
    await mergeSearchIndex(grant.id, { wait: true });
    const segments = Object.values((await getSearchManifest(grant.id)).segments);
    expect(segments.map((s) => [s.docs, s.deleted?.length ?? 0])).toEqual([[10, 1]]);
    expect(await search(grant, 'search_query_native=walrus')).toHaveLength(9);

    // Act: a second delete brings the segment to 20 % deleted: it is rewritten without them.
    await hardDelete(7);
    await mergeSearchIndex(grant.id, { wait: true });
    expect(
      Object.values((await getSearchManifest(grant.id)).segments).map((s) => [s.docs, s.deleted?.length ?? 0]),
    ).toEqual([[8, 0]]);
    expect((await segmentDocs(grant.id)).sort()).toEqual(
      stored
        .filter((_, i) => i !== 3 && i !== 7)
        .map((m) => m.id)
        .sort(),
    );
    expect((await search(grant, 'search_query_native=walrus')).sort()).toEqual(
      stored
        .filter((_, i) => i !== 3 && i !== 7)
        .map((m) => m.subject)
        .sort(),
    );
  });

  it('drops a message deleted before its entry was merged', async () => {
    const grant = await mailbox();
    const { record } = await storeMessage(inboundMail(grant, 'Short-lived', 'ephemeral'));
    expect((await api.delete(`/v3/grants/${grant.id}/messages/${record.id}?hard_delete=true`)).status).toBe(200);
    expect(await search(grant, 'search_query_native=ephemeral')).toEqual([]);
    await mergeSearchIndex(grant.id, { wait: true });
    expect(await segmentDocs(grant.id)).toEqual([]);
    expect(await search(grant, 'search_query_native=ephemeral')).toEqual([]);
  });
});

describe('tiered merges', () => {
  it('folds eight level-0 segments into one of level 1, with the same answers, and removes replaced objects later', async () => {
    // Prepare: eight messages, each merged on its own (eight level-0 segments, then one of level 1).
    const grant = await mailbox();
    const levels: number[][] = [];
    for (let i = 0; i < 9; i++) {
      await storeMessage(inboundMail(grant, `Tier ${i}`, `tiered${i} common`));
      await mergeSearchIndex(grant.id, { wait: true });
      levels.push(
        Object.values((await getSearchManifest(grant.id)).segments)
          .map((s) => s.level)
          .sort(),
      );
    }

    // Assess
    expect(levels[6]).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(levels[7]).toEqual([1]);
    expect(levels[8]).toEqual([0, 1]);
    expect((await search(grant, 'search_query_native=common')).length).toBe(9);
    for (let i = 0; i < 9; i++) expect(await search(grant, `search_query_native=tiered${i}`)).toEqual([`Tier ${i}`]);
    const manifest = await getSearchManifest(grant.id);
    expect(Object.keys(manifest.garbage)).toHaveLength(7);
    const objects = async () =>
      (await s3.send(new ListObjectsV2Command({ Bucket: process.env.MAIL_BUCKET, Prefix: searchPrefix(grant.id) })))
        .KeyCount ?? 0;
    expect(await objects()).toBe(2 + 7);

    // Act: a merge 15 minutes later removes what the level-1 merge replaced.
    const restore = later(16 * 60_000);
    try {
      await storeMessage(inboundMail(grant, 'Tier 9', 'tiered9 common'));
      await mergeSearchIndex(grant.id, { wait: true });
    } finally {
      restore();
    }
    expect(Object.keys((await getSearchManifest(grant.id)).garbage)).toEqual([]);
    expect(await objects()).toBe(3);
    expect((await search(grant, 'search_query_native=common')).length).toBe(10);
  }, 120_000);
});
