import { normalAddress } from '#shared/mailbox/postings';
import type { HeaderRecord, NewAttachment, ParticipantRecord } from '#shared/mailbox/types';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError } from '#shared/errors';
import type { UploadedFile } from '#shared/uploaded-file';
import { safeFilename } from '#shared/mail/filenames';
import type { SendMessageBody } from '#schemas/mail';
import { isUploadRef, requireReadyUploads, type UploadedAttachment } from '#shared/uploads/attachments';

/**
 * The checks a message to send and a draft share: attachments, custom headers, the sender. Apart
 * from the sending itself (shared/mailbox/send.ts), so that the drafts function, which only stores
 * drafts, bundles none of the MIME, transport and iCalendar code a send needs.
 */

/** Headers the composer writes itself; a custom header may not replace them. */
const RESERVED_HEADERS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'reply-to',
  'subject',
  'date',
  'message-id',
  'in-reply-to',
  'references',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'content-disposition',
  'return-path',
  'received',
  'dkim-signature',
  'sender',
]);

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Decodes JSON attachments (base64) and appends multipart files, in the order sent. An attachment named
 * by an upload's ID is a grant's (collectWithUploads): here, with no grant to hold it, it is a 400.
 */
export function collectAttachments(
  json: SendMessageBody['attachments'],
  files: UploadedFile[] = [],
  /** `skip`: collectWithUploads takes those itself. */
  uploads: 'refuse' | 'skip' = 'refuse',
): NewAttachment[] {
  const out: NewAttachment[] = (json ?? []).flatMap((a, i) => {
    if (isUploadRef(a)) {
      if (uploads === 'skip') return [];
      throw new InvalidRequestError(
        `'attachments[${i}]' names an upload by ID; uploads belong to a grant and are sent from it (attachment-uploads)`,
      );
    }
    const clean = a.content.replace(/\s+/g, '');
    if (clean.length % 4 === 1 || !BASE64.test(clean))
      throw new InvalidRequestError(`'attachments[${i}].content' must be base64`);
    return {
      filename: safeFilename(a.filename),
      contentType: a.content_type ?? 'application/octet-stream',
      content: Buffer.from(clean, 'base64'),
      ...(a.content_id ? { contentId: a.content_id } : {}),
      inline: a.is_inline ?? !!a.content_id,
    };
  });
  for (const f of files)
    out.push({ filename: safeFilename(f.filename), contentType: f.contentType, content: f.content, inline: false });
  if (out.length > 100) throw new InvalidRequestError('A message can carry at most 100 attachments');
  return out;
}

/**
 * collectAttachments, then the completed uploads the JSON names by ID (`{ "id": … }`), after them:
 * checked to be the grant's, complete and within their hour, their files left in S3.
 */
export async function collectWithUploads(
  grant: GrantRecord,
  json: SendMessageBody['attachments'],
  files: UploadedFile[] = [],
): Promise<(NewAttachment | UploadedAttachment)[]> {
  const refs = (json ?? []).flatMap((a) => (isUploadRef(a) ? [a] : []));
  const collected = collectAttachments(json, files, 'skip');
  if (!refs.length) return collected;
  if (collected.length + refs.length > 100)
    throw new InvalidRequestError('A message can carry at most 100 attachments');
  return [...collected, ...(await requireReadyUploads(grant, refs))];
}

export function checkCustomHeaders(headers: HeaderRecord[] = []): HeaderRecord[] {
  for (const h of headers) {
    if (RESERVED_HEADERS.has(h.name.toLowerCase()))
      throw new InvalidRequestError(`'custom_headers' cannot set '${h.name}': Switchboard writes that header itself`);
  }
  return headers;
}

/** The sender must be the Agent Account's own address (Agent Accounts have no aliases). */
export function senderOf(grant: GrantRecord, from: ParticipantRecord[] | undefined): ParticipantRecord {
  if (!from?.length) return { email: grant.email, ...(grant.name ? { name: grant.name } : {}) };
  const foreign = from.find((p) => normalAddress(p.email) !== grant.email);
  if (foreign || from.length > 1) {
    throw new InvalidRequestError(
      `'from' must be this Agent Account's own address <${grant.email}>; Agent Accounts have no aliases`,
    );
  }
  const name = from[0]!.name ?? grant.name;
  return { email: grant.email, ...(name ? { name } : {}) };
}
