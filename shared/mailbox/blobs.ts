import { GetObjectCommand } from '@aws-sdk/client-s3';
import { legacyPostings } from '#shared/mailbox/postings';
import { bodyText } from '#shared/mailbox/text';
import type { AttachmentRecord, MessageRecord, NewAttachment } from '#shared/mailbox/types';
import type { CopiedAttachment } from '#shared/db/mail-records';
import { MAIL_BUCKET, s3 } from '#shared/aws/s3';
import { copyBlob, getBlob, putBlob } from '#shared/aws/mail-bucket';
// Read only inside functions: the lazy chunk (scripts/esbuild-plugins.cjs, lazy-chunks) loads on the first download link.
import { getSignedUrl } from '#shared/lazy/presigner';
import { newId, type AttachmentId, type GrantId, type MessageId } from '#shared/ids';

/**
 * Mail content kept in S3 rather than in DynamoDB items: raw MIME of every message, bodies too large
 * for an item, and attachment contents. Everything of a grant lives under `grants/<grant_id>/`, so
 * deleting a grant deletes one prefix.
 */
export const grantPrefix = (grantId: GrantId) => `grants/${grantId}/`;
export const rawMessageKey = (grantId: GrantId, messageId: MessageId | string) =>
  `grants/${grantId}/messages/${messageId}/raw.eml`;
export const bodyKey = (grantId: GrantId, id: string) => `grants/${grantId}/bodies/${id}`;
export const attachmentKey = (grantId: GrantId, attachmentId: AttachmentId) =>
  `grants/${grantId}/attachments/${attachmentId}`;

/** Records for new attachments: each under a new ID and S3 key (nothing is uploaded yet). */
export function attachmentRecords(
  grantId: GrantId,
  list: readonly (Omit<NewAttachment, 'content'> & ({ content: Buffer } | { size: number }))[],
): AttachmentRecord[] {
  return list.map((a) => {
    const id = newId('attachment');
    const size = 'content' in a ? a.content.length : a.size;
    return {
      id,
      filename: a.filename,
      content_type: a.contentType,
      size,
      is_inline: a.inline,
      ...(a.contentId ? { content_id: a.contentId } : {}),
      key: attachmentKey(grantId, id),
    };
  });
}

/** Uploads the contents of `list` under the keys of `records` (same order), side by side; copies are made inside S3. */
export async function uploadAttachments(
  records: readonly AttachmentRecord[],
  list: readonly (NewAttachment | CopiedAttachment)[],
): Promise<void> {
  await Promise.all(
    records.map((r, i) => {
      const a = list[i]!;
      return 'copyFrom' in a ? copyBlob(a.copyFrom, r.key) : putBlob(r.key, a.content, r.content_type);
    }),
  );
}

/** Stored attachments with their contents read back from S3 (a draft or a scheduled message sent: nothing is rendered again). */
export const attachmentsWithContents = (records: readonly AttachmentRecord[]): Promise<NewAttachment[]> =>
  Promise.all(
    records.map(async (a) => ({
      filename: a.filename,
      contentType: a.content_type,
      content: await getBlob(a.key),
      ...(a.content_id ? { contentId: a.content_id } : {}),
      inline: a.is_inline,
    })),
  );

/** The body of a stored message or draft: in S3 when `body_key` names it, otherwise in the item. */
export async function storedBody(record: { body?: string; body_key?: string }): Promise<string> {
  return record.body_key ? (await getBlob(record.body_key)).toString('utf8') : (record.body ?? '');
}

/** A short-lived download URL, for contents too large to return through API Gateway and Lambda. */
export async function presignedDownload(
  key: string,
  filename: string,
  contentType: string,
  seconds = 300,
): Promise<string> {
  const disposition = `attachment; filename*=UTF-8''${encodeURIComponent(filename)}`;
  return getSignedUrl(
    s3,
    new GetObjectCommand({
      Bucket: MAIL_BUCKET,
      Key: key,
      ResponseContentDisposition: disposition,
      ResponseContentType: contentType,
    }),
    { expiresIn: seconds },
  );
}

/**
 * The text, subject, address and attachment postings of a message stored before the search index
 * (they need its body text, which may live in S3); none for a message stored with a search entry.
 */
export async function storedLegacyPostings(record: MessageRecord): Promise<string[]> {
  if (record.search) return [];
  return legacyPostings(record, bodyText(await storedBody(record), record.is_plaintext));
}
