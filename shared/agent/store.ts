import { attachmentRecords, bodyKey, getBlob, presignedDownload, putBlob, rawMessageKey, storedBody, uploadAttachments } from '#shared/agent/blobs';
import { base64Length, planContent, type ContentPlan } from '#shared/agent/content';
import { indexMessageJob } from '#shared/agent/cleanup';
import { immutablePostings, mutablePostings } from '#shared/agent/postings';
import { bodyText, snippetOf } from '#shared/agent/text';
import { refreshThreadNow, threadRefreshJob } from '#shared/agent/thread-refresh';
import type { HeaderRecord, MessageRecord, NewAttachment, ParticipantRecord } from '#shared/agent/types';
import { messageView, type MovedContent } from '#shared/agent/views';
import type { GrantRecord } from '#shared/db/grants';
import * as messages from '#shared/db/messages';
import { DuplicateMessageError, type FolderDelta } from '#shared/db/messages';
import type { OutboxEntry } from '#shared/db/outbox';
import { openUpload } from '#shared/db/uploads';
import { newId, type MessageId, type ThreadId } from '#shared/ids';
import type { NamedItems } from '#shared/db/transact';
import { ANSWER_BUDGET_BYTES, jsonBytes } from '#shared/http/page';
import { newNotification } from '#shared/notifications/notification';
import { logger } from '#shared/logger';
import { clock } from '#shared/time';

/**
 * Storing messages in an Agent Account mailbox: the one path used by inbound mail, local delivery
 * between Agent Accounts and the Sent copy of a send. Contents go to S3 first (raw MIME, attachments,
 * large bodies), then the message, its counters, indexes and `message.created` notification to
 * DynamoDB in one transaction, then the thread.
 */
export const BODY_INLINE_MAX = 64 * 1024;
/** Header blocks beyond this are cut (the full header block stays in the raw MIME: fields=raw_mime). */
const HEADERS_INLINE_MAX = 64 * 1024;

export interface NewMessage {
  grant: GrantRecord;
  threadId?: ThreadId;
  subject: string;
  from: ParticipantRecord[];
  to: ParticipantRecord[];
  cc: ParticipantRecord[];
  bcc: ParticipantRecord[];
  replyTo: ParticipantRecord[];
  date: number;
  unread: boolean;
  starred: boolean;
  folders: string[];
  body: string;
  isPlaintext: boolean;
  attachments: NewAttachment[];
  headers: HeaderRecord[];
  raw: Buffer;
  metadata: Record<string, string>;
  messageIdHeader?: string;
  inReplyTo?: string;
  references: string[];
  /** Jobs committed with the message (e.g. delivering the local copies of a sent message). */
  jobs?: OutboxEntry[];
  /** The message's ID when the caller chose it (otherwise a new one). */
  id?: MessageId;
  /** More of the caller's change, committed in the message's transaction (e.g. a scheduled send's state). */
  also?: StoreExtras;
}

/** Items and outbox entries committed with a stored message, given its record. */
export type StoreExtras = (record: MessageRecord) => { items: NamedItems; outbox: OutboxEntry[] };

/** Counter changes of putting (sign 1) or taking away (sign -1) a message in its folders. */
export function folderDeltas(message: Pick<MessageRecord, 'folders' | 'unread'>, sign: 1 | -1): FolderDelta[] {
  return message.folders.map((folderId) => ({ folderId, total: sign, unread: message.unread ? sign : 0 }));
}

/** Sums deltas per folder (a move is a -1 in one folder and a +1 in another). */
export function mergeDeltas(...lists: FolderDelta[][]): FolderDelta[] {
  const byFolder = new Map<string, FolderDelta>();
  for (const d of lists.flat()) {
    const current = byFolder.get(d.folderId) ?? { folderId: d.folderId, total: 0, unread: 0 };
    byFolder.set(d.folderId, { folderId: d.folderId, total: current.total + d.total, unread: current.unread + d.unread });
  }
  return [...byFolder.values()];
}

function keptHeaders(headers: HeaderRecord[]): HeaderRecord[] {
  const kept: HeaderRecord[] = [];
  let size = 0;
  for (const h of headers) {
    size += h.name.length + h.value.length + 4;
    if (size > HEADERS_INLINE_MAX) break;
    kept.push(h);
  }
  return kept;
}

export async function storeMessage(input: NewMessage): Promise<{ record: MessageRecord; duplicate: boolean }> {
  const grantId = input.grant.id;
  const id = input.id ?? newId('message');
  const threadId =
    input.threadId ?? (await messages.findThreadByHeaders(grantId, [input.inReplyTo ?? '', ...[...input.references].reverse()])) ?? newId('thread');

  const rawKey = rawMessageKey(grantId, id);
  const largeBodyKey = Buffer.byteLength(input.body) > BODY_INLINE_MAX ? bodyKey(grantId, id) : undefined;
  const attachments = attachmentRecords(grantId, input.attachments);
  // Recorded before uploading: if the message is not committed, its contents are removed later.
  const upload = await openUpload(input.grant, [rawKey, largeBodyKey, ...attachments.map((a) => a.key)]);
  await Promise.all([
    uploadAttachments(attachments, input.attachments),
    putBlob(rawKey, input.raw, 'message/rfc822'),
    ...(largeBodyKey ? [putBlob(largeBodyKey, input.body, input.isPlaintext ? 'text/plain; charset=utf-8' : 'text/html; charset=utf-8')] : []),
  ]);

  const text = bodyText(input.body, input.isPlaintext);
  const now = clock.nowSeconds();
  const record: MessageRecord = {
    id,
    grant_id: grantId,
    thread_id: threadId,
    subject: input.subject,
    from: input.from,
    to: input.to,
    cc: input.cc,
    bcc: input.bcc,
    reply_to: input.replyTo,
    date: input.date,
    unread: input.unread,
    starred: input.starred,
    folders: input.folders,
    snippet: snippetOf(text),
    ...(largeBodyKey ? { body_key: largeBodyKey } : { body: input.body }),
    body_size: Buffer.byteLength(input.body),
    is_plaintext: input.isPlaintext,
    attachments,
    headers: keptHeaders(input.headers),
    raw_key: rawKey,
    raw_size: input.raw.length,
    metadata: input.metadata,
    ...(input.messageIdHeader ? { message_id_header: input.messageIdHeader } : {}),
    ...(input.inReplyTo ? { in_reply_to: input.inReplyTo } : {}),
    references: input.references,
    created_at: now,
    updated_at: now,
    version: 1,
  };

  const created = newNotification({ type: 'message.created', applicationId: input.grant.application_id, grantId, object: messageView(record, { body: input.body }) });
  const extras = input.also?.(record) ?? { items: [], outbox: [] };
  try {
    await messages.insertMessage(
      record,
      { mutable: mutablePostings(record) },
      folderDeltas(record, 1),
      [{ notification: created, bodyKey: record.body_key }, threadRefreshJob(input.grant, threadId), indexMessageJob(input.grant, id), ...(input.jobs ?? []), ...extras.outbox],
      [...upload, ...extras.items],
    );
  } catch (error) {
    // Not stored: this copy's contents expire with its upload record (shared/db/uploads.ts).
    if (error instanceof DuplicateMessageError) {
      // Already stored (an SMTP retry, or the same message delivered twice): nothing new happened.
      const existing = await messages.getMessage(grantId, error.existing.message_id);
      if (existing) return { record: existing, duplicate: true };
    }
    throw error;
  }
  // Search postings at once; should this fail, the committed index-message job writes them.
  await messages
    .writePostings(grantId, id, immutablePostings(record, text))
    .catch((error) => logger.warn('postings left for the index-message job', { message_id: id, error }));
  await refreshThreadNow(grantId, threadId);
  return { record, duplicate: false };
}

export type MessageFields = 'standard' | 'include_headers' | 'include_basic_headers' | 'raw_mime';

/** The headers `fields=include_basic_headers` keeps: those that place a message in its conversation. */
const BASIC_HEADERS = new Set(['message-id', 'in-reply-to', 'references']);

function headersOf(record: MessageRecord, fields: MessageFields) {
  if (fields === 'include_headers') return record.headers ?? [];
  if (fields === 'include_basic_headers') return (record.headers ?? []).filter((h) => BASIC_HEADERS.has(h.name.toLowerCase()));
  return undefined;
}

/** What the view of a stored message will carry, from its recorded sizes, before anything is read from S3. */
export function messageContentPlan(record: MessageRecord, fields: MessageFields = 'standard'): ContentPlan {
  return planContent({
    base: jsonBytes(messageView(record, { headers: headersOf(record, fields) })),
    body: record.body_key ? record.body_size : Buffer.byteLength(record.body ?? ''),
    raw: fields === 'raw_mime' ? (record.raw_size === undefined ? undefined : base64Length(record.raw_size)) : 0,
  });
}

const bodyUrl = (record: { body_key?: string; is_plaintext: boolean }) =>
  presignedDownload(record.body_key!, record.is_plaintext ? 'body.txt' : 'body.html', record.is_plaintext ? 'text/plain; charset=utf-8' : 'text/html; charset=utf-8');

/**
 * The API view of a stored message. A message whose view would not fit an answer serves its raw
 * MIME, then its body, from short-lived URLs (`raw_mime_url`, `body_url`) instead.
 */
export async function viewOf(record: MessageRecord, fields: MessageFields = 'standard', plan = messageContentPlan(record, fields)) {
  const headers = headersOf(record, fields);
  const wantsRaw = fields === 'raw_mime';
  const [body, rawMime] = await Promise.all([
    plan.moveBody ? undefined : storedBody(record),
    wantsRaw && !plan.moveRaw ? (record.raw_key ? getBlob(record.raw_key) : Promise.resolve(Buffer.alloc(0))).then((raw) => raw.toString('base64url')) : undefined,
  ]);
  const moved: MovedContent = {};
  if (plan.moveRaw && record.raw_key) moved.raw_mime_url = await presignedDownload(record.raw_key, 'message.eml', 'message/rfc822');
  if (plan.moveBody && record.body_key) moved.body_url = await bodyUrl(record);
  let view = messageView(record, { body, headers, raw_mime: rawMime, ...moved });
  // Sizes were not recorded on older messages: measured here, and moved the same way.
  if (jsonBytes(view) > ANSWER_BUDGET_BYTES && rawMime !== undefined && record.raw_key) {
    view = messageView(record, { body, headers, ...moved, raw_mime_url: await presignedDownload(record.raw_key, 'message.eml', 'message/rfc822') });
  }
  if (jsonBytes(view) > ANSWER_BUDGET_BYTES && body !== undefined && record.body_key) {
    const { body: _dropped, ...rest } = view as typeof view & { body?: string };
    view = { ...rest, body_url: await bodyUrl(record) } as typeof view;
  }
  return view;
}
