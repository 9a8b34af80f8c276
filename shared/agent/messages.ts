import { isSystemFolder, requireFolder } from '#shared/agent/folders';
import { requireMessage } from '#shared/agent/lookup';
import { changeMessage, hardDeleteMessage, trashMessage } from '#shared/agent/message-ops';
import { messageFilter, rejectProviderOnlyParameters } from '#shared/agent/filters';
import { findMessages } from '#shared/agent/query';
import { storedBody } from '#shared/agent/blobs';
import { viewOf, type MessageFields } from '#shared/agent/store';
import { messageView } from '#shared/agent/views';
import { getMessages } from '#shared/db/messages';
import { NotFoundError } from '#shared/http/errors';
import { parseId } from '#shared/ids';
import { decodeBeforeCursor, encodeBeforeCursor } from '#shared/db/cursor';
import type { GrantRecord } from '#shared/db/grants';
import type { CleanMessagesBody, DeleteMessageQuery, ListMessagesQuery, MessageIdQuery, UpdateMessageBody } from '#schemas/mail';

/** Messages of an Agent Account: list with the spec's filters, get, update, delete, clean. */

export async function listMessages(grant: GrantRecord, query: ListMessagesQuery, limit: number) {
  const filter = messageFilter(query);
  if (filter.folder !== undefined && !isSystemFolder(filter.folder)) await requireFolder(grant.id, filter.folder);
  const before = query.page_token ? decodeBeforeCursor(query.page_token, 'messages', 'message') : undefined;
  const page = await findMessages(grant.id, filter, { limit, before });
  const fields = (query.fields ?? 'standard') as MessageFields;
  const items = await Promise.all(page.records.map((r) => viewOf(r, fields)));
  return { items, nextCursor: page.next ? encodeBeforeCursor('messages', page.next) : undefined };
}

export async function getMessage(grant: GrantRecord, messageId: string, query: MessageIdQuery) {
  rejectProviderOnlyParameters(query);
  return viewOf(await requireMessage(grant, messageId), (query.fields ?? 'standard') as MessageFields);
}

export async function updateMessage(grant: GrantRecord, messageId: string, body: UpdateMessageBody) {
  const record = await requireMessage(grant, messageId);
  return (await changeMessage(grant, record, body as { unread?: boolean; starred?: boolean; folders?: string[]; metadata?: Record<string, string> })).view;
}

export async function deleteMessage(grant: GrantRecord, messageId: string, query: DeleteMessageQuery): Promise<void> {
  const record = await requireMessage(grant, messageId);
  if (query.hard_delete) await hardDeleteMessage(grant, record);
  else await trashMessage(grant, record);
}

export async function cleanMessages(grant: GrantRecord, body: CleanMessagesBody) {
  const { message_id: ids, ...options } = body;
  const found = new Map((await getMessages(grant.id, ids.filter((id) => parseId('message', id)))).map((m) => [m.id as string, m]));
  const missing = ids.find((id) => !found.has(id));
  if (missing) throw new NotFoundError(`Message '${missing}' not found`);
  // Loaded here, not at cold start: sanitize-html, turndown and their parsers serve only this endpoint.
  const { cleanMessageBody } = await import('#shared/mail/clean');
  return Promise.all(
    ids.map(async (id) => {
      const record = found.get(id)!;
      const body = await storedBody(record);
      return { ...messageView(record, { body }), conversation: cleanMessageBody(body, options, record.is_plaintext) };
    }),
  );
}
