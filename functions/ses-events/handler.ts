import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { handleSesEvent, MalformedSesEvent, readSesEvent } from '#shared/deliverability/ses-events';
import { BatchFailures } from '#shared/jobs/batch';
import { logger } from '#shared/logger';

/**
 * The deliverability events of SES (its configuration set → SNS → the ses-events queue), one message
 * at a time: each becomes its notification (shared/deliverability/ses-events.ts). A malformed message
 * and a failure of ours fail that message alone; the queue's redrive policy moves a message that keeps
 * failing to its dead-letter queue.
 */
export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const failures = new BatchFailures();
  for (const record of event.Records) {
    try {
      const outcome = await handleSesEvent(readSesEvent(record.body));
      logger.debug('ses-events', { message_id: record.messageId, outcome });
    } catch (error) {
      failures.fail(
        record.messageId,
        error instanceof MalformedSesEvent ? 'ses-events: malformed message' : 'ses-events: event not announced',
        error,
      );
    }
  }
  return failures.response;
};
