import { INLINE_DOWNLOAD_MAX } from '#shared/mailbox/attachments';
import { grantPrefix, presignedDownload } from '#shared/mailbox/blobs';
import { putBlob } from '#shared/aws/mail-bucket';
import type { GrantRecord } from '#shared/db/grants';
import { NotFoundError } from '#shared/errors';
import { googleClientOf, GoogleNotFoundError, type GoogleClient } from '#shared/google/client';
import { messageFromGmail, partOfAttachment, type GmailMessage } from '#shared/google/gmail-message';
import type { Attachment, AttachmentDownload, AttachmentsProvider } from '#shared/providers/contract';

/**
 * Attachments of provider A's messages, live: described from the message as Gmail answers it, their
 * contents read with users.messages.attachments.get (or from the part itself when Gmail inlined a
 * small one). Over what one answer carries, the contents are put under the grant's prefix in the mail
 * bucket and served by a short-lived URL, as an IMAP grant's are (removed with the grant).
 */

async function fullMessage(client: GoogleClient, messageId: string): Promise<GmailMessage> {
  if (!/^[0-9a-zA-Z_-]{1,64}$/.test(messageId))
    throw new NotFoundError(`No message '${messageId}' in this grant's mailbox`);
  try {
    return await client.call<GmailMessage>({
      api: 'gmail',
      path: `/gmail/v1/users/me/messages/${messageId}`,
      query: { format: 'full' },
    });
  } catch (error) {
    if (error instanceof GoogleNotFoundError)
      throw new NotFoundError(`No message '${messageId}' in this grant's mailbox`);
    throw error;
  }
}

const missing = (attachmentId: string, messageId: string) =>
  new NotFoundError(`Attachment '${attachmentId}' not found in message '${messageId}'`);

async function get(grant: GrantRecord, attachmentId: string, messageId: string): Promise<Attachment> {
  const message = messageFromGmail(grant, await fullMessage(await googleClientOf(grant), messageId));
  const found = message.attachments.find((a) => a.id === attachmentId);
  if (!found) throw missing(attachmentId, messageId);
  return found;
}

async function download(grant: GrantRecord, attachmentId: string, messageId: string): Promise<AttachmentDownload> {
  const client = await googleClientOf(grant);
  const gmail = await fullMessage(client, messageId);
  const part = partOfAttachment(gmail.payload, attachmentId);
  const attachment = messageFromGmail(grant, gmail).attachments.find((a) => a.id === attachmentId);
  if (!part || !attachment) throw missing(attachmentId, messageId);
  let data = part.body?.data;
  if (data === undefined && part.body?.attachmentId) {
    data = (
      await client.call<{ data?: string }>({
        api: 'gmail',
        path: `/gmail/v1/users/me/messages/${messageId}/attachments/${encodeURIComponent(part.body.attachmentId)}`,
      })
    ).data;
  }
  if (data === undefined) throw missing(attachmentId, messageId);
  const content = Buffer.from(data, 'base64url');
  if (content.length <= INLINE_DOWNLOAD_MAX) return { kind: 'content', content, attachment };
  const key = `${grantPrefix(grant.id)}attachments/gmail/${messageId}/${attachmentId}`;
  await putBlob(key, content, attachment.content_type);
  return { kind: 'redirect', url: await presignedDownload(key, attachment.filename, attachment.content_type) };
}

export const gmailAttachments: AttachmentsProvider = { get, download };
