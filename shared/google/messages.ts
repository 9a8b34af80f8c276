import type { DeleteMessageQuery, ListMessagesQuery, MessageIdQuery, UpdateMessageBody } from '#schemas/mail';
import { decodeOffsetCursor, encodeOffsetCursor, encodeProviderCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { MAX_BATCH } from '#shared/google/batch';
import { googleClientOf, GoogleNotFoundError, type GoogleClient } from '#shared/google/client';
import { messageFromGmail, type GmailMessage, type MessageFields } from '#shared/google/gmail-message';
import { gmailListing } from '#shared/google/gmail-query';
import { gmailPage } from '#shared/google/gmail-listing';
import { metadataOnly } from '#shared/google/scopes';
import { deleteLiveMetadata, liveMetadataOf, setLiveMetadata } from '#shared/db/live-metadata';
import type { GrantId } from '#shared/ids';
import { INDEXED_METADATA_KEYS } from '#shared/mailbox/postings';
import { inPool } from '#shared/pool';
import type { Message, MessagesProvider, Page } from '#shared/providers/contract';
import { listByLiveMetadata, withLiveMetadata } from '#shared/mailbox/live-metadata';

/**
 * Provider A's messages, live: every answer comes from Gmail (users.messages list, get, modify,
 * trash, delete; users.threads.get for a thread's messages), nothing of the mailbox is stored. A
 * listing is one `list` call for the IDs and one `get` per message, sent as one batch; our page
 * token wraps Gmail's. `metadata` is ours, not Gmail's (shared/db/live-metadata.ts): kept beside the
 * message's Gmail ID, answered with it, and `metadata_pair` lists come from its index (alone: with
 * another filter Gmail would have to answer, it is a 400).
 */

const SCOPE = 'gmail-messages';
const METADATA_SCOPE = 'gmail-metadata';
const THREAD_SCOPE = 'gmail-thread-messages';
/** Gets of one listing made at once: they travel as one batch (each still counts against Gmail's quota). */
const GET_CONCURRENCY = MAX_BATCH;
/** The labels that are flags in our API, not folders a body's `folders` replaces. */
const FLAG_LABELS = new Set(['UNREAD', 'STARRED']);

const messagePath = (id: string) => `/gmail/v1/users/me/messages/${encodeURIComponent(id)}`;

/** Gmail IDs are hex; anything else is not one of its messages (and must not reach its path). */
function checkId(id: string, what = 'message'): string {
  if (!/^[0-9a-zA-Z_-]{1,64}$/.test(id)) throw new NotFoundError(`No ${what} '${id}' in this grant's mailbox`);
  return id;
}

async function getOne(client: GoogleClient, grant: GrantRecord, id: string, fields: MessageFields): Promise<Message> {
  const limited = metadataOnly(grant);
  if (limited && fields === 'raw_mime')
    throw new InvalidRequestError(
      "'fields=raw_mime' needs a scope that reads messages: this grant has Gmail's metadata scope only",
    );
  try {
    const full = await client.call<GmailMessage>({
      api: 'gmail',
      path: messagePath(id),
      query: { format: limited ? 'metadata' : 'full' },
      batch: true,
    });
    // Limited data: the labels and headers, never a part of the content (a snippet is one).
    if (limited)
      return messageFromGmail(
        grant,
        {
          ...full,
          snippet: undefined,
          payload: full.payload && { ...full.payload, body: undefined, parts: undefined },
        },
        fields,
      );
    if (fields !== 'raw_mime') return messageFromGmail(grant, full, fields);
    const raw = await client.call<GmailMessage>({
      api: 'gmail',
      path: messagePath(id),
      query: { format: 'raw' },
      batch: true,
    });
    return messageFromGmail(grant, { ...full, ...(raw.raw !== undefined ? { raw: raw.raw } : {}) }, fields);
  } catch (error) {
    if (error instanceof GoogleNotFoundError) throw new NotFoundError(`No message '${id}' in this grant's mailbox`);
    throw error;
  }
}

/** `include_tracking_options` is answered by the registry (shared/registries/messages.ts), from the standard message. */
const fieldsOf = (query: { fields?: string | undefined }): MessageFields =>
  (query.fields === 'include_tracking_options' ? 'standard' : (query.fields ?? 'standard')) as MessageFields;

async function list(grant: GrantRecord, query: ListMessagesQuery, limit: number): Promise<Page<Message>> {
  const listing = gmailListing(query);
  if (listing.q !== undefined && metadataOnly(grant))
    throw new InvalidRequestError(
      "This grant has Gmail's metadata scope only, which cannot search: list by folder ('in') alone, or connect the account with a scope that reads messages",
    );
  const fields = fieldsOf(query);
  const client = await googleClientOf(grant);
  if (query.metadata_pair !== undefined)
    return listByLiveMetadata(
      grant,
      {
        pair: query.metadata_pair,
        pageToken: query.page_token,
        limit,
        scope: METADATA_SCOPE,
        concurrency: GET_CONCURRENCY,
      },
      (id) => getOne(client, grant, id, fields),
    );
  if (query.thread_id !== undefined) {
    // A thread's messages: the thread itself, oldest first as Gmail keeps them, paged by position.
    const offset = query.page_token ? decodeOffsetCursor(query.page_token, THREAD_SCOPE) : 0;
    let thread: { messages?: GmailMessage[] };
    try {
      thread = await client.call({
        api: 'gmail',
        path: `/gmail/v1/users/me/threads/${encodeURIComponent(checkId(query.thread_id, 'thread'))}`,
        query: { format: 'minimal' },
      });
    } catch (error) {
      if (error instanceof GoogleNotFoundError) return { items: [] };
      throw error;
    }
    const ids = (thread.messages ?? []).map((m) => m.id).reverse();
    const page = ids.slice(offset, offset + limit);
    const items: Message[] = [];
    await inPool(page, GET_CONCURRENCY, async (id) => void items.push(await getOne(client, grant, id, fields)));
    const order = new Map(page.map((id, i) => [id, i]));
    items.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
    return {
      items: await withLiveMetadata(grant, items),
      ...(offset + limit < ids.length ? { nextCursor: encodeOffsetCursor(THREAD_SCOPE, offset + limit) } : {}),
    };
  }
  // Our metadata of the listed messages is read while Gmail answers the batch of gets.
  const page = await gmailPage(
    client,
    'messages',
    listing,
    { limit, token: query.page_token, scope: SCOPE },
    (id) => getOne(client, grant, id, fields),
    (ids) => liveMetadataOf(grant.id as GrantId, ids),
  );
  return {
    items: page.items.map((m) => ({ ...m, metadata: page.alongside?.get(m.id) ?? {} })),
    ...(page.next ? { nextCursor: encodeProviderCursor(SCOPE, page.next) } : {}),
  };
}

async function get(grant: GrantRecord, messageId: string, query: MessageIdQuery): Promise<Message> {
  const id = checkId(messageId);
  // Gmail's message and our metadata of it, read side by side.
  const [message, metadata] = await Promise.all([
    googleClientOf(grant).then((client) => getOne(client, grant, id, fieldsOf(query))),
    liveMetadataOf(grant.id as GrantId, [id]),
  ]);
  return { ...message, metadata: metadata.get(id) ?? {} };
}

/**
 * Several messages of one grant, by Gmail ID, with our metadata: one client, the gets as batches,
 * the metadata in one read. One gone at Gmail is left out of the answer.
 */
export async function gmailMessagesById(grant: GrantRecord, ids: readonly string[]): Promise<Map<string, Message>> {
  const found = new Map<string, Message>();
  if (!ids.length) return found;
  const client = await googleClientOf(grant);
  await inPool(ids, GET_CONCURRENCY, async (id) => {
    try {
      found.set(id, await getOne(client, grant, checkId(id), 'standard'));
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
    }
  });
  const metadata = await liveMetadataOf(grant.id as GrantId, [...found.keys()]);
  for (const [id, message] of found) found.set(id, { ...message, metadata: metadata.get(id) ?? {} });
  return found;
}

async function update(grant: GrantRecord, messageId: string, body: UpdateMessageBody): Promise<Message> {
  const client = await googleClientOf(grant);
  const id = checkId(messageId);
  const read = await getOne(client, grant, id, 'standard');
  // The message exists at Gmail (just read): its metadata, replaced as given, is ours.
  if (body.metadata !== undefined) await setLiveMetadata(grant.id as GrantId, id, body.metadata, INDEXED_METADATA_KEYS);
  const current = (await withLiveMetadata(grant, [read]))[0]!;
  const add = new Set<string>();
  const remove = new Set<string>();
  if (body.unread !== undefined) (body.unread ? add : remove).add('UNREAD');
  if (body.starred !== undefined) (body.starred ? add : remove).add('STARRED');
  if (body.folders !== undefined) {
    // `folders` replaces the message's labels (its flags aside).
    const wanted = new Set(body.folders.filter((f) => !FLAG_LABELS.has(f)));
    for (const label of wanted) if (!current.folders.includes(label)) add.add(label);
    for (const label of current.folders) if (!FLAG_LABELS.has(label) && !wanted.has(label)) remove.add(label);
  }
  if (!add.size && !remove.size) return current;
  // Gmail answers the modify with the message's labels: the rest of the message is as just read.
  const { labelIds = [] } = await client.call<GmailMessage>({
    api: 'gmail',
    method: 'POST',
    path: `${messagePath(id)}/modify`,
    body: {
      ...(add.size ? { addLabelIds: [...add] } : {}),
      ...(remove.size ? { removeLabelIds: [...remove] } : {}),
    },
  });
  return { ...current, folders: labelIds, unread: labelIds.includes('UNREAD'), starred: labelIds.includes('STARRED') };
}

async function remove(grant: GrantRecord, messageId: string, query: DeleteMessageQuery): Promise<void> {
  const client = await googleClientOf(grant);
  const id = checkId(messageId);
  try {
    if (query.hard_delete) {
      await client.call({ api: 'gmail', method: 'DELETE', path: messagePath(id) });
      await deleteLiveMetadata(grant.id as GrantId, id, INDEXED_METADATA_KEYS);
    } else await client.call({ api: 'gmail', method: 'POST', path: `${messagePath(id)}/trash` });
  } catch (error) {
    if (error instanceof GoogleNotFoundError) throw new NotFoundError(`No message '${id}' in this grant's mailbox`);
    throw error;
  }
}

export const gmailMessages: MessagesProvider = { list, get, update, delete: remove };
