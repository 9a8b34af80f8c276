import { isSystemFolder, requireFolder } from '#shared/mailbox/folders';
import { requireMessage } from '#shared/mailbox/lookup';
import { changeMessage, hardDeleteMessage, trashMessage } from '#shared/mailbox/message-ops';
import { messageFilter } from '#shared/mailbox/filters';
import { findMessages } from '#shared/mailbox/query';
import { storedBody } from '#shared/mailbox/blobs';
import { messageContentPlan, viewOf, type MessageFields } from '#shared/mailbox/store';
import { messageView } from '#shared/mailbox/views';
import { getMessages } from '#shared/db/messages';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { ANSWER_BUDGET_BYTES, countWithinBudget, jsonBytes } from '#shared/answer-limits';
import { parseId } from '#shared/ids';
import { decodeBeforeCursor, encodeBeforeCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import type {
  CleanMessagesBody,
  DeleteMessageQuery,
  ListMessagesQuery,
  MessageIdQuery,
  UpdateMessageBody,
} from '#schemas/mail';

/** Messages of an Agent Account: list with the spec's filters, get, update, delete, clean. */

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const tooLargeToClean = (bytes: number) =>
  new InvalidRequestError(
    `These messages and their cleaned text add up to about ${megabytes(bytes)}, over the ${megabytes(ANSWER_BUDGET_BYTES)} one answer carries; clean fewer message_id at a time`,
  );

export async function listMessages(grant: GrantRecord, query: ListMessagesQuery, limit: number) {
  const filter = messageFilter(query);
  if (filter.folder !== undefined && !isSystemFolder(filter.folder)) await requireFolder(grant.id, filter.folder);
  const before = query.page_token ? decodeBeforeCursor(query.page_token, 'messages', 'message') : undefined;
  const page = await findMessages(grant.id, filter, { limit, before });
  const fields = messageFields(query.fields);
  // A page ends early rather than outgrow an answer: planned from recorded sizes (nothing large is
  // read from S3 only to be left out), then measured.
  const plans = page.records.map((r) => messageContentPlan(r, fields));
  const planned = page.records.slice(0, countWithinBudget(plans.map((p) => p.estimate)));
  const views = await Promise.all(planned.map((r, i) => viewOf(r, fields, plans[i])));
  const items = views.slice(0, countWithinBudget(views.map(jsonBytes)));
  const next = items.length < page.records.length ? items.at(-1)!.id : page.next;
  return {
    items,
    nextCursor: next ? encodeBeforeCursor('messages', next) : undefined,
  };
}

export async function getMessage(grant: GrantRecord, messageId: string, query: MessageIdQuery) {
  return viewOf(await requireMessage(grant, messageId), messageFields(query.fields));
}

export async function updateMessage(grant: GrantRecord, messageId: string, body: UpdateMessageBody) {
  const record = await requireMessage(grant, messageId);
  return (
    await changeMessage(
      grant,
      record,
      body as { unread?: boolean; starred?: boolean; folders?: string[]; metadata?: Record<string, string> },
    )
  ).view;
}

export async function deleteMessage(grant: GrantRecord, messageId: string, query: DeleteMessageQuery): Promise<void> {
  const record = await requireMessage(grant, messageId);
  if (query.hard_delete) await hardDeleteMessage(grant, record);
  else await trashMessage(grant, record);
}

export async function cleanMessages(grant: GrantRecord, body: CleanMessagesBody) {
  const { message_id: ids, ...options } = body;
  const found = new Map(
    (
      await getMessages(
        grant.id,
        ids.filter((id) => parseId('message', id)),
      )
    ).map((m) => [m.id as string, m]),
  );
  const missing = ids.find((id) => !found.has(id));
  if (missing) throw new NotFoundError(`Message '${missing}' not found`);
  // Each message answers with its body and its cleaned text: refused at once when that cannot fit one answer.
  const records = ids.map((id) => found.get(id)!);
  const expected = records.reduce(
    (sum, r) =>
      sum + messageContentPlan(r).estimate + (r.body_key ? (r.body_size ?? 0) : Buffer.byteLength(r.body ?? '')),
    0,
  );
  if (expected > ANSWER_BUDGET_BYTES) throw tooLargeToClean(expected);
  // Loaded here, not at cold start: sanitize-html, turndown and their parsers serve only this endpoint.
  const { cleanMessageBody } = await import('#shared/mail/clean');
  const items = await Promise.all(
    records.map(async (record) => {
      const body = await storedBody(record);
      return { ...messageView(record, { body }), conversation: cleanMessageBody(body, options, record.is_plaintext) };
    }),
  );
  const bytes = items.reduce((sum, item) => sum + jsonBytes(item), 0);
  if (bytes > ANSWER_BUDGET_BYTES) throw tooLargeToClean(bytes);
  return items;
}

/** `fields` of a message read: `include_tracking_options` is the standard message with its tracking settings (added by the callers). */
function messageFields(fields: ListMessagesQuery['fields']): MessageFields {
  return fields === 'include_tracking_options' ? 'standard' : (fields ?? 'standard');
}
