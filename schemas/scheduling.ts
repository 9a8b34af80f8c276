import type { FromSchema } from 'json-schema-to-ts';
import { AVAILABILITY_METHODS, OpenHoursObject, TimeSlotObject } from '#schemas/availability';
import { Limit, PageToken, UnixSeconds } from '#schemas/common';
import { Conferencing } from '#schemas/event';

/**
 * The scheduler: configurations (booking pages), sessions, availability and bookings. Field names
 * follow the published contract; limits are ours. A configuration of `type: "group"` offers group
 * events (fixed slots, each with a capacity) instead of free time.
 */
const Email = { type: 'string', minLength: 3, maxLength: 254 } as const;
const Name = { type: 'string', maxLength: 256 } as const;
const Text = (max: number) => ({ type: 'string', maxLength: max }) as const;
const Minutes = (minimum: number, maximum: number, description: string) =>
  ({ type: 'integer', minimum, maximum, description }) as const;

export const EMAIL_LANGUAGES = ['en', 'fr', 'de', 'es', 'nl', 'sv', 'ja', 'zh'] as const;
export const BOOKING_TYPES = ['booking', 'organizer-confirmation'] as const;

const ConfigurationParticipant = {
  type: 'object',
  additionalProperties: false,
  required: ['email'],
  properties: {
    email: Email,
    name: Name,
    grant_id: { type: 'string', maxLength: 300 },
    is_organizer: { type: 'boolean' },
    timezone: { type: 'string', minLength: 1, maxLength: 64 },
    availability: {
      type: 'object',
      additionalProperties: false,
      required: ['calendar_ids'],
      properties: {
        calendar_ids: {
          type: 'array',
          minItems: 1,
          maxItems: 20,
          items: { type: 'string', minLength: 1, maxLength: 300 },
        },
        open_hours: { type: 'array', maxItems: 50, items: OpenHoursObject },
      },
    },
    booking: {
      type: 'object',
      additionalProperties: false,
      required: ['calendar_id'],
      properties: { calendar_id: { type: 'string', minLength: 1, maxLength: 300 } },
    },
  },
} as const;

const ConfigurationAvailability = {
  type: 'object',
  additionalProperties: false,
  required: ['duration_minutes'],
  properties: {
    duration_minutes: Minutes(5, 1440, 'Length of a booking (multiple of 5).'),
    interval_minutes: Minutes(5, 1440, 'Minutes between slot starts (default: the duration).'),
    round_to: Minutes(5, 60, 'Slots start on multiples of this many minutes (default 15).'),
    availability_rules: {
      type: 'object',
      additionalProperties: false,
      properties: {
        availability_method: { type: 'string', enum: AVAILABILITY_METHODS, description: 'Default collective.' },
        buffer: {
          type: 'object',
          additionalProperties: false,
          properties: {
            before: Minutes(0, 120, 'Minutes kept free before busy time.'),
            after: Minutes(0, 120, 'Minutes kept free after busy time.'),
          },
        },
        default_open_hours: { type: 'array', maxItems: 50, items: OpenHoursObject },
        round_robin_group_id: { type: 'string', minLength: 1, maxLength: 256 },
        tentative_as_busy: { type: 'boolean' },
      },
    },
  },
} as const;

const Reminder = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'minutes_before_event'],
  properties: {
    type: { type: 'string', enum: ['email', 'webhook'] },
    minutes_before_event: Minutes(1, 40_320, 'Minutes before the booking starts.'),
    recipient: { type: 'string', enum: ['all', 'host', 'guest'] },
    email_subject: Text(256),
  },
} as const;

const EventBooking = {
  type: 'object',
  additionalProperties: false,
  required: ['title'],
  properties: {
    title: { type: 'string', minLength: 1, maxLength: 1024 },
    description: Text(8192),
    location: Text(1024),
    timezone: { type: 'string', minLength: 1, maxLength: 64 },
    booking_type: { type: 'string', enum: BOOKING_TYPES, description: 'Default booking.' },
    conferencing: Conferencing,
    reminders: { type: 'array', maxItems: 10, items: Reminder },
    hide_participants: { type: 'boolean' },
    disable_emails: { type: 'boolean' },
    notify_participants: { type: 'boolean' },
  },
} as const;

const AdditionalField = {
  type: 'object',
  additionalProperties: false,
  required: ['label', 'type'],
  properties: {
    label: { type: 'string', minLength: 1, maxLength: 256 },
    type: {
      type: 'string',
      enum: ['text', 'multi_line_text', 'email', 'phone_number', 'dropdown', 'date', 'checkbox', 'radio_button'],
    },
    required: { type: 'boolean' },
    order: { type: 'integer', minimum: 0, maximum: 1000 },
    options: { type: 'array', maxItems: 50, items: Text(256) },
  },
} as const;

const SchedulerSettings = {
  type: 'object',
  additionalProperties: false,
  properties: {
    available_days_in_future: Minutes(1, 365, 'Days ahead that can be booked (default 30).'),
    min_booking_notice: Minutes(0, 525_600, 'Minutes ahead a booking must be made (default 60).'),
    min_cancellation_notice: Minutes(
      0,
      525_600,
      'Minutes before the start after which a booking can no longer be cancelled or rescheduled (default 0).',
    ),
    additional_fields: {
      type: 'object',
      maxProperties: 20,
      propertyNames: { pattern: '^[A-Za-z0-9_-]{1,64}$' },
      additionalProperties: AdditionalField,
    },
    cancellation_policy: Text(2048),
    confirmation_redirect_url: { type: 'string', format: 'uri', maxLength: 2048 },
    rescheduling_url: { type: 'string', format: 'uri', maxLength: 2048 },
    cancellation_url: { type: 'string', format: 'uri', maxLength: 2048 },
    organizer_confirmation_url: { type: 'string', format: 'uri', maxLength: 2048 },
    hide_rescheduling_options: { type: 'boolean' },
    hide_cancellation_options: { type: 'boolean' },
    hide_additional_guests: { type: 'boolean' },
  },
} as const;

export const CONFIGURATION_TYPES = ['group', ''] as const;

const ConfigurationFields = {
  name: Name,
  type: {
    type: 'string',
    enum: CONFIGURATION_TYPES,
    description:
      '`group`: the configuration offers group events (fixed slots with a capacity; see its group-events) instead of free time. Set on creation only.',
  },
  slug: {
    type: 'string',
    maxLength: 64,
    pattern: '^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$',
    description:
      'Lowercase letters, digits and dashes; unique across all applications (it names the booking page /scheduling/{slug}).',
  },
  requires_session_auth: { type: 'boolean' },
  participants: { type: 'array', minItems: 1, maxItems: 50, items: ConfigurationParticipant },
  availability: ConfigurationAvailability,
  event_booking: EventBooking,
  scheduler: SchedulerSettings,
  appearance: { type: 'object', maxProperties: 50, additionalProperties: Text(1024) },
} as const;

export const CreateConfigurationBody = {
  type: 'object',
  additionalProperties: false,
  required: ['participants', 'availability', 'event_booking'],
  properties: ConfigurationFields,
} as const;
export type CreateConfigurationBody = FromSchema<typeof CreateConfigurationBody>;

/** The spec's application-level form: the organizer's grant named in the body. */
export const CreateAppConfigurationBody = {
  type: 'object',
  additionalProperties: false,
  required: ['grant_id', 'participants', 'availability', 'event_booking'],
  properties: { grant_id: { type: 'string', minLength: 1, maxLength: 300 }, ...ConfigurationFields },
} as const;
export type CreateAppConfigurationBody = FromSchema<typeof CreateAppConfigurationBody>;

export const UpdateConfigurationBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: ConfigurationFields,
} as const;
export type UpdateConfigurationBody = FromSchema<typeof UpdateConfigurationBody>;

export const ConfigurationObject = {
  type: 'object',
  required: [
    'id',
    'object',
    'grant_id',
    'participants',
    'availability',
    'event_booking',
    'scheduler',
    'requires_session_auth',
  ],
  properties: {
    id: { type: 'string' },
    object: { type: 'string', enum: ['scheduling_configuration'] },
    grant_id: { type: 'string' },
    ...ConfigurationFields,
    slug: { type: ['string', 'null'] },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

export const ListConfigurationsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { limit: Limit, page_token: PageToken, grant_id: { type: 'string', minLength: 1, maxLength: 300 } },
} as const;
export type ListConfigurationsQuery = FromSchema<typeof ListConfigurationsQuery>;

// ---- sessions --------------------------------------------------------------------------------

export const CreateSessionBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    configuration_id: { type: 'string', minLength: 1, maxLength: 100 },
    slug: { type: 'string', minLength: 1, maxLength: 64 },
    time_to_live: { type: 'integer', minimum: 1, maximum: 30, description: 'Minutes (default 5, at most 30).' },
  },
} as const;
export type CreateSessionBody = FromSchema<typeof CreateSessionBody>;

export const SessionObject = {
  type: 'object',
  required: ['session_id'],
  properties: { session_id: { type: 'string' }, expires_at: { type: 'integer' } },
} as const;

// ---- public endpoints (a session, the API key, or a public configuration by ID or slug) ------

const ConfigurationRef = {
  configuration_id: { type: 'string', minLength: 1, maxLength: 100 },
  slug: { type: 'string', minLength: 1, maxLength: 64 },
  client_id: {
    type: 'string',
    minLength: 1,
    maxLength: 100,
    description: 'The application ID; needed with `slug` unless the API key is sent.',
  },
} as const;

/** The guest's key to one booking (from the booking's answer): opens that booking, and its configuration's availability. */
const BookingReference = { booking_reference: { type: 'string', minLength: 8, maxLength: 300 } } as const;

export const SchedulingAvailabilityQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['start_time', 'end_time'],
  properties: {
    start_time: UnixSeconds,
    end_time: UnixSeconds,
    ...ConfigurationRef,
    ...BookingReference,
    booking_id: {
      type: 'string',
      minLength: 1,
      maxLength: 100,
      description: 'A booking being rescheduled: its own time counts as free.',
    },
  },
} as const;
export type SchedulingAvailabilityQuery = FromSchema<typeof SchedulingAvailabilityQuery>;

/** A slot of a configuration; a group configuration's slots are its group events with seats left. */
const SchedulingTimeSlot = {
  ...TimeSlotObject,
  properties: {
    ...TimeSlotObject.properties,
    event_id: { type: 'string', description: 'Group configurations: the group event.' },
    calendar_id: { type: 'string', description: 'Group configurations: the group event’s calendar.' },
    capacity: { type: 'integer', description: 'Group configurations: seats on the group event.' },
    seats_left: { type: 'integer', description: 'Group configurations: seats still free.' },
  },
} as const;

export const SchedulingAvailabilityObject = {
  type: 'object',
  required: ['time_slots', 'order'],
  properties: {
    time_slots: { type: 'array', items: SchedulingTimeSlot },
    order: { type: 'array', items: { type: 'string' } },
  },
} as const;

export const BookingRefQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { ...ConfigurationRef, ...BookingReference },
} as const;
export type BookingRefQuery = FromSchema<typeof BookingRefQuery>;

export const CreateBookingQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { ...ConfigurationRef, timezone: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;
export type CreateBookingQuery = FromSchema<typeof CreateBookingQuery>;

const Guest = {
  type: 'object',
  additionalProperties: false,
  required: ['email', 'name'],
  properties: { email: Email, name: { type: 'string', minLength: 1, maxLength: 256 } },
} as const;

export const CreateBookingBody = {
  type: 'object',
  additionalProperties: false,
  required: ['start_time', 'end_time', 'guest'],
  properties: {
    start_time: UnixSeconds,
    end_time: UnixSeconds,
    event_id: {
      type: 'string',
      minLength: 1,
      maxLength: 300,
      description:
        'Group configurations: the group event to book a seat on (as availability names it); needed only when several group events share the slot.',
    },
    participants: {
      type: 'array',
      maxItems: 50,
      items: { type: 'object', additionalProperties: false, required: ['email'], properties: { email: Email } },
    },
    guest: Guest,
    timezone: { type: 'string', minLength: 1, maxLength: 64 },
    email_language: { type: 'string', enum: EMAIL_LANGUAGES },
    additional_guests: {
      type: 'array',
      maxItems: 10,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['email'],
        properties: { email: Email, name: Name },
      },
    },
    additional_fields: { type: 'object', maxProperties: 20, additionalProperties: { type: 'string', maxLength: 2048 } },
  },
} as const;
export type CreateBookingBody = FromSchema<typeof CreateBookingBody>;

export const ConfirmBookingBody = {
  type: 'object',
  additionalProperties: false,
  required: ['salt', 'status'],
  properties: {
    salt: { type: 'string', minLength: 1, maxLength: 200 },
    status: { type: 'string', enum: ['confirmed', 'cancelled'] },
    cancellation_reason: Text(1024),
  },
} as const;
export type ConfirmBookingBody = FromSchema<typeof ConfirmBookingBody>;

export const RescheduleBookingBody = {
  type: 'object',
  additionalProperties: false,
  required: ['start_time', 'end_time'],
  properties: {
    start_time: UnixSeconds,
    end_time: UnixSeconds,
    event_id: {
      type: 'string',
      minLength: 1,
      maxLength: 300,
      description: 'Group bookings: the group event to move to.',
    },
    calendar_id: { type: 'string', minLength: 1, maxLength: 300 },
  },
} as const;
export type RescheduleBookingBody = FromSchema<typeof RescheduleBookingBody>;

export const CancelBookingBody = {
  type: 'object',
  additionalProperties: false,
  properties: { cancellation_reason: Text(1024) },
} as const;
export type CancelBookingBody = FromSchema<typeof CancelBookingBody>;

export const BookingObject = {
  type: 'object',
  required: ['booking_id', 'event_id', 'title', 'organizer', 'status', 'start_time', 'end_time', 'configuration_id'],
  properties: {
    booking_id: { type: 'string' },
    event_id: { type: 'string' },
    calendar_id: { type: 'string' },
    configuration_id: { type: 'string' },
    title: { type: 'string' },
    description: { type: 'string' },
    location: { type: 'string' },
    organizer: { type: 'object', properties: { email: { type: 'string' }, name: { type: 'string' } } },
    guest: { type: 'object', properties: { email: { type: 'string' }, name: { type: 'string' } } },
    additional_guests: {
      type: 'array',
      items: { type: 'object', properties: { email: { type: 'string' }, name: { type: 'string' } } },
    },
    participants: { type: 'array', items: { type: 'object', properties: { email: { type: 'string' } } } },
    status: { type: 'string', enum: ['booked', 'pending', 'cancelled'] },
    start_time: { type: 'integer' },
    end_time: { type: 'integer' },
    timezone: { type: 'string' },
    email_language: { type: 'string' },
    additional_fields: { type: 'object' },
    cancellation_reason: { type: 'string' },
    event_status: {
      type: 'string',
      enum: ['pending', 'synced', 'failed'],
      description:
        "Whether the organizer's calendar reflects the booking's last change: `pending` while it is being written (the `booking.*` webhook follows once it is; a new booking's `event_id` is empty until then), `synced`, or `failed` when the calendar provider refused (see `event_error`; a booking whose event could not be created is `cancelled` and its time free).",
    },
    event_error: {
      type: 'string',
      description: "Why the calendar provider refused the booking's last change (with `event_status: failed`).",
    },
    booking_reference: {
      type: 'string',
      description: 'Opaque reference for the guest to reschedule or cancel (in the answer to the booking only).',
    },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

// ---- booking pages ---------------------------------------------------------------------------

export const BookingPageQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    session: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      description: 'A scheduler session, for a private configuration.',
    },
    client_id: {
      type: 'string',
      minLength: 1,
      maxLength: 100,
      description: 'The application ID (optional: a slug names one configuration; another application answers 404).',
    },
    tz: { type: 'string', minLength: 1, maxLength: 64, description: 'Time zone to show (default: the browser’s).' },
  },
} as const;
export type BookingPageQuery = FromSchema<typeof BookingPageQuery>;

// ---- group events ----------------------------------------------------------------------------

const GroupEventWhen = {
  type: 'object',
  additionalProperties: false,
  required: ['start_time', 'end_time'],
  properties: {
    start_time: UnixSeconds,
    end_time: UnixSeconds,
    start_timezone: { type: 'string', minLength: 1, maxLength: 64 },
    end_timezone: { type: 'string', minLength: 1, maxLength: 64 },
  },
} as const;

const GroupEventParticipant = {
  type: 'object',
  additionalProperties: false,
  required: ['email'],
  properties: { email: Email, name: Name, is_organizer: { type: 'boolean' } },
} as const;

const Capacity = {
  type: 'integer',
  minimum: 1,
  maximum: 500,
  description: 'Seats on the group event (default 10): each booking takes one, plus one per additional guest.',
} as const;

const GroupEventFields = {
  calendar_id: { type: 'string', minLength: 1, maxLength: 300 },
  capacity: Capacity,
  title: { type: 'string', minLength: 1, maxLength: 1024 },
  description: Text(8192),
  location: Text(255),
  when: GroupEventWhen,
  participants: { type: 'array', maxItems: 50, items: GroupEventParticipant },
  conferencing: Conferencing,
  recurrence: {
    type: 'array',
    maxItems: 0,
    items: { type: 'string', maxLength: 2000 },
    description: 'Recurring group events are not supported: create one group event per occurrence.',
  },
} as const;

export const CreateGroupEventBody = {
  type: 'object',
  additionalProperties: false,
  required: ['calendar_id', 'title', 'when'],
  properties: GroupEventFields,
} as const;
export type CreateGroupEventBody = FromSchema<typeof CreateGroupEventBody>;

export const UpdateGroupEventBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: GroupEventFields,
} as const;
export type UpdateGroupEventBody = FromSchema<typeof UpdateGroupEventBody>;

export const ListGroupEventsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    calendar_id: { type: 'string', minLength: 1, maxLength: 300 },
    start_time: UnixSeconds,
    end_time: UnixSeconds,
    limit: Limit,
    page_token: PageToken,
  },
} as const;
export type ListGroupEventsQuery = FromSchema<typeof ListGroupEventsQuery>;

export const GroupEventObject = {
  type: 'object',
  required: ['id', 'configuration_id', 'calendar_id', 'capacity', 'seats_booked', 'title', 'when', 'participants'],
  properties: {
    id: { type: 'string', description: "The event's ID on the organizer's calendar." },
    object: { type: 'string', enum: ['group_event'] },
    configuration_id: { type: 'string' },
    calendar_id: { type: 'string' },
    capacity: { type: 'integer' },
    seats_booked: { type: 'integer', description: 'Seats held by live bookings.' },
    seats_left: { type: 'integer' },
    title: { type: 'string' },
    description: { type: 'string' },
    location: { type: 'string' },
    when: {
      type: 'object',
      required: ['start_time', 'end_time'],
      properties: {
        start_time: { type: 'integer' },
        end_time: { type: 'integer' },
        start_timezone: { type: 'string' },
        end_timezone: { type: 'string' },
      },
    },
    participants: { type: 'array', items: GroupEventParticipant },
    conferencing: { type: 'object' },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

export const ImportGroupEventsBody = {
  type: 'array',
  minItems: 1,
  maxItems: 20,
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['calendar_id', 'event_id'],
    properties: {
      calendar_id: { type: 'string', minLength: 1, maxLength: 300 },
      event_id: { type: 'string', minLength: 1, maxLength: 300 },
      capacity: Capacity,
      exceptions: {
        type: 'array',
        maxItems: 0,
        items: { type: 'object' },
        description: 'Occurrences of recurring events: not supported (recurring events are not imported).',
      },
      participants: { type: 'array', maxItems: 50, items: GroupEventParticipant },
    },
  },
} as const;
export type ImportGroupEventsBody = FromSchema<typeof ImportGroupEventsBody>;

export const ImportGroupEventsObject = {
  type: 'object',
  required: ['imported_events', 'import_failed'],
  properties: {
    imported_events: {
      type: 'array',
      items: { type: 'object', required: ['event_id'], properties: { event_id: { type: 'string' } } },
    },
    import_failed: {
      type: 'array',
      items: {
        type: 'object',
        required: ['event_id', 'reason'],
        properties: { event_id: { type: 'string' }, reason: { type: 'string' } },
      },
    },
  },
} as const;

export const ValidateTimeslotBody = {
  type: 'object',
  additionalProperties: false,
  required: ['calendar_id', 'start_time', 'end_time', 'event_id'],
  properties: {
    calendar_id: { type: 'string', minLength: 1, maxLength: 300 },
    event_id: { type: 'string', minLength: 1, maxLength: 300 },
    master_id: { type: 'string', minLength: 1, maxLength: 300 },
    start_time: UnixSeconds,
    end_time: UnixSeconds,
    capacity: Capacity,
    emails: { type: 'array', maxItems: 50, items: Email },
  },
} as const;
export type ValidateTimeslotBody = FromSchema<typeof ValidateTimeslotBody>;

export const ValidTimeslotObject = {
  type: 'object',
  required: ['event_id', 'start_time', 'end_time', 'capacity', 'seats_left'],
  properties: {
    event_id: { type: 'string' },
    start_time: { type: 'integer' },
    end_time: { type: 'integer' },
    capacity: { type: 'integer' },
    seats_left: { type: 'integer' },
  },
} as const;
