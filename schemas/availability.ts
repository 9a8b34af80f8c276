import type { FromSchema } from 'json-schema-to-ts';
import { safeInteger, UnixSeconds } from '#schemas/common';

/**
 * Free/busy and availability (shared/availability). Field names follow the published contract;
 * limits our spec and issue set (60-day window, 50 participants, 5–1440-minute slots) are in the
 * schema where ajv can say them, and in shared/availability/service.ts where they need the request.
 */
const Email = { type: 'string', minLength: 3, maxLength: 254 } as const;
const Minutes = (minimum: number, maximum: number, description: string) =>
  ({ type: 'integer', minimum, maximum, description }) as const;

export const OpenHoursObject = {
  type: 'object',
  additionalProperties: false,
  required: ['days', 'timezone', 'start', 'end'],
  properties: {
    // Only bounded to safe integers: the engine names a day outside 0–6 together with the other problems of the hours.
    days: {
      type: 'array',
      minItems: 1,
      maxItems: 7,
      items: safeInteger(),
      description: 'Days of the week: 0 = Sunday … 6 = Saturday.',
    },
    timezone: { type: 'string', minLength: 1, maxLength: 64, description: 'IANA time zone the hours are in.' },
    start: { type: 'string', minLength: 1, maxLength: 5, description: '`H:MM` (24-hour), e.g. `9:00`.' },
    end: { type: 'string', minLength: 1, maxLength: 5, description: '`H:MM` (24-hour), up to `24:00`.' },
    exdates: {
      type: 'array',
      maxItems: 366,
      items: { type: 'string', maxLength: 10 },
      description: 'Local dates (`YYYY-MM-DD`) without open hours.',
    },
  },
} as const;
export type OpenHoursObject = FromSchema<typeof OpenHoursObject>;

// ---- free/busy -------------------------------------------------------------------------------

export const FreeBusyBody = {
  type: 'object',
  additionalProperties: false,
  required: ['start_time', 'end_time', 'emails'],
  properties: {
    start_time: UnixSeconds,
    end_time: UnixSeconds,
    emails: {
      type: 'array',
      minItems: 1,
      maxItems: 50,
      items: Email,
      description: 'Addresses of grants of the calling application.',
    },
    tentative_as_busy: {
      type: 'boolean',
      description: 'Whether events answered `maybe` count as busy (default true).',
    },
  },
} as const;
export type FreeBusyBody = FromSchema<typeof FreeBusyBody>;

export const FreeBusyObject = {
  type: 'object',
  required: ['email', 'object'],
  properties: {
    email: { type: 'string' },
    object: { type: 'string', enum: ['free_busy', 'error'] },
    time_slots: {
      type: 'array',
      items: {
        type: 'object',
        required: ['start_time', 'end_time', 'status', 'object'],
        properties: {
          start_time: { type: 'integer' },
          end_time: { type: 'integer' },
          status: { type: 'string', enum: ['busy'] },
          object: { type: 'string', enum: ['time_slot'] },
        },
      },
    },
    error: { type: 'string', description: 'Why this address has no free/busy (object `error`).' },
  },
} as const;

// ---- availability ----------------------------------------------------------------------------

export const AVAILABILITY_METHODS = ['collective', 'max-availability', 'max-fairness'] as const;

export const AvailabilityRules = {
  type: 'object',
  additionalProperties: false,
  properties: {
    availability_method: { type: 'string', enum: AVAILABILITY_METHODS, description: 'Default max-availability.' },
    buffer: {
      type: 'object',
      additionalProperties: false,
      properties: {
        before: Minutes(0, 120, 'Minutes kept free before each busy event (multiple of 5).'),
        after: Minutes(0, 120, 'Minutes kept free after each busy event (multiple of 5).'),
      },
    },
    default_open_hours: { type: 'array', maxItems: 50, items: OpenHoursObject },
    round_robin_group_id: {
      type: 'string',
      minLength: 1,
      maxLength: 256,
      description: 'Events whose metadata `key5` holds this value count for round-robin order.',
    },
    tentative_as_busy: {
      type: 'boolean',
      description: 'Whether events answered `maybe` count as busy (default true).',
    },
  },
} as const;

export const AvailabilityParticipant = {
  type: 'object',
  additionalProperties: false,
  required: ['email'],
  properties: {
    email: Email,
    grant_id: {
      type: 'string',
      minLength: 1,
      maxLength: 300,
      description: 'The grant, when its address alone is not enough.',
    },
    calendar_ids: {
      type: 'array',
      minItems: 1,
      maxItems: 20,
      items: { type: 'string', minLength: 1, maxLength: 300 },
      description: 'Calendars to read (default `["primary"]`).',
    },
    open_hours: { type: 'array', maxItems: 50, items: OpenHoursObject },
  },
} as const;

export const AvailabilityBody = {
  type: 'object',
  additionalProperties: false,
  required: ['start_time', 'end_time', 'duration_minutes', 'participants'],
  properties: {
    start_time: UnixSeconds,
    end_time: UnixSeconds,
    duration_minutes: Minutes(5, 1440, 'Length of each slot.'),
    interval_minutes: Minutes(5, 1440, 'Minutes between slot starts (default: the duration).'),
    round_to: Minutes(5, 60, 'Slots start on multiples of this many minutes (multiple of 5, default 15).'),
    participants: { type: 'array', minItems: 1, maxItems: 50, items: AvailabilityParticipant },
    availability_rules: AvailabilityRules,
  },
} as const;
export type AvailabilityBody = FromSchema<typeof AvailabilityBody>;

export const TimeSlotObject = {
  type: 'object',
  required: ['emails', 'start_time', 'end_time'],
  properties: {
    emails: { type: 'array', items: { type: 'string' } },
    start_time: { type: 'integer' },
    end_time: { type: 'integer' },
  },
} as const;

export const AvailabilityObject = {
  type: 'object',
  required: ['time_slots', 'order'],
  properties: {
    time_slots: { type: 'array', items: TimeSlotObject },
    order: {
      type: 'array',
      items: { type: 'string' },
      description: 'Round-robin order: fewest counted events first (empty for collective).',
    },
  },
} as const;
