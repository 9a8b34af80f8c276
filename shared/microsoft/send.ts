import { sendOrScheduleWith, type SendNow } from '#shared/mailbox/scheduled';
import { closingItems } from '#shared/mailbox/schedules';
import { preparedFrom, scheduledSendFailure, scheduleSucceeded } from '#shared/mailbox/scheduled-sending';
import { prepareOutgoing, requestHash, withIdempotency } from '#shared/mailbox/send';
import type { MessageView } from '#shared/mailbox/views';
import { outboxItems } from '#shared/db/outbox';
import { transactWrite } from '#shared/db/transact';
import { ForbiddenError, InvalidRequestError } from '#shared/errors';
import { governanceOf } from '#shared/governance/decide';
import { graphMessages } from '#shared/microsoft/messages';
import { repliedOnGraph, sendThroughGraph } from '#shared/microsoft/submit';
import type { ScheduledSending, SendProvider } from '#shared/providers/contract';
import { ScheduledSendRefusal } from '#shared/scheduled-send/refusal';
import { renderStoredTemplate } from '#shared/templates/templates';

/**
 * Sending from provider B, live: the message is composed as every provider's is (templates,
 * signatures, replies, attachments, the account's governance: shared/mailbox/send.ts prepareOutgoing),
 * then handed to Graph as MIME (shared/microsoft/submit.ts: sendMail, or a draft with its attachments
 * uploaded when it is over Graph's 4 MB), which delivers it and keeps the Sent copy; the answer is that
 * copy as Graph holds it, found by its Message-ID in Sent Items. A reply carries the answered
 * message's Message-ID and References, read from Graph. The Idempotency-Key works as for every send:
 * the key remembers the Sent copy's Graph ID, and a replay reads it from Graph.
 */

const graphSendNow: SendNow = (grant, input, context) =>
  withIdempotency(
    grant,
    context.idempotencyKey,
    () => requestHash(input, context.files),
    async (progress) => {
      const prepared = await prepareOutgoing(grant, input, context.files, [], renderStoredTemplate, repliedOnGraph);
      return (await sendThroughGraph(grant, prepared, () => progress.deliveryStarted())) as MessageView;
    },
    async (messageId) => (await graphMessages.get(grant, messageId, {})) as MessageView,
  );

/**
 * A due scheduled message of a microsoft grant: rebuilt from its schedule record, sent through Graph,
 * then the schedule's success committed with `message.send_success` (the message as Graph holds it).
 * Graph refusing the message (its 400 or 403) is a refusal sending again would meet again.
 */
export const graphScheduledSending: ScheduledSending = {
  async send(grant, record, hooks) {
    const prepared = await preparedFrom(record, await governanceOf(grant));
    try {
      const closing = await closingItems(grant, record);
      const sent = await sendThroughGraph(grant, prepared, hooks.beforeRelay);
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

/** POST .../messages/send for microsoft grants; `send_at` is scheduled as every provider's is (without a draft). */
export const graphSend: SendProvider = { send: /* @__PURE__ */ sendOrScheduleWith(graphSendNow, 'microsoft') };

/** Mail the API sends for the account: in submit.ts, so that the jobs worker's bundle leaves the template engines out. */
export { graphAccountMail } from '#shared/microsoft/submit';
