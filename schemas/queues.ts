import type { FromSchema, JSONSchema } from 'json-schema-to-ts';

/**
 * What travels on our queues: the jobs queue's jobs and the scheduled-send queue's firings. Tagged
 * unions (`kind`), validated where a worker reads them (shared/jobs/payloads.ts) and typed from
 * these schemas, so a worker's exhaustive switch and
 * what producers send cannot drift apart. A payload that does not validate is never run: it fails,
 * and SQS moves it to the queue's dead-letter queue after its receives (kept for inspection).
 */
// Shapes, not limits: producers are our own code, and the limits were applied where their data came in.
const Id = { type: 'string', minLength: 1 } as const;
const Text = { type: 'string' } as const;
const Recipients = {
  type: 'array',
  items: { type: 'object', additionalProperties: false, required: ['email'], properties: { email: Text, name: Text } },
} as const;
const Seconds = { type: 'integer', minimum: 0 } as const;

const job = <const K extends string, const P extends Record<string, JSONSchema>, const R extends readonly string[]>(
  kind: K,
  description: string,
  properties: P,
  required: R,
) =>
  ({
    type: 'object',
    description,
    additionalProperties: false,
    required: ['kind', ...required] as const,
    properties: { kind: { const: kind }, ...properties },
  }) as const;

const ForGrant = { application_id: Id, grant_id: Id } as const;

/** Built in a function (marked pure) so that a bundle which reads no job, a webhook worker's, carries none of these. */
const jobs = () =>
  [
    job(
      'purge-grant',
      'Deletes everything a deleted grant stored: mailbox items, indexes, contents in S3.',
      { ...ForGrant, provider: Text },
      ['application_id', 'grant_id', 'provider'] as const,
    ),
    job(
      'purge-webhook',
      'Deletes the delivery log and counters of a deleted webhook destination.',
      { webhook_id: Id },
      ['webhook_id'] as const,
    ),
    job(
      'refresh-thread',
      "Recomputes a thread's aggregate from its messages (idempotent: committed with every change to them).",
      { ...ForGrant, thread_id: Id },
      ['application_id', 'grant_id', 'thread_id'] as const,
    ),
    job(
      'messages-stored',
      "Committed with a batch of messages stored together (a sync's batch): refreshes their threads, then merges the mailbox's search entries into its segments, once for the batch, and collects its correspondents as inbox contacts (`message_ids`; absent in jobs committed before contacts). `import`: the batch is history a first sync brings in, whose merges wait for larger steps (the sync's end commits a merge-search).",
      {
        ...ForGrant,
        thread_ids: { type: 'array', items: Id },
        message_ids: { type: 'array', items: Id },
        import: { type: 'boolean' },
      },
      ['application_id', 'grant_id', 'thread_ids'] as const,
    ),
    job(
      'message-stored',
      "Committed with every stored message: refreshes its thread if the storing request could not, merges the mailbox's search entries into its segments (shared/mailbox/search-index.ts), and collects its correspondents as inbox contacts (shared/contacts/collect.ts).",
      { ...ForGrant, thread_id: Id, message_id: Id },
      ['application_id', 'grant_id', 'thread_id', 'message_id'] as const,
    ),
    job(
      'merge-search',
      "Merges a mailbox's search entries into its segments (idempotent; also run by message-stored).",
      ForGrant,
      ['application_id', 'grant_id'] as const,
    ),
    job(
      'index-message',
      "Committed before the search index (they completed a message's postings): nothing to do now.",
      { ...ForGrant, message_id: Id },
      ['application_id', 'grant_id', 'message_id'] as const,
    ),
    job(
      'remove-contents',
      'Removes what nothing points to any more since a committed change: postings of a deleted message (`owner_id`) and contents in S3 that a deleted or replaced message or draft referenced.',
      { ...ForGrant, owner_id: Id, postings: { type: 'array', items: Text }, blobs: { type: 'array', items: Text } },
      ['application_id', 'grant_id', 'owner_id', 'postings', 'blobs'] as const,
    ),
    job(
      'purge-list',
      'Deletes the items of a deleted list (the list itself is already gone; rules no longer match it).',
      { application_id: Id, list_id: Id },
      ['application_id', 'list_id'] as const,
    ),
    job(
      'send-itip',
      'Mails an iCalendar REQUEST, CANCEL or REPLY from a grant (iMIP): the calendar text is built when the change is committed, so the mail says what the change said.',
      {
        ...ForGrant,
        method: { enum: ['REQUEST', 'CANCEL', 'REPLY'] },
        to: Recipients,
        subject: Text,
        body: Text,
        ics: Text,
      },
      ['application_id', 'grant_id', 'method', 'to', 'subject', 'body', 'ics'] as const,
    ),
    job(
      'send-mail',
      "Mails a message from a grant's own address through its send path, with an optional iCalendar part: the scheduler's confirmations, requests, changes and cancellations.",
      {
        ...ForGrant,
        to: Recipients,
        subject: Text,
        body: Text,
        calendar: {
          type: 'object',
          additionalProperties: false,
          required: ['method', 'ics'],
          properties: { method: { enum: ['REQUEST', 'CANCEL'] }, ics: Text },
        },
        purpose: Text,
      },
      ['application_id', 'grant_id', 'to', 'subject', 'body', 'purpose'] as const,
    ),
    job(
      'booking-reminders',
      "Sets (or clears) a booking's reminder schedules in EventBridge Scheduler, one one-shot schedule per reminder of its configuration: committed with every booking change, so none is lost.",
      { booking_id: Id },
      ['booking_id'] as const,
    ),
    job(
      'booking-event',
      "Does the provider step of a booking change committed with it (create, move, confirm or cancel the event: the booking's `event_step`), then commits the booking's update with its notification and mails (shared/scheduling/booking-events.ts). Idempotent: it acts only while the booking is still at `version` with its event pending. `links`: the guest's and organizer's page links of a new booking (their salts are never stored); `cancel_ics`: the CANCEL read before the event goes.",
      {
        booking_id: Id,
        version: { type: 'integer', minimum: 0 },
        links: { type: 'object', additionalProperties: false, properties: { manage: Text, confirm: Text } },
        cancel_ics: Text,
      },
      ['booking_id', 'version'] as const,
    ),
    job(
      'group-event-delete',
      "Finishes deleting a group event, committed with its change to `deleting` (shared/scheduling/group-events.ts): cancels the bookings it still holds (each guest told, `booking.cancelled` each), deletes its event from the organizer's calendar, then the record. Idempotent: a group event already gone is done; one with more bookings than its time allows continues in a job of its own.",
      { configuration_id: Id, event_id: Text },
      ['configuration_id', 'event_id'] as const,
    ),
    job(
      'apply-itip',
      'Applies an iCalendar part received by a grant (invitation, update, cancellation, reply) to its calendar.',
      { ...ForGrant, sender: Text, ics: Text },
      ['application_id', 'grant_id', 'sender', 'ics'] as const,
    ),
    job(
      'purge-calendar',
      'Deletes the events (and their window copies and UIDs) of a deleted calendar.',
      { ...ForGrant, calendar_id: Id },
      ['application_id', 'grant_id', 'calendar_id'] as const,
    ),
    job(
      'start-mail-sync',
      "Starts the sync of a grant whose mail lives on another server (shared/services/mail-sync.ts): committed with the grant's creation or re-authentication, it creates the sync state and queues the first run.",
      ForGrant,
      ['application_id', 'grant_id'] as const,
    ),
    job(
      'deliver-local',
      "Stores a sent message's copies in the mailboxes this deployment hosts among its recipients (shared/services/local-delivery.ts), one job per batch of mailboxes (`batch` of `batches`): the message waits under `spool` in S3; deduplicated per mailbox by `message_id_header`. `application_id` is the sender's.",
      {
        application_id: Id,
        spool: Text,
        message_id_header: Text,
        recipients: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['application_id', 'grant_id'],
            properties: ForGrant,
          },
        },
        batch: { type: 'integer', minimum: 0 },
        batches: { type: 'integer', minimum: 1 },
      },
      ['application_id', 'spool', 'message_id_header', 'recipients'] as const,
    ),
  ] as const;

export const JobPayload = {
  type: 'object',
  discriminator: { propertyName: 'kind' },
  required: ['kind'],
  properties: { kind: { type: 'string' } },
  oneOf: /* @__PURE__ */ jobs(),
} as const;
export type Job = FromSchema<typeof JobPayload>;
export type JobKind = Job['kind'];

/** A scheduled message's firing: the queue message of its schedule, of a hold and of a retry (shared/scheduled-send/). Firings of schedules made before the tag carry no `kind`. */
export const ScheduledSendFiring = {
  type: 'object',
  additionalProperties: false,
  required: ['schedule_id', 'grant_id', 'application_id', 'send_at'],
  properties: {
    kind: { const: 'scheduled-send' },
    schedule_id: Id,
    grant_id: Id,
    application_id: Id,
    send_at: Seconds,
  },
} as const;

/** A booking reminder's firing (shared/scheduling/reminders.ts): `start` is the booking's start when the reminder was set. */
export const BookingReminderFiring = {
  type: 'object',
  additionalProperties: false,
  required: ['kind', 'booking_id', 'reminder', 'start'],
  properties: {
    kind: { const: 'booking-reminder' },
    booking_id: Id,
    reminder: { type: 'integer', minimum: 0 },
    start: Seconds,
  },
} as const;

/** What the scheduled-send queue carries. */
export const FiringPayload = { oneOf: [ScheduledSendFiring, BookingReminderFiring] } as const;
export type FiringPayload = FromSchema<typeof FiringPayload>;

/**
 * A notification as the fan-out queue carries it (shared/notifications/notification.ts): the CloudEvents
 * envelope; `data.object` is the changed object, whatever its type.
 */
export const NotificationPayload = {
  type: 'object',
  required: ['specversion', 'type', 'source', 'id', 'time', 'data'],
  properties: {
    specversion: { const: '1.0' },
    type: Id,
    source: Text,
    id: Id,
    time: Seconds,
    data: {
      type: 'object',
      required: ['application_id', 'grant_id', 'object'],
      properties: { application_id: Id, grant_id: { type: ['string', 'null'] }, object: { type: 'object' } },
    },
  },
} as const;

/** One delivery of a notification to one webhook destination (the delivery queue; shared/webhooks/deliver.ts). */
export const DeliveryPayload = {
  type: 'object',
  additionalProperties: false,
  required: ['application_id', 'webhook_id', 'notification', 'attempt'],
  properties: {
    application_id: Id,
    webhook_id: Id,
    notification: NotificationPayload,
    attempt: { type: 'integer', minimum: 1 },
  },
} as const;

/**
 * A sync run of a grant (shared/services/mail-sync.ts). `due` (epoch ms): the run its previous run
 * scheduled (a run whose `due` is no longer the grant's next is stale and dropped); without `due`, a
 * request to sync soon (a new grant, a change made through the API).
 */
export const SyncPayload = {
  type: 'object',
  additionalProperties: false,
  required: ['application_id', 'grant_id'],
  properties: {
    application_id: Id,
    grant_id: Id,
    due: { type: 'integer', minimum: 0, description: 'Epoch milliseconds.' },
    pushed: {
      type: 'integer',
      minimum: 1,
      maximum: 10,
      description:
        "A run a provider's push asked for (its attempt): when another run holds the grant's lease, it comes back shortly instead of ending.",
    },
  },
} as const;
export type SyncPayload = FromSchema<typeof SyncPayload>;
