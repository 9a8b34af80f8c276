import { sendOrScheduleWith } from '#shared/mailbox/scheduled';
import { closingItems } from '#shared/mailbox/schedules';
import { preparedFrom, scheduledSendFailure, scheduleSucceeded } from '#shared/mailbox/scheduled-sending';
import { sendWith } from '#shared/mailbox/send';
import { submitAndStore } from '#shared/imap/submit';
import { messageView } from '#shared/mailbox/views';
import { ForbiddenError, InvalidRequestError, MailDeliveryError } from '#shared/errors';
import type { MessageId } from '#shared/ids';
import { governanceOf } from '#shared/governance/decide';
import type { ScheduledSending, SendProvider } from '#shared/providers/contract';
import { ScheduledSendRefusal } from '#shared/scheduled-send/refusal';

/**
 * Sending from an IMAP grant: the message is composed as an Agent Account's is (templates,
 * signatures, replies, attachments: shared/mailbox/send.ts prepareOutgoing), submitted over the
 * account's own SMTP server with its login, then its copy is APPENDed to the account's Sent folder
 * (submission servers do not keep one) and stored with that location, announced as message.created.
 * The next sync finds the Sent copy where it was put and says nothing more. Its ID comes from its
 * Message-ID header, as every IMAP message's. A scheduled send waits as an Agent Account's does
 * (shared/mailbox/scheduled.ts) and is sent by the same path when due (ScheduledSending below).
 */

const sendNow = /* @__PURE__ */ sendWith((grant, prepared, progress) =>
  submitAndStore(grant, prepared, { beforeRelay: async () => progress.deliveryStarted() }),
);

/** Marked pure: the scheduled-send worker's bundle takes imapScheduledSending from this module, and none of the scheduling path. */
export const imapSend: SendProvider = { send: /* @__PURE__ */ sendOrScheduleWith(sendNow, 'IMAP') };

/** A due scheduled message of an IMAP grant: rebuilt from its schedule record, sent by the path above once. */
export const imapScheduledSending: ScheduledSending = {
  async send(grant, record, hooks) {
    const prepared = await preparedFrom(record, await governanceOf(grant));
    const { body } = prepared;
    try {
      const closing = await closingItems(grant, record);
      const stored = await submitAndStore(grant, prepared, {
        id: record.message_id as MessageId,
        beforeRelay: hooks.beforeRelay,
        commit: (message) => ({
          items: [...hooks.scheduleItems(), ...closing.items],
          outbox: [scheduleSucceeded(record, messageView(message, { body }), message.body_key), ...closing.outbox],
        }),
      });
      await closing.after();
      return { messageId: stored.id };
    } catch (error) {
      // The account's server refused it, or a policy does: sending again would be refused again.
      if (error instanceof MailDeliveryError)
        throw new ScheduledSendRefusal(
          error.message.replace(/^The message was not sent: /, "the account's SMTP server refused it: "),
        );
      if (error instanceof ForbiddenError || error instanceof InvalidRequestError)
        throw new ScheduledSendRefusal(error.message);
      throw error;
    }
  },
  failure: scheduledSendFailure,
};
