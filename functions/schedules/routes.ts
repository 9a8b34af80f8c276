import { CancelScheduleResult, ListSchedulesQuery, ScheduleObject } from '#schemas/mail';
import type { RouteTable } from '#shared/http/route';

/**
 * Scheduled sends, once scheduled: list, read, cancel. A function of their own, apart from
 * functions/send, whose MIME, transport and template code they never run.
 */
export const routes = {
  listSchedules: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/messages/schedules',
    summary: 'Scheduled messages, sent and unsent, newest first',
    query: ListSchedulesQuery,
    response: ScheduleObject,
    responseKind: 'list',
    tag: 'send',
  },
  getSchedule: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/messages/schedules/{schedule_id}',
    summary: 'One scheduled message',
    response: ScheduleObject,
    tag: 'send',
  },
  cancelSchedule: {
    method: 'DELETE',
    path: '/v3/grants/{grant_id}/messages/schedules/{schedule_id}',
    summary:
      'Cancel a scheduled message, until 10 seconds before its send_at (409 afterwards, or once sent, failed or cancelled)',
    response: CancelScheduleResult,
    tag: 'send',
  },
} as const satisfies RouteTable;
