import { randomUUID } from 'node:crypto';
import { UnsupportedByFakeError } from './errors';
import type { GraphAnswer, GraphCall } from './mail';

/**
 * The tenant's rooms, as Graph's places API lists them (`GET /places/microsoft.graph.room`): every
 * user of the fake is in one tenant and sees the same rooms. Pages of `$top` (Graph's default is 100)
 * follow `$skip` in `@odata.nextLink`; the other query options are refused as not done by the fake.
 * Seeded with three rooms; tests add more with `add`.
 */

export interface Room {
  '@odata.type': '#microsoft.graph.room';
  id: string;
  displayName: string;
  emailAddress: string;
  nickname: string;
  capacity?: number;
  building?: string;
  floorNumber?: number;
  floorLabel?: string;
  label?: string;
  bookingType: 'standard' | 'reserved';
  isWheelChairAccessible: boolean;
  tags: string[];
  phone?: string;
}

export type NewRoom = Pick<Room, 'displayName' | 'emailAddress'> &
  Partial<Pick<Room, 'capacity' | 'building' | 'floorNumber' | 'floorLabel' | 'label' | 'bookingType' | 'tags'>>;

const SEEDED: NewRoom[] = [
  {
    displayName: 'Fjord',
    emailAddress: 'fjord@rooms.example.com',
    capacity: 10,
    building: 'Main',
    floorNumber: 3,
    floorLabel: 'Third',
  },
  { displayName: 'Glacier', emailAddress: 'glacier@rooms.example.com', capacity: 4, building: 'Main', floorNumber: 1 },
  {
    displayName: 'Tundra',
    emailAddress: 'tundra@rooms.example.com',
    capacity: 16,
    building: 'West',
    floorNumber: 0,
    floorLabel: 'G',
  },
];

const DEFAULT_TOP = 100;
const UNSUPPORTED = ['$filter', '$search', '$orderby', '$expand', '$count', '$select'];

export class PlaceState {
  rooms: Room[] = [];

  constructor() {
    this.reset();
  }

  add(room: NewRoom): Room {
    const added: Room = {
      '@odata.type': '#microsoft.graph.room',
      id: randomUUID(),
      nickname: room.displayName,
      bookingType: 'standard',
      isWheelChairAccessible: false,
      tags: [],
      ...room,
    };
    this.rooms.push(added);
    return added;
  }

  reset(): void {
    this.rooms = [];
    for (const room of SEEDED) this.add(room);
  }
}

/** The places operations the fake serves, by operationId, over one tenant's rooms. */
export function placeHandlers(places: PlaceState): Record<string, (call: GraphCall) => GraphAnswer> {
  return {
    place_ListPlaceAsRoom(call) {
      for (const option of UNSUPPORTED)
        if (call.query.has(option)) throw new UnsupportedByFakeError(`${option} on places`);
      const top = Number(call.query.get('$top') ?? DEFAULT_TOP);
      const skip = Number(call.query.get('$skip') ?? 0);
      const value = places.rooms.slice(skip, skip + top);
      const next =
        skip + top < places.rooms.length
          ? `${call.base}/places/microsoft.graph.room?$top=${top}&$skip=${skip + top}`
          : undefined;
      return {
        status: 200,
        body: {
          '@odata.context': `${call.base}/$metadata#places/microsoft.graph.room`,
          value,
          ...(next ? { '@odata.nextLink': next } : {}),
        },
      };
    },
  };
}
