import type { ListResourcesQuery } from '#schemas/resources';
import { decodeProviderCursor, encodeProviderCursor, invalidPageToken } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { ForbiddenError } from '#shared/errors';
import { GraphGoneError, graphClientOf } from '#shared/microsoft/client';
import type { Page, RoomResource, RoomResourcesProvider } from '#shared/providers/contract';

/**
 * Provider B's rooms: the tenant's places of type room (Graph's `GET /places/microsoft.graph.room`),
 * readable with `Place.Read.All`. A grant without it (nor application permissions, `.default`) is
 * answered 403 naming the permission, before Graph is called. Page tokens wrap Graph's nextLink,
 * bound to the grant and to this listing. Graph keeps no floor section: `floor_section` is left out.
 */

export const PLACE_SCOPE = 'Place.Read.All';
const READS_PLACES = /(^|\/)Place\.Read(Write)?\.All$/i;
const ROOMS_PATH = '/v1.0/places/microsoft.graph.room';
const SCOPE_PREFIX = 'graph-rooms';

/** A room as Graph answers it (the fields read here). */
interface GraphRoom {
  id: string;
  displayName?: string | null;
  emailAddress?: string | null;
  capacity?: number | null;
  building?: string | null;
  floorLabel?: string | null;
  floorNumber?: number | null;
}

function roomFromGraph(grant: GrantRecord, r: GraphRoom & { emailAddress: string }): RoomResource {
  return {
    object: 'room_resource',
    grant_id: grant.id,
    email: r.emailAddress,
    name: r.displayName ?? r.emailAddress,
    ...(typeof r.capacity === 'number' ? { capacity: r.capacity } : {}),
    ...(r.building ? { building: r.building } : {}),
    ...(r.floorLabel ? { floor_name: r.floorLabel } : {}),
    ...(typeof r.floorNumber === 'number' ? { floor_number: r.floorNumber } : {}),
  };
}

/** The nextLink a page token of ours holds, if it continues this grant's room listing. */
function continuation(grant: GrantRecord, pageToken: string): string {
  const link = decodeProviderCursor(pageToken, `${SCOPE_PREFIX}:${grant.id}`);
  let path: string;
  try {
    path = new URL(link).pathname;
  } catch {
    throw invalidPageToken();
  }
  if (!/^\/v1\.0\/places\/(microsoft\.graph\.)?room$/i.test(path)) throw invalidPageToken();
  return link;
}

async function listGraphRooms(
  grant: GrantRecord,
  query: ListResourcesQuery,
  limit: number,
): Promise<Page<RoomResource>> {
  if (!grant.scope.some((s) => s.endsWith('.default') || READS_PLACES.test(s)))
    throw new ForbiddenError(
      `Listing room resources of a microsoft grant needs the permission ${PLACE_SCOPE}, which this grant was not given; authenticate the account again with it (an administrator consents to it for the tenant)`,
    );
  const client = await graphClientOf(grant);
  let page;
  try {
    page = await client.page<GraphRoom>(
      query.page_token ? continuation(grant, query.page_token) : { path: ROOMS_PATH, query: { $top: limit } },
    );
  } catch (error) {
    if (error instanceof GraphGoneError && query.page_token) throw invalidPageToken();
    throw error;
  }
  return {
    items: page.value
      .filter((r): r is GraphRoom & { emailAddress: string } => !!r.emailAddress)
      .map((r) => roomFromGraph(grant, r)),
    ...(page.nextLink ? { nextCursor: encodeProviderCursor(`${SCOPE_PREFIX}:${grant.id}`, page.nextLink) } : {}),
  };
}

export const graphRooms: RoomResourcesProvider = { list: listGraphRooms };
