import { SharedFromQuery } from '#schemas/common';
import { CleanMessagesBody, CleanedMessageObject } from '#schemas/mail';
import type { RouteTable } from '#shared/http/route';

/**
 * Cleaning message bodies into markdown: a function of its own, because it alone bundles the HTML
 * parsers (sanitize-html, turndown and theirs, about half a megabyte), which the other message
 * routes would otherwise compile at every cold start.
 */
export const routes = {
  cleanMessages: {
    method: 'PUT',
    path: '/v3/grants/{grant_id}/messages/clean',
    summary: 'Clean message bodies into readable markdown (quotes, signatures and noise removed)',
    query: SharedFromQuery,
    body: CleanMessagesBody,
    response: CleanedMessageObject,
    responseKind: 'list',
    tag: 'messages',
  },
} as const satisfies RouteTable;
