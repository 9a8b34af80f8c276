import { FolderIdQuery, SharedFromQuery } from '#schemas/common';
import { CreateFolderBody, FolderObject, ListFoldersQuery, UpdateFolderBody } from '#schemas/mail';
import type { RouteTable } from '#shared/http/route';

export const routes = {
  listFolders: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/folders',
    summary: 'List folders (system folders first)',
    query: ListFoldersQuery,
    response: FolderObject,
    responseKind: 'list',
    select: true,
  },
  createFolder: {
    method: 'POST',
    path: '/v3/grants/{grant_id}/folders',
    summary: 'Create a folder',
    query: SharedFromQuery,
    body: CreateFolderBody,
    response: FolderObject,
  },
  getFolder: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/folders/{folder_id}',
    summary: 'Get one folder with its counts',
    query: FolderIdQuery,
    response: FolderObject,
    select: true,
  },
  updateFolder: {
    method: 'PUT',
    path: '/v3/grants/{grant_id}/folders/{folder_id}',
    summary: 'Rename, move or recolour a folder (system folders: colours only)',
    query: FolderIdQuery,
    body: UpdateFolderBody,
    response: FolderObject,
    select: true,
  },
  deleteFolder: {
    method: 'DELETE',
    path: '/v3/grants/{grant_id}/folders/{folder_id}',
    summary: 'Delete an empty custom folder',
    query: SharedFromQuery,
    responseKind: 'empty',
  },
} as const satisfies RouteTable;
