import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { logger } from '#shared/logger';

/**
 * The partial batch response every SQS worker answers (serverless.yml: ReportBatchItemFailures):
 * the messages that failed are received again after their visibility timeout (and go to the
 * dead-letter queue after the redrive policy's receives); the others are deleted. A failure is
 * logged with its message ID once, where it happens.
 */
export class BatchFailures {
  private readonly failed = new Set<string>();

  /** `messageId` failed: logged with `message` and the error, and reported. */
  fail(messageId: string, message: string, error: unknown): void {
    logger.error(message, { message_id: messageId, error });
    this.failed.add(messageId);
  }

  /** `messageId` failed, already logged where it did: reported only. */
  report(messageId: string): void {
    this.failed.add(messageId);
  }

  /** The whole batch failed (our own failure, not one message's): every message is received again. */
  failAll(records: readonly SQSRecord[], message: string, error: unknown): void {
    logger.error(message, { messages: records.length, error });
    for (const record of records) this.failed.add(record.messageId);
  }

  get response(): SQSBatchResponse {
    return { batchItemFailures: [...this.failed].map((itemIdentifier) => ({ itemIdentifier })) };
  }
}

/**
 * The messages of a batch, each body parsed as JSON and read by `read` (the queue's payload reader:
 * shared/jobs/payloads.ts, which throws for a body that is not one of its payloads); a message that
 * cannot be read fails alone (the redrive policy moves it to the dead-letter queue) as `unreadable`.
 */
export function readBodies<T>(
  event: SQSEvent,
  failures: BatchFailures,
  unreadable: string,
  read: (body: unknown) => T,
): { record: SQSRecord; body: T }[] {
  const out: { record: SQSRecord; body: T }[] = [];
  for (const record of event.Records) {
    try {
      out.push({ record, body: read(JSON.parse(record.body)) });
    } catch (error) {
      failures.fail(record.messageId, unreadable, error);
    }
  }
  return out;
}

/**
 * A worker that handles its messages one at a time, in order: `handle` gets each body as `read`
 * returns it; a message whose body cannot be read, or whose handling throws, fails alone as `failed`.
 */
export async function eachMessage<T>(
  event: SQSEvent,
  failed: string,
  read: (body: unknown) => T,
  handle: (body: T, record: SQSRecord) => Promise<void>,
): Promise<SQSBatchResponse> {
  const failures = new BatchFailures();
  for (const { record, body } of readBodies(event, failures, failed, read)) {
    try {
      await handle(body, record);
    } catch (error) {
      failures.fail(record.messageId, failed, error);
    }
  }
  return failures.response;
}
