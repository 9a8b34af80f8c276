import { attachmentRecords, bodyKey, storedBody, uploadAttachments } from '#shared/mailbox/blobs';
import { putBlob } from '#shared/aws/mail-bucket';
import { requireSchedule } from '#shared/mailbox/schedules';
import { prepareOutgoing, requestHash, sendMessage, withIdempotency, type OutgoingInput } from '#shared/mailbox/send';
import { BODY_INLINE_MAX } from '#shared/mailbox/store';
import { bodyText, snippetOf } from '#shared/mailbox/text';
import { refreshThreadNow, threadRefreshJob } from '#shared/mailbox/thread-refresh';
import type { DraftRecord } from '#shared/mailbox/types';
import { attachmentView, type MessageView } from '#shared/mailbox/views';
import { env } from '#shared/config';
import { draftInsertItems } from '#shared/db/drafts';
import type { GrantRecord } from '#shared/db/grants';
import type { OutboxEntry } from '#shared/db/outbox';
import * as schedules from '#shared/db/schedules';
import type { ScheduleRecord } from '#shared/db/schedules';
import { openUpload } from '#shared/db/uploads';
import { InvalidRequestError } from '#shared/errors';
import type { UploadedFile } from '#shared/uploaded-file';
import { newId } from '#shared/ids';
import { trackingOnCreate } from '#shared/mail/tracking';
import { renderStoredTemplate } from '#shared/templates/templates';
import { armFiring, type Firing } from '#shared/scheduled-send/firing';
import { clock } from '#shared/time';

/**
 * Scheduled send for Agent Accounts: `POST .../messages/send` with `send_at`.
 *
 * Scheduling validates and renders the message at once (recipients, template, signature, reply
 * threading; contents to S3), stores it in a schedule record (shared/db/schedules.ts), and arms its
 * firing (shared/scheduled-send/firing.ts: one EventBridge Scheduler `at()` schedule whose target
 * is the scheduled-send queue). The worker (shared/services/scheduled-send.ts) sends it through
 * shared/mailbox/scheduled-sending.ts; reading, listing and cancelling schedules: shared/mailbox/schedules.ts.
 */
const MIN_LEAD_SECONDS = env.scheduledSendMinLeadSeconds();
const MAX_LEAD_SECONDS = 30 * 86400;
const TRACKING_HOSTNAME = env.trackingHostname();

/** The message as known before it is sent: the send answer's `data`, and the send_failed payload. */
export function scheduledMessageView(record: ScheduleRecord, body: string) {
  return {
    id: record.message_id,
    object: 'message' as const,
    grant_id: record.grant_id,
    ...(record.thread_id ? { thread_id: record.thread_id } : {}),
    subject: record.subject,
    from: record.from,
    to: record.to,
    cc: record.cc,
    bcc: record.bcc,
    reply_to: record.reply_to,
    date: record.send_at,
    unread: false,
    starred: record.starred,
    folders: record.draft_id ? ['drafts'] : [],
    snippet: snippetOf(bodyText(body, record.is_plaintext)),
    ...(record.in_reply_to ? { in_reply_to: record.in_reply_to } : {}),
    body,
    attachments: record.attachments.map((a) => attachmentView(record.grant_id, a)),
    metadata: record.metadata,
    created_at: record.created_at,
    schedule_id: record.id,
    send_at: record.send_at,
    use_draft: !!record.draft_id,
    ...(record.draft_id ? { draft_id: record.draft_id } : {}),
  };
}

export async function scheduledSendView(record: ScheduleRecord) {
  return scheduledMessageView(record, await storedBody(record));
}

/** Why a `send_at` cannot be scheduled, or nothing. */
function checkSendAt(sendAt: number, now: number): void {
  if (sendAt >= now + MIN_LEAD_SECONDS && sendAt <= now + MAX_LEAD_SECONDS) return;
  const when = sendAt < now ? `${now - sendAt} seconds ago` : `${sendAt - now} seconds from now`;
  throw new InvalidRequestError(
    `'send_at' must be between ${MIN_LEAD_SECONDS} seconds and 30 days from now (Unix seconds ${now + MIN_LEAD_SECONDS} to ${now + MAX_LEAD_SECONDS}); ${sendAt} is ${when}`,
  );
}

/** Schedules a message (see the module comment); its firing is armed before its record commits (armFiring). */
export async function scheduleMessage(
  grant: GrantRecord,
  input: OutgoingInput & { send_at: number },
  files: UploadedFile[],
  requestId: string,
) {
  const now = clock.nowSeconds();
  checkSendAt(input.send_at, now);
  const prepared = await prepareOutgoing(
    grant,
    { ...input, send_at: undefined, use_draft: undefined },
    files,
    [],
    renderStoredTemplate,
  );
  const tracking = trackingOnCreate(input.tracking_options, TRACKING_HOSTNAME);
  const id = newId('schedule');
  const messageId = newId('message');
  const draftId = input.use_draft ? newId('draft') : undefined;

  // Contents to S3: recorded as an upload first, committed by the schedule's transaction.
  const size = Buffer.byteLength(prepared.body);
  const largeBodyKey = size > BODY_INLINE_MAX ? bodyKey(grant.id, id) : undefined;
  const attachments = attachmentRecords(grant.id, prepared.attachments);
  const uploaded = await openUpload(grant, [largeBodyKey, ...attachments.map((a) => a.key)]);
  await Promise.all([
    uploadAttachments(attachments, prepared.attachments),
    ...(largeBodyKey
      ? [
          putBlob(
            largeBodyKey,
            prepared.body,
            prepared.isPlaintext ? 'text/plain; charset=utf-8' : 'text/html; charset=utf-8',
          ),
        ]
      : []),
  ]);

  const content: schedules.ScheduledContent = {
    subject: prepared.subject,
    from: [prepared.from],
    to: prepared.to,
    cc: prepared.cc,
    bcc: prepared.bcc,
    reply_to: prepared.replyTo,
    body: largeBodyKey ? '' : prepared.body,
    ...(largeBodyKey ? { body_key: largeBodyKey } : {}),
    body_size: size,
    is_plaintext: prepared.isPlaintext,
    starred: prepared.starred,
    attachments,
    metadata: prepared.metadata,
    custom_headers: prepared.headers,
    ...(prepared.threadId ? { thread_id: prepared.threadId } : {}),
    ...(input.reply_to_message_id
      ? { reply_to_message_id: input.reply_to_message_id as ScheduleRecord['message_id'] }
      : {}),
    ...(prepared.inReplyTo ? { in_reply_to: prepared.inReplyTo } : {}),
    references: prepared.references,
    ...(prepared.tracking ? { tracking: prepared.tracking } : {}),
  };
  const record: ScheduleRecord = {
    ...content,
    id,
    grant_id: grant.id,
    application_id: grant.application_id,
    status: 'pending',
    send_at: input.send_at,
    message_id: messageId,
    ...(draftId ? { draft_id: draftId } : {}),
    request_id: requestId,
    attempts: 0,
    created_at: now,
    updated_at: now,
  };
  // The draft shares the schedule's contents (the schedule removes them once closed).
  const draft: DraftRecord | undefined = draftId
    ? {
        id: draftId,
        grant_id: grant.id,
        ...(content.thread_id ? { thread_id: content.thread_id } : {}),
        ...(content.reply_to_message_id ? { reply_to_message_id: content.reply_to_message_id } : {}),
        subject: content.subject,
        from: content.from,
        to: content.to,
        cc: content.cc,
        bcc: content.bcc,
        reply_to: content.reply_to,
        body: content.body,
        ...(content.body_key ? { body_key: content.body_key } : {}),
        body_size: size,
        is_plaintext: content.is_plaintext,
        starred: content.starred,
        attachments,
        metadata: content.metadata,
        custom_headers: content.custom_headers,
        tracking_options: tracking,
        schedule_id: id,
        created_at: now,
        updated_at: now,
        version: 1,
      }
    : undefined;

  const firing: Firing = {
    kind: 'scheduled-send',
    schedule_id: id,
    grant_id: grant.id,
    application_id: grant.application_id,
    send_at: input.send_at,
  };
  const afterCommit = await armFiring(firing, now);
  const outbox: OutboxEntry[] = draft?.thread_id ? [threadRefreshJob(grant, draft.thread_id)] : [];
  await schedules.insertSchedule(record, [...uploaded, ...(draft ? draftInsertItems(draft) : [])], outbox);
  if (draft?.thread_id) await refreshThreadNow(grant.id, draft.thread_id);
  await afterCommit();
  return scheduledMessageView(record, prepared.body);
}

type SendContext = { files: UploadedFile[]; idempotencyKey?: string; requestId: string };
/** A provider's send of a message now: its answer, and whether it replays an earlier request with the same Idempotency-Key. */
export type SendNow = (
  grant: GrantRecord,
  input: OutgoingInput,
  context: SendContext,
) => Promise<{ result: MessageView; replayed: boolean }>;

/**
 * POST .../messages/send: now through the provider's `sendNow`, or scheduled with `send_at` in this
 * store (sent when due through the provider's ScheduledSending). Both honour an Idempotency-Key: a
 * retried scheduling request answers the schedule it created. `noDraftsFor`: the providers (in words)
 * that keep no scheduled send's draft, so `use_draft` answers 400.
 */
export function sendOrScheduleWith(sendNow: SendNow, noDraftsFor?: string) {
  return async (grant: GrantRecord, input: OutgoingInput, context: SendContext) => {
    const { send_at: sendAt } = input;
    if (sendAt === undefined) {
      if (input.use_draft)
        throw new InvalidRequestError(
          "'use_draft' applies only to a scheduled send: give 'send_at' too, or leave 'use_draft' out",
        );
      const { use_draft: _ignored, ...now } = input;
      return { ...(await sendNow(grant, now, context)), scheduled: false };
    }
    if (input.use_draft && noDraftsFor)
      throw new InvalidRequestError(
        `'use_draft' is not available for ${noDraftsFor} grants: the message is scheduled without a draft`,
      );
    const outcome = await withIdempotency(
      grant,
      context.idempotencyKey,
      () => requestHash(input, context.files),
      () => scheduleMessage(grant, { ...input, send_at: sendAt }, context.files, context.requestId),
      async (scheduleId) => scheduledSendView(await requireSchedule(grant, scheduleId)),
      (view) => view.schedule_id,
    );
    return { ...outcome, scheduled: true };
  };
}

/** POST .../messages/send for Agent Accounts (marked pure: a bundle that reads nothing else of it leaves the send path out). */
export const sendOrSchedule = /* @__PURE__ */ sendOrScheduleWith(sendMessage);
