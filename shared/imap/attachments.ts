import { downloadAttachment as storedDownload, getAttachment, INLINE_DOWNLOAD_MAX } from '#shared/mailbox/attachments';
import { presignedDownload, attachmentKey } from '#shared/mailbox/blobs';
import { requireMessage } from '#shared/mailbox/lookup';
import { blobExists, putBlob } from '#shared/aws/mail-bucket';
import type { GrantRecord } from '#shared/db/grants';
import { NotFoundError } from '#shared/errors';
import { parseId } from '#shared/ids';
import { serverSource } from '#shared/imap/messages';
import { parseMime } from '#shared/mail/parse';
import type { AttachmentsProvider, AttachmentDownload } from '#shared/providers/contract';

/**
 * Attachments of an IMAP grant's messages: described from the synced record, their contents read from
 * the server when downloaded (the message's MIME, parsed; they are not stored beside it). Over what one
 * answer carries, the contents are put under the grant's prefix in the mail bucket once and served by
 * a short-lived URL, as an Agent Account's large attachments are (removed with the grant).
 */
async function downloadImapAttachment(
  grant: GrantRecord,
  attachmentId: string,
  messageId: string,
): Promise<AttachmentDownload> {
  // A draft's attachments are stored with it (shared/imap/drafts.ts), as an Agent Account's are.
  if (parseId('draft', messageId)) return storedDownload(grant, attachmentId, messageId);
  const record = await requireMessage(grant, messageId);
  const attachment = record.attachments.find((a) => a.id === attachmentId);
  if (!attachment) throw new NotFoundError(`Attachment '${attachmentId}' not found in message '${messageId}'`);
  if (!attachment.on_server) return storedDownload(grant, attachmentId, messageId);
  const key = attachmentKey(grant.id, attachment.id);
  const large = attachment.size > INLINE_DOWNLOAD_MAX;
  if (large && (await blobExists(key))) {
    return { kind: 'redirect', url: await presignedDownload(key, attachment.filename, attachment.content_type) };
  }
  const raw = await serverSource(grant, record);
  if (!raw) throw new NotFoundError(`Message '${messageId}' is no longer on the server`);
  const content = (await parseMime(raw)).attachments[Number(attachment.key)]?.content;
  if (!content)
    throw new NotFoundError(`Attachment '${attachmentId}' is no longer in message '${messageId}' on the server`);
  if (!large) return { kind: 'content', content, attachment };
  await putBlob(key, content, attachment.content_type);
  return { kind: 'redirect', url: await presignedDownload(key, attachment.filename, attachment.content_type) };
}

export const imapAttachments: AttachmentsProvider = { get: getAttachment, download: downloadImapAttachment };
