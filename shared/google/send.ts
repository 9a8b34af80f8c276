import { sendOrScheduleWith, type SendNow } from '#shared/mailbox/scheduled';
import { closingItems } from '#shared/mailbox/schedules';
import { preparedFrom, scheduledSendFailure, scheduleSucceeded } from '#shared/mailbox/scheduled-sending';
import {
  composePrepared,
  prepareOutgoing,
  requestHash,
  withIdempotency,
  type PreparedMessage,
  type RepliedMessage,
} from '#shared/mailbox/send';
import type { MessageView } from '#shared/mailbox/views';
import type { GrantRecord } from '#shared/db/grants';
import { outboxItems } from '#shared/db/outbox';
import { transactWrite } from '#shared/db/transact';
import { ForbiddenError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { governanceOf } from '#shared/governance/decide';
import { googleClientOf, GoogleNotFoundError } from '#shared/google/client';
import type { GmailMessage } from '#shared/google/gmail-message';
import { gmailMessages } from '#shared/google/messages';
import { newId } from '#shared/ids';
import type { Message, ScheduledSending, SendProvider } from '#shared/providers/contract';
import { ScheduledSendRefusal } from '#shared/scheduled-send/refusal';
import { renderStoredTemplate } from '#shared/templates/templates';
import { clock } from '#shared/time';

/**
 * Sending from provider A, live: the message is composed as every provider's is (templates,
 * signatures, replies, attachments, the account's governance: shared/mailbox/send.ts prepareOutgoing),
 * then handed to Gmail's users.messages.send, which delivers it and keeps the Sent copy; the answer
 * is that copy as Gmail holds it. A reply names the Gmail thread of the message it answers, read from
 * Gmail with its Message-ID and References. The Idempotency-Key works as for every send: the key
 * remembers the Gmail message ID, and a replay reads it from Gmail. Its message.created comes from the
 * mailbox's history (shared/google/mail-changes.ts), like any other new message.
 */

/** The message a reply answers, from Gmail (its headers only). */
export async function repliedOnGmail(grant: GrantRecord, messageId: string): Promise<RepliedMessage> {
  if (!/^[0-9a-zA-Z_-]{1,64}$/.test(messageId))
    throw new NotFoundError(`No message '${messageId}' in this grant's mailbox`);
  const client = await googleClientOf(grant);
  let message: GmailMessage;
  try {
    message = await client.call<GmailMessage>({
      api: 'gmail',
      path: `/gmail/v1/users/me/messages/${messageId}`,
      query: { format: 'metadata', metadataHeaders: ['Message-ID', 'References'] },
    });
  } catch (error) {
    if (error instanceof GoogleNotFoundError)
      throw new NotFoundError(`No message '${messageId}' in this grant's mailbox`);
    throw error;
  }
  const header = (name: string) =>
    message.payload?.headers?.find((h) => h.name?.toLowerCase() === name.toLowerCase())?.value?.trim();
  return {
    thread_id: message.threadId,
    message_id_header: header('Message-ID'),
    references: (header('References') ?? '').split(/\s+/).filter(Boolean),
  };
}

/** Hands a prepared message to Gmail (which delivers it and keeps the Sent copy); the copy as Gmail holds it. */
async function sendThroughGmail(
  grant: GrantRecord,
  prepared: PreparedMessage,
  beforeRelay: () => void | Promise<void>,
): Promise<Message> {
  const domain = grant.email.slice(grant.email.lastIndexOf('@') + 1);
  const raw = await composePrepared(prepared, `<${newId('message').slice(4)}@${domain}>`, new Date(clock.nowMs()));
  const client = await googleClientOf(grant);
  await beforeRelay();
  const sent = await client.call<{ id: string }>({
    api: 'gmail',
    method: 'POST',
    path: '/gmail/v1/users/me/messages/send',
    body: { raw: raw.toString('base64url'), ...(prepared.threadId ? { threadId: prepared.threadId } : {}) },
  });
  return gmailMessages.get(grant, sent.id, {});
}

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
