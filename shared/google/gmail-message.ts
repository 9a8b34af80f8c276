import { addressparser } from '#shared/lazy/addressparser';
import { THREADING_HEADERS } from '#shared/mail/threading';
import type { Attachment, Draft, Message } from '#shared/providers/contract';
import type { GrantRecord } from '#shared/db/grants';

/**
 * A Gmail message (users.messages.get, `format=full` or `raw`) as our Message: its labels are its
 * folders (a message in two labels is one message in two folders), UNREAD and STARRED its flags,
 * its part tree read for the body (HTML preferred, else text) and the attachments (parts with a
 * file name or an attachment ID; their ID names the part, see attachmentIdOf). Names and shapes from gmail-v1.json (Message, MessagePart, MessagePartBody).
 */

export interface GmailHeader {
  name?: string;
  value?: string;
}

export interface GmailPartBody {
  attachmentId?: string;
  size?: number;
  data?: string;
}

export interface GmailPart {
  partId?: string;
  mimeType?: string;
  filename?: string;
  headers?: GmailHeader[];
  body?: GmailPartBody;
  parts?: GmailPart[];
}

export interface GmailMessage {
  id: string;
  threadId: string;
  labelIds?: string[];
  snippet?: string;
  historyId?: string;
  internalDate?: string;
  payload?: GmailPart;
  sizeEstimate?: number;
  raw?: string;
}

export type MessageFields = 'standard' | 'include_headers' | 'include_basic_headers' | 'raw_mime';

const headerOf = (part: GmailPart | undefined, name: string) =>
  part?.headers?.find((h) => h.name?.toLowerCase() === name)?.value;

const participants = (value: string | undefined) =>
  value
    ? addressparser(value, { flatten: true })
        .filter((a) => a.address)
        .map((a) => ({ email: a.address, ...(a.name ? { name: a.name } : {}) }))
    : [];

const decode = (data: string) => Buffer.from(data, 'base64url');

/** Leaves of the part tree, depth first (the order the message shows them in). */
function leaves(part: GmailPart | undefined): GmailPart[] {
  if (!part) return [];
  return part.parts?.length ? part.parts.flatMap(leaves) : [part];
}

const dispositionOf = (part: GmailPart) => headerOf(part, 'content-disposition')?.split(';')[0]?.trim().toLowerCase();

const isAttachment = (part: GmailPart) => !!part.filename || !!part.body?.attachmentId;

/** The body: the first HTML leaf that is not an attachment, else the first text one. */
function bodyOf(payload: GmailPart | undefined): string | undefined {
  const parts = leaves(payload).filter((p) => !isAttachment(p) && p.body?.data !== undefined);
  const chosen = parts.find((p) => p.mimeType === 'text/html') ?? parts.find((p) => p.mimeType === 'text/plain');
  return chosen?.body?.data !== undefined ? decode(chosen.body.data).toString('utf8') : undefined;
}

/**
 * Our ID of an attachment: its part's ID in the message (`1`, `1.2`), stable across reads, where
 * Gmail's own attachment ID may differ from one read of the message to the next.
 */
const attachmentIdOf = (part: GmailPart) => `part.${part.partId ?? ''}`;

/** The part an attachment ID of ours names, in the message as Gmail answers it now. */
export const partOfAttachment = (payload: GmailPart | undefined, attachmentId: string) =>
  leaves(payload).find((p) => isAttachment(p) && attachmentIdOf(p) === attachmentId);

function attachmentsOf(grant: GrantRecord, payload: GmailPart | undefined): Attachment[] {
  return leaves(payload)
    .filter((p) => isAttachment(p) && p.body?.attachmentId)
    .map((p) => {
      const inline = dispositionOf(p) === 'inline';
      const contentId = headerOf(p, 'content-id')?.replace(/^<|>$/g, '');
      return {
        id: attachmentIdOf(p),
        grant_id: grant.id,
        filename: p.filename ?? '',
        content_type: p.mimeType ?? 'application/octet-stream',
        size: p.body?.size ?? 0,
        is_inline: inline,
        content_disposition: inline ? 'inline' : 'attachment',
        ...(contentId ? { content_id: contentId } : {}),
      };
    });
}

/** Gmail escapes its snippets as HTML text. */
const unescapeSnippet = (snippet: string) =>
  snippet
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

export function messageFromGmail(grant: GrantRecord, m: GmailMessage, fields: MessageFields = 'standard'): Message {
  const head = m.payload;
  const seconds = m.internalDate !== undefined ? Math.floor(Number(m.internalDate) / 1000) : 0;
  const labels = m.labelIds ?? [];
  const inReplyTo = headerOf(head, 'in-reply-to')?.trim();
  const subject = headerOf(head, 'subject');
  const body = bodyOf(head);
  const headers = (head?.headers ?? []).filter(
    (h) => fields === 'include_headers' || THREADING_HEADERS.has(h.name?.toLowerCase() ?? ''),
  );
  return {
    id: m.id,
    object: 'message',
    grant_id: grant.id,
    thread_id: m.threadId,
    ...(subject !== undefined ? { subject } : {}),
    from: participants(headerOf(head, 'from')),
    to: participants(headerOf(head, 'to')),
    cc: participants(headerOf(head, 'cc')),
    bcc: participants(headerOf(head, 'bcc')),
    reply_to: participants(headerOf(head, 'reply-to')),
    date: seconds,
    created_at: seconds,
    unread: labels.includes('UNREAD'),
    starred: labels.includes('STARRED'),
    folders: labels,
    ...(m.snippet !== undefined ? { snippet: unescapeSnippet(m.snippet) } : {}),
    ...(inReplyTo ? { in_reply_to: inReplyTo } : {}),
    ...(body !== undefined ? { body } : {}),
    attachments: attachmentsOf(grant, head),
    ...(fields === 'include_headers' || fields === 'include_basic_headers'
      ? { headers: headers.map((h) => ({ name: h.name ?? '', value: h.value ?? '' })) }
      : {}),
    ...(fields === 'raw_mime' && m.raw !== undefined ? { raw_mime: m.raw } : {}),
  };
}

/** A Gmail draft (users.drafts: its ID, and the message it holds) as our Draft. */
export function draftFromGmail(grant: GrantRecord, draftId: string, m: GmailMessage): Draft {
  const message = messageFromGmail(grant, m);
  return { ...message, object: 'draft', id: draftId, updated_at: message.date };
}
