import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { BatchGetCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { randomBytes } from 'node:crypto';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { handler } from '#functions/outbox/handler';
import { isOutboxItem, outboxPut, readOutboxItem } from '#shared/db/outbox';
import type { ApplicationId, GrantId, JobId } from '#shared/ids';
import { newNotification, type Notification } from '#shared/notifications/notification';

const sqsMock = mockClient(SQSClient);
const s3Mock = mockClient(S3Client);
const ddbMock = mockClient(DynamoDBDocumentClient);
const app = 'app_1' as ApplicationId;
const note = (object: object = { id: 'grant_1' }) =>
  newNotification({ type: 'grant.created', applicationId: app, grantId: 'grant_1' as GrantId, object });
const itemOf = (n: Notification, bodyKey?: string) =>
  outboxPut({ notification: n, bodyKey }).Put!.Item as Record<string, unknown>;

/** A stream record as Lambda hands it over: binary attributes as base64 text. */
function streamRecord(
  item: Record<string, unknown>,
  sequence: string,
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE' = 'INSERT',
): DynamoDBRecord {
  const image = JSON.parse(
    JSON.stringify(marshall(item), (_, value) =>
      value && value.type === 'Buffer' ? Buffer.from(value.data).toString('base64') : value,
    ),
  );
  return {
    eventID: `e${sequence}`,
    eventName,
    dynamodb: { SequenceNumber: sequence, NewImage: image },
  } as DynamoDBRecord;
}
const event = (...records: DynamoDBRecord[]) => ({ Records: records }) as DynamoDBStreamEvent;
const sentBodies = () =>
  sqsMock
    .commandCalls(SendMessageBatchCommand)
    .flatMap((c) => c.args[0].input.Entries!.map((e) => JSON.parse(e.MessageBody!)));

describe('Function: outboxPut / readOutboxItem', () => {
  it('stores a small notification as text, conditional on a new id, with a TTL', () => {
    const n = note();
    const put = outboxPut({ notification: n }).Put!;
    expect(put.ConditionExpression).toBe('attribute_not_exists(pk)');
    expect(put.Item).toMatchObject({
      pk: `outbox#${n.id}`,
      sk: 'outbox',
      entity: 'outbox',
      payload: JSON.stringify(n),
      expires_at: n.time + 2 * 24 * 3600,
    });
    expect(isOutboxItem(put.Item!)).toBe(true);
    expect(readOutboxItem(put.Item!)).toEqual({ kind: 'notification', notification: n });
  });

  it('gzips a large payload, and leaves out a body that S3 holds when even that is too large', () => {
    const medium = note({ id: 'msg_1', body: 'hello '.repeat(50_000) });
    const item = itemOf(medium, 'grants/g/bodies/msg_1');
    expect(item.payload).toBeUndefined();
    expect((item.payload_gz as Uint8Array).length).toBeLessThan(20_000);
    expect(readOutboxItem(item)).toEqual({ kind: 'notification', notification: medium });

    const random = randomBytes(450_000).toString('base64');
    const huge = note({ id: 'msg_2', body: random, subject: 's' });
    const big = itemOf(huge, 'grants/g/bodies/msg_2');
    expect(big.body_key).toBe('grants/g/bodies/msg_2');
    expect(readOutboxItem(big)).toMatchObject({
      kind: 'notification',
      bodyKey: 'grants/g/bodies/msg_2',
      notification: { data: { object: { id: 'msg_2', subject: 's' } } },
    });
    expect(JSON.stringify(readOutboxItem(big))).not.toContain(random.slice(0, 100));
  });
});

describe('Handler: outbox stream consumer', () => {
  beforeEach(() => {
    sqsMock.reset();
    ddbMock.reset();
    s3Mock.reset();
    sqsMock.on(SendMessageBatchCommand).callsFake((input: { Entries: { Id: string }[] }) => ({
      Successful: input.Entries.map((e) => ({ Id: e.Id })),
      Failed: [],
    }));
  });

  it('publishes inserted outbox items in stream order and skips everything else', async () => {
    const a = note();
    const b = note({ id: 'grant_2' });
    const result = await handler(
      event(
        streamRecord(itemOf(a), '1'),
        streamRecord({ pk: 'grant#g#msg', sk: 'msg_1', entity: 'message' }, '2'),
        streamRecord(itemOf(b), '3', 'REMOVE'),
        streamRecord({ pk: 'outbox#ntf_x', sk: 'outbox', entity: 'outbox' }, '4'),
        streamRecord(itemOf(b), '5'),
      ),
    );
    expect(result).toEqual({ batchItemFailures: [] });
    expect(sentBodies()).toEqual([a, b]);
  });

  it('sends committed jobs to the jobs queue, beside the notifications', async () => {
    const n = note();
    const job = { kind: 'purge-grant', application_id: 'app_1', grant_id: 'grant_1', provider: 'agent' } as const;
    const jobItem = outboxPut({ job, id: 'job_01' as JobId }).Put!.Item as Record<string, unknown>;
    expect(await handler(event(streamRecord(jobItem, '1'), streamRecord(itemOf(n), '2')))).toEqual({
      batchItemFailures: [],
    });
    const calls = sqsMock.commandCalls(SendMessageBatchCommand).map((c) => c.args[0].input);
    expect(
      calls.find((c) => c.QueueUrl === process.env.JOBS_QUEUE_URL)!.Entries!.map((e) => JSON.parse(e.MessageBody!)),
    ).toEqual([job]);
    expect(
      calls.find((c) => c.QueueUrl === process.env.FANOUT_QUEUE_URL)!.Entries!.map((e) => JSON.parse(e.MessageBody!)),
    ).toEqual([n]);
  });

  it('turns an upload that expired uncommitted into a remove-contents job, and ignores uploads a commit deleted', async () => {
    // Prepare: the upload item as shared/db/uploads.ts writes it, then its removal by TTL and by a commit.
    const upload = {
      pk: 'grant#grant_1#uploads',
      sk: 'upl_1',
      entity: 'upload',
      id: 'upl_1',
      application_id: app,
      grant_id: 'grant_1',
      keys: ['grants/grant_1/messages/m/raw.eml', 'grants/grant_1/attachments/a'],
      expires_at: 1,
    };
    const removal = (sequence: string, userIdentity?: object) =>
      ({
        eventID: `e${sequence}`,
        eventName: 'REMOVE',
        ...(userIdentity ? { userIdentity } : {}),
        dynamodb: { SequenceNumber: sequence, OldImage: marshall(upload) },
      }) as unknown as DynamoDBRecord;

    // Act
    const result = await handler(
      event(removal('1'), removal('2', { type: 'Service', principalId: 'dynamodb.amazonaws.com' })),
    );

    // Assess: only the expiry asks for anything.
    expect(result).toEqual({ batchItemFailures: [] });
    expect(sentBodies()).toEqual([
      {
        kind: 'remove-contents',
        application_id: app,
        grant_id: 'grant_1',
        owner_id: 'upl_1',
        postings: [],
        blobs: upload.keys,
      },
    ]);
  });

  it('removes the contents of an expired upload naming its commit only when that item does not exist', async () => {
    // Prepare: two stored messages' uploads (shared/mailbox/store.ts names the thread posting); one message was stored.
    const upload = (id: string, posting: string) => ({
      pk: 'grant#grant_1#uploads',
      sk: id,
      entity: 'upload',
      id,
      application_id: app,
      grant_id: 'grant_1',
      keys: [`grants/grant_1/messages/${id}/raw.eml`],
      committed_by: { pk: 'grant#grant_1#ix#thread:thr_1', sk: posting },
      expires_at: 1,
    });
    const expiry = (item: Record<string, unknown>, sequence: string) =>
      ({
        eventID: `e${sequence}`,
        eventName: 'REMOVE',
        userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
        dynamodb: { SequenceNumber: sequence, OldImage: marshall(item) },
      }) as unknown as DynamoDBRecord;
    ddbMock.on(BatchGetCommand).callsFake((input: { RequestItems: Record<string, { Keys: unknown[] }> }) => ({
      Responses: Object.fromEntries(
        Object.keys(input.RequestItems).map((table) => [
          table,
          [{ pk: 'grant#grant_1#ix#thread:thr_1', sk: 'msg_stored' }],
        ]),
      ),
    }));
    const [stored, lost] = [upload('upl_stored', 'msg_stored'), upload('upl_lost', 'msg_lost')];

    // Act
    const result = await handler(event(expiry(stored, '1'), expiry(lost, '2')));

    // Assess: one read for the batch; only the upload whose message was never stored asks for anything.
    expect(result).toEqual({ batchItemFailures: [] });
    expect(ddbMock.commandCalls(BatchGetCommand)).toHaveLength(1);
    expect(sentBodies()).toEqual([
      {
        kind: 'remove-contents',
        application_id: app,
        grant_id: 'grant_1',
        owner_id: 'upl_lost',
        postings: [],
        blobs: lost.keys,
      },
    ]);
  });

  it('announces an inserted message and sends its message-stored job, the same on every retry', async () => {
    // Prepare: a message item as shared/db/messages.ts inserts it (its own outbox entry).
    const message = {
      pk: 'grant#grant_1#msg',
      sk: 'msg_01m8aaaaaaaaaaaaaaaaaaaaaa',
      entity: 'message',
      application_id: app,
      id: 'msg_01m8aaaaaaaaaaaaaaaaaaaaaa',
      grant_id: 'grant_1',
      thread_id: 'thr_1',
      subject: 'Hello',
      from: [{ email: 'a@example.net' }],
      to: [{ email: 'b@example.net' }],
      cc: [],
      bcc: [],
      reply_to: [],
      date: 1_700_000_000,
      unread: true,
      starred: false,
      folders: ['inbox'],
      snippet: 'Hi',
      body: '<p>Hi</p>',
      body_size: 9,
      is_plaintext: false,
      attachments: [],
      headers: [],
      raw_key: 'grants/grant_1/messages/m/raw.eml',
      raw_size: 10,
      metadata: {},
      created_at: 1_700_000_001,
      updated_at: 1_700_000_001,
      version: 1,
      search: 1,
    };

    // Act: delivered twice (a retry).
    await handler(event(streamRecord(message, '1')));
    await handler(event(streamRecord(message, '2')));

    // Assess
    const sent = sentBodies();
    const notifications = sent.filter((b) => b.type === 'message.created');
    expect(notifications).toHaveLength(2);
    expect(notifications[0]).toEqual(notifications[1]);
    expect(notifications[0]).toMatchObject({
      id: 'ntf_01m8aaaaaaaaaaaaaaaaaaaaaa',
      time: 1_700_000_001,
      data: {
        application_id: app,
        grant_id: 'grant_1',
        object: { id: message.id, object: 'message', thread_id: 'thr_1', body: '<p>Hi</p>', subject: 'Hello' },
      },
    });
    expect(notifications[0].data.object).not.toHaveProperty('entity');
    expect(notifications[0].data.object).not.toHaveProperty('application_id');
    expect(sent.filter((b) => b.kind === 'message-stored')).toEqual([
      { kind: 'message-stored', application_id: app, grant_id: 'grant_1', thread_id: 'thr_1', message_id: message.id },
      { kind: 'message-stored', application_id: app, grant_id: 'grant_1', thread_id: 'thr_1', message_id: message.id },
    ]);
  });

  it('reads a body left in S3 back into the payload', async () => {
    const random = randomBytes(450_000).toString('base64');
    const n = note({ id: 'msg_9', body: random });
    s3Mock
      .on(GetObjectCommand, { Key: 'grants/g/bodies/msg_9' })
      .resolves({ Body: { transformToString: async () => random } as never });
    await handler(event(streamRecord(itemOf(n, 'grants/g/bodies/msg_9'), '1')));
    expect(sentBodies()).toEqual([n]);
  });

  it('reports the first record the queue refused, so that Lambda retries from it with the same ids', async () => {
    const [a, b, c] = [note(), note(), note()];
    sqsMock.on(SendMessageBatchCommand).resolves({
      Successful: [
        { Id: '0', MessageId: 'm', MD5OfMessageBody: '' },
        { Id: '2', MessageId: 'm', MD5OfMessageBody: '' },
      ],
      Failed: [{ Id: '1', Code: 'x', SenderFault: false }],
    });
    const result = await handler(
      event(
        streamRecord(itemOf(a), '10'),
        streamRecord({ pk: 'x', sk: 'y' }, '11'),
        streamRecord(itemOf(b), '12'),
        streamRecord(itemOf(c), '13'),
      ),
    );
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: '12' }] });
  });

  it('reports the whole batch from its first record when the queue cannot be reached', async () => {
    sqsMock.on(SendMessageBatchCommand).rejects(new Error('unreachable'));
    expect(await handler(event(streamRecord(itemOf(note()), '7'), streamRecord(itemOf(note()), '8')))).toEqual({
      batchItemFailures: [{ itemIdentifier: '7' }],
    });
  });

  it('stops at a record whose body cannot be read now, publishing what came before it', async () => {
    const a = note();
    const random = randomBytes(450_000).toString('base64');
    s3Mock.on(GetObjectCommand).rejects(new Error('S3 down'));
    const result = await handler(
      event(
        streamRecord(itemOf(a), '1'),
        streamRecord(itemOf(note({ id: 'm', body: random }), 'k'), '2'),
        streamRecord(itemOf(note()), '3'),
      ),
    );
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: '2' }] });
    expect(sentBodies()).toEqual([a]);
  });
});
