import { SelectImapSharedFromQuery } from '#schemas/common';
import { DeleteMessageQuery, ListMessagesQuery, MessageIdQuery, MessageObject, UpdateMessageBody } from '#schemas/mail';
import type { RouteTable } from '#shared/http/route';

/** Messages of a grant (sending lives in functions/send, cleaning in functions/messages-clean). */
export const routes = {
  listMessages: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/messages',
    summary: 'List messages, newest first, with filters and full-text search',
    query: ListMessagesQuery,
    response: MessageObject,
    responseKind: 'list',
    select: true,
  },
  getMessage: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/messages/{message_id}',
    summary: 'Get one message (fields=include_headers adds headers, fields=raw_mime the raw MIME)',
    query: MessageIdQuery,
    response: MessageObject,
    select: true,
  },
  updateMessage: {
    method: 'PUT',
    path: '/v3/grants/{grant_id}/messages/{message_id}',
    summary: 'Update unread, starred, folders or metadata (nested objects are replaced)',
    query: SelectImapSharedFromQuery,
    body: UpdateMessageBody,
    response: MessageObject,
    select: true,
  },
  deleteMessage: {
    method: 'DELETE',
    path: '/v3/grants/{grant_id}/messages/{message_id}',
    summary: 'Move a message to Trash, or delete it for good with hard_delete=true',
    query: DeleteMessageQuery,
    responseKind: 'empty',
  },
} as const satisfies RouteTable;
