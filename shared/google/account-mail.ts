import { prepareOutgoing } from '#shared/mailbox/send';
import { ApiError } from '#shared/errors';
import { sendThroughGmail } from '#shared/google/submit';
import { logger } from '#shared/logger';
import type { AccountMail } from '#shared/providers/contract';

/**
 * Mail from a google grant's own address that the API sends on its behalf (the scheduler's booking
 * mails, with their invitations): sent through Gmail, which keeps the Sent copy, as a message the
 * grant sends through the API is. A refusal by rules, policy or Gmail itself (a 4xx other than a rate
 * limit) drops the mail, logged; a rate limit, a 5xx or an unreachable Gmail throws so the job is tried again.
 */
export const gmailAccountMail: AccountMail = {
  async send(grant, mail, what) {
    try {
      const prepared = {
        ...(await prepareOutgoing(grant, { to: mail.to, subject: mail.subject, body: mail.body })),
        ...(mail.calendar ? { calendar: mail.calendar } : {}),
      };
      await sendThroughGmail(grant, prepared, () => undefined);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status >= 500 || error.status === 429) throw error;
      logger.warn('mail not sent', { grant_id: grant.id, what, reason: error.message });
    }
  },
};
