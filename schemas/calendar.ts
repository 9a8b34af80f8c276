import type { FromSchema } from 'json-schema-to-ts';
import { Limit, PageToken, Select } from '#schemas/common';
import { Metadata } from '#schemas/mail';

/** Calendars of a grant (events come with their own schemas). Field names follow the published contract. */
const HexColor = { type: 'string', pattern: '^#[0-9A-Fa-f]{6}$', description: '#RRGGBB' } as const;
const TimeZone = {
  type: 'string',
  minLength: 1,
  maxLength: 64,
  description: 'An IANA time zone, e.g. Europe/Berlin.',
} as const;

const CalendarFields = {
  name: { type: 'string', minLength: 1, maxLength: 256 },
  description: { type: 'string', maxLength: 8192 },
  location: { type: 'string', maxLength: 1024 },
  timezone: TimeZone,
  hex_color: HexColor,
  hex_foreground_color: HexColor,
  metadata: Metadata,
} as const;

export const CalendarObject = {
  type: 'object',
  required: ['id', 'object', 'grant_id', 'name', 'timezone', 'is_primary', 'read_only', 'is_owned_by_user', 'metadata'],
  properties: {
    id: { type: 'string' },
    object: { type: 'string', enum: ['calendar'] },
    grant_id: { type: 'string' },
    ...CalendarFields,
    is_primary: { type: 'boolean' },
    read_only: { type: 'boolean' },
    is_owned_by_user: { type: 'boolean' },
    owner_email: { type: 'string' },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

export const CreateCalendarBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: CalendarFields,
} as const;
export type CreateCalendarBody = FromSchema<typeof CreateCalendarBody>;
export const UpdateCalendarBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: CalendarFields,
} as const;
export type UpdateCalendarBody = FromSchema<typeof UpdateCalendarBody>;

export const ListCalendarsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: Limit,
    page_token: PageToken,
    metadata_pair: {
      type: 'string',
      minLength: 3,
      maxLength: 600,
      description: '`key:value` with key one of key1..key5.',
    },
    select: Select,
  },
} as const;
export type ListCalendarsQuery = FromSchema<typeof ListCalendarsQuery>;
