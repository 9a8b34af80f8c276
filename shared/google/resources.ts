import type { ListResourcesQuery } from '#schemas/resources';
import { decodeProviderCursor, encodeProviderCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { ForbiddenError } from '#shared/errors';
import { googleClientOf } from '#shared/google/client';
import type { Page, RoomResource, RoomResourcesProvider } from '#shared/providers/contract';

/**
 * Provider A's rooms: the Admin SDK Directory's calendar resources of the account's Workspace
 * (`resources.calendars.list` for the `my_customer` alias), those of category CONFERENCE_ROOM. The
 * directory is readable with its own scope, which a grant asks for at sign-in: without it the answer
 * is a 403 naming the scope, before Google is called. Google keeps a room's building as an ID
 * (`buildingId`), answered as `building`; its floor is a name, answered as `floor_name` and, when it
 * is a number, as `floor_number` too.
 */

export const DIRECTORY_RESOURCE_SCOPE = 'https://www.googleapis.com/auth/admin.directory.resource.calendar.readonly';
/** The read-write directory scope reads too. */
const READING_SCOPES = new Set([
  DIRECTORY_RESOURCE_SCOPE,
  'https://www.googleapis.com/auth/admin.directory.resource.calendar',
]);
const SCOPE = 'gdir-rooms';

/** A calendar resource as Admin SDK Directory v1 answers it (the fields read here). */
interface GoogleCalendarResource {
  resourceId?: string;
  resourceName?: string;
  resourceEmail?: string;
  resourceCategory?: string;
  capacity?: number;
  buildingId?: string;
  floorName?: string;
  floorSection?: string;
}

function roomFromGoogle(grant: GrantRecord, r: GoogleCalendarResource & { resourceEmail: string }): RoomResource {
  const floor = r.floorName?.trim();
  return {
    object: 'room_resource',
    grant_id: grant.id,
    email: r.resourceEmail,
    name: r.resourceName ?? r.resourceEmail,
    ...(r.capacity !== undefined ? { capacity: r.capacity } : {}),
    ...(r.buildingId ? { building: r.buildingId } : {}),
    ...(floor ? { floor_name: floor } : {}),
    ...(floor && /^-?\d{1,4}$/.test(floor) ? { floor_number: Number(floor) } : {}),
    ...(r.floorSection ? { floor_section: r.floorSection } : {}),
  };
}

async function listGoogleRooms(
  grant: GrantRecord,
  query: ListResourcesQuery,
  limit: number,
): Promise<Page<RoomResource>> {
  if (!grant.scope.some((s) => READING_SCOPES.has(s)))
    throw new ForbiddenError(
      `Listing room resources of a google grant needs the scope ${DIRECTORY_RESOURCE_SCOPE}, which this grant was not given; authenticate the account again with it (and as a Workspace administrator or a user the administrator let read calendar resources)`,
    );
  const client = await googleClientOf(grant);
  const page = await client
    .call<{ items?: GoogleCalendarResource[]; nextPageToken?: string }>({
      api: 'directory',
      path: '/admin/directory/v1/customer/my_customer/resources/calendars',
      query: {
        maxResults: limit,
        query: 'resourceCategory=CONFERENCE_ROOM',
        ...(query.page_token ? { pageToken: decodeProviderCursor(query.page_token, SCOPE) } : {}),
      },
    })
    .catch((error: unknown) => {
      // The scope is there, the privilege is not: the account is not one that may read the directory.
      if (error instanceof ForbiddenError)
        throw new ForbiddenError(
          `The account of this google grant may not read its Workspace's calendar resources (${error.message}): a Workspace administrator, or a user the administrator let read calendar resources, must authenticate`,
        );
      throw error;
    });
  return {
    items: (page.items ?? [])
      .filter((r): r is GoogleCalendarResource & { resourceEmail: string } => !!r.resourceEmail)
      .map((r) => roomFromGoogle(grant, r)),
    ...(page.nextPageToken ? { nextCursor: encodeProviderCursor(SCOPE, page.nextPageToken) } : {}),
  };
}

export const googleRooms: RoomResourcesProvider = { list: listGoogleRooms };
