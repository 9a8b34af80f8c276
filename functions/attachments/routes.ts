import { AttachmentObject, AttachmentQuery } from '#schemas/mail';
import {
  AttachmentUploadSession,
  CompletedAttachmentUpload,
  CreateAttachmentUploadBody,
} from '#schemas/attachment-uploads';
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
  createAttachmentUpload: {
    method: 'POST',
    path: '/v3/grants/{grant_id}/attachment-uploads',
    summary:
      'Start a large attachment upload (up to 25 MB, or less as the provider allows): a presigned PUT straight to storage, valid one hour',
    body: CreateAttachmentUploadBody,
    status: 201,
    response: AttachmentUploadSession,
  },
  completeAttachmentUpload: {
    method: 'POST',
    path: '/v3/grants/{grant_id}/attachment-uploads/{attachment_id}/complete',
    summary:
      'Complete an upload once the file is PUT: checked (size, content type, limit), then usable by ID in a send or draft until the hour is over',
    response: CompletedAttachmentUpload,
  },
} as const satisfies RouteTable;
