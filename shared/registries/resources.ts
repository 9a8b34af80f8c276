import type { GrantRecord, Provider } from '#shared/db/grants';
import { googleRooms } from '#shared/google/resources';
import { graphRooms } from '#shared/microsoft/resources';
import type { RoomResourcesProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';
import { invalidPageToken } from '#shared/cursor';

/**
 * Agent Accounts, IMAP and CalDAV accounts have no directory of rooms (CalDAV's scheduling has no
 * listing of them), and Switchboard keeps none of its own: their list is empty, never invented.
 * A room is still booked on any grant by naming its address in an event's `resources`. An empty
 * list has no second page: any page token is one this API never gave.
 */
const noRooms: RoomResourcesProvider = {
  list: async (_grant, query) => {
    if (query.page_token !== undefined) throw invalidPageToken();
    return { items: [] };
  },
};

const registry: Partial<Record<Provider, RoomResourcesProvider>> = {
  agent: noRooms,
  imap: noRooms,
  icloud: noRooms,
  yahoo: noRooms,
  // Provider A's Workspace directory (Admin SDK calendar resources).
  google: googleRooms,
  // Provider B's tenant places (rooms).
  microsoft: graphRooms,
};

export const roomsOf = (grant: GrantRecord) => providerOf(registry, grant, 'Room resources');
