import { attachmentsOf, messagePath } from '#shared/microsoft/reads';
import type { CreateDraftBody, ListDraftsQuery, SendDraftBody, UpdateDraftBody } from '#schemas/mail';
import { prepareOutgoing, type OutgoingInput, type PreparedMessage } from '#shared/mailbox/send';
import { decodeProviderCursor, encodeProviderCursor, invalidPageToken } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { deleteLiveMetadata, liveMetadataOf, setLiveMetadata } from '#shared/db/live-metadata';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import type { GrantId } from '#shared/ids';
import { INDEXED_METADATA_KEYS } from '#shared/mailbox/postings';
import type { ParticipantRecord } from '#shared/mailbox/types';
import { MAX_BATCH } from '#shared/microsoft/batch';
import { graphClientOf, GraphGoneError, GraphNotFoundError, type GraphClient } from '#shared/microsoft/client';
import {
  GRAPH_MESSAGE_SELECT,
  mayHoldAttachments,
  messageFromGraph,
  type GraphAttachment,
  type GraphMessage,
} from '#shared/microsoft/graph-message';
import { graphListing } from '#shared/microsoft/graph-query';
import {
  addAttachments,
  checkAttachmentSizes,
  fileAttachment,
  isGraphId,
  MIME_REQUEST_MAX,
  repliedOnGraph,
  sentCopy,
  SMALL_ATTACHMENT_MAX,
} from '#shared/microsoft/submit';
import { inPool } from '#shared/pool';
import type { Draft, DraftSendingProvider, DraftsProvider, Message, Page } from '#shared/providers/contract';
import { renderStoredTemplate } from '#shared/templates/templates';
import type { UploadedFile } from '#shared/uploaded-file';

/**
 * Provider B's drafts, live: Outlook's own drafts, messages in the Drafts folder, and a draft's ID is
 * its Graph message ID (Graph keeps it while the draft is changed; sending gives the Sent copy a new
 * one). A draft is composed as every outgoing message is (shared/mailbox/send.ts prepareOutgoing,
 * recipients not yet required) and handed to Graph as its JSON message: subject, body (HTML, or text
 * when `is_plaintext`), recipients, Reply-To, the flag for `starred`, custom headers as
 * `internetMessageHeaders` (Graph keeps only `X-` ones on a message it composes: others are refused
 * with a 400). A reply draft is Graph's `createReply` of the answered message, which puts it in that
 * conversation with its threading headers, our fields given with it. Attachments: small ones go with
 * the create while the request stays under Graph's 4 MB, the rest are added one by one, larger than
 * 3 MB through an upload session (shared/microsoft/submit.ts). A change PATCHes the fields the body
 * names (recomposed with what the draft holds: templates and signatures apply), and replaces the
 * attachments only when the body or the files name some. Our metadata of a draft is kept as for
 * messages (shared/db/live-metadata.ts). Sending is Graph's `send` of the draft; the answer is the
 * Sent copy, found by the draft's Message-ID.
 */

const SCOPE = 'graph-drafts';
/** Attachment lists of one listing read at once: they travel as one batch. */
const GET_CONCURRENCY = MAX_BATCH;
/** The draft properties read: a message's, and when it last changed. */
const DRAFT_SELECT = [...GRAPH_MESSAGE_SELECT, 'lastModifiedDateTime', 'isDraft'] as const;

interface GraphDraft extends GraphMessage {
  lastModifiedDateTime?: string | null;
}

const notFound = (id: string) => new NotFoundError(`No draft '${id}' in this grant's mailbox`);

const recipients = (list: readonly ParticipantRecord[]) =>
  list.map((p) => ({ emailAddress: { address: p.email, ...(p.name ? { name: p.name } : {}) } }));

/** Graph's 404 for a draft as ours, naming it; other failures as they are. */
async function orNotFound<T>(id: string, call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof GraphNotFoundError) throw notFound(id);
    throw error;
  }
}

/** A draft and its attachments, read at once (one batch); a message that is not a draft is none of ours. */
async function readDraft(
  client: GraphClient,
  id: string,
): Promise<{ message: GraphDraft; attachments: GraphAttachment[] }> {
  if (!isGraphId(id)) throw notFound(id);
  const [message, attachments] = await orNotFound(
    id,
    Promise.all([
      client.call<GraphDraft>({ path: messagePath(client, id), query: { $select: DRAFT_SELECT }, batch: true }),
      attachmentsOf(client, id),
    ]),
  );
  if (message.isDraft === false) throw notFound(id);
  return { message, attachments };
}

function draftOf(
  grant: GrantRecord,
  message: GraphDraft,
  attachments: readonly GraphAttachment[],
  metadata: Record<string, string>,
): Draft {
  const view = messageFromGraph(grant, message, { attachments });
  const changed = Date.parse(message.lastModifiedDateTime ?? '');
  return {
    ...view,
    object: 'draft',
    updated_at: Number.isNaN(changed) ? view.date : Math.floor(changed / 1000),
    metadata,
  };
}

async function getDraft(client: GraphClient, grant: GrantRecord, id: string): Promise<Draft> {
  const [{ message, attachments }, metadata] = await Promise.all([
    readDraft(client, id),
    liveMetadataOf(grant.id as GrantId, [id]),
  ]);
  return draftOf(grant, message, attachments, metadata.get(id) ?? {});
}

/** What a draft holds, as the body that would create it again (its attachments apart). */
function inputOf(draft: Draft, message: GraphMessage): OutgoingInput {
  return {
    to: draft.to,
    cc: draft.cc,
    bcc: draft.bcc,
    reply_to: draft.reply_to,
    starred: draft.starred,
    is_plaintext: message.body?.contentType?.toLowerCase() === 'text',
    ...(draft.subject !== undefined ? { subject: draft.subject } : {}),
    ...(draft.body !== undefined ? { body: draft.body } : {}),
  };
}

/** The draft's properties of Graph's message, from the prepared message. */
const fieldsOf = (prepared: PreparedMessage) => ({
  subject: prepared.subject,
  body: { contentType: prepared.isPlaintext ? 'text' : 'html', content: prepared.body },
  toRecipients: recipients(prepared.to),
  ccRecipients: recipients(prepared.cc),
  bccRecipients: recipients(prepared.bcc),
  replyTo: recipients(prepared.replyTo),
  flag: { flagStatus: prepared.starred ? 'flagged' : 'notFlagged' },
});

/** The custom headers as `internetMessageHeaders`: Graph takes only `X-` headers on a message it composes. */
function headersOf(prepared: PreparedMessage): { name: string; value: string }[] {
  const other = prepared.headers.find((h) => !/^x-/i.test(h.name));
  if (other)
    throw new InvalidRequestError(
      `'custom_headers' of a microsoft grant's draft may only name X- headers (Graph keeps no other on a draft), not '${other.name}'; send the message directly to give it that header`,
    );
  return prepared.headers.map((h) => ({ name: h.name, value: h.value }));
}

const prepared = (grant: GrantRecord, input: OutgoingInput, files: UploadedFile[]) =>
  prepareOutgoing(grant, input, files, [], renderStoredTemplate, repliedOnGraph, { draft: true });

async function list(grant: GrantRecord, query: ListDraftsQuery, limit: number): Promise<Page<Draft>> {
  const { thread_id, metadata_pair: metadata, query_imap: imap, page_token: pageToken } = query;
  if (metadata !== undefined) throw new InvalidRequestError("'metadata_pair' is not available for microsoft drafts");
  if (imap !== undefined) throw new InvalidRequestError("'query_imap' applies to IMAP grants");
  const listing = graphListing({
    in: 'drafts',
    ...(query.subject !== undefined ? { subject: query.subject } : {}),
    ...(query.any_email !== undefined ? { any_email: query.any_email } : {}),
    ...(query.to !== undefined ? { to: query.to } : {}),
    ...(query.cc !== undefined ? { cc: query.cc } : {}),
    ...(query.bcc !== undefined ? { bcc: query.bcc } : {}),
    ...(query.starred !== undefined ? { starred: query.starred } : {}),
    ...(query.has_attachment !== undefined ? { has_attachment: query.has_attachment } : {}),
    ...(thread_id !== undefined ? { thread_id } : {}),
  });
  const client = await graphClientOf(grant);
  const collection = `${client.mailbox}/mailFolders/drafts/messages`;
  let page;
  if (pageToken) {
    const link = decodeProviderCursor(pageToken, SCOPE);
    let path = '';
    try {
      path = new URL(link).pathname;
    } catch {
      // Not a link: refused below.
    }
    const invalid = invalidPageToken();
    if (path.toLowerCase() !== collection.toLowerCase()) throw invalid;
    try {
      page = await client.page<GraphDraft>(link);
    } catch (error) {
      if (error instanceof GraphGoneError) throw invalid;
      throw error;
    }
  } else
    page = await client.page<GraphDraft>({
      path: collection,
      query: {
        $top: limit,
        $select: DRAFT_SELECT,
        ...(listing.filter !== undefined ? { $filter: listing.filter } : {}),
        ...(listing.search !== undefined ? { $search: listing.search } : {}),
      },
    });
  const drafts = page.value.filter((m) => m.isDraft !== false);
  const attachments = new Map<string, GraphAttachment[]>();
  const [, metadataOf] = await Promise.all([
    inPool(drafts, GET_CONCURRENCY, async (m) => {
      try {
        attachments.set(m.id, mayHoldAttachments(m) ? await orNotFound(m.id, attachmentsOf(client, m.id)) : []);
      } catch (error) {
        // Sent or deleted since Graph listed it: left out of the page.
        if (!(error instanceof NotFoundError)) throw error;
      }
    }),
    liveMetadataOf(
      grant.id as GrantId,
      drafts.map((m) => m.id),
    ),
  ]);
  return {
    items: drafts.flatMap((m) => {
      const held = attachments.get(m.id);
      return held ? [draftOf(grant, m, held, metadataOf.get(m.id) ?? {})] : [];
    }),
    ...(page.nextLink ? { nextCursor: encodeProviderCursor(SCOPE, page.nextLink) } : {}),
  };
}

async function get(grant: GrantRecord, draftId: string): Promise<Draft> {
  return getDraft(await graphClientOf(grant), grant, draftId);
}

/** Small attachments that go with the create while its request stays under Graph's 4 MB; the others after. */
function splitAttachments(fields: object, attachments: PreparedMessage['attachments']) {
  let size = JSON.stringify(fields).length;
  const inline: PreparedMessage['attachments'] = [];
  const after: PreparedMessage['attachments'] = [];
  for (const a of attachments) {
    const encoded = Math.ceil(a.content.length / 3) * 4 + 512;
    if (a.content.length <= SMALL_ATTACHMENT_MAX && size + encoded <= MIME_REQUEST_MAX) {
      inline.push(a);
      size += encoded;
    } else after.push(a);
  }
  return { inline, after };
}

async function create(grant: GrantRecord, body: CreateDraftBody, files: UploadedFile[]): Promise<Draft> {
  const message = await prepared(grant, body, files);
  const headers = headersOf(message);
  checkAttachmentSizes(message.attachments);
  const client = await graphClientOf(grant);
  const fields = { ...fieldsOf(message), ...(headers.length ? { internetMessageHeaders: headers } : {}) };
  let draft: GraphMessage;
  let rest = message.attachments;
  if (body.reply_to_message_id !== undefined) {
    // The answered message exists (prepareOutgoing read it): Graph's reply draft, in its conversation.
    draft = await client.call<GraphMessage>({
      method: 'POST',
      path: `${messagePath(client, body.reply_to_message_id)}/createReply`,
      body: { message: fields },
    });
  } else {
    const { inline, after } = splitAttachments(fields, message.attachments);
    draft = await client.call<GraphMessage>({
      method: 'POST',
      path: `${client.mailbox}/messages`,
      body: { ...fields, ...(inline.length ? { attachments: inline.map(fileAttachment) } : {}) },
    });
    rest = after;
  }
  try {
    await addAttachments(client, draft.id, rest);
  } catch (error) {
    // The create failed: no half-made draft is left in the account's Drafts.
    await client.call({ method: 'DELETE', path: messagePath(client, draft.id) }).catch(() => undefined);
    throw error;
  }
  if (Object.keys(message.metadata).length)
    await setLiveMetadata(grant.id as GrantId, draft.id, message.metadata, INDEXED_METADATA_KEYS);
  return getDraft(client, grant, draft.id);
}

/** The draft composed again from what it holds and `changes` (given fields replace, attachments kept unless replaced). */
async function recompose(
  grant: GrantRecord,
  draftId: string,
  changes: Partial<OutgoingInput>,
  files: UploadedFile[],
): Promise<Draft> {
  const client = await graphClientOf(grant);
  const { message: held, attachments: heldAttachments } = await readDraft(client, draftId);
  const current = draftOf(grant, held, heldAttachments, {});
  const replaced = changes.attachments !== undefined || files.length > 0;
  // Kept attachments stay at Graph as they are; only new ones are composed (and checked by the policy's limits).
  const message = await prepared(grant, { ...inputOf(current, held), ...changes }, replaced ? files : []);
  checkAttachmentSizes(message.attachments);
  await orNotFound(
    draftId,
    client.call({ method: 'PATCH', path: messagePath(client, draftId), body: fieldsOf(message) }),
  );
  if (replaced) {
    for (const a of heldAttachments)
      await client.call({
        method: 'DELETE',
        path: `${messagePath(client, draftId)}/attachments/${encodeURIComponent(a.id)}`,
      });
    await addAttachments(client, draftId, message.attachments);
  }
  if (changes.metadata !== undefined)
    await setLiveMetadata(grant.id as GrantId, draftId, changes.metadata, INDEXED_METADATA_KEYS);
  return getDraft(client, grant, draftId);
}

const update = (grant: GrantRecord, draftId: string, body: UpdateDraftBody, files: UploadedFile[]) =>
  recompose(grant, draftId, body, files);

async function remove(grant: GrantRecord, draftId: string): Promise<void> {
  const client = await graphClientOf(grant);
  if (!isGraphId(draftId)) throw notFound(draftId);
  const message = await orNotFound(
    draftId,
    client.call<GraphMessage>({ path: messagePath(client, draftId), query: { $select: ['isDraft'] } }),
  );
  if (message.isDraft === false) throw notFound(draftId);
  await orNotFound(draftId, client.call({ method: 'DELETE', path: messagePath(client, draftId) }));
  await deleteLiveMetadata(grant.id as GrantId, draftId, INDEXED_METADATA_KEYS);
}

export const graphDrafts: DraftsProvider = { list, get, create, update, delete: remove };

/**
 * Sends a draft through Graph (a signature named in the body is added to it first); the answer is the
 * sent message, Graph's Sent copy found by the draft's Message-ID, our metadata moved to it.
 */
export const graphDraftSending: DraftSendingProvider = {
  async send(grant: GrantRecord, draftId: string, body: SendDraftBody): Promise<Message> {
    const client = await graphClientOf(grant);
    const { message } = await readDraft(client, draftId);
    if (!message.toRecipients?.length && !message.ccRecipients?.length && !message.bccRecipients?.length)
      throw new InvalidRequestError(`Draft '${draftId}' has no recipient: add one in 'to', 'cc' or 'bcc' first`);
    if (!message.internetMessageId)
      throw new InvalidRequestError(`Draft '${draftId}' has no Message-ID at provider B yet; try again shortly`);
    if (body.signature_id !== undefined) await recompose(grant, draftId, { signature_id: body.signature_id }, []);
    const metadata = (await liveMetadataOf(grant.id as GrantId, [draftId])).get(draftId) ?? {};
    await orNotFound(draftId, client.call({ method: 'POST', path: `${messagePath(client, draftId)}/send` }));
    const sent = await sentCopy(grant, client, message.internetMessageId);
    if (!Object.keys(metadata).length) return sent;
    await setLiveMetadata(grant.id as GrantId, sent.id, metadata, INDEXED_METADATA_KEYS);
    await deleteLiveMetadata(grant.id as GrantId, draftId, INDEXED_METADATA_KEYS);
    return { ...sent, metadata };
  },
};
