import type { ApplicationContext } from '#shared/applications/authenticate';
import type { GrantRecord } from '#shared/db/grants';
import type { NamedTransactItem } from '#shared/db/transact';
import type { CreateCustomGrantBody } from '#schemas/grants';
import type { CalendarObject, CreateCalendarBody, ListCalendarsQuery, UpdateCalendarBody } from '#schemas/calendar';
import type { CreateEventBody, EventObject, ListEventsQuery, SendRsvpBody, UpdateEventBody } from '#schemas/event';
import type { UploadedFile } from '#shared/uploaded-file';
import type { ResponseOf } from '#shared/schema-types';
import type {
  AttachmentObject,
  AttachmentQuery,
  CancelScheduleResult,
  CleanedMessageObject,
  CleanMessagesBody,
  CreateDraftBody,
  CreateFolderBody,
  DeleteMessageQuery,
  DraftObject,
  FolderObject,
  ListDraftsQuery,
  ListFoldersQuery,
  ListMessagesQuery,
  ListSchedulesQuery,
  ListThreadsQuery,
  MessageIdQuery,
  MessageObject,
  SendDraftBody,
  ScheduleObject,
  SendMessageBody,
  SendMessageResult,
  ThreadObject,
  UpdateDraftBody,
  UpdateFolderBody,
  UpdateMessageBody,
  UpdateThreadBody,
} from '#schemas/mail';

/**
 * The mailbox provider contract: what every mail provider of a grant (Agent Accounts today; IMAP/
 * SMTP, provider A, provider B later) offers, one interface per capability. Arguments are the
 * request types and results the response types of schemas/mail.ts, so an implementation whose
 * answers drift from the published shapes does not compile. Registries (shared/providers/<capability>.ts)
 * bind a grant to its provider's implementation; capabilities are separate so each function bundles
 * only the code of the endpoints it serves. Calendars join as further capabilities the same way.
 */

export type Message = ResponseOf<typeof MessageObject>;
export type Thread = ResponseOf<typeof ThreadObject>;
export type Draft = ResponseOf<typeof DraftObject>;
export type Folder = ResponseOf<typeof FolderObject>;
export type Attachment = ResponseOf<typeof AttachmentObject>;
export type CleanedMessage = ResponseOf<typeof CleanedMessageObject>;
export type Calendar = ResponseOf<typeof CalendarObject>;
export type CalendarEvent = ResponseOf<typeof EventObject>;
export type SendResult = ResponseOf<typeof SendMessageResult>;
export type Schedule = ResponseOf<typeof ScheduleObject>;
export type CancelledSchedule = ResponseOf<typeof CancelScheduleResult>;

/** One page of a list: the items and, when more follow, the token of the next page. */
export interface Page<T> {
  items: T[];
  nextCursor?: string | undefined;
}

export interface MessagesProvider {
  list(grant: GrantRecord, query: ListMessagesQuery, limit: number): Promise<Page<Message>>;
  get(grant: GrantRecord, messageId: string, query: MessageIdQuery): Promise<Message>;
  update(grant: GrantRecord, messageId: string, body: UpdateMessageBody): Promise<Message>;
  delete(grant: GrantRecord, messageId: string, query: DeleteMessageQuery): Promise<void>;
}

/** Message bodies cleaned into readable text (its own function: it bundles the HTML parsers). */
export interface MessageCleaningProvider {
  clean(grant: GrantRecord, body: CleanMessagesBody): Promise<CleanedMessage[]>;
}

export interface ThreadsProvider {
  list(grant: GrantRecord, query: ListThreadsQuery, limit: number): Promise<Page<Thread>>;
  get(grant: GrantRecord, threadId: string): Promise<Thread>;
  update(grant: GrantRecord, threadId: string, body: UpdateThreadBody): Promise<Thread>;
  delete(grant: GrantRecord, threadId: string): Promise<void>;
}

export interface FoldersProvider {
  list(grant: GrantRecord, query: ListFoldersQuery, limit: number): Promise<Page<Folder>>;
  get(grant: GrantRecord, folderId: string): Promise<Folder>;
  create(grant: GrantRecord, body: CreateFolderBody): Promise<Folder>;
  update(grant: GrantRecord, folderId: string, body: UpdateFolderBody): Promise<Folder>;
  delete(grant: GrantRecord, folderId: string): Promise<void>;
}

export interface DraftsProvider {
  list(grant: GrantRecord, query: ListDraftsQuery, limit: number): Promise<Page<Draft>>;
  get(grant: GrantRecord, draftId: string): Promise<Draft>;
  create(grant: GrantRecord, body: CreateDraftBody, files: UploadedFile[]): Promise<Draft>;
  update(grant: GrantRecord, draftId: string, body: UpdateDraftBody, files: UploadedFile[]): Promise<Draft>;
  delete(grant: GrantRecord, draftId: string): Promise<void>;
}

/** Sending a draft (its own function: it bundles MIME composition and the mail transports). */
export interface DraftSendingProvider {
  /** Sends the draft; the answer is the sent message. */
  send(grant: GrantRecord, draftId: string, body: SendDraftBody): Promise<Message>;
}

export interface SendProvider {
  /**
   * Sends now, or schedules with `send_at` (`scheduled`: the answer is the scheduled message).
   * `replayed`: the answer of an earlier request with the same Idempotency-Key.
   */
  send(
    grant: GrantRecord,
    body: SendMessageBody,
    context: { files: UploadedFile[]; idempotencyKey?: string; requestId: string },
  ): Promise<{ result: SendResult; replayed: boolean; scheduled: boolean }>;
}

/** Scheduled sends, once scheduled (their own function: it needs none of the MIME and template code of a send). */
export interface SchedulesProvider {
  /** Scheduled sends, newest first (sent and unsent). */
  listSchedules(grant: GrantRecord, query: ListSchedulesQuery, limit: number): Promise<Page<Schedule>>;
  getSchedule(grant: GrantRecord, scheduleId: string): Promise<Schedule>;
  /** Cancels a scheduled send (409 once it is too late, or it is no longer pending). */
  cancelSchedule(grant: GrantRecord, scheduleId: string): Promise<CancelledSchedule>;
}

/** Calendars of a grant (`primary` names the grant's primary calendar wherever an ID is expected). */
export interface CalendarsProvider {
  list(grant: GrantRecord, query: ListCalendarsQuery, limit: number): Promise<Page<Calendar>>;
  get(grant: GrantRecord, calendarId: string): Promise<Calendar>;
  create(grant: GrantRecord, body: CreateCalendarBody): Promise<Calendar>;
  update(grant: GrantRecord, calendarId: string, body: UpdateCalendarBody): Promise<Calendar>;
  delete(grant: GrantRecord, calendarId: string): Promise<void>;
}

/**
 * Events of a grant's calendars. Every operation names its calendar (`primary` allowed). An event
 * ID may name one occurrence of a series (`<series ID>_<occurrence key>`): reading it gives the
 * occurrence, changing or deleting it changes that occurrence only. `notify` says whether the
 * participants are emailed the change (iMIP).
 */
export interface EventsProvider {
  list(grant: GrantRecord, query: ListEventsQuery, limit: number): Promise<Page<CalendarEvent>>;
  get(grant: GrantRecord, eventId: string, calendarId: string): Promise<CalendarEvent>;
  /**
   * The event as an iCalendar object (RFC 5545), a series with its changed occurrences: `PUBLISH`
   * (export) by default, or an iMIP `REQUEST` / `CANCEL` to mail to its participants.
   */
  ics(grant: GrantRecord, eventId: string, calendarId: string, method?: 'PUBLISH' | 'REQUEST' | 'CANCEL'): Promise<string>;
  /**
   * Creates an event. `idempotencyKey` makes the create idempotent: the event's iCalendar UID is the
   * key, and when the grant's account already holds an event with that UID (an earlier attempt of
   * the same create, finished or concurrent), that event is returned and nothing else is created.
   * Callers that must survive a crash between "event created" and "event recorded" (bookings) pass
   * a key derived from their own record. A provider keeps the key unique in the account: the Agent
   * Account store claims it in its UID index in the event's transaction; a CalDAV provider maps it
   * to a `PUT` of a resource href derived from the key with `If-None-Match: *` (a 412 means it
   * exists: read it back).
   */
  create(grant: GrantRecord, calendarId: string, body: CreateEventBody, notify: boolean, idempotencyKey?: string): Promise<CalendarEvent>;
  update(grant: GrantRecord, eventId: string, calendarId: string, body: UpdateEventBody, notify: boolean): Promise<CalendarEvent>;
  delete(grant: GrantRecord, eventId: string, calendarId: string, notify: boolean): Promise<void>;
  sendRsvp(grant: GrantRecord, eventId: string, calendarId: string, body: SendRsvpBody): Promise<object>;
}

/** A window of a grant's calendars to read busy time from (`primary` allowed among `calendar_ids`). */
export interface BusyQuery {
  calendar_ids: readonly string[];
  /** Unix seconds, half-open `[start, end)`. */
  start: number;
  end: number;
  /** Whether events the account answered `maybe` (or marked tentative) count as busy. */
  tentative_as_busy: boolean;
  /**
   * Round-robin counting: events whose metadata `key5` equals this value are counted (null: any
   * `key5`); undefined: nothing is counted.
   */
  fairness_group?: string | null;
}

export interface BusyTimes {
  /** Busy intervals overlapping the window (series expanded; cancelled and free events left out). */
  busy: { start: number; end: number }[];
  /** Events in the window marked for round-robin counting (see `fairness_group`). */
  fairness_count: number;
}

/**
 * Busy time of a grant's calendars, for free/busy, availability and the scheduler. Each calendar is
 * read with one window query, never by listing it.
 */
export interface FreeBusyProvider {
  busy(grant: GrantRecord, query: BusyQuery): Promise<BusyTimes>;
}

/** An attachment's bytes, or (too large for one answer) a short-lived URL to them. */
export type AttachmentDownload = { kind: 'content'; content: Buffer; attachment: { filename: string; content_type: string } } | { kind: 'redirect'; url: string };

/** `messageId`: the message or draft holding the attachment (AttachmentQuery's `message_id`). */
export interface AttachmentsProvider {
  get(grant: GrantRecord, attachmentId: string, messageId: AttachmentQuery['message_id']): Promise<Attachment>;
  download(grant: GrantRecord, attachmentId: string, messageId: AttachmentQuery['message_id']): Promise<AttachmentDownload>;
}

/**
 * The lifecycle side of the provider contract: what a provider does when one of its grants is
 * created or deleted. The grants service calls these hooks and never names a provider itself; the
 * purge of a deleted grant's data is the other half (shared/providers/purge.ts, in the jobs worker).
 */
/**
 * `POST /v3/connect/custom` for a provider whose accounts live elsewhere: bulk authentication with a
 * registered credential (a service account, an admin consent), which creates or re-authenticates the
 * grant itself.
 */
export type CustomAuthentication = (app: ApplicationContext, request: CreateCustomGrantBody, meta: { ip: string; userAgent: string }) => Promise<GrantRecord>;

export interface AccountHooks {
  /** Whether its accounts belong to workspaces (rules, policies): `workspace_id` is accepted on create. */
  governed: boolean;
  /**
   * The account a create request names, from its provider settings (400 when they do not fit this
   * provider): its address, and the settings kept on the grant. Providers whose accounts live
   * elsewhere have a custom authentication instead (shared/providers/custom.ts).
   */
  account?(request: CreateCustomGrantBody): { email: string; settings: Record<string, unknown>; name?: string };

  /** Checks the provider fields of an update (`settings`, `scope`): 400 saying why for what cannot change. */
  update(request: { settings?: Record<string, unknown>; scope?: string[] }): void;
  /** Items committed in the transaction that creates the grant (reservations, initial storage). */
  created(grant: GrantRecord, now: number): NamedTransactItem[];
  /** Items committed in the transaction that deletes the grant (releasing what `created` reserved). */
  deleted(grant: GrantRecord): NamedTransactItem[];
}
