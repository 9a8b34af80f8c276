import { AttachmentObject, AttachmentQuery } from '#schemas/mail';
import type { RouteTable } from '#shared/http/route';

export const routes = {
  getAttachment: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/attachments/{attachment_id}',
    summary: 'Get the metadata of an attachment of a message or draft',
    query: AttachmentQuery,
    response: AttachmentObject,
  },
  downloadAttachment: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/attachments/{attachment_id}/download',
    summary:
      'Download an attachment of a message or draft (up to 4 MB in the response; larger ones redirect to a short-lived URL)',
    query: AttachmentQuery,
    responseKind: 'binary',
  },
} as const satisfies RouteTable;
