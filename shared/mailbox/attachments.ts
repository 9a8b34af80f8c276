import { presignedDownload } from '#shared/mailbox/blobs';
import { getBlob } from '#shared/aws/mail-bucket';
import { requireDraft, requireMessage } from '#shared/mailbox/lookup';
import type { AttachmentRecord } from '#shared/mailbox/types';
import { attachmentView } from '#shared/mailbox/views';
import type { GrantRecord } from '#shared/db/grants';
import { NotFoundError } from '#shared/errors';
import { parseId } from '#shared/ids';

/**
 * Attachments of stored messages and drafts. API Gateway and Lambda cap a response at 6 MB (base64 included),
 * so contents up to INLINE_DOWNLOAD_MAX come back in the response and larger ones by a redirect to a
 * short-lived S3 URL, which streams them.
 */
export const INLINE_DOWNLOAD_MAX = 4 * 1024 * 1024;

/** `message_id` names a message, or a draft of the grant by its ID (`drf_…`): both keep their attachments alike. */
async function requireAttachment(
  grant: GrantRecord,
  attachmentId: string,
  messageId: string,
): Promise<AttachmentRecord> {
  const holder = parseId('draft', messageId)
    ? await requireDraft(grant, messageId)
    : await requireMessage(grant, messageId);
  const attachment = holder.attachments.find((a) => a.id === attachmentId);
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
    return {
      kind: 'redirect',
      url: await presignedDownload(attachment.key, attachment.filename, attachment.content_type),
    };
  }
  return { kind: 'content', content: await getBlob(attachment.key), attachment };
}
