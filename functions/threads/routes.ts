import { SelectSharedQuery, SharedQuery } from '#schemas/common';
import { ListThreadsQuery, ThreadObject, UpdateThreadBody } from '#schemas/mail';
import type { RouteTable } from '#shared/http/route';

export const routes = {
  listThreads: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/threads',
    summary: 'List threads, most recent activity first, with filters',
    query: ListThreadsQuery,
    response: ThreadObject,
    responseKind: 'list',
    select: true,
  },
  getThread: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/threads/{thread_id}',
    summary: 'Get one thread with its latest message',
    query: SelectSharedQuery,
    response: ThreadObject,
    select: true,
  },
  updateThread: {
    method: 'PUT',
    path: '/v3/grants/{grant_id}/threads/{thread_id}',
    summary: 'Update unread, starred or folders of every message of the thread',
    query: SelectSharedQuery,
    body: UpdateThreadBody,
    response: ThreadObject,
    select: true,
  },
  deleteThread: {
    method: 'DELETE',
    path: '/v3/grants/{grant_id}/threads/{thread_id}',
    summary: 'Move every message of the thread to Trash',
    query: SharedQuery,
    responseKind: 'empty',
  },
} as const satisfies RouteTable;
