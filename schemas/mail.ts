import type { FromSchema } from 'json-schema-to-ts';
import { MessageTrackingOptions } from '#schemas/tracking';
import { UploadedAttachmentRef } from '#schemas/attachment-uploads';
import { TemplateStrict } from '#schemas/templates';
import {
  EmailAddress,
  Limit,
  MAX_MESSAGE_TEXT,
  PageToken,
  Select,
  SharedFolderId,
  SharedFrom,
  UnixSeconds,
} from '#schemas/common';

/** Schema pieces shared by messages, drafts, threads and sends. */

/** A message, thread or draft ID: provider B's (Graph's) are about 150 characters; the stored mailbox's and provider A's are shorter. */
const ObjectId = { type: 'string', minLength: 1, maxLength: 256 } as const;
/** What a message read includes: `fields=standard|include_headers|raw_mime`. */
const MessageFields = {
  type: 'string',
  enum: ['standard', 'include_headers', 'include_basic_headers', 'include_tracking_options', 'raw_mime'],
} as const;

export const Participant = {
  type: 'object',
  additionalProperties: false,
  required: ['email'],
  properties: {
    email: EmailAddress,
    name: { type: 'string', maxLength: 256 },
  },
} as const;
export type Participant = FromSchema<typeof Participant>;

export const Participants = (maxItems: number) => ({ type: 'array', maxItems, items: Participant }) as const;

export const Metadata = {
  type: 'object',
  maxProperties: 50,
  propertyNames: { type: 'string', minLength: 1, maxLength: 100 },
  additionalProperties: { type: 'string', maxLength: 500 },
  description: 'String key-value pairs (at most 50); key1..key5 are indexed and filterable with metadata_pair.',
} as const;

/** An attachment sent inline in a JSON body: content is base64. */
export const AttachmentInput = {
  type: 'object',
  additionalProperties: false,
  required: ['filename', 'content'],
  properties: {
    filename: { type: 'string', minLength: 1, maxLength: 255 },
    content_type: { type: 'string', minLength: 3, maxLength: 255, pattern: '^[\\w.+-]+/[\\w.+-]+$' },
    content: { type: 'string', maxLength: MAX_MESSAGE_TEXT, description: 'Base64-encoded content.' },
    content_id: { type: 'string', minLength: 1, maxLength: 255 },
    is_inline: { type: 'boolean' },
    // Bytes; no attachment is larger than the largest request (25 MiB multipart, functions/send/routes.ts).
    size: { type: 'integer', minimum: 0, maximum: 25 * 1024 * 1024 },
  },
} as const;

export const CustomHeader = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'value'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 76, pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" },
    value: { type: 'string', maxLength: 998, pattern: '^[^\\r\\n]*$' },
  },
} as const;

export const TemplateRef = {
  type: 'object',
  additionalProperties: false,
  required: ['id'],
  properties: {
    id: ObjectId,
    variables: { type: 'object' },
    strict: TemplateStrict,
  },
} as const;

export const TrackingOptions = {
  type: 'object',
  additionalProperties: false,
  properties: {
    opens: { type: 'boolean' },
    links: { type: 'boolean' },
    thread_replies: { type: 'boolean' },
    label: { type: 'string', maxLength: 2048 },
    domain_name: {
      type: 'string',
      maxLength: 1000,
      description: 'Custom tracking hostname; validated and canonicalised.',
    },
  },
} as const;

export const AttachmentObject = {
  type: 'object',
  required: ['id', 'grant_id', 'filename', 'content_type', 'size', 'is_inline', 'content_disposition'],
  properties: {
    id: { type: 'string' },
    grant_id: { type: 'string' },
    filename: { type: 'string' },
    content_type: { type: 'string' },
    size: { type: 'integer' },
    is_inline: { type: 'boolean' },
    content_disposition: { type: 'string', enum: ['attachment', 'inline'] },
    content_id: { type: 'string' },
  },
} as const;

/** Where content too large for one answer (over 5 MB of JSON) is served instead of the field itself. */
const MovedContentUrl = (field: string, what: string) =>
  ({
    type: 'string',
    format: 'uri',
    description: `Present instead of \`${field}\` when the object would not fit one answer: a URL valid for 5 minutes serving ${what}.`,
  }) as const;

export const MessageObject = {
  type: 'object',
  required: [
    'id',
    'object',
    'grant_id',
    'thread_id',
    'from',
    'to',
    'cc',
    'bcc',
    'reply_to',
    'date',
    'unread',
    'starred',
    'folders',
    'attachments',
  ],
  properties: {
    id: { type: 'string' },
    object: { type: 'string', enum: ['message'] },
    grant_id: { type: 'string' },
    thread_id: { type: 'string' },
    subject: { type: 'string' },
    from: { type: 'array', items: Participant },
    to: { type: 'array', items: Participant },
    cc: { type: 'array', items: Participant },
    bcc: { type: 'array', items: Participant },
    reply_to: { type: 'array', items: Participant },
    date: { type: 'integer' },
    unread: { type: 'boolean' },
    starred: { type: 'boolean' },
    folders: { type: 'array', items: { type: 'string' } },
    snippet: { type: 'string' },
    in_reply_to: { type: 'string', description: 'The Message-ID this message answers, when it answers one.' },
    body: { type: 'string' },
    body_url: MovedContentUrl('body', 'the body (HTML, or text when is_plaintext)'),
    attachments: { type: 'array', items: AttachmentObject },
    metadata: { type: 'object' },
    headers: {
      type: 'array',
      items: { type: 'object', properties: { name: { type: 'string' }, value: { type: 'string' } } },
    },
    raw_mime: { type: 'string' },
    raw_mime_url: MovedContentUrl('raw_mime', 'the raw MIME itself (message/rfc822, not base64url)'),
    tracking_options: { ...MessageTrackingOptions, description: 'With fields=include_tracking_options.' },
    created_at: { type: 'integer' },
  },
} as const;

/** Filters shared by message, thread and draft listings. */
const TextFilter = { type: 'string', minLength: 1, maxLength: 500 } as const;
const AddressFilter = { type: 'string', minLength: 1, maxLength: 2600 } as const;

/** The filters messages and threads share. */
const SharedFilters = {
  limit: Limit,
  page_token: PageToken,
  subject: TextFilter,
  any_email: { ...AddressFilter, description: 'Comma-separated addresses (up to 25); matches from, to, cc or bcc.' },
  to: AddressFilter,
  from: AddressFilter,
  cc: AddressFilter,
  bcc: AddressFilter,
  in: { type: 'string', minLength: 1, maxLength: 256, description: 'A folder ID.' },
  unread: { type: 'boolean' },
  starred: { type: 'boolean' },
  has_attachment: { type: 'boolean' },
  search_query_native: { type: 'string', minLength: 1, maxLength: 1000 },
  shared_from: { type: 'string', maxLength: 256 },
  select: Select,
} as const;

export const ListMessagesQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...SharedFilters,
    thread_id: ObjectId,
    received_before: UnixSeconds,
    received_after: UnixSeconds,
    fields: MessageFields,
    metadata_pair: {
      type: 'string',
      minLength: 3,
      maxLength: 600,
      description: '`key:value` with key one of key1..key5.',
    },
    query_imap: { type: 'boolean' },
    ...SharedFolderId,
  },
} as const;
export type ListMessagesQuery = FromSchema<typeof ListMessagesQuery>;

export const MessageIdQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    fields: MessageFields,
    query_imap: { type: 'boolean' },
    select: Select,
    ...SharedFrom,
  },
} as const;
export type MessageIdQuery = FromSchema<typeof MessageIdQuery>;

export const UpdateMessageBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    unread: { type: 'boolean' },
    starred: { type: 'boolean' },
    folders: {
      type: 'array',
      minItems: 1,
      maxItems: 20,
      uniqueItems: true,
      items: { type: 'string', minLength: 1, maxLength: 256 },
    },
    metadata: Metadata,
  },
} as const;
export type UpdateMessageBody = FromSchema<typeof UpdateMessageBody>;

export const DeleteMessageQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { hard_delete: { type: 'boolean' }, ...SharedFrom },
} as const;
export type DeleteMessageQuery = FromSchema<typeof DeleteMessageQuery>;

export const CleanMessagesBody = {
  type: 'object',
  additionalProperties: false,
  required: ['message_id'],
  properties: {
    message_id: { type: 'array', minItems: 1, maxItems: 20, uniqueItems: true, items: ObjectId },
    ignore_links: { type: 'boolean' },
    ignore_images: { type: 'boolean' },
    images_as_markdown: { type: 'boolean' },
    ignore_tables: { type: 'boolean' },
    remove_conclusion_phrases: { type: 'boolean' },
    html_as_markdown: { type: 'boolean' },
  },
} as const;
export type CleanMessagesBody = FromSchema<typeof CleanMessagesBody>;

export const CleanedMessageObject = {
  type: 'object',
  required: ['id', 'object', 'grant_id'],
  properties: { ...MessageObject.properties, conversation: { type: 'string' } },
} as const;

/** Fields of a message to send (also a draft's fields). */
const OutgoingFields = {
  to: Participants(100),
  cc: Participants(100),
  bcc: Participants(100),
  reply_to: Participants(10),
  from: { ...Participants(5), minItems: 1 },
  subject: { type: 'string', maxLength: 998 },
  body: { type: 'string', maxLength: MAX_MESSAGE_TEXT },
  starred: { type: 'boolean' },
  // Inline (base64) or a completed upload by ID (functions/attachments: attachment-uploads).
  attachments: { type: 'array', maxItems: 100, items: { anyOf: [AttachmentInput, UploadedAttachmentRef] } },
  metadata: Metadata,
  template: TemplateRef,
  tracking_options: TrackingOptions,
} as const;

/** Fields accepted only when a draft (or a send) is created. */
const CreateOnlyFields = {
  is_plaintext: { type: 'boolean' },
  reply_to_message_id: ObjectId,
  custom_headers: { type: 'array', maxItems: 50, items: CustomHeader },
  signature_id: ObjectId,
} as const;

export const SendMessageBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...OutgoingFields,
    ...CreateOnlyFields,
    send_at: {
      ...UnixSeconds,
      description:
        'Unix seconds: schedules the message instead of sending it now (at least 60 s and at most 30 days ahead).',
    },
    use_draft: { type: 'boolean', description: 'With `send_at`: keep the message in Drafts until it is sent.' },
  },
} as const;
export type SendMessageBody = FromSchema<typeof SendMessageBody>;

/** A send's answer: the sent message, or (with `send_at`) the scheduled one with what is known so far. */
export const SendMessageResult = {
  type: 'object',
  required: ['id', 'object', 'grant_id', 'from', 'to', 'cc', 'bcc', 'reply_to', 'starred', 'attachments'],
  properties: {
    ...MessageObject.properties,
    schedule_id: {
      type: 'string',
      description: 'Scheduled sends: the schedule (GET .../messages/schedules/{schedule_id}).',
    },
    send_at: { type: 'integer' },
    use_draft: { type: 'boolean' },
    draft_id: {
      type: 'string',
      description: 'Scheduled sends with `use_draft`: the draft kept in Drafts until the message is sent.',
    },
  },
} as const;

/** States of a scheduled send (see the README): pending → sending → success | failed; pending → cancelled. */
export const SCHEDULE_STATUS_CODES = ['pending', 'sending', 'success', 'failed', 'cancelled'] as const;

export const ScheduleObject = {
  type: 'object',
  required: ['schedule_id', 'object', 'grant_id', 'status', 'send_at', 'close_time', 'created_at'],
  properties: {
    schedule_id: { type: 'string' },
    object: { type: 'string', enum: ['schedule'] },
    grant_id: { type: 'string' },
    status: {
      type: 'object',
      required: ['code', 'description'],
      properties: { code: { type: 'string', enum: SCHEDULE_STATUS_CODES }, description: { type: 'string' } },
    },
    send_at: { type: 'integer', description: 'When the message is (or was) due to leave, Unix seconds.' },
    close_time: { type: 'integer', description: 'The send_at time of the schedule, Unix seconds.' },
    message_id: { type: 'string', description: 'Once sent: the message, in Sent.' },
    draft_id: { type: 'string', description: 'With use_draft, until sent: the draft in Drafts.' },
    sent_at: { type: 'integer', description: 'Once sent: when the message left, Unix seconds.' },
    reason: { type: 'string', description: 'Once failed: why the message was not sent.' },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

export const ListSchedulesQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { limit: Limit, page_token: PageToken },
} as const;
export type ListSchedulesQuery = FromSchema<typeof ListSchedulesQuery>;

export const CancelScheduleResult = {
  type: 'object',
  required: ['message', 'schedule_id', 'status'],
  properties: {
    message: { type: 'string' },
    schedule_id: { type: 'string' },
    status: ScheduleObject.properties.status,
  },
} as const;

export const CreateDraftBody = {
  type: 'object',
  additionalProperties: false,
  properties: { ...OutgoingFields, ...CreateOnlyFields },
} as const;
export type CreateDraftBody = FromSchema<typeof CreateDraftBody>;

export const UpdateDraftBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { ...OutgoingFields },
} as const;
export type UpdateDraftBody = FromSchema<typeof UpdateDraftBody>;

export const SendDraftBody = {
  type: 'object',
  additionalProperties: false,
  properties: { signature_id: ObjectId },
} as const;
export type SendDraftBody = FromSchema<typeof SendDraftBody>;

export const DraftObject = {
  type: 'object',
  required: ['id', 'object', 'grant_id', 'to', 'cc', 'bcc', 'reply_to', 'date', 'starred', 'folders', 'attachments'],
  properties: {
    ...MessageObject.properties,
    object: { type: 'string', enum: ['draft'] },
    is_plaintext: { type: 'boolean' },
    reply_to_message_id: { type: 'string' },
    custom_headers: { type: 'array', items: CustomHeader },
    signature_id: { type: 'string' },
    template: TemplateRef,
    tracking_options: { type: 'object' },
    schedule_id: {
      type: 'string',
      description: 'A scheduled send kept in Drafts (use_draft): its schedule. Such a draft changes only with it.',
    },
    updated_at: { type: 'integer' },
  },
} as const;

export const ListDraftsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: SharedFilters.limit,
    page_token: SharedFilters.page_token,
    subject: SharedFilters.subject,
    any_email: SharedFilters.any_email,
    to: SharedFilters.to,
    cc: SharedFilters.cc,
    bcc: SharedFilters.bcc,
    starred: SharedFilters.starred,
    thread_id: ObjectId,
    has_attachment: SharedFilters.has_attachment,
    metadata_pair: {
      type: 'string',
      minLength: 3,
      maxLength: 600,
      description: '`key:value` with key one of key1..key5.',
    },
    query_imap: { type: 'boolean' },
    select: SharedFilters.select,
  },
} as const;
export type ListDraftsQuery = FromSchema<typeof ListDraftsQuery>;

export const ThreadObject = {
  type: 'object',
  required: [
    'id',
    'object',
    'grant_id',
    'participants',
    'message_ids',
    'draft_ids',
    'folders',
    'unread',
    'starred',
    'has_attachments',
    'has_drafts',
  ],
  properties: {
    id: { type: 'string' },
    object: { type: 'string', enum: ['thread'] },
    grant_id: { type: 'string' },
    subject: { type: 'string' },
    participants: { type: 'array', items: Participant },
    message_ids: { type: 'array', items: { type: 'string' } },
    draft_ids: { type: 'array', items: { type: 'string' } },
    folders: { type: 'array', items: { type: 'string' } },
    snippet: { type: 'string' },
    unread: { type: 'boolean' },
    starred: { type: 'boolean' },
    has_attachments: { type: 'boolean' },
    has_drafts: { type: 'boolean' },
    earliest_message_date: { type: 'integer' },
    latest_message_received_date: { type: 'integer' },
    latest_message_sent_date: { type: 'integer' },
    // The thread's newest message, or its newest draft when that is newer.
    latest_draft_or_message: { anyOf: [MessageObject, DraftObject] },
  },
} as const;

export const ListThreadsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...SharedFilters,
    latest_message_before: UnixSeconds,
    latest_message_after: UnixSeconds,
    earliest_message_date: UnixSeconds,
    shared_folder_id: { type: 'string', maxLength: 256 },
  },
} as const;
export type ListThreadsQuery = FromSchema<typeof ListThreadsQuery>;

export const UpdateThreadBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    unread: { type: 'boolean' },
    starred: { type: 'boolean' },
    folders: UpdateMessageBody.properties.folders,
  },
} as const;
export type UpdateThreadBody = FromSchema<typeof UpdateThreadBody>;

export const FolderObject = {
  type: 'object',
  required: ['id', 'object', 'grant_id', 'name', 'system_folder'],
  properties: {
    id: { type: 'string' },
    object: { type: 'string', enum: ['folder'] },
    grant_id: { type: 'string' },
    name: { type: 'string' },
    parent_id: { type: 'string' },
    background_color: { type: 'string' },
    text_color: { type: 'string' },
    system_folder: { type: 'boolean' },
    attributes: { type: 'array', items: { type: 'string' } },
    total_count: { type: 'integer' },
    unread_count: { type: 'integer' },
    child_count: { type: 'integer' },
  },
} as const;

const Color = { type: 'string', pattern: '^#[0-9a-fA-F]{6}$' } as const;
const FolderName = { type: 'string', minLength: 1, maxLength: 256, pattern: '\\S' } as const;

export const ListFoldersQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: Limit,
    page_token: PageToken,
    parent_id: { type: 'string', minLength: 1, maxLength: 256 },
    include_hidden_folders: { type: 'boolean' },
    single_level: { type: 'boolean' },
    shared_from: { type: 'string', maxLength: 256 },
    select: Select,
  },
} as const;
export type ListFoldersQuery = FromSchema<typeof ListFoldersQuery>;

export const CreateFolderBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: FolderName,
    parent_id: { type: 'string', minLength: 1, maxLength: 256 },
    background_color: Color,
    text_color: Color,
  },
} as const;
export type CreateFolderBody = FromSchema<typeof CreateFolderBody>;

export const UpdateFolderBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    name: FolderName,
    parent_id: { type: ['string', 'null'], minLength: 1, maxLength: 256 },
    background_color: Color,
    text_color: Color,
  },
} as const;
export type UpdateFolderBody = FromSchema<typeof UpdateFolderBody>;

export const AttachmentQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['message_id'],
  properties: {
    message_id: { ...ObjectId, description: 'The message holding the attachment, or the draft (its `drf_` ID).' },
    query_imap: { type: 'boolean' },
  },
} as const;
export type AttachmentQuery = FromSchema<typeof AttachmentQuery>;
