import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchGet } from '#shared/db/batch';
import { messageIdHeaderKey } from '#shared/db/keys';
import type { GrantId } from '#shared/ids';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { outboxDrained } from '../support/outbox-relay';
import { createQueueWithDlq, createTestQueue, messagesIn } from '../support/queues';
import { drainThroughHandler } from '../support/sqs-worker';

/**
 * A send to many Agent Accounts of this deployment commits once (the Sent copy and one
 * deliver-local job), and the jobs worker stores the recipients' copies afterwards. Killed in the
 * middle of that job, as Lambda's runtime can be, and run again, it leaves exactly one copy in
 * every mailbox.
 */
let gateway: Gateway;
let api: ApiClient;
let apiKey: string;
let jobsQueue: string;
let child: ChildProcess | undefined;
const s3 = new S3Client({ forcePathStyle: true });

beforeAll(async () => {
  // Jobs run only where this file says: in a worker process it can kill, then here.
  ({ queue: jobsQueue } = await createQueueWithDlq('local-delivery-jobs', {
    visibilityTimeout: 2,
    maxReceiveCount: 5,
  }));
  process.env.JOBS_QUEUE_URL = jobsQueue;
  process.env.FANOUT_QUEUE_URL = await createTestQueue('local-delivery-fanout');
  gateway = await startGateway();
  const app = await makeApplication('local delivery');
  apiKey = app.apiKey;
  api = apiClient(gateway.url, apiKey);
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await gateway?.close();
});

async function inBatches<T, R>(items: readonly T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return out;
}

describe('delivery to local Agent Accounts', () => {
  it('sends to 300 local mailboxes with a 2 MB attachment; a worker killed mid-job and run again leaves exactly one copy in each', async () => {
    // Prepare: a sender and 300 recipient mailboxes.
    const sender = await makeAgentGrant(api);
    const recipients = await inBatches(
      Array.from({ length: 300 }, (_, i) => i),
      20,
      () => makeAgentGrant(api),
    );
    const attachment = randomBytes(2 * 1024 * 1024);
    const form = new FormData();
    const list = (from: number) => recipients.slice(from, from + 100).map((g) => ({ email: g.email }));
    form.append(
      'message',
      JSON.stringify({
        to: list(0),
        cc: list(100),
        bcc: list(200),
        subject: 'To three hundred',
        body: '<p>For everyone</p>',
      }),
    );
    form.append('file', new Blob([attachment], { type: 'application/octet-stream' }), 'report.bin');

    // Act 1: the send answers once the Sent copy and its delivery job are committed.
    const response = await fetch(`${gateway.url}/v3/grants/${sender.id}/messages/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}` },
      body: form,
    });
    expect(response.status, await response.clone().text()).toBe(200);
    const sent = ((await response.json()) as { data: { id: string } }).data;
    const withHeaders = await api.get(`/v3/grants/${sender.id}/messages/${sent.id}?fields=include_headers`);
    const messageIdHeader = (withHeaders.body.data.headers as { name: string; value: string }[]).find(
      (h) => h.name === 'Message-ID',
    )!.value;
    const stored = async () =>
      (await batchGet(recipients.map((g) => messageIdHeaderKey(g.id as GrantId, messageIdHeader)))).length;
    await outboxDrained();
    // Committed with the Sent copy: its thread's refresh, its search postings' completion and the
    // delivery of the 300 copies.
    expect(await messagesIn(jobsQueue)).toBe(3);
    expect(await stored()).toBe(0);

    // Act 2: the jobs worker, in its own process, killed (SIGKILL) once some copies are stored.
    child = fork('test/support/jobs-worker-process.ts', [], {
      execArgv: ['--import', 'tsx'],
      env: process.env,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    await expect.poll(stored, { timeout: 120_000, interval: 20 }).toBeGreaterThanOrEqual(10);
    child.kill('SIGKILL');
    await once(child, 'exit');
    child = undefined;
    const atKill = await stored();
    expect(atKill).toBeLessThan(300);

    // Act 3: the job is received again once its visibility timeout ends, and run here to its end.
    const { handler } = await import('#functions/jobs/handler');
    while ((await messagesIn(jobsQueue)) > 0)
      await drainThroughHandler(jobsQueue, handler, { functionName: 'jobs', maxBatches: 10 });

    // Assess: one copy in every mailbox, with the attachment, and one Sent copy.
    expect(await stored()).toBe(300);
    const copies = await inBatches(
      recipients,
      20,
      async (g) =>
        (await api.get(`/v3/grants/${g.id}/messages?limit=10`)).body.data as {
          subject: string;
          folders: string[];
          bcc: unknown[];
          attachments: { size: number }[];
        }[],
    );
    expect(copies.filter((c) => c.length !== 1)).toEqual([]);
    expect(
      new Set(copies.map(([c]) => JSON.stringify([c!.subject, c!.folders, c!.bcc, c!.attachments.map((a) => a.size)]))),
    ).toEqual(new Set([JSON.stringify(['To three hundred', ['inbox'], [], [attachment.length]])]));
    expect(
      (await api.get(`/v3/grants/${sender.id}/messages?in=sent`)).body.data.map((m: { id: string }) => m.id),
    ).toEqual([sent.id]);
    // The message waited in outgoing/ only until the last copy was stored.
    const spool = await s3.send(
      new ListObjectsV2Command({
        Bucket: process.env.MAIL_BUCKET,
        Prefix: `outgoing/${messageIdHeader.slice(1, messageIdHeader.indexOf('@'))}/`,
      }),
    );
    expect(spool.KeyCount ?? 0).toBe(0);
  }, 600_000);
});
