import type { FromSchema } from 'json-schema-to-ts';
import { EmailAddress, Limit, PageToken, Select, safeInteger } from '#schemas/common';
import { Metadata } from '#schemas/mail';

/**
 * Events of a calendar. Field names follow the published contract; `when` is one of `timespan`,
 * `datespan` (end date exclusive) or `date`, told by `object` or, when it is left out, by the fields
 * given. Times are Unix seconds, zones IANA names.
 */
/** The kinds of `when` (an event's time), its statuses, and a participant's answers: the one list of each (shared/calendar/types.ts types them). */
export const WHEN_OBJECTS = ['timespan', 'datespan', 'date'] as const;
export const EVENT_STATUSES = ['confirmed', 'maybe', 'cancelled'] as const;
export const PARTICIPANT_STATUSES = ['yes', 'no', 'maybe', 'noreply'] as const;

const Zone = {
  type: 'string',
  minLength: 1,
  maxLength: 64,
  description: 'IANA time zone, e.g. America/New_York.',
} as const;
const DateString = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'YYYY-MM-DD' } as const;
const Seconds = { type: 'integer', minimum: 0, maximum: 32503680000 } as const;

export const WhenInput = {
  type: 'object',
  additionalProperties: false,
  properties: {
    object: { type: 'string', enum: WHEN_OBJECTS },
    start_time: Seconds,
    end_time: Seconds,
    start_timezone: Zone,
    end_timezone: Zone,
    start_date: DateString,
    end_date: DateString,
    date: DateString,
  },
} as const;

const Person = {
  type: 'object',
  additionalProperties: false,
  required: ['email'],
  properties: { email: EmailAddress, name: { type: 'string', maxLength: 256 } },
} as const;

const ParticipantInput = {
  type: 'object',
  additionalProperties: false,
  required: ['email'],
  properties: {
    email: EmailAddress,
    name: { type: 'string', maxLength: 256 },
    comment: { type: 'string', maxLength: 1024 },
    phone_number: { type: 'string', maxLength: 64 },
    status: { type: 'string', enum: PARTICIPANT_STATUSES },
  },
} as const;

const Reminders = {
  type: 'object',
  additionalProperties: false,
  properties: {
    use_default: { type: 'boolean' },
    overrides: {
      type: ['array', 'null'],
      maxItems: 5,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['reminder_minutes'],
        properties: {
          reminder_minutes: { type: 'integer', minimum: 0, maximum: 40320 },
          reminder_method: { type: 'string', enum: ['popup', 'email', 'display', 'sound'] },
        },
      },
    },
  },
} as const;

/** Conferencing details of an event (also what a scheduler configuration gives its bookings' events). */
export const Conferencing = {
  type: 'object',
  additionalProperties: false,
  properties: {
    provider: {
      type: 'string',
      enum: [
        'Google Meet',
        'GoToMeeting',
        'Microsoft Teams',
        'Skype for Business',
        'Skype for Consumer',
        'WebEx',
        'Zoom Meeting',
        'unknown',
      ],
    },
    details: {
      type: 'object',
      additionalProperties: false,
      properties: {
        url: { type: 'string', maxLength: 2048 },
        meeting_code: { type: 'string', maxLength: 256 },
        password: { type: 'string', maxLength: 256 },
        pin: { type: 'string', maxLength: 256 },
        phone: { type: 'array', maxItems: 20, items: { type: 'string', maxLength: 64 } },
      },
    },
    autocreate: { type: 'object' },
  },
} as const;

const Recurrence = {
  type: 'array',
  maxItems: 100,
  items: { type: 'string', minLength: 1, maxLength: 2000 },
  description: 'iCalendar lines: one RRULE, any EXDATE and RDATE lines.',
} as const;

const EventFields = {
  title: { type: 'string', maxLength: 1024 },
  description: { type: ['string', 'null'], maxLength: 8192 },
  location: { type: ['string', 'null'], maxLength: 1024 },
  when: WhenInput,
  busy: { type: 'boolean' },
  participants: { type: 'array', maxItems: 200, items: ParticipantInput },
  resources: { type: 'array', maxItems: 20, items: Person },
  conferencing: Conferencing,
  reminders: Reminders,
  recurrence: Recurrence,
  visibility: { type: 'string', enum: ['default', 'public', 'private'] },
  hide_participants: { type: 'boolean' },
  capacity: safeInteger(-1),
  metadata: Metadata,
  status: { type: 'string', enum: EVENT_STATUSES },
} as const;

export const CreateEventBody = {
  type: 'object',
  additionalProperties: false,
  required: ['when'],
  properties: EventFields,
} as const;
export type CreateEventBody = FromSchema<typeof CreateEventBody>;
export const UpdateEventBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: EventFields,
} as const;
export type UpdateEventBody = FromSchema<typeof UpdateEventBody>;

const CalendarIdParam = {
  type: 'string',
  minLength: 1,
  maxLength: 256,
  description: 'The calendar, or `primary`.',
} as const;

export const ListEventsQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['calendar_id'],
  properties: {
    calendar_id: CalendarIdParam,
    limit: Limit,
    page_token: PageToken,
    show_cancelled: { type: 'boolean' },
    title: { type: 'string', minLength: 1, maxLength: 256 },
    description: { type: 'string', minLength: 1, maxLength: 256 },
    location: { type: 'string', minLength: 1, maxLength: 256 },
    ical_uid: { type: 'string', minLength: 1, maxLength: 1024 },
    start: Seconds,
    end: Seconds,
    master_event_id: { type: 'string', minLength: 1, maxLength: 256 },
    metadata_pair: {
      type: 'string',
      minLength: 3,
      maxLength: 600,
      description: '`key:value` with key one of key1..key5.',
    },
    busy: { type: 'boolean' },
    updated_before: Seconds,
    updated_after: Seconds,
    attendees: { type: 'string', minLength: 3, maxLength: 4000, description: 'Comma-separated email addresses.' },
    event_type: { type: 'string', maxLength: 64 },
    expand_recurring: { type: 'boolean' },
    tentative_as_busy: { type: 'boolean' },
    select: Select,
  },
} as const;
export type ListEventsQuery = FromSchema<typeof ListEventsQuery>;

export const EventIdQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['calendar_id'],
  properties: {
    calendar_id: CalendarIdParam,
    select: Select,
    format: { type: 'string', enum: ['json', 'ics'], description: '`ics`: the event as iCalendar (text/calendar).' },
  },
} as const;
export type EventIdQuery = FromSchema<typeof EventIdQuery>;

export const EventChangeQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['calendar_id'],
  properties: {
    calendar_id: CalendarIdParam,
    notify_participants: {
      type: 'boolean',
      description: 'Email participants an iCalendar invitation or cancellation (default true).',
    },
  },
} as const;
export type EventChangeQuery = FromSchema<typeof EventChangeQuery>;

export const CalendarIdQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['calendar_id'],
  properties: { calendar_id: CalendarIdParam },
} as const;
export type CalendarIdQuery = FromSchema<typeof CalendarIdQuery>;

export const SendRsvpBody = {
  type: 'object',
  additionalProperties: false,
  required: ['status'],
  properties: {
    status: { type: 'string', enum: ['yes', 'no', 'maybe'] },
    comment: { type: 'string', maxLength: 1024 },
  },
} as const;
export type SendRsvpBody = FromSchema<typeof SendRsvpBody>;

export const SendRsvpResult = {
  type: 'object',
  properties: {
    send_ics_error: { type: 'object', properties: { type: { type: 'string' }, message: { type: 'string' } } },
  },
} as const;

const WhenObject = {
  type: 'object',
  required: ['object'],
  properties: {
    object: { type: 'string', enum: WHEN_OBJECTS },
    start_time: { type: 'integer' },
    end_time: { type: 'integer' },
    start_timezone: { type: 'string' },
    end_timezone: { type: 'string' },
    start_date: { type: 'string' },
    end_date: { type: 'string' },
    date: { type: 'string' },
  },
} as const;

const PersonObject = {
  type: 'object',
  required: ['email'],
  properties: { email: { type: 'string' }, name: { type: 'string' } },
} as const;

export const EventObject = {
  type: 'object',
  required: [
    'id',
    'object',
    'grant_id',
    'calendar_id',
    'ical_uid',
    'when',
    'status',
    'busy',
    'participants',
    'metadata',
    'created_at',
    'updated_at',
  ],
  properties: {
    id: { type: 'string' },
    object: { type: 'string', enum: ['event'] },
    grant_id: { type: 'string' },
    calendar_id: { type: 'string' },
    ical_uid: { type: 'string' },
    html_link: { type: 'string' },
    title: { type: 'string' },
    description: { type: ['string', 'null'] },
    location: { type: ['string', 'null'] },
    when: WhenObject,
    busy: { type: 'boolean' },
    status: { type: 'string', enum: EVENT_STATUSES },
    visibility: { type: 'string' },
    read_only: { type: 'boolean' },
    hide_participants: { type: 'boolean' },
    capacity: { type: 'integer' },
    organizer: PersonObject,
    creator: PersonObject,
    participants: {
      type: 'array',
      items: {
        type: 'object',
        required: ['email', 'status'],
        properties: {
          email: { type: 'string' },
          name: { type: 'string' },
          status: { type: 'string' },
          comment: { type: 'string' },
          phone_number: { type: 'string' },
        },
      },
    },
    resources: { type: 'array', items: PersonObject },
    conferencing: { type: 'object' },
    reminders: { type: 'object' },
    recurrence: { type: 'array', items: { type: 'string' } },
    master_event_id: { type: 'string' },
    original_start_time: { type: 'integer' },
    metadata: { type: 'object', additionalProperties: { type: 'string' } },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

/**
 * `GET /events/import`: a calendar's events in a window as they are stored, for copying them into
 * another system: single events, each series once as its master (its `recurrence` gives the rest),
 * and the occurrences changed apart from their series. Occurrences are never expanded. `start`
 * defaults to now and `end` to 30 days after `start`; both in Unix seconds.
 */
export const ImportEventsQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['calendar_id'],
  properties: {
    calendar_id: CalendarIdParam,
    start: Seconds,
    end: Seconds,
    limit: Limit,
    page_token: PageToken,
    select: Select,
  },
} as const;
export type ImportEventsQuery = FromSchema<typeof ImportEventsQuery>;
