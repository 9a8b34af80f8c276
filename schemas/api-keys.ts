import type { FromSchema } from 'json-schema-to-ts';
import { Limit, PageToken } from '#schemas/common';

/**
 * The API keys of the calling application (/v3/admin/applications/{application_id}/api-keys): an
 * application rotates its keys itself (creates a second, switches to it, deletes the first) and may
 * give a key an expiry. The secret is answered once, by the create; it is stored only as its SHA-256
 * (shared/applications/api-keys.ts).
 */

/** A minute to ten years: shorter than a minute could expire before the client stores it; a key that should never expire leaves `expires_in` out. */
export const API_KEY_MIN_EXPIRES_IN = 60;
export const API_KEY_MAX_EXPIRES_IN = 10 * 365 * 24 * 3600;

export const API_KEY_STATUSES = ['active', 'expired'] as const;

export const CreateApiKeyBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: {
      type: 'string',
      minLength: 1,
      maxLength: 256,
      pattern: '^[^\\u0000-\\u001f\\u007f]*$',
      description: 'A name to recognise the key by (one line).',
    },
    expires_in: {
      type: 'integer',
      minimum: API_KEY_MIN_EXPIRES_IN,
      maximum: API_KEY_MAX_EXPIRES_IN,
      description: `Seconds from now until the key is refused (${API_KEY_MIN_EXPIRES_IN} to ${API_KEY_MAX_EXPIRES_IN}, ten years); without it the key never expires.`,
    },
  },
} as const;
export type CreateApiKeyBody = FromSchema<typeof CreateApiKeyBody>;

export const ApiKeyListQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { limit: Limit, page_token: PageToken },
} as const;

const ApiKeyFields = {
  id: { type: 'string', description: 'The key ID (key_…): names the key in get and delete, never authenticates.' },
  application_id: { type: 'string' },
  name: { type: 'string', description: 'Absent when the key was created without one.' },
  status: {
    type: 'string',
    enum: API_KEY_STATUSES,
    description: 'expired: past expires_at, refused with 401 (a deleted key is gone, never listed).',
  },
  permissions: {
    type: 'array',
    items: { type: 'string', enum: ['all'] },
    description: 'Always ["all"]: every key can do whatever its application can.',
  },
  key_prefix: {
    type: 'string',
    description:
      'The first characters of the key (sbk_ and four more, for the keys Switchboard makes), to tell keys apart without the secret.',
  },
  created_at: { type: 'integer' },
  updated_at: { type: 'integer' },
  expires_at: { type: 'integer', description: 'Unix seconds from which the key is refused; absent: never.' },
  expires_in: {
    type: 'integer',
    description: 'The lifetime the key was created with, in seconds (expires_at − created_at); absent: never expires.',
  },
} as const;

const REQUIRED = ['id', 'application_id', 'status', 'permissions', 'key_prefix', 'created_at', 'updated_at'] as const;

/** A key as get and list answer it: never the secret. */
export const ApiKeyObject = {
  type: 'object',
  additionalProperties: false,
  required: REQUIRED,
  properties: ApiKeyFields,
} as const;

/** The create's answer: the key, and its secret, answered this once. */
export const CreatedApiKeyObject = {
  type: 'object',
  additionalProperties: false,
  required: [...REQUIRED, 'api_key'],
  properties: {
    ...ApiKeyFields,
    api_key: {
      type: 'string',
      description:
        'The secret (sbk_…), shown this once: only its SHA-256 is stored. Send it as "Authorization: Bearer <api_key>".',
    },
  },
} as const;
