import { attachmentsOf, isMessageListing, messageListingPage, messagePath } from '#shared/microsoft/reads';
import type { DeleteMessageQuery, ListMessagesQuery, MessageIdQuery, UpdateMessageBody } from '#schemas/mail';
import { decodeProviderCursor, encodeProviderCursor, invalidPageToken } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { deleteLiveMetadata, liveMetadataOf, setLiveMetadata } from '#shared/db/live-metadata';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import type { GrantId } from '#shared/ids';
import { INDEXED_METADATA_KEYS } from '#shared/mailbox/postings';
import { MAX_BATCH } from '#shared/microsoft/batch';
import { graphClientOf, GraphNotFoundError, type GraphClient } from '#shared/microsoft/client';
import {
  GRAPH_MESSAGE_SELECT,
  mayHoldAttachments,
  messageFromGraph,
  type GraphAttachment,
  type GraphMessage,
  type MessageFields,
} from '#shared/microsoft/graph-message';
import { folderRef, graphListing, type GraphListing } from '#shared/microsoft/graph-query';
import { inPool } from '#shared/pool';
import type { Message, MessagesProvider, Page } from '#shared/providers/contract';
import { listByLiveMetadata } from '#shared/mailbox/live-metadata';

/**
 * Provider B's messages, live: every answer comes from Microsoft Graph (`…/messages` and
 * `…/mailFolders/{id}/messages` with `$filter` or `$search`, get, PATCH, move, DELETE), nothing of
 * the mailbox is stored. A listing is one Graph page (`$top` = our limit, `$select` of what we map),
 * then the attachment lists of the messages that may hold attachments, sent together as `$batch`es;
 * our page token wraps Graph's `@odata.nextLink`. Outlook keeps a message in exactly one folder, and
 * a move gives it a new ID (Graph's answer to the move has it): an update that moves a message
 * answers it under its new ID, and our metadata of it (shared/db/live-metadata.ts, as provider A's)
 * moves with it. A delete moves the message to Deleted Items (our Trash); `hard_delete` deletes it.
 */

const SCOPE = 'graph-messages';
const METADATA_SCOPE = 'graph-metadata';
/** Attachment lists (or message reads) of one listing made at once: they travel as one batch. */
const GET_CONCURRENCY = MAX_BATCH;

const notFound = (id: string) => new NotFoundError(`No message '${id}' in this grant's mailbox`);

/** Graph IDs are URL-safe base64; anything else is not one of its messages (and must not reach a path). */
function checkId(id: string): string {
  if (!/^[A-Za-z0-9_=-]{1,512}$/.test(id)) throw notFound(id);
  return id;
}

/** `include_tracking_options` is answered by the registry (shared/registries/messages.ts), from the standard message. */
const fieldsOf = (query: { fields?: string | undefined }): MessageFields =>
  (query.fields === 'include_tracking_options' ? 'standard' : (query.fields ?? 'standard')) as MessageFields;

/** Graph's 404 for a message as ours, naming it; other failures as they are. */
async function orNotFound<T>(id: string, call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof GraphNotFoundError) throw notFound(id);
    throw error;
  }
}

/** The message as Graph holds it, with what `fields` asks for (its attachments, its MIME), read at once (one batch). */
async function readOne(
  client: GraphClient,
  id: string,
  fields: MessageFields,
): Promise<{ message: GraphMessage; attachments: GraphAttachment[]; mime?: string }> {
  const [message, attachments, mime] = await orNotFound(
    id,
    Promise.all([
      client.call<GraphMessage>({
        path: messagePath(client, id),
        query: { $select: GRAPH_MESSAGE_SELECT },
        batch: true,
      }),
      attachmentsOf(client, id),
      fields === 'raw_mime'
        ? client.call<string>({ path: `${messagePath(client, id)}/$value`, answer: 'text', batch: true })
        : undefined,
    ]),
  );
  return { message, attachments, ...(mime !== undefined ? { mime } : {}) };
}

async function getOne(client: GraphClient, grant: GrantRecord, id: string, fields: MessageFields): Promise<Message> {
  const { message, attachments, mime } = await readOne(client, id, fields);
  return messageFromGraph(grant, message, { fields, attachments, ...(mime !== undefined ? { mime } : {}) });
}

/** The Graph link a page token of ours holds, if it continues a message listing of this grant's mailbox. */
function continuation(client: GraphClient, pageToken: string): string {
  const link = decodeProviderCursor(pageToken, SCOPE);
  if (!isMessageListing(client, link)) throw invalidPageToken();
  return link;
}

/** One page of Graph's listing: the first (our filters as Graph's query) or the one a token continues. */
const graphPage = (client: GraphClient, listing: GraphListing, limit: number, pageToken: string | undefined) =>
  messageListingPage(client, pageToken ? continuation(client, pageToken) : listing, limit, GRAPH_MESSAGE_SELECT);

async function list(grant: GrantRecord, query: ListMessagesQuery, limit: number): Promise<Page<Message>> {
  const listing = graphListing(query);
  const fields = fieldsOf(query);
  const client = await graphClientOf(grant);
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
      (id) => getOne(client, grant, checkId(id), fields),
    );
  const page = await graphPage(client, listing, limit, query.page_token);
  const messages = page.value;
  // Each message's attachments, and its MIME when asked, read together (batches) with our metadata of them.
  const extras = new Map<string, { attachments: GraphAttachment[]; mime?: string }>();
  const [, metadata] = await Promise.all([
    inPool(messages, GET_CONCURRENCY, async (m) => {
      try {
        const [attachments, mime] = await orNotFound(
          m.id,
          Promise.all([
            mayHoldAttachments(m) ? attachmentsOf(client, m.id) : [],
            fields === 'raw_mime'
              ? client.call<string>({ path: `${messagePath(client, m.id)}/$value`, answer: 'text', batch: true })
              : undefined,
          ]),
        );
        extras.set(m.id, { attachments, ...(mime !== undefined ? { mime } : {}) });
      } catch (error) {
        // Deleted since Graph listed it: left out of the page.
        if (!(error instanceof NotFoundError)) throw error;
      }
    }),
    liveMetadataOf(
      grant.id as GrantId,
      messages.map((m) => m.id),
    ),
  ]);
  return {
    items: messages.flatMap((m) => {
      const extra = extras.get(m.id);
      if (!extra) return [];
      return [{ ...messageFromGraph(grant, m, { fields, ...extra }), metadata: metadata.get(m.id) ?? {} }];
    }),
    ...(page.nextLink ? { nextCursor: encodeProviderCursor(SCOPE, page.nextLink) } : {}),
  };
}

async function get(grant: GrantRecord, messageId: string, query: MessageIdQuery): Promise<Message> {
  const id = checkId(messageId);
  const fields = fieldsOf(query);
  // Graph's message and our metadata of it, read side by side.
  const [message, metadata] = await Promise.all([
    graphClientOf(grant).then((client) => getOne(client, grant, id, fields)),
    liveMetadataOf(grant.id as GrantId, [id]),
  ]);
  return { ...message, metadata: metadata.get(id) ?? {} };
}

/** Our metadata of a message Graph gave a new ID (a move): kept under the new ID, gone from the old one. */
async function carryMetadata(grant: GrantRecord, from: string, to: string, metadata: Record<string, string>) {
  // Immutable IDs (shared/microsoft/client.ts): a move keeps the ID, and the metadata stays where it is.
  if (from === to || !Object.keys(metadata).length) return;
  await setLiveMetadata(grant.id as GrantId, to, metadata, INDEXED_METADATA_KEYS);
  await deleteLiveMetadata(grant.id as GrantId, from, INDEXED_METADATA_KEYS);
}

/** The ID of the folder a reference names (a well-known name is read for its ID), or a 400 naming it. */
export async function folderIdOf(client: GraphClient, ref: string): Promise<string> {
  try {
    const folder = await client.call<{ id: string }>({
      path: `${client.mailbox}/mailFolders/${encodeURIComponent(folderRef(ref))}`,
      query: { $select: ['id'] },
      batch: true,
    });
    return folder.id;
  } catch (error) {
    if (error instanceof NotFoundError)
      throw new InvalidRequestError(`'folders' names no folder of this grant: '${ref}'`);
    throw error;
  }
}

/** Moves a message (Graph answers the moved message, under its new ID). */
const move = (client: GraphClient, id: string, destinationId: string) =>
  orNotFound(
    id,
    client.call<GraphMessage>({
      method: 'POST',
      path: `${messagePath(client, id)}/move`,
      body: { destinationId },
    }),
  );

async function update(grant: GrantRecord, messageId: string, body: UpdateMessageBody): Promise<Message> {
  const id = checkId(messageId);
  if (body.folders !== undefined && body.folders.length !== 1)
    throw new InvalidRequestError(
      `A message of a microsoft grant is in exactly one folder (Outlook has no labels): 'folders' must name one, not ${body.folders.length}`,
    );
  const client = await graphClientOf(grant);
  // The message, our metadata of it and the folder it is to go to, read at once.
  const [read, stored, destination] = await Promise.all([
    readOne(client, id, 'standard'),
    liveMetadataOf(grant.id as GrantId, [id]),
    body.folders !== undefined ? folderIdOf(client, body.folders[0]!) : undefined,
  ]);
  // The message exists at Graph (just read): its metadata, replaced as given, is ours.
  if (body.metadata !== undefined) await setLiveMetadata(grant.id as GrantId, id, body.metadata, INDEXED_METADATA_KEYS);
  const metadata = body.metadata ?? stored.get(id) ?? {};
  let message = read.message;
  let attachments = read.attachments;
  const changes = {
    ...(body.unread !== undefined && body.unread !== (message.isRead === false) ? { isRead: !body.unread } : {}),
    ...(body.starred !== undefined && body.starred !== (message.flag?.flagStatus === 'flagged')
      ? { flag: { flagStatus: body.starred ? 'flagged' : 'notFlagged' } }
      : {}),
  };
  if (Object.keys(changes).length) {
    const patched = await orNotFound(
      id,
      client.call<GraphMessage>({ method: 'PATCH', path: messagePath(client, id), body: changes }),
    );
    // Graph answers the whole message, but not the properties only `$select` gives (its headers): the flags are what changed.
    message = { ...message, isRead: patched.isRead ?? message.isRead, flag: patched.flag ?? message.flag };
  }
  if (destination !== undefined && destination !== message.parentFolderId) {
    const moved = await move(client, id, destination);
    message = { ...message, id: moved.id, parentFolderId: moved.parentFolderId ?? destination };
    await carryMetadata(grant, id, moved.id, metadata);
    // Its attachments moved with it (under new IDs, should Graph have given the message one).
    if (attachments.length && moved.id !== id) attachments = await attachmentsOf(client, moved.id);
  }
  return { ...messageFromGraph(grant, message, { attachments }), metadata };
}

async function remove(grant: GrantRecord, messageId: string, query: DeleteMessageQuery): Promise<void> {
  const client = await graphClientOf(grant);
  const id = checkId(messageId);
  if (query.hard_delete) {
    await orNotFound(id, client.call({ method: 'DELETE', path: messagePath(client, id) }));
    await deleteLiveMetadata(grant.id as GrantId, id, INDEXED_METADATA_KEYS);
    return;
  }
  // To Deleted Items (our Trash), unless it is there already; our metadata moves with it.
  const [message, trash, stored] = await Promise.all([
    orNotFound(
      id,
      client.call<GraphMessage>({ path: messagePath(client, id), query: { $select: ['parentFolderId'] }, batch: true }),
    ),
    folderIdOf(client, 'deleteditems'),
    liveMetadataOf(grant.id as GrantId, [id]),
  ]);
  if (message.parentFolderId === trash) return;
  const moved = await move(client, id, trash);
  await carryMetadata(grant, id, moved.id, stored.get(id) ?? {});
}

export const graphMessages: MessagesProvider = { list, get, update, delete: remove };
