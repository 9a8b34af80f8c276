import type { FromSchema } from 'json-schema-to-ts';
import { Limit, PageToken } from '#schemas/common';

/**
 * Room resources of a grant's organization (`GET /v3/grants/{grant_id}/resources`): the rooms its
 * directory lists (provider A's Admin SDK calendar resources, provider B's places). Field names follow
 * the published contract; `name` is the room's display name, as the contract's example shows it.
 */
export const ListResourcesQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { limit: Limit, page_token: PageToken },
} as const;
export type ListResourcesQuery = FromSchema<typeof ListResourcesQuery>;

export const RoomResourceObject = {
  type: 'object',
  required: ['object', 'grant_id', 'email', 'name'],
  properties: {
    object: { type: 'string', enum: ['room_resource'] },
    grant_id: { type: 'string' },
    email: { type: 'string' },
    name: { type: 'string' },
    capacity: { type: 'integer' },
    building: { type: 'string' },
    floor_name: { type: 'string' },
    floor_number: { type: 'integer' },
    floor_section: { type: 'string' },
  },
} as const;
