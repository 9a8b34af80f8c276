import { attachmentsWithContents, storedBody } from '#shared/mailbox/blobs';
import { scheduledMessageView } from '#shared/mailbox/scheduled';
import { closingItems } from '#shared/mailbox/schedules';
import { deliverAndStore, type PreparedMessage } from '#shared/mailbox/send';
import type { MessageRecord } from '#shared/mailbox/types';
import { messageView } from '#shared/mailbox/views';
import { env } from '#shared/config';
import type { OutboxEntry } from '#shared/db/outbox';
import type { ScheduleRecord } from '#shared/db/schedules';
import { ForbiddenError, InvalidRequestError, MailDeliveryError, RateLimitError } from '#shared/errors';
import type { ApplicationId } from '#shared/ids';
import { newNotification } from '#shared/notifications/notification';
import type { ScheduledSending } from '#shared/providers/contract';
import { ScheduledSendRefusal } from '#shared/scheduled-send/refusal';
import { governanceOf, type Governance } from '#shared/governance/decide';

/**
 * Scheduled send's provider side for Agent Accounts (ScheduledSending, shared/providers/contract.ts): the message
 * rebuilt from its schedule record, the send path (outbound rules, the daily quota's unit held and then
 * counted by the Sent copy's commit, the relay, local deliveries) and what closing a schedule removes.
 */
const DAILY_QUOTA = env.dailySendQuota();

/** Rebuilds the message from its schedule record (contents from S3): nothing is rendered again. */
export async function preparedFrom(record: ScheduleRecord, governance: Governance): Promise<PreparedMessage> {
  const [body, attachments] = await Promise.all([storedBody(record), attachmentsWithContents(record.attachments)]);
  return {
    from: record.from[0]!,
    to: record.to,
    cc: record.cc,
    bcc: record.bcc,
    replyTo: record.reply_to,
    subject: record.subject,
    body,
    isPlaintext: record.is_plaintext,
    starred: record.starred,
    attachments,
    headers: record.custom_headers,
    metadata: record.metadata,
    ...(record.thread_id ? { threadId: record.thread_id } : {}),
    ...(record.in_reply_to ? { inReplyTo: record.in_reply_to } : {}),
    references: record.references,
    ...(record.tracking ? { tracking: record.tracking } : {}),
    governance,
  };
}

const statusPayload = (record: ScheduleRecord, status: 'sent' | 'failed', reason: string) => ({
  schedule_id: record.id,
  send_at: record.send_at,
  status,
  reason,
  request_id: record.request_id,
});

/** `message.send_success` of a scheduled message, with the sent message as its provider answers it. */
export function scheduleSucceeded(record: ScheduleRecord, sent: object, bodyKey?: string): OutboxEntry {
  return {
    notification: newNotification({
      type: 'message.send_success',
      applicationId: record.application_id as ApplicationId,
      grantId: record.grant_id,
      object: { ...sent, ...statusPayload(record, 'sent', '') },
    }),
    ...(bodyKey ? { bodyKey } : {}),
  };
}

const sendSuccess = (record: ScheduleRecord, stored: MessageRecord, body: string): OutboxEntry =>
  scheduleSucceeded(record, messageView(stored, { body }), stored.body_key);

function sendFailed(record: ScheduleRecord, reason: string): OutboxEntry {
  const { body: _body, ...view } = scheduledMessageView(record, '');
  const object = { ...view, folders: [], ...statusPayload(record, 'failed', reason) };
  return {
    notification: newNotification({
      type: 'message.send_failed',
      applicationId: record.application_id as ApplicationId,
      grantId: record.grant_id,
      object,
    }),
  };
}

/** Sends a due scheduled message (see ScheduledSending.send). */
async function send(
  grant: Parameters<ScheduledSending['send']>[0],
  record: ScheduleRecord,
  hooks: Parameters<ScheduledSending['send']>[2],
): Promise<{ messageId: string }> {
  const governance = await governanceOf(grant);
  const prepared = await preparedFrom(record, governance);
  try {
    const closing = await closingItems(grant, record);
    const stored = await deliverAndStore(
      grant,
      prepared,
      { deliveryStarted() {}, beforeRelay: hooks.beforeRelay },
      [],
      {
        messageId: record.message_id,
        also: (message) => ({
          items: [...hooks.scheduleItems(), ...closing.items],
          outbox: [sendSuccess(record, message, prepared.body), ...closing.outbox],
        }),
      },
    );
    await closing.after();
    return { messageId: stored.id };
  } catch (error) {
    // Refusals that sending again would meet again (nothing left, and no quota unit stays held):
    if (error instanceof RateLimitError) {
      const quota = governance.limits.limit_count_daily_email_sent ?? DAILY_QUOTA;
      throw new ScheduledSendRefusal(
        `the Agent Account had sent its daily quota of ${quota} messages when the message was due`,
      );
    }
    if (error instanceof MailDeliveryError)
      throw new ScheduledSendRefusal(
        error.message.replace(/^The message was not sent: /, 'the mail relay refused it: '),
      );
    // An outbound rule blocks it now, or the account's policy refuses it.
    if (error instanceof ForbiddenError || error instanceof InvalidRequestError)
      throw new ScheduledSendRefusal(error.message);
    // Anything else: the worker retries, and the unit held by this attempt lapses.
    throw error;
  }
}

/** Every provider's ScheduledSending.failure: the schedule's closing items, with `message.send_failed` first. */
export const scheduledSendFailure: ScheduledSending['failure'] = async (grant, record, reason) => {
  const closing = await closingItems(grant, record);
  return { ...closing, outbox: [sendFailed(record, reason), ...closing.outbox] };
};

export const agentScheduledSending: ScheduledSending = { send, failure: scheduledSendFailure };
