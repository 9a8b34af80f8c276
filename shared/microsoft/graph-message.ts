import type { GrantRecord } from '#shared/db/grants';
import { THREADING_HEADERS } from '#shared/mail/threading';
import type { Attachment, Message } from '#shared/providers/contract';

/**
 * A Graph message (microsoft.graph.message, as `GET …/messages/{id}` answers it with GRAPH_MESSAGE_SELECT)
 * as our Message: one folder (`parentFolderId`: Outlook keeps a message in exactly one), `isRead` and
 * `flag.flagStatus` its flags, `conversationId` its thread, `bodyPreview` its snippet, the body as
 * Graph gives it (HTML unless the message is text). Attachments come from the message's own
 * attachment list (Graph's message carries only `hasAttachments`, false for inline-only ones).
 * `internetMessageHeaders` holds the headers of a received message; Graph has none for drafts and
 * sent items, whose basic headers are then rebuilt from the message's own fields. Names and shapes
 * from schemas/providers/microsoft/mail.json.
 */

export interface GraphEmailAddress {
  name?: string | null;
  address?: string | null;
}

export interface GraphRecipient {
  emailAddress?: GraphEmailAddress | null;
}

export interface GraphHeader {
  name?: string | null;
  value?: string | null;
}

export type GraphFlagStatus = 'notFlagged' | 'complete' | 'flagged';

export interface GraphMessage {
  id: string;
  conversationId?: string | null;
  subject?: string | null;
  bodyPreview?: string | null;
  body?: { contentType?: string | null; content?: string | null } | null;
  from?: GraphRecipient | null;
  toRecipients?: GraphRecipient[] | null;
  ccRecipients?: GraphRecipient[] | null;
  bccRecipients?: GraphRecipient[] | null;
  replyTo?: GraphRecipient[] | null;
  receivedDateTime?: string | null;
  sentDateTime?: string | null;
  createdDateTime?: string | null;
  isRead?: boolean | null;
  isDraft?: boolean | null;
  flag?: { flagStatus?: GraphFlagStatus | null } | null;
  parentFolderId?: string | null;
  hasAttachments?: boolean | null;
  internetMessageId?: string | null;
  internetMessageHeaders?: GraphHeader[] | null;
}

/** An item of `…/messages/{id}/attachments` (file, item or reference attachment). */
export interface GraphAttachment {
  '@odata.type'?: string;
  id: string;
  name?: string | null;
  contentType?: string | null;
  size?: number | null;
  isInline?: boolean | null;
  /** fileAttachment only, and only when not left out by `$select`. */
  contentId?: string | null;
}

export type MessageFields = 'standard' | 'include_headers' | 'include_basic_headers' | 'raw_mime';

/** The message properties read for our Message, and no others (`$select`). */
export const GRAPH_MESSAGE_SELECT = [
  'id',
  'conversationId',
  'subject',
  'bodyPreview',
  'body',
  'from',
  'toRecipients',
  'ccRecipients',
  'bccRecipients',
  'replyTo',
  'receivedDateTime',
  'sentDateTime',
  'createdDateTime',
  'isRead',
  'flag',
  'parentFolderId',
  'hasAttachments',
  'internetMessageId',
  'internetMessageHeaders',
] as const;

/** The attachment properties read for our attachment metadata (never `contentBytes`). */
export const GRAPH_ATTACHMENT_SELECT = ['id', 'name', 'contentType', 'size', 'isInline'] as const;

const secondsOf = (iso: string | null | undefined): number | undefined => {
  const ms = iso ? Date.parse(iso) : NaN;
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
};

const participants = (recipients: readonly (GraphRecipient | null | undefined)[] | null | undefined) =>
  (recipients ?? []).flatMap((r) => {
    const address = r?.emailAddress?.address?.trim();
    if (!address) return [];
    const name = r?.emailAddress?.name?.trim();
    // Outlook repeats the address as the name when it knows no other.
    return [{ email: address, ...(name && name !== address ? { name } : {}) }];
  });

/** `Name <address>`, the name quoted when it holds characters RFC 5322 reserves. */
const formatted = (recipients: readonly (GraphRecipient | null | undefined)[]) =>
  participants(recipients)
    .map((p) => {
      if (p.name === undefined) return p.email;
      const name = /[()<>\[\]:;@\\,."]/.test(p.name) ? `"${p.name.replace(/(["\\])/g, '\\$1')}"` : p.name;
      return `${name} <${p.email}>`;
    })
    .join(', ');

/** The basic headers of a message Graph holds no internet headers for (a draft, a sent item), from its fields. */
function rebuiltHeaders(m: GraphMessage): { name: string; value: string }[] {
  const date = m.sentDateTime ?? m.receivedDateTime;
  const entries: [string, string][] = [
    ['From', m.from ? formatted([m.from]) : ''],
    ['To', formatted(m.toRecipients ?? [])],
    ['Cc', formatted(m.ccRecipients ?? [])],
    ['Bcc', formatted(m.bccRecipients ?? [])],
    ['Reply-To', formatted(m.replyTo ?? [])],
    ['Subject', m.subject ?? ''],
    ['Date', date && !Number.isNaN(Date.parse(date)) ? new Date(date).toUTCString().replace('GMT', '+0000') : ''],
    ['Message-ID', m.internetMessageId ?? ''],
  ];
  return entries.filter(([, value]) => value !== '').map(([name, value]) => ({ name, value }));
}

/** The message's headers: Graph's internet headers when it has them, else the basic ones rebuilt. */
function headersOf(m: GraphMessage): { name: string; value: string }[] {
  const given = (m.internetMessageHeaders ?? []).filter((h) => h.name);
  return given.length ? given.map((h) => ({ name: h.name!, value: h.value ?? '' })) : rebuiltHeaders(m);
}

const headerValue = (m: GraphMessage, name: string) =>
  m.internetMessageHeaders?.find((h) => h.name?.toLowerCase() === name)?.value ?? undefined;

export function attachmentFromGraph(grant: GrantRecord, a: GraphAttachment): Attachment {
  const inline = a.isInline === true;
  const contentId = a.contentId?.replace(/^<|>$/g, '');
  return {
    id: a.id,
    grant_id: grant.id,
    filename: a.name ?? '',
    content_type: a.contentType || 'application/octet-stream',
    size: a.size ?? 0,
    is_inline: inline,
    content_disposition: inline ? 'inline' : 'attachment',
    ...(contentId ? { content_id: contentId } : {}),
  };
}

/**
 * Whether the message may hold attachments worth listing: Graph's `hasAttachments` says so for
 * attachments proper, but is false for a message whose only attachments are inline (images its
 * HTML body shows by `cid:`), so such a body asks too.
 */
export const mayHoldAttachments = (m: GraphMessage): boolean =>
  m.hasAttachments === true || (m.body?.contentType?.toLowerCase() === 'html' && /cid:/i.test(m.body.content ?? ''));

export interface GraphMessageExtras {
  fields?: MessageFields;
  /** The message's attachments (file, item, reference), as listed by Graph. */
  attachments?: readonly GraphAttachment[];
  /** The message's MIME (`…/$value`), for `fields=raw_mime`. */
  mime?: string;
}

export function messageFromGraph(grant: GrantRecord, m: GraphMessage, extras: GraphMessageExtras = {}): Message {
  const fields = extras.fields ?? 'standard';
  const date = secondsOf(m.receivedDateTime) ?? secondsOf(m.sentDateTime) ?? secondsOf(m.createdDateTime) ?? 0;
  const inReplyTo = headerValue(m, 'in-reply-to')?.trim();
  const body = m.body?.content ?? undefined;
  const headers =
    fields === 'include_headers'
      ? headersOf(m)
      : fields === 'include_basic_headers'
        ? headersOf(m).filter((h) => THREADING_HEADERS.has(h.name.toLowerCase()))
        : undefined;
  return {
    id: m.id,
    object: 'message',
    grant_id: grant.id,
    thread_id: m.conversationId ?? m.id,
    ...(m.subject != null ? { subject: m.subject } : {}),
    from: participants(m.from ? [m.from] : []),
    to: participants(m.toRecipients),
    cc: participants(m.ccRecipients),
    bcc: participants(m.bccRecipients),
    reply_to: participants(m.replyTo),
    date,
    created_at: secondsOf(m.createdDateTime) ?? date,
    unread: m.isRead === false,
    starred: m.flag?.flagStatus === 'flagged',
    folders: m.parentFolderId ? [m.parentFolderId] : [],
    ...(m.bodyPreview != null ? { snippet: m.bodyPreview } : {}),
    ...(inReplyTo ? { in_reply_to: inReplyTo } : {}),
    ...(body !== undefined ? { body } : {}),
    attachments: (extras.attachments ?? []).map((a) => attachmentFromGraph(grant, a)),
    ...(headers ? { headers } : {}),
    ...(fields === 'raw_mime' && extras.mime !== undefined
      ? { raw_mime: Buffer.from(extras.mime, 'utf8').toString('base64url') }
      : {}),
  };
}
