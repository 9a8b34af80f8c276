import { sendOrScheduleWith, type SendNow } from '#shared/mailbox/scheduled';
import { closingItems } from '#shared/mailbox/schedules';
import { preparedFrom, scheduledSendFailure, scheduleSucceeded } from '#shared/mailbox/scheduled-sending';
import { prepareOutgoing, requestHash, withIdempotency } from '#shared/mailbox/send';
import type { MessageView } from '#shared/mailbox/views';
import { outboxItems } from '#shared/db/outbox';
import { transactWrite } from '#shared/db/transact';
import { ForbiddenError, InvalidRequestError } from '#shared/errors';
import { governanceOf } from '#shared/governance/decide';
import { repliedOnGmail } from '#shared/google/replied';
import { sendThroughGmail } from '#shared/google/submit';
import { gmailMessages } from '#shared/google/messages';
import type { ScheduledSending, SendProvider } from '#shared/providers/contract';
import { ScheduledSendRefusal } from '#shared/scheduled-send/refusal';
import { renderStoredTemplate } from '#shared/templates/templates';

/**
 * Sending from provider A, live: the message is composed as every provider's is (templates,
 * signatures, replies, attachments, the account's governance: shared/mailbox/send.ts prepareOutgoing),
 * then handed to Gmail's users.messages.send, which delivers it and keeps the Sent copy; the answer
 * is that copy as Gmail holds it. A reply names the Gmail thread of the message it answers, read from
 * Gmail with its Message-ID and References. The Idempotency-Key works as for every send: the key
 * remembers the Gmail message ID, and a replay reads it from Gmail. Its message.created comes from the
 * mailbox's history (shared/google/mail-changes.ts), like any other new message.
 */

const gmailSendNow: SendNow = (grant, input, context) =>
  withIdempotency(
    grant,
    context.idempotencyKey,
    () => requestHash(input, context.files),
    async (progress) => {
      const prepared = await prepareOutgoing(grant, input, context.files, [], renderStoredTemplate, repliedOnGmail);
      return (await sendThroughGmail(grant, prepared, () => progress.deliveryStarted())) as MessageView;
    },
    async (messageId) => (await gmailMessages.get(grant, messageId, {})) as MessageView,
  );

/**
 * A due scheduled message of a google grant: rebuilt from its schedule record, sent through Gmail,
 * then the schedule's success committed with `message.send_success` (the message as Gmail holds it).
 * Gmail refusing the message (its 400 or 403) is a refusal sending again would meet again.
 */
export const gmailScheduledSending: ScheduledSending = {
  async send(grant, record, hooks) {
    const prepared = await preparedFrom(record, await governanceOf(grant));
    try {
      const closing = await closingItems(grant, record);
      const sent = await sendThroughGmail(grant, prepared, hooks.beforeRelay);
      await transactWrite([
        ...hooks.scheduleItems(),
        ...closing.items,
        ...outboxItems([scheduleSucceeded(record, sent), ...closing.outbox]),
      ]);
      await closing.after();
      return { messageId: sent.id };
    } catch (error) {
      if (error instanceof ForbiddenError || error instanceof InvalidRequestError)
        throw new ScheduledSendRefusal(error.message);
      throw error;
    }
  },
  failure: scheduledSendFailure,
};

/** POST .../messages/send for google grants; `send_at` is scheduled as every provider's is. */
export const gmailSend: SendProvider = { send: /* @__PURE__ */ sendOrScheduleWith(gmailSendNow, 'google') };
