import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kinds } from '#shared/mailbox/postings';
import { mergeSearchIndex } from '#shared/mailbox/search-index';
import {
  draftsOfGrant,
  foldersOfGrant,
  messageIdHeaderKey,
  messagesOfGrant,
  postingPartition,
  searchEntriesOf,
  searchManifestKey,
  templatesOfGrant,
  threadKey,
  threadsOfGrant,
} from '#shared/db/keys';
import type { GrantId, ThreadId } from '#shared/ids';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { createTestQueue } from '../support/queues';
import { outboxDrained } from '../support/outbox-relay';
import { drainThroughHandler } from '../support/sqs-worker';

/** DELETE /v3/grants/{grant_id} removes everything stored under the grant (through the jobs worker). */
let gateway: Gateway;
let api: ApiClient;
let jobsQueue: string;
const dynamo = DynamoDBDocumentClient.from(new DynamoDBClient({}));
const s3 = new S3Client({ forcePathStyle: true });

async function count(pk: string): Promise<number> {
  const { Count } = await dynamo.send(
    new QueryCommand({
      TableName: process.env.TABLE_NAME,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      Select: 'COUNT',
    }),
  );
  return Count ?? 0;
}

beforeAll(async () => {
  jobsQueue = await createTestQueue('jobs');
  process.env.JOBS_QUEUE_URL = jobsQueue;
  gateway = await startGateway();
  api = apiClient(gateway.url, (await makeApplication()).apiKey);
});

afterAll(async () => gateway?.close());

describe('grant purge', () => {
  it('deletes the mailbox: messages, indexes, search index, threads, folders, drafts, templates and S3 contents', async () => {
    // Prepare: a mailbox with received and sent mail, an attachment, a draft and a template.
    const [doomed, other] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api)]);
    await api.post(`/v3/grants/${other.id}/messages/send`, {
      to: [{ email: doomed.email }],
      subject: 'Budget report',
      body: '<p>numbers</p>',
      attachments: [{ filename: 'r.txt', content: Buffer.from('r').toString('base64') }],
    });
    await api.post(`/v3/grants/${doomed.id}/messages/send`, {
      to: [{ email: other.email }],
      subject: 'Reply budget',
      body: 'ok',
    });
    await api.post(`/v3/grants/${doomed.id}/drafts`, { to: [{ email: other.email }], subject: 'Later' });
    await api.post(`/v3/grants/${doomed.id}/templates`, { name: 't', engine: 'mustache', body: '{{x}}' });
    // The jobs committed with the messages (local deliveries, thread refreshes) run first, as they
    // would have long before.
    const { handler } = await import('#functions/jobs/handler');
    await outboxDrained();
    await drainThroughHandler(jobsQueue, handler, { functionName: 'jobs' });
    const g = doomed.id as GrantId;
    // Two messages are fewer than the jobs merge (DEFERRED_MERGE_MAX): a merge writes the segment and manifest the purge must remove.
    await mergeSearchIndex(g, { wait: true });
    const partitions = {
      messages: messagesOfGrant(g).pk,
      'Message-ID headers': messageIdHeaderKey(g, '-').pk,
      threads: threadKey(g, 'thr_x' as ThreadId).pk,
      'thread listing': threadsOfGrant(g).pk,
      folders: foldersOfGrant(g).pk,
      drafts: draftsOfGrant(g).pk,
      templates: templatesOfGrant(g).pk,
      // The search index: entries (one per stored message) and the manifest its merges wrote.
      'search entries': searchEntriesOf(g),
      'search manifest': searchManifestKey(g).pk,
      ...Object.fromEntries(
        [kinds.folder('inbox'), kinds.folder('sent'), kinds.unread].map((kind) => [
          `postings ${kind}`,
          postingPartition(g, kind),
        ]),
      ),
    };
    const counts = async () =>
      Object.fromEntries(
        await Promise.all(Object.entries(partitions).map(async ([name, pk]) => [name, await count(pk)] as const)),
      );
    const objectsUnder = async (prefix: string) =>
      (await s3.send(new ListObjectsV2Command({ Bucket: process.env.MAIL_BUCKET, Prefix: prefix }))).KeyCount ?? 0;
    // Contents, and the search segments.
    const storedObjects = async () => (await objectsUnder(`grants/${g}/`)) + (await objectsUnder(`search/${g}/`));
    const before = await counts();
    expect(before.messages).toBe(2);
    expect(before['search entries']).toBe(2);
    expect(await objectsUnder(`search/${g}/`)).toBeGreaterThan(0);
    // Every partition the purge must empty holds something beforehand.
    expect(Object.entries(before).filter(([, n]) => n === 0)).toEqual([]);
    expect(await storedObjects()).toBeGreaterThan(0);

    // Act
    expect((await api.delete(`/v3/grants/${g}`)).status).toBe(200);
    await outboxDrained();
    expect(await drainThroughHandler(jobsQueue, handler, { functionName: 'jobs' })).toBe(1);

    // Assess
    expect(Object.entries(await counts()).filter(([, n]) => n > 0)).toEqual([]);
    expect(await storedObjects()).toBe(0);
    // The other mailbox is untouched.
    expect(await count(messagesOfGrant(other.id as GrantId).pk)).toBe(2);
    expect((await api.get(`/v3/grants/${other.id}/messages`)).body.data).toHaveLength(2);
  });
});
