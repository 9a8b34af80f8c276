import { sendOrScheduleWith, type SendNow } from '#shared/mailbox/scheduled';
import { closingItems } from '#shared/mailbox/schedules';
import { preparedFrom, scheduledSendFailure, scheduleSucceeded } from '#shared/mailbox/scheduled-sending';
import { prepareOutgoing, requestHash, withIdempotency, type PreparedMessage } from '#shared/mailbox/send';
import type { MessageView } from '#shared/mailbox/views';
import type { GrantRecord } from '#shared/db/grants';
import { outboxItems } from '#shared/db/outbox';
import { transactWrite } from '#shared/db/transact';
import { ForbiddenError, InvalidRequestError } from '#shared/errors';
import { governanceOf } from '#shared/governance/decide';
import type { Message, ScheduledSending, SendProvider } from '#shared/providers/contract';
import { ScheduledSendRefusal } from '#shared/scheduled-send/refusal';
import { renderStoredTemplate } from '#shared/templates/templates';

/**
 * Sending from a live provider (one whose mailbox is answered from its own API: providers A and B).
 * The message is composed as every provider's is (templates, signatures, replies, attachments, the
 * account's governance: prepareOutgoing), then handed to the provider's API, which delivers it and
 * keeps the Sent copy; the answer is that copy as the provider holds it. The Idempotency-Key works as
 * for every send: the key remembers the provider's ID of the copy, and a replay reads it from the
 * provider. Its message.created comes from the mailbox's changes, like any other new message.
 */
export interface LiveSubmission {
  /** Hands the prepared message to the provider; answers the Sent copy. */
  submit(grant: GrantRecord, prepared: PreparedMessage, beforeRelay: () => void | Promise<void>): Promise<Message>;
  /** The message a reply answers (its Message-ID and References), read from the provider. */
  replied: NonNullable<Parameters<typeof prepareOutgoing>[5]>;
  /** A message by its provider ID (an idempotent replay's answer). */
  read(grant: GrantRecord, messageId: string): Promise<Message>;
}

const sendNowWith =
  (live: LiveSubmission): SendNow =>
  (grant, input, context) =>
    withIdempotency(
      grant,
      context.idempotencyKey,
      () => requestHash(input, context.files),
      async (progress) => {
        const prepared = await prepareOutgoing(grant, input, context.files, [], renderStoredTemplate, live.replied);
        return (await live.submit(grant, prepared, () => progress.deliveryStarted())) as MessageView;
      },
      async (messageId) => (await live.read(grant, messageId)) as MessageView,
    );

/**
 * POST .../messages/send for a live provider's grants; `send_at` is scheduled as every provider's is,
 * without a draft (`use_draft` answers 400 naming `grantsOf`, the provider's grants in words).
 */
export const liveSend = (live: LiveSubmission, grantsOf: string): SendProvider => ({
  send: sendOrScheduleWith(sendNowWith(live), grantsOf),
});

/**
 * A due scheduled message of a live provider's grant: rebuilt from its schedule record, submitted,
 * then the schedule's success committed with `message.send_success` (the message as the provider
 * holds it). The provider refusing the message (a 400 or 403) is a refusal sending again would meet again.
 */
export const liveScheduledSending = (live: Pick<LiveSubmission, 'submit'>): ScheduledSending => ({
  async send(grant, record, hooks) {
    const prepared = await preparedFrom(record, await governanceOf(grant));
    try {
      const closing = await closingItems(grant, record);
      const sent = await live.submit(grant, prepared, hooks.beforeRelay);
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
});
