import { GetObjectCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import { MAIL_BUCKET, s3 } from '#shared/aws/s3';
import { copyBlob, deleteBlobs } from '#shared/aws/mail-bucket';
import type { GrantRecord } from '#shared/db/grants';
import type { NewAttachment } from '#shared/mailbox/types';
import { safeFilename } from '#shared/mail/filenames';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { newId, parseId, type UploadId } from '#shared/ids';
import type { Provider } from '#shared/providers/names';
// Read only inside functions: the lazy chunk loads with the first upload created.
import { getSignedUrl } from '#shared/lazy/presigner';
import { clock } from '#shared/time';
import * as store from '#shared/uploads/store';
import type { AttachmentUploadRecord } from '#shared/uploads/store';
import {
  ATTACHMENT_UPLOAD_MAX,
  type AttachmentUploadSession,
  type CompletedAttachmentUpload,
  type CreateAttachmentUploadBody,
} from '#schemas/attachment-uploads';

/**
 * Large attachments: the client PUTs the file straight to S3 through a presigned URL (past API
 * Gateway's 6 MB request limit), completes the upload (the object is checked: there, its size and
 * content type as declared, within the provider's limit), then names it by ID in a send's or a
 * draft's `attachments`. An upload lives one hour from creation, completed or not (see
 * shared/uploads/store.ts for how its object goes with it).
 */
export const UPLOAD_SECONDS = 3600;

/**
 * The largest file each provider's send takes through an upload (the specification's 25 MB at most).
 * Sizes are of the file; its MIME part is base64, a third larger.
 *  - Agent Accounts: SES takes messages of up to 40 MB as sent (25 MB of file is about 34 MB of MIME).
 *  - IMAP accounts, Yahoo: 25 MB, what most submission servers announce as SIZE (a server announcing
 *    less refuses the message at send). iCloud's servers take messages of 20 MB: 14 MB of file.
 *  - Microsoft (Graph): attachments up to 150 MB go through its upload sessions; Exchange Online's
 *    default message size limit is 35 MB, and the specification's 25 MB is the lower.
 *  - Google (Gmail): messages up to 35 MB through its media upload (shared/google/submit.ts), which
 *    25 MB of file fits as MIME.
 */
const PROVIDER_MAX: Partial<Record<Provider, number>> = {
  agent: ATTACHMENT_UPLOAD_MAX,
  imap: ATTACHMENT_UPLOAD_MAX,
  yahoo: ATTACHMENT_UPLOAD_MAX,
  icloud: 14 * 1024 * 1024,
  microsoft: ATTACHMENT_UPLOAD_MAX,
  google: ATTACHMENT_UPLOAD_MAX,
};

/** Where an upload's file is PUT: a prefix of its own, which the bucket's lifecycle rule also expires. */
export const uploadObjectKey = (grantId: string, id: UploadId) => `uploads/${grantId}/${id}`;

function maxSizeOf(grant: GrantRecord): number {
  const max = PROVIDER_MAX[grant.provider];
  if (max === undefined)
    throw new InvalidRequestError(`Attachment uploads are not offered for ${grant.provider} grants: they send no mail`);
  return max;
}

const iso = (seconds: number) => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');

/** Creates an upload: its record (TTL one hour) and the presigned PUT the client sends the file with. */
export async function createAttachmentUpload(
  grant: GrantRecord,
  body: CreateAttachmentUploadBody,
): Promise<AttachmentUploadSession> {
  const maxSize = maxSizeOf(grant);
  if (body.size !== undefined && body.size > maxSize)
    throw new InvalidRequestError(
      `'size' is ${body.size} bytes; a ${grant.provider} grant takes attachments of at most ${maxSize} bytes`,
    );
  const id = newId('upload');
  const now = clock.nowSeconds();
  const record: AttachmentUploadRecord = {
    id,
    application_id: grant.application_id,
    grant_id: grant.id,
    keys: [uploadObjectKey(grant.id, id)],
    kind: 'attachment',
    filename: safeFilename(body.filename),
    content_type: body.content_type,
    ...(body.size !== undefined ? { declared_size: body.size } : {}),
    max_size: maxSize,
    status: 'pending',
    created_at: now,
    expires_at: now + UPLOAD_SECONDS,
  };
  // Content-Type is signed: S3 refuses a PUT with another one.
  const url = await getSignedUrl(
    s3,
    new PutObjectCommand({ Bucket: MAIL_BUCKET, Key: record.keys[0], ContentType: body.content_type }),
    { expiresIn: UPLOAD_SECONDS },
  );
  await store.putAttachmentUpload(record);
  return {
    attachment_id: id,
    method: 'PUT',
    url,
    headers: { 'Content-Type': body.content_type },
    expires_at: iso(record.expires_at),
    max_size: maxSize,
    size: body.size ?? 0,
    content_type: body.content_type,
    filename: record.filename,
    grant_id: grant.id,
  };
}

/** The grant's upload by ID: 404 for an unknown one (another grant's included). */
async function requireUpload(grant: GrantRecord, attachmentId: string): Promise<AttachmentUploadRecord> {
  const id = parseId('upload', attachmentId);
  const record = id && (await store.getAttachmentUpload(grant.id, id));
  if (!record)
    throw new NotFoundError(
      `Attachment upload '${attachmentId}' not found for this grant (uploads are removed an hour after they are created)`,
    );
  return record;
}

const expiredMessage = (record: AttachmentUploadRecord) =>
  `Attachment upload '${record.id}' expired at ${iso(record.expires_at)} (an upload lasts one hour); create a new one`;

async function headObject(key: string): Promise<{ size: number; contentType?: string } | undefined> {
  try {
    const head = await s3.send(new HeadObjectCommand({ Bucket: MAIL_BUCKET, Key: key }));
    return { size: head.ContentLength ?? 0, ...(head.ContentType ? { contentType: head.ContentType } : {}) };
  } catch (error) {
    const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
    if (e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404) return undefined;
    throw error;
  }
}

/**
 * Checks the uploaded object and marks the upload ready. A refused object is deleted (the client
 * may PUT again to the same URL within the hour); one over the provider's limit takes its upload with it.
 */
export async function completeAttachmentUpload(
  grant: GrantRecord,
  attachmentId: string,
): Promise<CompletedAttachmentUpload> {
  const record = await requireUpload(grant, attachmentId);
  if (record.status === 'ready') throw new ConflictError(`Attachment upload '${record.id}' is already complete`);
  const now = clock.nowSeconds();
  if (record.expires_at <= now) throw new InvalidRequestError(expiredMessage(record));
  const key = record.keys[0];
  const object = await headObject(key);
  if (!object)
    throw new InvalidRequestError(
      `Nothing was uploaded for attachment upload '${record.id}': PUT the file to the upload's URL, then complete it`,
    );
  const refuse = async (message: string, dropUpload = false) => {
    await deleteBlobs([key]);
    if (dropUpload) await store.deleteAttachmentUpload(grant.id, record.id);
    return new InvalidRequestError(message);
  };
  if (object.size > record.max_size)
    throw await refuse(
      `The uploaded file has ${object.size} bytes; a ${grant.provider} grant takes attachments of at most ${record.max_size} bytes. The file and the upload were deleted`,
      true,
    );
  if (object.size === 0) throw await refuse('The uploaded file is empty; it was deleted: PUT the file again');
  if (record.declared_size !== undefined && object.size !== record.declared_size)
    throw await refuse(
      `The uploaded file has ${object.size} bytes, not the ${record.declared_size} declared; it was deleted: PUT the file again`,
    );
  const stored = object.contentType?.split(';')[0]!.trim().toLowerCase();
  if (stored !== record.content_type.toLowerCase())
    throw await refuse(
      `The uploaded file was sent as '${object.contentType ?? 'no content type'}', not the '${record.content_type}' declared; it was deleted: PUT it again with the upload's headers`,
    );
  if (!(await store.markAttachmentUploadReady(grant.id, record.id, object.size, now))) {
    const again = await requireUpload(grant, attachmentId);
    if (again.status === 'ready') throw new ConflictError(`Attachment upload '${record.id}' is already complete`);
    throw new InvalidRequestError(expiredMessage(again));
  }
  return { attachment_id: record.id, grant_id: grant.id, status: 'ready', size: object.size };
}

/** An attachment of a send or draft named by its upload's ID (`{ "id": … }` in `attachments`). */
export interface UploadRef {
  id: string;
  content_id?: string;
  is_inline?: boolean;
}

export const isUploadRef = (a: object): a is UploadRef => 'id' in a && !('content' in a);

/** A completed upload named in a send or draft: what it is and where its file is. */
export interface UploadedAttachment {
  filename: string;
  contentType: string;
  size: number;
  key: string;
  contentId?: string;
  inline: boolean;
}

/**
 * The uploads `refs` name, all of the grant, completed and not expired: 404 for one the grant does
 * not have (another grant's, or one removed after its hour), 400 for one not completed or expired.
 */
export async function requireReadyUploads(
  grant: GrantRecord,
  refs: readonly UploadRef[],
): Promise<UploadedAttachment[]> {
  const now = clock.nowSeconds();
  return Promise.all(
    refs.map(async (ref, i) => {
      const record = await requireUpload(grant, ref.id);
      if (record.expires_at <= now) throw new InvalidRequestError(`'attachments[${i}]': ${expiredMessage(record)}`);
      if (record.status !== 'ready' || record.size === undefined)
        throw new InvalidRequestError(
          `'attachments[${i}]': attachment upload '${record.id}' is not complete; PUT the file, then POST .../attachment-uploads/${record.id}/complete`,
        );
      return {
        filename: record.filename,
        contentType: record.content_type,
        size: record.size,
        key: record.keys[0],
        ...(ref.content_id ? { contentId: ref.content_id } : {}),
        inline: ref.is_inline ?? !!ref.content_id,
      };
    }),
  );
}

/** The file of an upload as a stream from S3: what the MIME a send composes reads it from. */
export async function uploadStream(key: string): Promise<Readable> {
  const { Body } = await s3.send(new GetObjectCommand({ Bucket: MAIL_BUCKET, Key: key }));
  return Body as Readable;
}

/**
 * The file of an upload read into one buffer of its exact size (its stored size is known), filled
 * as the S3 stream arrives: the file is held once, never as chunks and their concatenation.
 */
export async function readUpload(upload: UploadedAttachment): Promise<Buffer> {
  const out = Buffer.allocUnsafe(upload.size);
  let at = 0;
  for await (const chunk of await uploadStream(upload.key)) {
    const part = chunk as Buffer;
    if (at + part.length > out.length) throw new Error(`upload object ${upload.key} is larger than its recorded size`);
    part.copy(out, at);
    at += part.length;
  }
  if (at !== out.length) throw new Error(`upload object ${upload.key} is smaller than its recorded size`);
  return out;
}

export const isUploaded = (a: NewAttachment | UploadedAttachment): a is UploadedAttachment => 'key' in a;

/** Attachments of a message to send, the uploaded ones with their files read (see readUpload). */
export const withContents = (list: readonly (NewAttachment | UploadedAttachment)[]): Promise<NewAttachment[]> =>
  Promise.all(
    list.map(async (a) =>
      isUploaded(a)
        ? {
            filename: a.filename,
            contentType: a.contentType,
            content: await readUpload(a),
            ...(a.contentId ? { contentId: a.contentId } : {}),
            inline: a.inline,
          }
        : a,
    ),
  );

/** Copies an upload's file to where a draft keeps its attachment: inside S3, nothing goes through this function. */
export const copyUpload = (upload: UploadedAttachment, to: string): Promise<void> => copyBlob(upload.key, to);
