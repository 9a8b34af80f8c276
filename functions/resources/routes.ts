import { ListResourcesQuery, RoomResourceObject } from '#schemas/resources';
import type { RouteTable } from '#shared/http/route';

/** Room resources of a grant's organization, from its provider's directory. */
export const routes = {
  listRoomResources: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/resources',
    summary: "Rooms of the grant's organization (provider A's calendar resources, provider B's places; none elsewhere)",
    query: ListResourcesQuery,
    response: RoomResourceObject,
    responseKind: 'list',
    select: true,
  },
} as const satisfies RouteTable;
