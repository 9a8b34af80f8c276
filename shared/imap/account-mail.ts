import { prepareOutgoing } from '#shared/mailbox/send';
import { ApiError, MailDeliveryError } from '#shared/errors';
import { submitAndStore } from '#shared/imap/submit';
import { logger } from '#shared/logger';
import type { AccountMail } from '#shared/providers/contract';

/**
 * Mail from an IMAP grant's own address that the API sends on its behalf (iMIP invitations,
 * cancellations and replies of its CalDAV calendars): submitted over the account's SMTP server and
 * kept in its Sent folder, as a message it sends through the API is. A refusal by rules or policy
 * drops the mail (logged); a transport failure throws so the job is tried again.
 */
export const imapAccountMail: AccountMail = {
  async send(grant, mail, what) {
    const prepared = {
      ...(await prepareOutgoing(grant, { to: mail.to, subject: mail.subject, body: mail.body })),
      ...(mail.calendar ? { calendar: mail.calendar } : {}),
    };
    try {
      await submitAndStore(grant, prepared);
    } catch (error) {
      if (error instanceof MailDeliveryError || !(error instanceof ApiError)) throw error;
      logger.warn('mail not sent', { grant_id: grant.id, what, reason: error.message });
    }
  },
};
