import { Grant, ListGrantsQuery, UpdateGrantBody } from '#schemas/grants';
import { SelectQuery } from '#schemas/common';
import type { RouteTable } from '#shared/http/route';

/** Grants: every route this function serves (its httpApi events in serverless.yml are generated from this table). */
export const routes = {
  listGrants: {
    method: 'GET',
    path: '/v3/grants',
    summary: 'List the grants of the calling application',
    query: ListGrantsQuery,
    response: Grant,
    responseKind: 'list',
    select: true,
  },
  getGrant: {
    method: 'GET',
    path: '/v3/grants/{grant_id}',
    summary: 'Get one grant',
    query: SelectQuery,
    response: Grant,
    select: true,
    allowBlockedGrant: true,
  },
  updateGrant: {
    method: 'PATCH',
    path: '/v3/grants/{grant_id}',
    summary: 'Update external_id or blocked',
    body: UpdateGrantBody,
    response: Grant,
    allowBlockedGrant: true,
  },
  deleteGrant: {
    method: 'DELETE',
    path: '/v3/grants/{grant_id}',
    summary: 'Delete a grant and everything stored under it',
    responseKind: 'empty',
    allowBlockedGrant: true,
  },
} as const satisfies RouteTable;
