import { liveScheduledSending, liveSend, type LiveSubmission } from '#shared/mailbox/live-send';
import { repliedOnGmail } from '#shared/google/replied';
import { sendThroughGmail } from '#shared/google/submit';
import { gmailMessages } from '#shared/google/messages';

/**
 * Sending from provider A, live: the message is composed as every provider's is (templates,
 * signatures, replies, attachments, the account's governance: shared/mailbox/send.ts prepareOutgoing),
 * then handed to Gmail's users.messages.send, which delivers it and keeps the Sent copy; the answer
 * is that copy as Gmail holds it. A reply names the Gmail thread of the message it answers, read from
 * Gmail with its Message-ID and References. The Idempotency-Key works as for every send: the key
 * remembers the Gmail message ID, and a replay reads it from Gmail. Its message.created comes from the
 * mailbox's history (shared/google/mail-changes.ts), like any other new message.
 */

const gmail: LiveSubmission = {
  submit: sendThroughGmail,
  replied: repliedOnGmail,
  read: (grant, messageId) => gmailMessages.get(grant, messageId, {}),
};

/** A due scheduled message of a google grant, sent through Gmail (shared/mailbox/live-send.ts). */
export const gmailScheduledSending = /* @__PURE__ */ liveScheduledSending(gmail);

/** POST .../messages/send for google grants; `send_at` is scheduled as every provider's is. */
export const gmailSend = /* @__PURE__ */ liveSend(gmail, 'google');
