import { SelectImapQuery, SelectQuery } from '#schemas/common';
import { CreateDraftBody, DraftObject, ListDraftsQuery, UpdateDraftBody } from '#schemas/mail';
import type { RouteTable } from '#shared/http/route';
import { JSON_LIMIT, MULTIPART_HINT, MULTIPART_LIMIT } from '../send/routes';

export const routes = {
  listDrafts: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/drafts',
    summary: 'List drafts, newest first',
    query: ListDraftsQuery,
    response: DraftObject,
    responseKind: 'list',
    select: true,
  },
  createDraft: {
    method: 'POST',
    path: '/v3/grants/{grant_id}/drafts',
    summary: 'Create a draft (JSON, or multipart/form-data for large attachments)',
    body: CreateDraftBody,
    maxBodyBytes: JSON_LIMIT,
    maxBodyHint: MULTIPART_HINT,
    multipartMaxBytes: MULTIPART_LIMIT,
    response: DraftObject,
  },
  getDraft: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/drafts/{draft_id}',
    summary: 'Get one draft',
    query: SelectImapQuery,
    response: DraftObject,
    select: true,
  },
  updateDraft: {
    method: 'PUT',
    path: '/v3/grants/{grant_id}/drafts/{draft_id}',
    summary: 'Update a draft (fields not sent are kept; nested objects are replaced)',
    query: SelectQuery,
    body: UpdateDraftBody,
    maxBodyBytes: JSON_LIMIT,
    maxBodyHint: MULTIPART_HINT,
    multipartMaxBytes: MULTIPART_LIMIT,
    response: DraftObject,
    select: true,
  },
  deleteDraft: {
    method: 'DELETE',
    path: '/v3/grants/{grant_id}/drafts/{draft_id}',
    summary: 'Delete a draft for good',
    responseKind: 'empty',
  },
} as const satisfies RouteTable;
