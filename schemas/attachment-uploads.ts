import type { FromSchema } from 'json-schema-to-ts';

/**
 * Large attachments (`/v3/grants/{grant_id}/attachment-uploads`): the file goes straight to storage
 * through a presigned PUT, then a send or a draft names it by ID in `attachments` ({ "id": … }).
 * ATTACHMENT_UPLOAD_MAX is the specification's 25 MB; a grant's provider may allow less (the
 * create's `max_size` says how much).
 */
export const ATTACHMENT_UPLOAD_MAX = 25 * 1024 * 1024;

export const CreateAttachmentUploadBody = {
  type: 'object',
  additionalProperties: false,
  required: ['filename', 'content_type'],
  properties: {
    filename: { type: 'string', minLength: 1, maxLength: 255 },
    content_type: { type: 'string', minLength: 3, maxLength: 255, pattern: '^[\\w.+-]+/[\\w.+-]+$' },
    size: {
      type: 'integer',
      minimum: 1,
      maximum: ATTACHMENT_UPLOAD_MAX,
      description: 'Bytes the file will have: when given, the upload must have exactly this size.',
    },
  },
} as const;
export type CreateAttachmentUploadBody = FromSchema<typeof CreateAttachmentUploadBody>;

export const AttachmentUploadSession = {
  type: 'object',
  required: [
    'attachment_id',
    'method',
    'url',
    'headers',
    'expires_at',
    'max_size',
    'size',
    'content_type',
    'filename',
    'grant_id',
  ],
  properties: {
    attachment_id: { type: 'string' },
    method: { type: 'string', enum: ['PUT'] },
    url: { type: 'string', description: 'Presigned storage URL: PUT the file there with `headers`, no API key.' },
    headers: { type: 'object', additionalProperties: { type: 'string' } },
    expires_at: { type: 'string', format: 'date-time' },
    max_size: { type: 'integer' },
    size: { type: 'integer', description: 'The size declared at creation, 0 when none was.' },
    content_type: { type: 'string' },
    filename: { type: 'string' },
    grant_id: { type: 'string' },
  },
} as const;
export type AttachmentUploadSession = FromSchema<typeof AttachmentUploadSession>;

export const CompletedAttachmentUpload = {
  type: 'object',
  required: ['attachment_id', 'grant_id', 'status'],
  properties: {
    attachment_id: { type: 'string' },
    grant_id: { type: 'string' },
    status: { type: 'string', enum: ['ready'] },
    size: { type: 'integer', description: 'Bytes stored.' },
  },
} as const;
export type CompletedAttachmentUpload = FromSchema<typeof CompletedAttachmentUpload>;

/** An attachment of a send or a draft named by the ID of a completed upload. */
export const UploadedAttachmentRef = {
  type: 'object',
  additionalProperties: false,
  required: ['id'],
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 64, description: 'The `attachment_id` of a completed upload.' },
    content_id: { type: 'string', minLength: 1, maxLength: 255 },
    is_inline: { type: 'boolean' },
  },
} as const;
