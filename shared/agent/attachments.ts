import { getBlob, presignedDownload } from '#shared/agent/blobs';
import { requireMessage } from '#shared/agent/lookup';
import type { AttachmentRecord } from '#shared/agent/types';
import { attachmentView } from '#shared/agent/views';
import type { GrantRecord } from '#shared/db/grants';
import { NotFoundError } from '#shared/errors';

/**
 * Attachments of stored messages. API Gateway and Lambda cap a response at 6 MB (base64 included),
 * so contents up to INLINE_DOWNLOAD_MAX come back in the response and larger ones by a redirect to a
 * short-lived S3 URL, which streams them.
 */
export const INLINE_DOWNLOAD_MAX = 4 * 1024 * 1024;

async function requireAttachment(grant: GrantRecord, attachmentId: string, messageId: string): Promise<AttachmentRecord> {
  const message = await requireMessage(grant, messageId);
  const attachment = message.attachments.find((a) => a.id === attachmentId);
  if (!attachment) throw new NotFoundError(`Attachment '${attachmentId}' not found in message '${messageId}'`);
  return attachment;
}

export async function getAttachment(grant: GrantRecord, attachmentId: string, messageId: string) {
  return attachmentView(grant.id, await requireAttachment(grant, attachmentId, messageId));
}

export async function downloadAttachment(
  grant: GrantRecord,
  attachmentId: string,
  messageId: string,
): Promise<{ kind: 'content'; content: Buffer; attachment: AttachmentRecord } | { kind: 'redirect'; url: string }> {
  const attachment = await requireAttachment(grant, attachmentId, messageId);
  if (attachment.size > INLINE_DOWNLOAD_MAX) {
    return { kind: 'redirect', url: await presignedDownload(attachment.key, attachment.filename, attachment.content_type) };
  }
  return { kind: 'content', content: await getBlob(attachment.key), attachment };
}
