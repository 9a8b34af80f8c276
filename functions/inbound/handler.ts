import type { SESEvent } from 'aws-lambda';
import { inboundMail } from '#shared/registries/inbound';
import { logger } from '#shared/logger';

/**
 * Inbound mail on AWS: an SES receipt rule stores the raw message in the mail bucket under
 * `inbound/<SES message id>` (S3 action), then invokes this function (Lambda action). The message is
 * ingested exactly as the local SMTP listener does it; the inbound copy is removed once stored.
 * A failure is retried by Lambda and then lands in the inbound dead-letter queue: nothing is lost.
 */
export const INBOUND_PREFIX = 'inbound/';

export const handler = async (event: SESEvent): Promise<void> => {
  for (const record of event.Records) {
    const { mail, receipt } = record.ses;
    const key = `${INBOUND_PREFIX}${mail.messageId}`;
    const raw = await inboundMail.staged(key);
    let result;
    try {
      result = await inboundMail.ingest(raw, { mailFrom: mail.source, recipients: receipt.recipients });
    } catch (error) {
      // SES has already accepted it: refused by every recipient's policy, it is dropped (and said so).
      if (!(error instanceof inboundMail.Refused)) throw error;
      logger.warn('inbound message refused by policy', { ses_message_id: mail.messageId, reply: error.message });
      await inboundMail.removeStaged([key]);
      continue;
    }
    logger.info('inbound message', {
      ses_message_id: mail.messageId,
      delivered: result.delivered.length,
      duplicates: result.delivered.filter((d) => d.duplicate).length,
      unknown_recipients: result.unknown.length,
    });
    await inboundMail.removeStaged([key]);
  }
};
