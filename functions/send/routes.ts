import { CancelScheduleResult, ListSchedulesQuery, ScheduleObject, SendMessageBody, SendMessageResult } from '#schemas/mail';
import type { RouteTable } from '#shared/http/route';

export const JSON_LIMIT = 3 * 1024 * 1024;
export const MULTIPART_LIMIT = 25 * 1024 * 1024;
export const MULTIPART_HINT =
  "send larger messages as multipart/form-data: a 'message' part holding this JSON without the attachments, plus one file part per attachment";

/**
 * Sending, now or scheduled, and the scheduled sends (its own function: it bundles MIME
 * composition, the mail transports and the EventBridge Scheduler client).
 */
export const routes = {
  sendMessage: {
    method: 'POST',
    path: '/v3/grants/{grant_id}/messages/send',
    summary:
      'Send a message now (200), or with send_at schedule it (202; schedule_id in data). JSON, or multipart/form-data for large attachments; honours Idempotency-Key',
    body: SendMessageBody,
    maxBodyBytes: JSON_LIMIT,
    maxBodyHint: MULTIPART_HINT,
    multipartMaxBytes: MULTIPART_LIMIT,
    response: SendMessageResult,
  },
  listSchedules: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/messages/schedules',
    summary: 'Scheduled messages, sent and unsent, newest first',
    query: ListSchedulesQuery,
    response: ScheduleObject,
    responseKind: 'list',
  },
  getSchedule: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/messages/schedules/{schedule_id}',
    summary: 'One scheduled message',
    response: ScheduleObject,
  },
  cancelSchedule: {
    method: 'DELETE',
    path: '/v3/grants/{grant_id}/messages/schedules/{schedule_id}',
    summary: 'Cancel a scheduled message, until 10 seconds before its send_at (409 afterwards, or once sent, failed or cancelled)',
    response: CancelScheduleResult,
  },
} as const satisfies RouteTable;
