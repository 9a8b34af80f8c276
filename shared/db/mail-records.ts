import type { AttachmentId, DraftId, GrantId, MessageId, ScheduleId, ThreadId } from '#shared/ids';

/** What a draft or message tracks (the rules live in shared/mail/tracking.ts). */
export interface TrackingSettings {
  opens: boolean;
  links: boolean;
  thread_replies: boolean;
  label?: string;
  domain_name?: string;
}

/** Stored shapes of an Agent Account mailbox. The API shapes are built from these in shared/mailbox/views.ts. */

export interface ParticipantRecord {
  email: string;
  name?: string;
}

/** An attachment to store: its bytes and how it is described. */
export interface NewAttachment {
  filename: string;
  contentType: string;
  content: Buffer;
  contentId?: string;
  inline: boolean;
}

/** An attachment whose bytes are already in the mail bucket (an upload): stored by an S3 copy, never read. */
export interface CopiedAttachment extends Omit<NewAttachment, 'content'> {
  size: number;
  copyFrom: string;
}

export interface AttachmentRecord {
  id: AttachmentId;
  filename: string;
  content_type: string;
  size: number;
  is_inline: boolean;
  content_id?: string;
  /** S3 key of the content; for a message synced from a server (`on_server`), the attachment's position in its MIME (its contents stay on the server). */
  key: string;
  on_server?: true;
}

export interface HeaderRecord {
  name: string;
  value: string;
}

/** The address fields messages and drafts share. */
export interface AddressFields {
  from: ParticipantRecord[];
  to: ParticipantRecord[];
  cc: ParticipantRecord[];
  bcc: ParticipantRecord[];
  reply_to: ParticipantRecord[];
}

export interface MessageRecord extends AddressFields {
  id: MessageId;
  grant_id: GrantId;
  thread_id: ThreadId;
  subject: string;
  /** Date header (or send time), Unix seconds. */
  date: number;
  unread: boolean;
  starred: boolean;
  folders: string[];
  snippet: string;
  /** Body inline when small; otherwise `body_key` names it in S3. */
  body?: string;
  body_key?: string;
  /** Bytes of the body (UTF-8), wherever it is; absent on messages stored before it was recorded. */
  body_size?: number;
  is_plaintext: boolean;
  attachments: AttachmentRecord[];
  headers?: HeaderRecord[];
  /** S3 key of the raw MIME. */
  raw_key?: string;
  /** Bytes of the raw MIME; absent on messages stored before it was recorded. */
  raw_size?: number;
  metadata: Record<string, string>;
  message_id_header?: string;
  in_reply_to?: string;
  references: string[];
  created_at: number;
  updated_at: number;
  /** Optimistic-locking counter: every write is conditional on the version read. */
  version: number;
  /**
   * 1 when the message was stored with its search entry (shared/db/search.ts). Messages stored before
   * the search index have none: they had text, subject, address and attachment postings instead
   * (`indexed` was set once those were all written), still removed with them.
   */
  search?: 1;
  indexed?: boolean;
  /** A message synced from its server: where it is in each of its folders, `<uidvalidity>:<uid>` (shared/imap/sync.ts). */
  server_uids?: Record<string, string>;
  /** Stored by a first sync (history, not news): it announces no message.created. */
  quiet?: true;
}

export interface DraftRecord extends AddressFields {
  id: DraftId;
  grant_id: GrantId;
  thread_id?: ThreadId;
  subject: string;
  body: string;
  body_key?: string;
  /** Bytes of the body (UTF-8), wherever it is; absent on drafts stored before it was recorded. */
  body_size?: number;
  is_plaintext: boolean;
  starred: boolean;
  attachments: AttachmentRecord[];
  metadata: Record<string, string>;
  reply_to_message_id?: MessageId;
  custom_headers: HeaderRecord[];
  signature_id?: string;
  template?: { id: string; variables?: Record<string, unknown> };
  tracking_options: TrackingSettings;
  /** A scheduled send's draft (use_draft): shown in Drafts until sent, changed only by its schedule. */
  schedule_id?: ScheduleId;
  /** An IMAP grant's draft: the Message-ID header of its copy in the server's Drafts folder (kept by every version). */
  message_id_header?: string;
  /** An IMAP grant's draft: where that copy is, `<uidvalidity>:<uid>` (absent when the server told no UID). */
  server_place?: string;
  /** A send's claim on the draft (shared/mailbox/draft-send.ts), and when it lapses (epoch seconds): while it holds, only that send changes the draft. */
  send_claim?: string;
  send_claim_until?: number;
  created_at: number;
  updated_at: number;
  version: number;
}

export interface ThreadRecord {
  id: ThreadId;
  grant_id: GrantId;
  subject: string;
  participants: ParticipantRecord[];
  message_ids: MessageId[];
  draft_ids: DraftId[];
  folders: string[];
  snippet: string;
  unread: boolean;
  starred: boolean;
  has_attachments: boolean;
  earliest_message_date: number;
  latest_message_received_date: number;
  latest_message_sent_date?: number;
  /** ID of the newest message: the thread's key in the activity listing. */
  latest_message_id: MessageId;
  version: number;
}

export interface FolderRecord {
  id: string;
  grant_id: GrantId;
  name: string;
  /** A synced folder's path on its server. */
  server_path?: string;
  parent_id?: string;
  background_color?: string;
  text_color?: string;
  system_folder: boolean;
  attributes: string[];
  total_count: number;
  unread_count: number;
  created_at: number;
  updated_at: number;
}
