import type { FromSchema } from 'json-schema-to-ts';
import { AttachmentInput, Participant, SendMessageBody } from '#schemas/mail';

/**
 * An application's email domains (`/v3/admin/domains`), proven by DNS records, and the transactional
 * send from a verified one (`POST /v3/domains/{domain_name}/messages/send`). Names and shapes are the
 * published contract's.
 */

/** What `info` and `verify` are about: one kind of DNS record each. */
export const DOMAIN_RECORD_TYPES = ['ownership', 'mx', 'spf', 'dkim', 'feedback'] as const;
export type DomainRecordType = (typeof DOMAIN_RECORD_TYPES)[number];

/**
 * A domain name as registered: lowercase letters, digits and hyphens in labels of at most 63
 * characters, at least two labels, 253 characters in all (RFC 1035), without a trailing dot.
 */
export const DomainAddress = {
  type: 'string',
  minLength: 3,
  maxLength: 253,
  pattern: '^(?=.{3,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$',
  description: 'A domain name such as mail.example.com (no scheme, no trailing dot).',
} as const;

const DomainName = { type: 'string', minLength: 1, maxLength: 256 } as const;

export const DomainObject = {
  type: 'object',
  required: [
    'id',
    'name',
    'branded',
    'domain_address',
    'organization_id',
    'region',
    'verified_ownership',
    'verified_dkim',
    'verified_spf',
    'verified_mx',
    'verified_feedback',
    'verified_dmarc',
    'verified_arc',
    'created_at',
    'updated_at',
  ],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    branded: { type: 'boolean', description: 'Always false: every domain here is the application’s own.' },
    domain_address: { type: 'string' },
    organization_id: { type: 'string', description: 'The owning application’s ID (there are no organizations here).' },
    region: { type: 'string', enum: ['us', 'eu'] },
    verified_ownership: { type: 'boolean' },
    verified_dkim: { type: 'boolean' },
    verified_spf: { type: 'boolean' },
    verified_mx: { type: 'boolean' },
    verified_feedback: { type: 'boolean' },
    verified_dmarc: { type: 'boolean', description: 'Not checked: always false.' },
    verified_arc: { type: 'boolean', description: 'Not checked: always false.' },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

export const CreateDomainBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'domain_address'],
  properties: { name: DomainName, domain_address: DomainAddress },
} as const;
export type CreateDomainBody = FromSchema<typeof CreateDomainBody>;

/** Only the label changes: a domain's address is what its records prove. */
export const UpdateDomainBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: { name: DomainName },
} as const;
export type UpdateDomainBody = FromSchema<typeof UpdateDomainBody>;

export const DomainListQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
    page_token: { type: 'string', minLength: 1, maxLength: 4096 },
  },
} as const;

export const DomainRecordTypeBody = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  properties: { type: { type: 'string', enum: DOMAIN_RECORD_TYPES } },
} as const;
export type DomainRecordTypeBody = FromSchema<typeof DomainRecordTypeBody>;

/**
 * What `info` answers (the record to publish, and where its verification stands) and `verify`
 * answers (the same, after reading the record through the deployment's resolver).
 */
export const DomainVerificationObject = {
  type: 'object',
  required: ['domain_id', 'attempt', 'status', 'created_at', 'message'],
  properties: {
    domain_id: { type: 'string' },
    attempt: {
      type: 'object',
      required: ['type', 'options'],
      properties: {
        type: { type: 'string', enum: DOMAIN_RECORD_TYPES },
        options: {
          type: 'object',
          required: ['host', 'type', 'value'],
          properties: {
            host: { type: 'string', description: 'Relative to the domain: `@` is the domain itself.' },
            type: { type: 'string', enum: ['TXT', 'MX'] },
            value: { type: 'string' },
            priority: { type: 'integer', description: 'MX records: the preference to publish.' },
          },
        },
      },
    },
    status: { type: 'string', enum: ['done', 'failed', 'pending'] },
    created_at: { type: 'integer' },
    message: { type: 'string' },
    /** Extension: what the resolver answered, when it answered (verify only). */
    found: { type: 'array', items: { type: 'string' } },
  },
} as const;

/** The grant send's fields that a send without a grant has a use for: no starring, signature, draft or schedule. */
const {
  from: _grantFrom,
  starred: _starred,
  signature_id: _signature,
  use_draft: _useDraft,
  send_at: _sendAt,
  attachments: _attachments,
  ...TransactionalFields
} = SendMessageBody.properties;

/**
 * `from` is one address (an object, not a list), on the domain of the path. Attachments are inline
 * (base64) or multipart files: an upload by ID belongs to a grant, and there is none here.
 */
export const TransactionalSendBody = {
  type: 'object',
  additionalProperties: false,
  required: ['from', 'to'],
  properties: {
    ...TransactionalFields,
    // The contract's one address; also a list of one, as the official SDK sends a grant send's `from`.
    from: { anyOf: [Participant, { type: 'array', minItems: 1, maxItems: 1, items: Participant }] },
    attachments: { type: 'array', maxItems: 100, items: AttachmentInput },
  },
} as const;
export type TransactionalSendBody = FromSchema<typeof TransactionalSendBody>;

export const TransactionalMessageObject = {
  type: 'object',
  required: [
    'id',
    'message_id',
    'object',
    'from',
    'to',
    'cc',
    'bcc',
    'reply_to',
    'subject',
    'body',
    'attachments',
    'date',
  ],
  properties: {
    id: { type: 'string' },
    /** Extension: the same ID, under the name the official SDK reads a transactional send's answer by. */
    message_id: { type: 'string' },
    object: { type: 'string', enum: ['message'] },
    from: { type: 'array', items: Participant },
    to: { type: 'array', items: Participant },
    cc: { type: 'array', items: Participant },
    bcc: { type: 'array', items: Participant },
    reply_to: { type: 'array', items: Participant },
    subject: { type: 'string' },
    body: { type: 'string' },
    snippet: { type: 'string' },
    date: { type: 'integer' },
    attachments: {
      type: 'array',
      items: {
        type: 'object',
        required: ['filename', 'content_type', 'size', 'is_inline'],
        properties: {
          filename: { type: 'string' },
          content_type: { type: 'string' },
          content_id: { type: 'string' },
          content_disposition: { type: 'string' },
          is_inline: { type: 'boolean' },
          size: { type: 'integer' },
        },
      },
    },
    tracking_options: {
      type: 'object',
      properties: { opens: { type: 'boolean' }, links: { type: 'boolean' }, label: { type: 'string' } },
    },
    metadata: { type: 'object' },
    headers: {
      type: 'array',
      items: { type: 'object', properties: { name: { type: 'string' }, value: { type: 'string' } } },
    },
  },
} as const;
