import type { ApplicationContext } from '#shared/caller';
import type { IcsEvent } from '#shared/calendar/ical';
import type { GrantRecord } from '#shared/db/grants';
import type { ContactData, ContactGroupRecord, ContactRecord } from '#shared/db/contacts';
import type { CalendarRecord } from '#shared/db/calendars';
import type { EventChange } from '#shared/db/events';
import type { FolderRecord, HeaderRecord, NewAttachment, ParticipantRecord } from '#shared/db/mail-records';
import type { Job } from '#shared/jobs/job';
import type { ContactGroupId, ContactId, GrantId } from '#shared/ids';
import type { Notification } from '#shared/notifications/notification';
import type { ScheduleRecord } from '#shared/db/schedules';
import type { OutboxEntry } from '#shared/db/outbox';
import type { MailSyncRecord } from '#shared/db/mail-sync';
import type { NamedItems } from '#shared/db/transact';
import type { NamedTransactItem } from '#shared/db/transact';
import type { CreateCustomGrantBody } from '#schemas/grants';
import type { CalendarObject, CreateCalendarBody, ListCalendarsQuery, UpdateCalendarBody } from '#schemas/calendar';
import type {
  ContactGroupObject,
  ContactObject,
  CreateContactBody,
  CreateContactGroupBody,
  GetContactQuery,
  ListContactsQuery,
  UpdateContactBody,
  UpdateContactGroupBody,
} from '#schemas/contact';
import type { PageQuery } from '#schemas/common';
import type { CreateEventBody, EventObject, ListEventsQuery, SendRsvpBody, UpdateEventBody } from '#schemas/event';
import type { ListResourcesQuery, RoomResourceObject } from '#schemas/resources';
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
export type Contact = ResponseOf<typeof ContactObject>;
export type ContactGroup = ResponseOf<typeof ContactGroupObject>;
export type SendResult = ResponseOf<typeof SendMessageResult>;
export type Schedule = ResponseOf<typeof ScheduleObject>;
export type RoomResource = ResponseOf<typeof RoomResourceObject>;
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

/*
 * Server ports. A stored provider is the stored mailbox (shared/mailbox/) with, for a synced account,
 * the remote server behind it: each change the API makes is made there first through one of these
 * ports, then committed in the mailbox with its notification. Changes made elsewhere come back by its
 * sync (SyncSource below). The Agent Account is the stored mailbox with no server.
 */

/**
 * The folder changes of the mail server behind a stored mailbox (IMAP's CREATE, RENAME and DELETE).
 * The mailbox makes each there first, then commits it with its notification; a refusal throws the
 * client's error (400) and nothing is committed.
 */
export interface FolderServer {
  /** Creates `name` under `parent` (at the top without one): the new folder's ID and its path on the server. */
  create(
    grant: GrantRecord,
    name: string,
    parent: FolderRecord | undefined,
  ): Promise<{ id: string; serverPath: string }>;
  /** Renames the folder where it is: its new path. */
  rename(grant: GrantRecord, folder: FolderRecord, name: string): Promise<string>;
  delete(grant: GrantRecord, folder: FolderRecord): Promise<void>;
  /** Set when folders cannot move under another on this server: why a `parent_id` change is refused. */
  refusesMoves?: string;
}

/**
 * The calendar server behind a stored calendar (CalDAV), written before each change commits; the
 * Agent Account's calendars have none: the table is where their events live.
 */
export interface EventServer {
  /** The ID of a new event (a server's object is found again by it), with `idempotencyKey` the same for every attempt. */
  newEventId(calendar: CalendarRecord, idempotencyKey?: string): string;
  /**
   * Writes what a change leaves of each series or single event it touches (with its overrides), and
   * deletes those it removes, before the change commits; answers the change with the objects' new
   * places (href, ETag). Refuses (409) when the server's copy changed since it was read.
   */
  write(grant: GrantRecord, calendar: CalendarRecord, change: EventChange): Promise<EventChange>;
}

/** Where a contact or group is kept on its server, as its record holds it (its ID is derived from it, as its sync derives it). */
export interface ServerPlace<Id extends string> {
  id: Id;
  href: string;
  etag?: string | undefined;
  vcard_uid: string;
}

/**
 * The address book server behind stored contacts (CardDAV). Each write is made there first, under the
 * version last read; the stored contacts then commit it with its notification. A write another client
 * got in first throws ChangedOnServerError (shared/errors.ts): the caller reads the server's version
 * back (`readContact`, `readGroup`), commits it, and answers 409. Its groups are flat and keep their
 * members (`member_uids`); other failures are the client's errors (400, 404, 503).
 */
export interface ContactServer {
  /** Why a group cannot be put under another on this server. */
  readonly flatGroups: string;
  /** Whether a stored contact or group is on the server (others, such as contacts collected from mail, are kept here only). */
  holds(record: { href?: string | undefined; vcard_uid?: string | undefined }): boolean;
  createContact(grant: GrantRecord, fields: ContactData): Promise<ServerPlace<ContactId>>;
  /** Replaces a contact's fields: its new ETag. */
  updateContact(grant: GrantRecord, contact: ContactRecord, fields: ContactData): Promise<string | undefined>;
  /** Deletes a contact (one the server no longer has is deleted). */
  deleteContact(grant: GrantRecord, contact: ContactRecord): Promise<void>;
  createGroup(grant: GrantRecord, name: string): Promise<ServerPlace<ContactGroupId>>;
  /** Rewrites a group, its name and its members: its new ETag. */
  updateGroup(
    grant: GrantRecord,
    group: ContactGroupRecord,
    name: string,
    members: readonly string[],
  ): Promise<string | undefined>;
  deleteGroup(grant: GrantRecord, group: ContactGroupRecord): Promise<void>;
  /** The server's version of a contact (its groups from `groups`' members): undefined when it is gone, `contact` itself when unchanged or unreadable. */
  readContact(
    grant: GrantRecord,
    contact: ContactRecord,
    groups: readonly ContactGroupRecord[],
  ): Promise<ContactRecord | undefined>;
  /** The server's version of a group: undefined when it is gone, `group` itself when unchanged or unreadable. */
  readGroup(grant: GrantRecord, group: ContactGroupRecord): Promise<ContactGroupRecord | undefined>;
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
 * Contacts of a grant and their groups. `source` separates the address book (what clients create,
 * change and delete) from contacts collected from the grant's mail (`inbox`: read and delete only)
 * and its domain's directory (`domain`). A contact belongs to at most the groups it names; deleting
 * a group keeps its contacts.
 */
export interface ContactsProvider {
  list(grant: GrantRecord, query: ListContactsQuery, limit: number): Promise<Page<Contact>>;
  get(grant: GrantRecord, contactId: string, query: GetContactQuery): Promise<Contact>;
  create(grant: GrantRecord, body: CreateContactBody): Promise<Contact>;
  update(grant: GrantRecord, contactId: string, body: UpdateContactBody): Promise<Contact>;
  delete(grant: GrantRecord, contactId: string): Promise<void>;
  listGroups(grant: GrantRecord, query: PageQuery, limit: number): Promise<Page<ContactGroup>>;
  createGroup(grant: GrantRecord, body: CreateContactGroupBody): Promise<ContactGroup>;
  updateGroup(grant: GrantRecord, groupId: string, body: UpdateContactGroupBody): Promise<ContactGroup>;
  deleteGroup(grant: GrantRecord, groupId: string): Promise<void>;
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
  ics(
    grant: GrantRecord,
    eventId: string,
    calendarId: string,
    method?: 'PUBLISH' | 'REQUEST' | 'CANCEL',
  ): Promise<string>;
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
  create(
    grant: GrantRecord,
    calendarId: string,
    body: CreateEventBody,
    notify: boolean,
    idempotencyKey?: string,
  ): Promise<CalendarEvent>;
  update(
    grant: GrantRecord,
    eventId: string,
    calendarId: string,
    body: UpdateEventBody,
    notify: boolean,
  ): Promise<CalendarEvent>;
  delete(grant: GrantRecord, eventId: string, calendarId: string, notify: boolean): Promise<void>;
  sendRsvp(grant: GrantRecord, eventId: string, calendarId: string, body: SendRsvpBody): Promise<object>;
  /**
   * The provider itself emails an organizer's participants about every create, change and delete,
   * and cannot be kept from it (provider B): `notify` must be true for an event with participants,
   * and a caller that sends its own invitations (the scheduler's bookings) leaves them out.
   */
  readonly notifiesParticipants?: true;
}

/** The window of an import (`GET /events/import`), resolved: Unix seconds, `start` before `end`. */
export interface EventImportWindow {
  calendar_id: string;
  start: number;
  end: number;
  page_token?: string | undefined;
}

/**
 * A calendar's events for import into another system: those overlapping the window, as stored,
 * never expanded. Single events; each series with an occurrence in the window, as its master (its
 * `recurrence` gives the occurrences); and the occurrences changed or cancelled apart from their
 * series (`master_event_id` set). A live provider reads its window page by page, so a master may
 * come again on a later page (the contract says so too); a page may hold fewer than `limit`.
 */
export interface EventImportProvider {
  import(grant: GrantRecord, window: EventImportWindow, limit: number): Promise<Page<CalendarEvent>>;
}

/**
 * Room resources of the grant's organization, from its provider's directory. A provider without a
 * directory of rooms answers an empty list (nothing is invented).
 */
export interface RoomResourcesProvider {
  list(grant: GrantRecord, query: ListResourcesQuery, limit: number): Promise<Page<RoomResource>>;
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
export type AttachmentDownload =
  | { kind: 'content'; content: Buffer; attachment: { filename: string; content_type: string } }
  | { kind: 'redirect'; url: string };

/** `messageId`: the message or draft holding the attachment (AttachmentQuery's `message_id`). */
export interface AttachmentsProvider {
  get(grant: GrantRecord, attachmentId: string, messageId: AttachmentQuery['message_id']): Promise<Attachment>;
  download(
    grant: GrantRecord,
    attachmentId: string,
    messageId: AttachmentQuery['message_id'],
  ): Promise<AttachmentDownload>;
}

/**
 * The lifecycle side of the provider contract: what a provider does when one of its grants is
 * created or deleted. The grants service calls these hooks and never names a provider itself; the
 * purge of a deleted grant's data is the other half (shared/registries/purge.ts, in the jobs worker).
 */
/**
 * `POST /v3/connect/custom` for a provider whose accounts live elsewhere: bulk authentication with a
 * registered credential (a service account, an admin consent), which creates or re-authenticates the
 * grant itself.
 */
export type CustomAuthentication = (
  app: ApplicationContext,
  request: CreateCustomGrantBody,
  meta: { ip: string; userAgent: string },
) => Promise<GrantRecord>;

export interface AccountHooks {
  /** Whether its accounts belong to workspaces (rules, policies): `workspace_id` is accepted on create. */
  governed: boolean;
  /** The `settings` a create request for this provider may name (others are refused, naming the provider's own). */
  settingsFields: readonly string[];
  /**
   * The account a create request names, from its provider settings (400 when they do not fit this
   * provider): its address, and the settings kept on the grant. Providers whose accounts live
   * elsewhere have a custom authentication instead (shared/registries/custom.ts).
   */
  account?(request: CreateCustomGrantBody): { email: string; settings: Record<string, unknown>; name?: string };

  /** Checks the provider fields of an update (`settings`, `scope`): 400 saying why for what cannot change. */
  update(request: { settings?: Record<string, unknown>; scope?: string[] }): void;
  /** Items committed in the transaction that creates the grant (reservations, initial storage). */
  created(grant: GrantRecord, now: number): NamedTransactItem[];
  /** Items committed in the transaction that deletes the grant (releasing what `created` reserved). */
  deleted(grant: GrantRecord): NamedTransactItem[];
}

/**
 * What the scheduled-send worker (shared/services/scheduled-send.ts) needs from the provider of a
 * schedule's grant. The worker owns the schedule's states (pending → sending → success | failed),
 * its lease, holds and retries; the provider owns the message: its quota, its transport, its sent
 * copy and what closing the schedule removes (its draft, its contents).
 */
export interface ScheduledSending {
  /**
   * Sends the due message of `record` once. `beforeRelay` runs right before the message is handed
   * to the transport (from then on it may have left); the sent copy commits with `scheduleItems()`
   * (the schedule's success) and the provider's own closing items, in one transaction. Throws
   * ScheduledSendRefusal (shared/scheduled-send/refusal.ts) when sending again cannot succeed (quota spent, relay refusal, a policy or
   * rule refusing it); anything else is transient. A quota unit taken is given back unless the
   * message may have left.
   */
  send(
    grant: GrantRecord,
    record: ScheduleRecord,
    hooks: { beforeRelay(): Promise<void>; scheduleItems(): NamedItems },
  ): Promise<{ messageId: string }>;
  /** What ending the schedule as failed commits besides its state (its draft removed, `message.send_failed`), and does right after. */
  failure(
    grant: Pick<GrantRecord, 'id' | 'application_id'>,
    record: ScheduleRecord,
    reason: string,
  ): Promise<{ items: NamedItems; outbox: OutboxEntry[]; after(): Promise<void> }>;
}

// ---- services every provider serves (their neutral halves: shared/mail, shared/calendar, shared/outbox, shared/jobs) ----

/** A sent message as every receiving mailbox of this deployment gets it (local delivery: shared/services/local-delivery.ts). */
export interface DeliveredCopy {
  subject: string;
  from: ParticipantRecord[];
  to: ParticipantRecord[];
  cc: ParticipantRecord[];
  replyTo: ParticipantRecord[];
  date: number;
  body: string;
  isPlaintext: boolean;
  headers: HeaderRecord[];
  messageIdHeader: string;
  inReplyTo?: string;
  references: string[];
  /** Attachments without their contents (copied from the spool's objects). */
  attachments: (Omit<NewAttachment, 'content'> & { size: number })[];
  rawSize: number;
  /** Calendar parts with their content, for the invitations of each receiving mailbox. */
  calendarParts: NewAttachment[];
}

/** Where the copies' contents are copied from (S3 keys): raw MIME, each attachment in order, and the body when it is large. */
export interface CopySources {
  raw: string;
  attachments: string[];
  body?: string;
}

/** What local delivery needs from the provider hosting this deployment's mailboxes. */
export interface HostedMailboxes {
  /** Bodies larger than this (bytes) are kept apart from a stored message: the spool keeps such a body as an object of its own. */
  readonly bodyInlineMax: number;
  /** Stores the copy in each of `grants` that does not hold its Message-ID yet (idempotent: a job run twice stores nothing twice). */
  storeCopies(copy: DeliveredCopy, grants: readonly GrantRecord[], sources: CopySources): Promise<void>;
  /** The mailboxes among `grantIds` that hold a message with this Message-ID. */
  holding(grantIds: readonly GrantId[], messageIdHeader: string): Promise<Set<GrantId>>;
}

/** A message from a grant's own address (iMIP, the scheduler's mails: shared/services/itip.ts). */
export interface AccountMailMessage {
  to: { email: string; name?: string }[];
  subject: string;
  body: string;
  calendar?: { method: string; content: string };
}

/** Mail from a grant's own address (its provider's send path). */
export interface AccountMail {
  /**
   * Sends and keeps the Sent copy. A spent quota or a refusal by rules or policy drops the mail
   * (logged, `what` says which); a transport failure throws so the job is tried again.
   */
  send(grant: GrantRecord, mail: AccountMailMessage, what: string): Promise<void>;
}

export type InvitationMethod = 'REQUEST' | 'CANCEL' | 'REPLY';

/** Where a grant's received invitations, cancellations and replies land (its calendar). */
export interface InvitationInbox {
  /** Applies the VEVENTs of one UID (the series and its changed occurrences) sent by `sender`; says what it did. */
  apply(grant: GrantRecord, method: InvitationMethod, uid: string, events: IcsEvent[], sender: string): Promise<string>;
}

/** What an outbox entry sends: a notification to the fan-out queue, or a job to the jobs queue. */
export type Outgoing = { kind: 'notification'; notification: Notification } | { kind: 'job'; job: Job };

/** A provider's store items that are their own outbox entries (a stored message announces itself: shared/services/outbox.ts). */
export interface StoredItemReader {
  /** Whether an inserted item (as the stream carries it, unmarshalled) is one of this provider's self-announcing items. */
  owns(item: Record<string, unknown>): boolean;
  /** What the item sends; the same on every retry. `readBody` reads a body kept in the mail bucket. */
  outgoing(item: Record<string, unknown>, readBody: (key: string) => Promise<string>): Promise<Outgoing[]>;
}

/** The jobs a provider's own storage commits with its changes (thread refreshes, index merges, purges of its data: shared/registries/jobs.ts). */
export type ProviderJobKind =
  | 'refresh-thread'
  | 'message-stored'
  | 'messages-stored'
  | 'merge-search'
  | 'index-message'
  | 'remove-contents'
  | 'purge-calendar';
export type ProviderJob = Extract<Job, { kind: ProviderJobKind }>;
/** `'more'`: the run stopped early (`outOfTime`) and the job must run again. */
export type ProviderJobs = {
  [K in ProviderJobKind]: (job: Extract<Job, { kind: K }>, outOfTime: () => boolean) => Promise<'done' | 'more'>;
};

/**
 * One run of a grant whose mail lives on another server (shared/services/mail-sync.ts holds the
 * lease, so runs of a grant never overlap, and schedules the next). `save` checkpoints the state
 * under the lease (with outbox entries committed in the same write); `outOfTime` says when to stop
 * between batches.
 */
export interface SyncRun {
  state: MailSyncRecord;
  save(state: MailSyncRecord, outbox?: readonly OutboxEntry[]): Promise<void>;
  outOfTime(): boolean;
}

/** `more`: stopped early, the next run continues at once; `changed`: the run saw changes (the grant is active). */
export interface SyncOutcome {
  status: 'done' | 'more';
  changed: boolean;
}

/**
 * The sync source of a stored provider: what the grant's servers hold, kept in step by bounded runs
 * (mail, calendars, contacts). A run lists what changed since its cursor, fetches it in batches,
 * stores each batch in the stored mailbox and checkpoints a cursor that only moves forward
 * (`run.save`), stopping between batches when `run.outOfTime()`. Agent Accounts need none: their
 * mail is stored as it arrives.
 */
export interface SyncSource {
  run(grant: GrantRecord, run: SyncRun): Promise<SyncOutcome>;
}
