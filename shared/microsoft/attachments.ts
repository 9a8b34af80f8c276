import { putBlob } from '#shared/aws/mail-bucket';
import type { GrantRecord } from '#shared/db/grants';
import { NotFoundError } from '#shared/errors';
import { INLINE_DOWNLOAD_MAX } from '#shared/mailbox/attachments';
import { grantPrefix, presignedDownload } from '#shared/mailbox/blobs';
import { graphClientOf, GraphNotFoundError, type GraphClient } from '#shared/microsoft/client';
import { attachmentFromGraph, GRAPH_ATTACHMENT_SELECT, type GraphAttachment } from '#shared/microsoft/graph-message';
import type { Attachment, AttachmentDownload, AttachmentsProvider } from '#shared/providers/contract';

/**
 * Attachments of provider B's messages and drafts, live: `…/messages/{id}/attachments/{id}` through
 * Graph, the attachment's ID Graph's own (as the message's `attachments` give it), so one of another
 * message, or of another grant's mailbox, is not found there. Described from Graph's attachment
 * (never its bytes); downloaded from a file attachment's `contentBytes`, or an attached Outlook item's
 * MIME (`$value`). Over what one answer carries, the contents are put under the grant's prefix in the
 * mail bucket and served by a short-lived URL, as provider A's are (removed with the grant). A link
 * to a file kept elsewhere (a reference attachment) has no contents at Graph to give.
 */

interface GraphFileAttachment extends GraphAttachment {
  contentBytes?: string | null;
}

const FILE = '#microsoft.graph.fileAttachment';
const ITEM = '#microsoft.graph.itemAttachment';

const missing = (attachmentId: string, messageId: string) =>
  new NotFoundError(`Attachment '${attachmentId}' not found in message '${messageId}'`);

/** The path of an attachment; IDs that are not Graph's (URL-safe base64) name none (and must not reach a path). */
function attachmentPath(client: GraphClient, attachmentId: string, messageId: string): string {
  const graphId = /^[A-Za-z0-9_=-]{1,512}$/;
  if (!graphId.test(attachmentId) || !graphId.test(messageId)) throw missing(attachmentId, messageId);
  return `${client.mailbox}/messages/${encodeURIComponent(messageId)}/attachments/${encodeURIComponent(attachmentId)}`;
}

/** Graph's 404 (no such message, or no such attachment in it) as ours; other failures as they are. */
async function orMissing<T>(attachmentId: string, messageId: string, call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof GraphNotFoundError) throw missing(attachmentId, messageId);
    throw error;
  }
}

async function get(grant: GrantRecord, attachmentId: string, messageId: string): Promise<Attachment> {
  const client = await graphClientOf(grant);
  const path = attachmentPath(client, attachmentId, messageId);
  const found = await orMissing(
    attachmentId,
    messageId,
    client.call<GraphAttachment>({ path, query: { $select: GRAPH_ATTACHMENT_SELECT } }),
  );
  return attachmentFromGraph(grant, found);
}

async function download(grant: GrantRecord, attachmentId: string, messageId: string): Promise<AttachmentDownload> {
  const client = await graphClientOf(grant);
  const path = attachmentPath(client, attachmentId, messageId);
  // Without $select: a file attachment comes with its contentBytes (a property of that type only).
  const found = await orMissing(attachmentId, messageId, client.call<GraphFileAttachment>({ path }));
  const attachment = attachmentFromGraph(grant, found);
  let content: Buffer;
  if (found['@odata.type'] === FILE && typeof found.contentBytes === 'string')
    content = Buffer.from(found.contentBytes, 'base64');
  else if (found['@odata.type'] === ITEM)
    content = Buffer.from(
      await orMissing(attachmentId, messageId, client.call<string>({ path: `${path}/$value`, answer: 'text' })),
      'utf8',
    );
  else
    throw new NotFoundError(
      `Attachment '${attachmentId}' of message '${messageId}' links to a file kept elsewhere: Graph holds no contents for it`,
    );
  if (content.length <= INLINE_DOWNLOAD_MAX) return { kind: 'content', content, attachment };
  const key = `${grantPrefix(grant.id)}attachments/graph/${messageId}/${attachmentId}`;
  await putBlob(key, content, attachment.content_type);
  return { kind: 'redirect', url: await presignedDownload(key, attachment.filename, attachment.content_type) };
}

export const graphAttachments: AttachmentsProvider = { get, download };
