import type { CopiedAttachment } from '#shared/db/mail-records';
import {
  attachmentRecords,
  bodyKey,
  presignedDownload,
  rawMessageKey,
  storedBody,
  uploadAttachments,
} from '#shared/mailbox/blobs';
import { copyBlob, getBlob, putBlob } from '#shared/aws/mail-bucket';
import { base64Length, planContent, type ContentPlan } from '#shared/mailbox/content';
import { kinds, messagePostings, searchTokens } from '#shared/mailbox/postings';
import { postingKey } from '#shared/db/keys';
import { bodyText, snippetOf } from '#shared/mailbox/text';
import { refreshThreadNow } from '#shared/mailbox/thread-refresh';
import type {
  AttachmentRecord,
  HeaderRecord,
  MessageRecord,
  NewAttachment,
  ParticipantRecord,
} from '#shared/mailbox/types';
import { messageView, type MovedContent } from '#shared/mailbox/views';
import type { GrantRecord } from '#shared/db/grants';
import * as messages from '#shared/db/messages';
import { DuplicateMessageError, type FolderDelta } from '#shared/db/messages';
import type { OutboxEntry } from '#shared/db/outbox';
import { openUpload, openUploads } from '#shared/db/uploads';
import { newId, type GrantId, type MessageId, type ThreadId } from '#shared/ids';
import type { NamedItems } from '#shared/db/transact';
import { ANSWER_BUDGET_BYTES, jsonBytes } from '#shared/answer-limits';
import { inPool } from '#shared/pool';
import { clock } from '#shared/time';
import { THREADING_HEADERS, threadingHeaders } from '#shared/mail/threading';
import type { CopySources } from '#shared/providers/contract';
import type { ParsedMail } from '#shared/mail/parse';

/**
 * Storing messages in an Agent Account mailbox: the one path used by inbound mail, local delivery
 * between Agent Accounts and the Sent copy of a send. Contents go to S3 first (raw MIME, attachments,
 * large bodies), then the message, its counters, postings and search entry to DynamoDB in one
 * transaction, then the thread. The message item is its own outbox entry: the outbox consumer
 * announces `message.created` and runs the `message-stored` job from its insertion.
 *
 * The items a short inbound mail writes (shared/db/keys.ts), 10 for a new thread: the upload record
 * (before the uploads; it names the thread posting as its commit, so the transaction does not delete
 * it: shared/db/uploads.ts), then in the transaction the message, its Message-ID entry, the folder
 * counter, the folder, unread and thread postings and the search entry; then the thread and its
 * listing entry (and the removal of its previous listing entry when the thread already had messages).
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
  /** A send's uploaded files are copies (CopiedAttachment): stored inside S3, never read. */
  attachments: (NewAttachment | CopiedAttachment)[];
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
  /**
   * A message synced from the server that holds it (storeServerMessages only): its raw MIME and
   * attachments stay there (read from it on demand, never stored twice), only the record and its
   * body are stored, with the message's UID in each folder. `quiet`: history of a first sync,
   * announced by no message.created.
   */
  server?: { uids: Record<string, string>; quiet: boolean };
}

/**
 * What a message's own MIME says of it, as a stored message holds it: subject, addresses, body,
 * attachments, headers and threading. Inbound mail and synced mail alike; the caller adds where it
 * goes (folders, flags, date) and whatever else it knows.
 */
export const parsedMessageFields = (mail: ParsedMail, raw: Buffer) => ({
  subject: mail.subject,
  from: mail.from,
  to: mail.to,
  cc: mail.cc,
  bcc: mail.bcc,
  replyTo: mail.replyTo,
  body: mail.html ?? mail.text ?? '',
  isPlaintext: mail.html === undefined,
  attachments: mail.attachments,
  headers: mail.headers,
  raw,
  metadata: {},
  inReplyTo: mail.inReplyTo,
  references: mail.references,
});

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
    byFolder.set(d.folderId, {
      folderId: d.folderId,
      total: current.total + d.total,
      unread: current.unread + d.unread,
    });
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

/** What makes a message record besides its contents' keys (shared by single stores and copies). */
type RecordInput = Pick<
  NewMessage,
  | 'subject'
  | 'from'
  | 'to'
  | 'cc'
  | 'bcc'
  | 'replyTo'
  | 'date'
  | 'unread'
  | 'starred'
  | 'folders'
  | 'body'
  | 'isPlaintext'
  | 'headers'
  | 'metadata'
  | 'messageIdHeader'
  | 'inReplyTo'
  | 'references'
  | 'server'
>;

function messageRecord(
  input: RecordInput,
  at: {
    grantId: GrantId;
    id: MessageId;
    threadId: ThreadId;
    rawKey?: string;
    rawSize: number;
    largeBodyKey?: string;
    attachments: AttachmentRecord[];
    text: string;
  },
): MessageRecord {
  const now = clock.nowSeconds();
  return {
    id: at.id,
    grant_id: at.grantId,
    thread_id: at.threadId,
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
    snippet: snippetOf(at.text),
    ...(at.largeBodyKey ? { body_key: at.largeBodyKey } : { body: input.body }),
    body_size: Buffer.byteLength(input.body),
    is_plaintext: input.isPlaintext,
    attachments: at.attachments,
    headers: keptHeaders(input.headers),
    ...(at.rawKey ? { raw_key: at.rawKey } : {}),
    raw_size: at.rawSize,
    metadata: input.metadata,
    ...(input.messageIdHeader ? { message_id_header: input.messageIdHeader } : {}),
    ...(input.inReplyTo ? { in_reply_to: input.inReplyTo } : {}),
    references: input.references,
    created_at: now,
    updated_at: now,
    version: 1,
    search: 1,
    ...(input.server
      ? { server_uids: input.server.uids, ...(input.server.quiet ? { quiet: true as const } : {}) }
      : {}),
  };
}

/**
 * What the message's transaction writes: item, postings, search entry, counters, the caller's
 * outbox entries and items. Its message.created notification and message-stored job are derived
 * from the item itself by the outbox consumer (shared/mailbox/message-events.ts).
 */
function messageWrite(
  grant: GrantRecord,
  record: MessageRecord,
  tokens: readonly string[],
  outbox: OutboxEntry[],
  items: NamedItems,
): messages.NewMessageWrite {
  return {
    message: record,
    applicationId: grant.application_id,
    postings: { postings: messagePostings(record), search: tokens },
    deltas: folderDeltas(record, 1),
    outbox,
    also: items,
  };
}

export async function storeMessage(input: NewMessage): Promise<{ record: MessageRecord; duplicate: boolean }> {
  if (input.server) throw new Error('storeMessage: a message synced from its server is stored by storeServerMessages');
  const grantId = input.grant.id;
  const id = input.id ?? newId('message');
  const threadId =
    input.threadId ?? (await messages.findThreadByHeaders(grantId, threadingHeaders(input))) ?? newId('thread');

  const rawKey = rawMessageKey(grantId, id);
  const largeBodyKey = Buffer.byteLength(input.body) > BODY_INLINE_MAX ? bodyKey(grantId, id) : undefined;
  const attachments = attachmentRecords(grantId, input.attachments);
  // Recorded before uploading: if the message is not committed, its contents are removed later.
  // Committed when its thread posting exists (which lives as long as the message): nothing to delete in the transaction.
  const upload = await openUpload(
    input.grant,
    [rawKey, largeBodyKey, ...attachments.map((a) => a.key)],
    postingKey(grantId, kinds.thread(threadId), id),
  );
  await Promise.all([
    uploadAttachments(attachments, input.attachments),
    putBlob(rawKey, input.raw, 'message/rfc822'),
    ...(largeBodyKey ? [putBlob(largeBodyKey, input.body, bodyContentType(input.isPlaintext))] : []),
  ]);

  const text = bodyText(input.body, input.isPlaintext);
  const record = messageRecord(input, {
    grantId,
    id,
    threadId,
    rawKey,
    rawSize: input.raw.length,
    largeBodyKey,
    attachments,
    text,
  });
  const extras = input.also?.(record) ?? { items: [], outbox: [] };
  try {
    await messages.insertMessage(
      messageWrite(
        input.grant,
        record,
        searchTokens(record, text),
        [...(input.jobs ?? []), ...extras.outbox],
        [...upload, ...extras.items],
      ),
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
  await refreshThreadNow(grantId, threadId);
  return { record, duplicate: false };
}

/** Attachments whose contents stay on the server: described, with their position in the message's MIME. */
function serverAttachmentRecords(list: readonly NewAttachment[]): AttachmentRecord[] {
  return list.map((a, i) => ({
    id: newId('attachment'),
    filename: a.filename,
    content_type: a.contentType,
    size: a.content.length,
    is_inline: a.inline,
    ...(a.contentId ? { content_id: a.contentId } : {}),
    key: String(i),
    on_server: true as const,
  }));
}

/** What storeServerMessages reads of the mailbox for a batch (see serverLookups). */
export interface ServerLookups {
  /** Stored messages by Message-ID header: the batch's own headers, and those its messages refer to. */
  stored: ReadonlyMap<string, { message_id: MessageId; thread_id: ThreadId }>;
  /** Threads of synced messages that refer to the batch's Message-ID headers (a reply synced before its parent). */
  referencing: ReadonlyMap<string, ThreadId>;
}

/**
 * The reads of a batch of synced messages, side by side: the stored messages of their own
 * Message-ID headers and of those they refer to (batches go newest first), and the threads of
 * synced messages referring to them. A caller that needs to know which of its messages are stored
 * already reads them here and hands them to storeServerMessages, which then reads nothing more.
 */
export async function serverLookups(
  grantId: GrantId,
  inputs: readonly Pick<NewMessage, 'messageIdHeader' | 'inReplyTo' | 'references'>[],
): Promise<ServerLookups> {
  const own = inputs.flatMap((input) => (input.messageIdHeader ? [input.messageIdHeader] : []));
  const [stored, referencing] = await Promise.all([
    messages.getMessageIdHeaders(grantId, [...own, ...inputs.flatMap((input) => threadingHeaders(input))]),
    messages.threadsReferencing(grantId, own),
  ]);
  return { stored, referencing };
}

/**
 * Stores a batch of messages synced from the server that holds them (every input has `server` and
 * `id`): their records, postings, search entries and locations in as few transactions as DynamoDB
 * allows (shared/db/messages.ts insertMailboxMessages), large bodies to S3 first. Threads are found
 * in the mailbox by References/In-Reply-To, or in the batch itself (a reply synced with its parent).
 * Thread aggregates and the search merge are the batch's one messages-stored job. Per input: its
 * record, and whether it was stored or its Message-ID already was (`duplicate`). `lookups`: the
 * batch's reads (serverLookups), when the caller made them already.
 */
export async function storeServerMessages(
  grant: GrantRecord,
  inputs: readonly NewMessage[],
  lookups?: ServerLookups,
): Promise<{ record: MessageRecord; outcome: 'stored' | 'duplicate' | 'refused' }[]> {
  const grantId = grant.id;
  const { stored, referencing } = lookups ?? (await serverLookups(grantId, inputs));
  const inBatch = new Map<string, ThreadId>();
  const planned = inputs.map((input) => {
    const id = input.id ?? newId('message');
    const threadId =
      input.threadId ??
      threadingHeaders(input)
        .map((h) => inBatch.get(h) ?? stored.get(h)?.thread_id)
        .find((t) => t !== undefined) ??
      (input.messageIdHeader ? referencing.get(input.messageIdHeader) : undefined) ??
      newId('thread');
    if (input.messageIdHeader) inBatch.set(input.messageIdHeader, threadId);
    const largeBodyKey = Buffer.byteLength(input.body) > BODY_INLINE_MAX ? bodyKey(grantId, id) : undefined;
    const text = bodyText(input.body, input.isPlaintext);
    const record = messageRecord(input, {
      grantId,
      id,
      threadId,
      rawSize: input.raw.length,
      largeBodyKey,
      attachments: serverAttachmentRecords(input.attachments.filter((a): a is NewAttachment => 'content' in a)),
      text,
    });
    return { input, record, text };
  });
  const large = planned.filter((p) => p.record.body_key);
  const uploads = await openUploads(
    large.map((p) => ({
      grant,
      keys: [p.record.body_key],
      committedBy: postingKey(grantId, kinds.thread(p.record.thread_id), p.record.id),
    })),
  );
  await Promise.all(large.map((p) => putBlob(p.record.body_key!, p.input.body, bodyContentType(p.input.isPlaintext))));
  const uploadOf = new Map(large.map((p, i) => [p, uploads[i]!]));
  const outcomes = await messages.insertMailboxMessages(
    planned.map((p) => {
      const extras = p.input.also?.(p.record) ?? { items: [], outbox: [] };
      return messageWrite(
        grant,
        p.record,
        searchTokens(p.record, p.text),
        [...(p.input.jobs ?? []), ...extras.outbox],
        [...(uploadOf.get(p) ?? []), ...extras.items],
      );
    }),
    planned.length
      ? [
          {
            job: {
              kind: 'messages-stored',
              application_id: grant.application_id,
              grant_id: grantId,
              thread_ids: [...new Set(planned.map((p) => p.record.thread_id))],
              message_ids: planned.map((p) => p.record.id),
              // History a first sync brings in (every message quiet): merged in larger steps.
              ...(planned.every((p) => p.input.server?.quiet) ? { import: true } : {}),
            },
            id: newId('job'),
            applicationId: grant.application_id,
          },
        ]
      : [],
  );
  // What the stored messages refer to (their parent, their thread's root): a parent synced later joins their thread.
  await messages.putReferences(
    grantId,
    planned
      .filter((_, i) => outcomes[i] === 'stored')
      .flatMap((p) =>
        [p.input.inReplyTo, p.input.references[0]]
          .filter((h): h is string => !!h)
          .map((header) => ({ header, thread_id: p.record.thread_id })),
      ),
  );
  return planned.map((p, i) => ({ record: p.record, outcome: outcomes[i]! }));
}

const bodyContentType = (isPlaintext: boolean) =>
  isPlaintext ? 'text/plain; charset=utf-8' : 'text/html; charset=utf-8';

/** One message stored in many mailboxes: what every copy shares (contents are already in S3). */
export interface SharedCopy extends Omit<RecordInput, 'messageIdHeader'> {
  messageIdHeader: string;
  attachments: (Omit<NewAttachment, 'content'> & { size: number })[];
  rawSize: number;
}

/** S3 copies in flight per delivery job, and copies per chunk (copied, then committed while the next is copied). */
const COPY_CONCURRENCY = 32;
const COPY_CHUNK = 25;

/**
 * Stores one message in many mailboxes (the local copies of a send), with the writes of all copies
 * batched: their Message-ID and thread lookups in BatchGets, their upload records in BatchWrites,
 * their contents copied inside S3 from `sources` (nothing goes through this function), then their
 * transactions, several copies to one (each copy's items exactly as a single store commits them,
 * Message-ID entry included): a mailbox that already holds the message (a job run again after being
 * killed) is left as it is. The thread aggregates are left to each copy's message-stored job (nobody
 * waits on them here). Returns how many copies were stored, and how many were there already.
 */
export async function storeCopies(
  copy: SharedCopy,
  recipients: readonly { grant: GrantRecord; jobs?: OutboxEntry[] }[],
  sources: CopySources,
): Promise<{ stored: number; present: number }> {
  const holders = await messages.mailboxesHolding(
    recipients.map((r) => r.grant.id),
    copy.messageIdHeader,
  );
  const seen = new Set<string>();
  const wanted = recipients.filter((r) => !holders.has(r.grant.id) && !seen.has(r.grant.id) && seen.add(r.grant.id));
  if (!wanted.length) return { stored: 0, present: recipients.length };
  const threads = await messages.findThreadsByHeaders(
    wanted.map((r) => r.grant.id),
    threadingHeaders(copy),
  );
  const text = bodyText(copy.body, copy.isPlaintext);
  const large = Buffer.byteLength(copy.body) > BODY_INLINE_MAX;
  const planned = wanted.map((r) => {
    const grantId = r.grant.id;
    const id = newId('message');
    const attachments = attachmentRecords(grantId, copy.attachments);
    const record = messageRecord(
      { ...copy },
      {
        grantId,
        id,
        threadId: threads.get(grantId) ?? newId('thread'),
        rawKey: rawMessageKey(grantId, id),
        rawSize: copy.rawSize,
        largeBodyKey: large ? bodyKey(grantId, id) : undefined,
        attachments,
        text,
      },
    );
    return { ...r, record };
  });
  // Every copy has the same tokens: its participants, subject and body are the same.
  const tokens = searchTokens(planned[0]!.record, text);
  const uploads = await openUploads(
    planned.map((p) => ({
      grant: p.grant,
      keys: [p.record.raw_key, p.record.body_key, ...p.record.attachments.map((a) => a.key)],
      committedBy: postingKey(p.grant.id, kinds.thread(p.record.thread_id), p.record.id),
    })),
  );
  // Contents copied a chunk at a time, each chunk's transactions running while the next is copied.
  const outcomes: ('stored' | 'duplicate' | 'refused')[] = [];
  const commits: Promise<void>[] = [];
  for (let from = 0; from < planned.length; from += COPY_CHUNK) {
    const chunk = planned.slice(from, from + COPY_CHUNK);
    const copies = chunk.flatMap((p) => [
      { from: sources.raw, to: p.record.raw_key! },
      ...(p.record.body_key && sources.body ? [{ from: sources.body, to: p.record.body_key }] : []),
      ...p.record.attachments.map((a, i) => ({ from: sources.attachments[i]!, to: a.key })),
    ]);
    await inPool(copies, COPY_CONCURRENCY, (c) => copyBlob(c.from, c.to));
    // Several copies to a transaction (grouped by the repository).
    const writes = chunk.map((p, i) => messageWrite(p.grant, p.record, tokens, p.jobs ?? [], uploads[from + i]!));
    commits.push(
      messages.insertMessages(writes).then((o) => o.forEach((outcome, i) => (outcomes[from + i] = outcome))),
    );
  }
  await Promise.all(commits);
  // A copy stored meanwhile by another run of the same job is left out: its contents expire with its upload record.
  const stored = outcomes.filter((o) => o === 'stored').length;
  const present = holders.size + outcomes.filter((o) => o === 'duplicate').length;
  return { stored, present };
}

export type MessageFields = 'standard' | 'include_headers' | 'include_basic_headers' | 'raw_mime';

function headersOf(record: MessageRecord, fields: MessageFields) {
  if (fields === 'include_headers') return record.headers ?? [];
  if (fields === 'include_basic_headers')
    return (record.headers ?? []).filter((h) => THREADING_HEADERS.has(h.name.toLowerCase()));
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
  presignedDownload(
    record.body_key!,
    record.is_plaintext ? 'body.txt' : 'body.html',
    record.is_plaintext ? 'text/plain; charset=utf-8' : 'text/html; charset=utf-8',
  );

/**
 * The API view of a stored message. A message whose view would not fit an answer serves its raw
 * MIME, then its body, from short-lived URLs (`raw_mime_url`, `body_url`) instead.
 */
export async function viewOf(
  record: MessageRecord,
  fields: MessageFields = 'standard',
  plan = messageContentPlan(record, fields),
) {
  const headers = headersOf(record, fields);
  const wantsRaw = fields === 'raw_mime';
  const [body, rawMime] = await Promise.all([
    plan.moveBody ? undefined : storedBody(record),
    wantsRaw && !plan.moveRaw
      ? (record.raw_key ? getBlob(record.raw_key) : Promise.resolve(Buffer.alloc(0))).then((raw) =>
          raw.toString('base64url'),
        )
      : undefined,
  ]);
  const moved: MovedContent = {};
  if (plan.moveRaw && record.raw_key)
    moved.raw_mime_url = await presignedDownload(record.raw_key, 'message.eml', 'message/rfc822');
  if (plan.moveBody && record.body_key) moved.body_url = await bodyUrl(record);
  let view = messageView(record, { body, headers, raw_mime: rawMime, ...moved });
  // Sizes were not recorded on older messages: measured here, and moved the same way.
  if (jsonBytes(view) > ANSWER_BUDGET_BYTES && rawMime !== undefined && record.raw_key) {
    view = messageView(record, {
      body,
      headers,
      ...moved,
      raw_mime_url: await presignedDownload(record.raw_key, 'message.eml', 'message/rfc822'),
    });
  }
  if (jsonBytes(view) > ANSWER_BUDGET_BYTES && body !== undefined && record.body_key) {
    const { body: _dropped, ...rest } = view as typeof view & { body?: string };
    view = { ...rest, body_url: await bodyUrl(record) } as typeof view;
  }
  return view;
}
