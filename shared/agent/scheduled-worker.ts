import { getBlob, storedBody } from '#shared/agent/blobs';
import { holdSeconds, scheduledMessageView, type Firing } from '#shared/agent/scheduled';
import { closingItems } from '#shared/agent/schedules';
import { consumeQuota, deliverAndStore, type PreparedMessage } from '#shared/agent/send';
import type { MessageRecord } from '#shared/agent/types';
import { messageView } from '#shared/agent/views';
import { env } from '#shared/config';
import { getGrant } from '#shared/db/grants';
import type { OutboxEntry } from '#shared/db/outbox';
import * as schedules from '#shared/db/schedules';
import type { ScheduleRecord } from '#shared/db/schedules';
import * as sending from '#shared/db/sending';
import { ForbiddenError, InvalidRequestError, MailDeliveryError, RateLimitError } from '#shared/errors';
import { parseId, type ApplicationId, type GrantId, type ScheduleId } from '#shared/ids';
import { logger } from '#shared/logger';
import { newNotification } from '#shared/notifications/notification';
import { clock } from '#shared/time';
import { governanceOf, type Governance } from '#shared/governance/decide';

/**
 * The scheduled-send worker's logic (functions/scheduled-send): a firing of a schedule, a hold or a
 * retry arrives; before send_at it is held (the handler queues it again with the remaining seconds
 * as its delay), at send_at the message is sent once. See shared/agent/scheduled.ts for the timing
 * and shared/db/schedules.ts for the states.
 */
/** A worker's hold on a record it is sending: longer than the worker function can run. */
const LEASE_MS = 120_000;
/** Attempts (transient failures, each retried after a delay) before a scheduled send fails. */
export const MAX_ATTEMPTS = 5;
const DAILY_QUOTA = env.dailySendQuota();

export type FiringOutcome =
  | { kind: 'hold'; delaySeconds: number }
  | { kind: 'retry'; delaySeconds: number; error: unknown }
  | { kind: 'sent'; messageId: string }
  | { kind: 'failed'; reason: string }
  | { kind: 'skipped'; why: string };

/** Rebuilds the message from its schedule record (contents from S3): nothing is rendered again. */
async function preparedFrom(record: ScheduleRecord, governance: Governance): Promise<PreparedMessage> {
  const [body, attachments] = await Promise.all([
    storedBody(record),
    Promise.all(
      record.attachments.map(async (a) => ({
        filename: a.filename,
        contentType: a.content_type,
        content: await getBlob(a.key),
        ...(a.content_id ? { contentId: a.content_id } : {}),
        inline: a.is_inline,
      })),
    ),
  ]);
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

function sendSuccess(record: ScheduleRecord, stored: MessageRecord, body: string): OutboxEntry {
  const object = { ...messageView(stored, { body }), ...statusPayload(record, 'sent', '') };
  return { notification: newNotification({ type: 'message.send_success', applicationId: record.application_id as ApplicationId, grantId: record.grant_id, object }), bodyKey: stored.body_key };
}

function sendFailed(record: ScheduleRecord, reason: string): OutboxEntry {
  const { body: _body, ...view } = scheduledMessageView(record, '');
  const object = { ...view, folders: [], ...statusPayload(record, 'failed', reason) };
  return { notification: newNotification({ type: 'message.send_failed', applicationId: record.application_id as ApplicationId, grantId: record.grant_id, object }) };
}

class LostLeaseError extends Error {}

async function fail(grant: { id: GrantId; application_id: string }, record: ScheduleRecord, attempt: number, reason: string): Promise<FiringOutcome> {
  const closing = await closingItems(grant, record);
  const done = await schedules.failSchedule(record, attempt, reason, clock.nowSeconds(), closing.items, [sendFailed(record, reason), ...closing.outbox]);
  if (!done) return { kind: 'skipped', why: 'the record changed while failing it' };
  await closing.after();
  return { kind: 'failed', reason };
}

const INTERRUPTED = 'the send was interrupted after the message was handed to the mail relay, which may have delivered it; it is not sent again, so that no recipient gets it twice';

/**
 * Handles one firing of a scheduled send (see the module comment): holds it until send_at, then
 * sends it once. `lastDelivery`: the queue will not deliver this message again, so a transient
 * failure ends the schedule as failed instead of being retried.
 */
export async function runFiring(firing: Firing, options: { lastDelivery: boolean }): Promise<FiringOutcome> {
  const grantId = parseId('grant', String(firing.grant_id));
  const scheduleId = parseId('schedule', String(firing.schedule_id));
  if (!grantId || !scheduleId) return { kind: 'skipped', why: 'malformed firing' };
  const record = await schedules.getSchedule(grantId, scheduleId as ScheduleId);
  if (!record || record.application_id !== firing.application_id) return { kind: 'skipped', why: 'no such schedule (never committed, or its grant was deleted)' };
  if (record.status !== 'pending' && record.status !== 'sending') return { kind: 'skipped', why: `already ${record.status}` };
  const nowMs = clock.nowMs();
  const hold = holdSeconds(record.send_at, nowMs);
  if (hold > 0) return { kind: 'hold', delaySeconds: hold };
  if (record.status === 'sending' && (record.lease_until ?? 0) >= nowMs) return { kind: 'skipped', why: 'another worker is sending it' };
  if (!(await schedules.takeForSending(record, nowMs, LEASE_MS))) return { kind: 'skipped', why: 'taken by another worker' };
  const attempt = record.attempts + 1;
  const grant = await getGrant(record.application_id as ApplicationId, record.grant_id);
  if (!grant) return { kind: 'skipped', why: 'the grant was deleted' };
  if (record.relay_started_at) return fail(grant, record, attempt, INTERRUPTED);

  let relayStarted = false;
  let day: string | undefined;
  try {
    const governance = await governanceOf(grant);
    const prepared = await preparedFrom(record, governance);
    try {
      day = await consumeQuota(grant, governance.limits);
    } catch (error) {
      const quota = governance.limits.limit_count_daily_email_sent ?? DAILY_QUOTA;
      if (error instanceof RateLimitError) return fail(grant, record, attempt, `the Agent Account had sent its daily quota of ${quota} messages when the message was due`);
      throw error;
    }
    const closing = await closingItems(grant, record);
    const stored = await deliverAndStore(
      grant,
      prepared,
      {
        deliveryStarted() {},
        beforeRelay: async () => {
          relayStarted = true;
          if (!(await schedules.markRelayStarted(record, attempt, clock.nowMs()))) throw new LostLeaseError('The schedule was taken over while sending');
        },
      },
      [],
      {
        messageId: record.message_id,
        also: (message) => ({
          items: [...schedules.successItems(record, attempt, clock.nowSeconds()), ...closing.items],
          outbox: [sendSuccess(record, message, prepared.body), ...closing.outbox],
        }),
      },
    );
    await closing.after();
    return { kind: 'sent', messageId: stored.id };
  } catch (error) {
    if (error instanceof MailDeliveryError) {
      // The relay refused it: nothing left, and sending again would be refused again.
      if (day) await sending.refundSendQuota(grant.id, day);
      return fail(grant, record, attempt, error.message.replace(/^The message was not sent: /, 'the mail relay refused it: '));
    }
    if (error instanceof ForbiddenError || error instanceof InvalidRequestError) {
      // An outbound rule blocks it now, or the account's policy refuses it: nothing left.
      if (day) await sending.refundSendQuota(grant.id, day);
      return fail(grant, record, attempt, error.message);
    }
    if (error instanceof LostLeaseError) return { kind: 'skipped', why: error.message };
    if (relayStarted) {
      // Handed to the relay, then something failed: it may have left, so it is not sent again.
      if (day) logger.warn('scheduled send: failed after the relay call', { schedule_id: record.id, error });
      return fail(grant, record, attempt, INTERRUPTED);
    }
    if (day) await sending.refundSendQuota(grant.id, day).catch(() => undefined);
    if (options.lastDelivery || attempt >= MAX_ATTEMPTS) {
      return fail(grant, record, attempt, `sending failed ${attempt} times (last: ${error instanceof Error ? error.message : String(error)})`);
    }
    await schedules.releaseAttempt(record, attempt);
    return { kind: 'retry', delaySeconds: Math.min(60, 2 ** attempt), error };
  }
}
