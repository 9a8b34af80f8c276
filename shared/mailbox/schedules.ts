import { removeContentsJob, removeContentsNow } from '#shared/mailbox/cleanup';
import { refreshThreadNow, threadRefreshJob } from '#shared/mailbox/thread-refresh';
import { deleteOneShotSchedule } from '#shared/aws/scheduler';
import { decodeBeforeCursor, encodeBeforeCursor } from '#shared/cursor';
import { draftRemoveItems, getDrafts } from '#shared/db/drafts';
import type { GrantRecord } from '#shared/db/grants';
import type { OutboxEntry } from '#shared/db/outbox';
import * as schedules from '#shared/db/schedules';
import type { ScheduleRecord } from '#shared/db/schedules';
import type { NamedItems } from '#shared/db/transact';
import { ConflictError, NotFoundError } from '#shared/errors';
import { parseId, type GrantId } from '#shared/ids';
import { logger } from '#shared/logger';
import { clock } from '#shared/time';

/**
 * Scheduled sends once scheduled: read, list, cancel, and what closing one without sending removes.
 * Apart from the scheduling itself (shared/mailbox/scheduled.ts), so that functions/schedules bundles
 * none of the MIME, transport and template code a send needs.
 */

/** DELETE is refused this close to send_at (the spec: at least 10 s before). */
export const CANCEL_WINDOW_SECONDS = 10;

const STATUS_DESCRIPTIONS: Record<schedules.ScheduleStatus, string> = {
  pending: `Waiting for its send_at time; it can be cancelled until ${CANCEL_WINDOW_SECONDS} seconds before`,
  sending: 'Being sent now',
  success: 'Sent; the message is in the Sent folder',
  failed: 'Not sent',
  cancelled: 'Cancelled; the message was not sent and never will be',
};

const statusOf = (record: ScheduleRecord) => ({
  code: record.status,
  description:
    record.status === 'failed' && record.reason ? `Not sent: ${record.reason}` : STATUS_DESCRIPTIONS[record.status],
});

/** The schedule object of GET .../messages/schedules. */
export function scheduleObject(record: ScheduleRecord) {
  return {
    schedule_id: record.id,
    object: 'schedule' as const,
    grant_id: record.grant_id,
    status: statusOf(record),
    send_at: record.send_at,
    close_time: record.send_at,
    ...(record.status === 'success' ? { message_id: record.message_id } : {}),
    ...(record.draft_id ? { draft_id: record.draft_id } : {}),
    ...(record.sent_at !== undefined ? { sent_at: record.sent_at } : {}),
    ...(record.reason ? { reason: record.reason } : {}),
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}

/** The contents of a draft or schedule that need not be kept once it is closed. */
const contentKeys = (record: { body_key?: string; attachments: { key: string }[] }) => [
  record.body_key,
  ...record.attachments.map((a) => a.key),
];

export async function requireSchedule(grant: GrantRecord, scheduleId: string): Promise<ScheduleRecord> {
  const id = parseId('schedule', scheduleId);
  const record = id ? await schedules.getSchedule(grant.id, id) : undefined;
  if (!record) throw new NotFoundError(`Scheduled message '${scheduleId}' not found`);
  return record;
}

export async function getScheduleObject(grant: GrantRecord, scheduleId: string) {
  return scheduleObject(await requireSchedule(grant, scheduleId));
}

/** Schedules of a grant, newest first (sent and unsent). */
export async function listScheduleObjects(grant: GrantRecord, query: { page_token?: string }, limit: number) {
  const before = query.page_token ? decodeBeforeCursor(query.page_token, 'schedules', 'schedule') : undefined;
  const page = await schedules.listSchedules(grant.id, { limit, before });
  return {
    items: page.items.map(scheduleObject),
    nextCursor: page.last ? encodeBeforeCursor('schedules', page.last) : undefined,
  };
}

/** What closing a schedule without sending removes: its draft (when still there) and its contents. */
export async function closingItems(grant: { id: GrantId; application_id: string }, record: ScheduleRecord) {
  const [draft] = record.draft_id ? await getDrafts(grant.id, [record.draft_id]) : [];
  const removal = removeContentsJob(grant, record.id, { blobs: contentKeys(record) });
  const outbox: OutboxEntry[] = [removal];
  if (draft?.thread_id) outbox.push(threadRefreshJob(grant, draft.thread_id));
  const items: NamedItems = draft ? draftRemoveItems(draft) : [];
  return {
    items,
    outbox,
    /** What the request does itself right after the commit (the committed jobs finish it otherwise). */
    after: async () => {
      await removeContentsNow(removal);
      if (draft?.thread_id) await refreshThreadNow(grant.id, draft.thread_id);
    },
  };
}

/**
 * Cancels a pending schedule until CANCEL_WINDOW_SECONDS before its send time (409 naming the state
 * otherwise). The record's state decides: once it says cancelled, no worker sends the message,
 * whether or not the EventBridge schedule could still be deleted.
 */
export async function cancelScheduledSend(grant: GrantRecord, scheduleId: string) {
  const record = await requireSchedule(grant, scheduleId);
  const refuse = (current: ScheduleRecord, now: number) => {
    if (current.status !== 'pending') {
      return new ConflictError(
        `The scheduled message cannot be cancelled: its status is '${current.status}' (${statusOf(current).description})`,
      );
    }
    return new ConflictError(
      `The scheduled message cannot be cancelled: it is sent at ${current.send_at}, ${Math.max(0, current.send_at - now)} seconds from now, and cancelling closes ${CANCEL_WINDOW_SECONDS} seconds before (status 'pending')`,
    );
  };
  const now = clock.nowSeconds();
  if (record.status !== 'pending' || record.send_at < now + CANCEL_WINDOW_SECONDS) throw refuse(record, now);
  const closing = await closingItems(grant, record);
  if (!(await schedules.cancelSchedule(record, now, CANCEL_WINDOW_SECONDS, closing.items, closing.outbox))) {
    throw refuse((await schedules.getSchedule(grant.id, record.id)) ?? record, clock.nowSeconds());
  }
  await closing.after();
  // Tidy: the schedule would otherwise fire into a worker that finds the record cancelled.
  await deleteOneShotSchedule(record.id).catch((error) =>
    logger.warn('scheduled send: cancelled, schedule left to fire into nothing', { schedule_id: record.id, error }),
  );
  const cancelled: ScheduleRecord = { ...record, status: 'cancelled', updated_at: now };
  delete cancelled.draft_id;
  return {
    message: 'The scheduled message was cancelled; it will not be sent',
    schedule_id: record.id,
    status: statusOf(cancelled),
  };
}
