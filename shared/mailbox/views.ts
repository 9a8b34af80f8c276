import type {
  AttachmentRecord,
  DraftRecord,
  FolderRecord,
  HeaderRecord,
  MessageRecord,
  ThreadRecord,
} from '#shared/mailbox/types';
import { bodyText, snippetOf } from '#shared/mailbox/text';
import { receivedAt } from '#shared/mail/threading';

/** API shapes of stored mailbox records. */

export const attachmentView = (grantId: string, a: AttachmentRecord) => ({
  id: a.id,
  grant_id: grantId,
  filename: a.filename,
  content_type: a.content_type,
  size: a.size,
  is_inline: a.is_inline,
  content_disposition: a.is_inline ? ('inline' as const) : ('attachment' as const),
  ...(a.content_id ? { content_id: a.content_id } : {}),
});

/**
 * Content an answer cannot carry (see ANSWER_BUDGET_BYTES) is served from a short-lived URL instead:
 * `body_url` in place of `body`, `raw_mime_url` (the MIME itself, not base64url) in place of `raw_mime`.
 */
export interface MovedContent {
  body_url?: string;
  raw_mime_url?: string;
}

export function messageView(
  m: MessageRecord,
  extra: { body?: string; headers?: HeaderRecord[]; raw_mime?: string } & MovedContent,
) {
  return {
    id: m.id,
    object: 'message' as const,
    grant_id: m.grant_id,
    thread_id: m.thread_id,
    subject: m.subject,
    from: m.from,
    to: m.to,
    cc: m.cc,
    bcc: m.bcc,
    reply_to: m.reply_to,
    date: m.date,
    unread: m.unread,
    starred: m.starred,
    folders: m.folders,
    snippet: m.snippet,
    ...(m.in_reply_to ? { in_reply_to: m.in_reply_to } : {}),
    ...(extra.body !== undefined ? { body: extra.body } : {}),
    ...(extra.body_url !== undefined ? { body_url: extra.body_url } : {}),
    attachments: m.attachments.map((a) => attachmentView(m.grant_id, a)),
    metadata: m.metadata,
    created_at: m.created_at,
    ...(extra.headers ? { headers: extra.headers } : {}),
    ...(extra.raw_mime !== undefined ? { raw_mime: extra.raw_mime } : {}),
    ...(extra.raw_mime_url !== undefined ? { raw_mime_url: extra.raw_mime_url } : {}),
  };
}
export type MessageView = ReturnType<typeof messageView>;

export function draftView(d: DraftRecord, body: string, moved: MovedContent = {}) {
  return {
    id: d.id,
    object: 'draft' as const,
    grant_id: d.grant_id,
    ...(d.thread_id ? { thread_id: d.thread_id } : {}),
    subject: d.subject,
    from: d.from,
    to: d.to,
    cc: d.cc,
    bcc: d.bcc,
    reply_to: d.reply_to,
    date: d.updated_at,
    starred: d.starred,
    unread: false,
    folders: ['drafts'],
    snippet: snippetOf(bodyText(body, d.is_plaintext)),
    ...(moved.body_url !== undefined ? { body_url: moved.body_url } : { body }),
    is_plaintext: d.is_plaintext,
    attachments: d.attachments.map((a) => attachmentView(d.grant_id, a)),
    metadata: d.metadata,
    ...(d.reply_to_message_id ? { reply_to_message_id: d.reply_to_message_id } : {}),
    custom_headers: d.custom_headers,
    ...(d.signature_id ? { signature_id: d.signature_id } : {}),
    ...(d.template ? { template: d.template } : {}),
    tracking_options: d.tracking_options,
    ...(d.schedule_id ? { schedule_id: d.schedule_id } : {}),
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}

export function threadView(t: ThreadRecord, latest?: MessageView | ReturnType<typeof draftView>) {
  return {
    id: t.id,
    object: 'thread' as const,
    grant_id: t.grant_id,
    subject: t.subject,
    participants: t.participants,
    message_ids: t.message_ids,
    draft_ids: t.draft_ids,
    folders: t.folders,
    snippet: t.snippet,
    unread: t.unread,
    starred: t.starred,
    has_attachments: t.has_attachments,
    has_drafts: t.draft_ids.length > 0,
    earliest_message_date: t.earliest_message_date,
    latest_message_received_date: t.latest_message_received_date,
    ...(t.latest_message_sent_date !== undefined ? { latest_message_sent_date: t.latest_message_sent_date } : {}),
    ...(latest ? { latest_draft_or_message: latest } : {}),
  };
}

export function folderView(f: FolderRecord, childCount: number) {
  return {
    id: f.id,
    object: 'folder' as const,
    grant_id: f.grant_id,
    name: f.name,
    ...(f.parent_id ? { parent_id: f.parent_id } : {}),
    ...(f.background_color ? { background_color: f.background_color } : {}),
    ...(f.text_color ? { text_color: f.text_color } : {}),
    system_folder: f.system_folder,
    attributes: f.attributes,
    total_count: f.total_count,
    unread_count: f.unread_count,
    child_count: childCount,
  };
}

/** Receipt time of a message in Unix seconds (from its ULID). */
export { receivedAt };
