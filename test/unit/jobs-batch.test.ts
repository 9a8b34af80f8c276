import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { BatchFailures, eachMessage, readBodies } from '#shared/jobs/batch';

/** The partial batch response the SQS workers share (shared/jobs/batch.ts). */
const record = (messageId: string, body: string) => ({ messageId, body, attributes: {} }) as unknown as SQSRecord;
const event = (...records: SQSRecord[]) => ({ Records: records }) as SQSEvent;

/** A payload reader as shared/jobs/payloads.ts has them: throws for a body that is not one. */
const readN = (body: unknown) => {
  if (typeof (body as { n?: unknown }).n !== 'number') throw new Error('not a payload');
  return body as { n: number };
};

describe('eachMessage', () => {
  it('handles every message in order and reports only those that failed, unreadable and unfit ones included', async () => {
    const seen: unknown[] = [];
    const messages = [
      record('a', '{"n":1}'),
      record('b', 'not json'),
      record('c', '{"n":3}'),
      record('d', '{"n":4}'),
      record('e', '{"n":"five"}'),
    ];
    const response = await eachMessage(event(...messages), 'job failed', readN, async (body) => {
      seen.push(body.n);
      if (body.n === 3) throw new Error('boom');
    });
    expect(seen).toEqual([1, 3, 4]);
    expect(response).toEqual({
      batchItemFailures: [{ itemIdentifier: 'b' }, { itemIdentifier: 'e' }, { itemIdentifier: 'c' }],
    });
  });

  it('answers an empty failure list for a batch that went through', async () => {
    expect(await eachMessage(event(record('a', '{"n":1}')), 'job failed', readN, async () => undefined)).toEqual({
      batchItemFailures: [],
    });
  });
});

describe('BatchFailures and readBodies', () => {
  it('reports each message once, whether failed, reported or failed with its whole batch', () => {
    const failures = new BatchFailures();
    const records = [record('a', '{}'), record('b', '{}')];
    expect(
      readBodies(event(...records, record('c', '{')), failures, 'unreadable', (body) => body).map(
        (r) => r.record.messageId,
      ),
    ).toEqual(['a', 'b']);
    failures.report('a');
    failures.fail('a', 'again', new Error('x'));
    expect(failures.response).toEqual({ batchItemFailures: [{ itemIdentifier: 'c' }, { itemIdentifier: 'a' }] });
    failures.failAll(records, 'batch failed', new Error('y'));
    expect(failures.response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['a', 'b', 'c']);
  });
});
