import { bodyKey, deleteBlobs, getBlob, putAttachments, putBlob, rawMessageKey, storedBody } from '#shared/agent/blobs';
import { immutablePostings, mutablePostings } from '#shared/agent/postings';
import { bodyText, snippetOf } from '#shared/agent/text';
import { refreshThread } from '#shared/agent/thread-refresh';
import type { HeaderRecord, MessageRecord, NewAttachment, ParticipantRecord } from '#shared/agent/types';
import { messageView } from '#shared/agent/views';
import type { GrantRecord } from '#shared/db/grants';
import * as messages from '#shared/db/messages';
import { DuplicateMessageError, type FolderDelta } from '#shared/db/messages';
import { newId, type ThreadId } from '#shared/ids';
import { logger } from '#shared/logger';
import { newNotification } from '#shared/notifications/notification';
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
}

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
  const id = newId('message');
  const threadId =
    input.threadId ?? (await messages.findThreadByHeaders(grantId, [input.inReplyTo ?? '', ...[...input.references].reverse()])) ?? newId('thread');

  const rawKey = rawMessageKey(grantId, id);
  const bodyTooLarge = Buffer.byteLength(input.body) > BODY_INLINE_MAX;
  const [attachments] = await Promise.all([
    putAttachments(grantId, input.attachments),
    putBlob(rawKey, input.raw, 'message/rfc822'),
    ...(bodyTooLarge ? [putBlob(bodyKey(grantId, id), input.body, input.isPlaintext ? 'text/plain; charset=utf-8' : 'text/html; charset=utf-8')] : []),
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
    ...(bodyTooLarge ? { body_key: bodyKey(grantId, id) } : { body: input.body }),
    is_plaintext: input.isPlaintext,
    attachments,
    headers: keptHeaders(input.headers),
    raw_key: rawKey,
    metadata: input.metadata,
    ...(input.messageIdHeader ? { message_id_header: input.messageIdHeader } : {}),
    ...(input.inReplyTo ? { in_reply_to: input.inReplyTo } : {}),
    references: input.references,
    created_at: now,
    updated_at: now,
    version: 1,
  };

  const created = newNotification({ type: 'message.created', applicationId: input.grant.application_id, grantId, object: messageView(record, { body: input.body }) });
  try {
    await messages.insertMessage(record, { mutable: mutablePostings(record), immutable: immutablePostings(record, text) }, folderDeltas(record, 1), [
      { notification: created, bodyKey: record.body_key },
    ]);
  } catch (error) {
    // Nothing points at this copy's contents: remove them (a retry uploads its own under a new ID).
    await deleteBlobs([rawKey, record.body_key, ...attachments.map((a) => a.key)]).catch((cleanup) =>
      logger.error('could not remove the contents of a message not stored', { message_id: id, error: cleanup }),
    );
    if (error instanceof DuplicateMessageError) {
      // Already stored (an SMTP retry, or the same message delivered twice): nothing new happened.
      const existing = await messages.getMessage(grantId, error.existing.message_id);
      if (existing) return { record: existing, duplicate: true };
    }
    throw error;
  }
  await refreshThread(grantId, threadId);
  return { record, duplicate: false };
}

export type MessageFields = 'standard' | 'include_headers' | 'raw_mime';

export async function viewOf(record: MessageRecord, fields: MessageFields = 'standard') {
  const raw = fields === 'raw_mime' && record.raw_key ? getBlob(record.raw_key) : Promise.resolve(fields === 'raw_mime' ? Buffer.alloc(0) : undefined);
  const [body, rawMime] = await Promise.all([storedBody(record), raw]);
  const headers = fields === 'include_headers' ? (record.headers ?? []) : undefined;
  return messageView(record, { body, headers, raw_mime: rawMime?.toString('base64url') });
}

