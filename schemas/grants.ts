import type { FromSchema } from 'json-schema-to-ts';
import { EmailAddress, Limit, PageToken, Select, UnixSeconds } from '#schemas/common';
import {
  CONNECTED_PROVIDERS,
  CUSTOM_PROVIDERS,
  HOSTED_PROVIDER,
  ICLOUD_PROVIDER,
  IMAP_PROVIDER,
} from '#shared/providers/names';

/** Provider values of the API: defined with the providers (shared/providers/names.ts, a leaf module). */
export { CONNECTED_PROVIDERS, HOSTED_PROVIDER };
/** Providers `POST /v3/connect/custom` takes. */
export const PROVIDERS = CUSTOM_PROVIDERS;

const ExternalId = {
  type: 'string',
  minLength: 1,
  maxLength: 256,
  // No '/' (API Gateway cannot route an encoded slash) and no control characters.
  pattern: '^[^/\\u0000-\\u001f\\u007f]+$',
  description: "The application's own identifier for the grant (no '/'); usable in paths as `external:<external_id>`.",
} as const;

export const Grant = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'grant_status', 'provider', 'scope', 'email', 'settings', 'created_at', 'updated_at', 'blocked'],
  properties: {
    id: { type: 'string' },
    grant_status: {
      type: 'string',
      enum: ['valid', 'invalid'],
      description:
        '`invalid`: the provider refused its refresh token (grant.expired); re-authenticate to make it valid again.',
    },
    provider: { type: 'string', enum: [HOSTED_PROVIDER, ...CONNECTED_PROVIDERS, IMAP_PROVIDER, ICLOUD_PROVIDER] },
    name: { type: 'string', description: 'Default From display name of an Agent Account.' },
    scope: { type: 'array', items: { type: 'string' } },
    email: { type: 'string' },
    settings: { type: 'object' },
    ip: { type: 'string' },
    user_agent: { type: 'string', description: 'Obscured user agent of the request that created the grant.' },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
    provider_user_id: { type: 'string' },
    blocked: { type: 'boolean' },
    external_id: ExternalId,
    workspace_id: {
      type: 'string',
      description: 'Agent Accounts placed in a workspace other than the default one: that workspace.',
    },
    sync: {
      type: 'object',
      additionalProperties: false,
      description:
        "Switchboard's extension, when one grant is read (GET /v3/grants/{grant_id}) and its account is kept in step by sync runs: how that goes.",
      properties: {
        last_run_at: { type: 'integer', description: 'When its last run ended (Unix seconds).' },
        last_change_at: {
          type: 'integer',
          description:
            'When its last change arrived: announced by a run, pushed by the provider, or made through the API.',
        },
        last_push_at: { type: 'integer', description: 'When the provider last pushed a change of it.' },
        last_error: { type: 'string', description: 'Why its last run failed, if it did (runs back off and go on).' },
        push: {
          type: 'object',
          additionalProperties: false,
          required: ['state'],
          description:
            "Provider A: Gmail's watch of the mailbox for the connector's Pub/Sub topic. Provider B: the grant's Graph subscriptions (the earliest to end, or the first refused).",
          properties: {
            state: {
              type: 'string',
              enum: ['active', 'refused', 'lapsed', 'off'],
              description:
                '`off`: no topic or no public URL (the runs poll); `refused`: the provider refused the watch or subscription (see `error`); `lapsed`: past its expiration (the next run asks again).',
            },
            topic: { type: 'string' },
            expires_at: { type: 'integer' },
            error: { type: 'string' },
          },
        },
      },
    },
  },
} as const;
export type Grant = FromSchema<typeof Grant>;

export const CreateCustomGrantBody = {
  type: 'object',
  additionalProperties: false,
  required: ['provider', 'settings'],
  properties: {
    provider: { type: 'string', enum: PROVIDERS },
    name: {
      type: 'string',
      minLength: 1,
      maxLength: 256,
      pattern: '^[^\\r\\n]+$',
      description: 'Agent Accounts: the default From display name.',
    },
    workspace_id: { type: 'string', minLength: 1, maxLength: 256 },
    settings: {
      type: 'object',
      additionalProperties: false,
      properties: {
        email: EmailAddress,
        email_address: { ...EmailAddress, description: 'Alias of `email`.' },
        app_password: { type: 'string', minLength: 18, maxLength: 40 },
        policy_id: { type: 'string', minLength: 1, maxLength: 256 },
        credential_id: { type: 'string', minLength: 1, maxLength: 256 },
        scopes: { type: 'array', maxItems: 100, items: { type: 'string', minLength: 1, maxLength: 512 } },
        // provider imap: the account's IMAP and SMTP servers and credentials (hosts and ports detected for well-known domains when left out).
        imap_username: {
          type: 'string',
          minLength: 1,
          maxLength: 320,
          description: "IMAP: the account's username (usually its email address).",
        },
        imap_password: {
          type: 'string',
          minLength: 1,
          maxLength: 1024,
          description: 'IMAP: the password or app password; stored sealed, never answered.',
        },
        imap_host: {
          type: 'string',
          minLength: 1,
          maxLength: 253,
          description: 'IMAP: the server; detected for well-known domains when left out.',
        },
        imap_port: {
          type: 'integer',
          minimum: 1,
          maximum: 65535,
          description: 'IMAP: 993 (TLS) unless given; other ports use STARTTLS.',
        },
        smtp_host: {
          type: 'string',
          minLength: 1,
          maxLength: 253,
          description: 'IMAP: the SMTP submission server; detected for well-known domains when left out.',
        },
        smtp_port: {
          type: 'integer',
          minimum: 1,
          maximum: 65535,
          description: 'IMAP: 465 (TLS) or 587 (STARTTLS); 587 unless given.',
        },
        smtp_username: {
          type: 'string',
          minLength: 1,
          maxLength: 320,
          description: 'IMAP: the SMTP username, when it differs from imap_username.',
        },
        smtp_password: {
          type: 'string',
          minLength: 1,
          maxLength: 1024,
          description: 'IMAP: the SMTP password, when it differs from imap_password.',
        },
        // providers imap, icloud and yahoo: the account's CalDAV and CardDAV servers (the icloud preset fills iCloud's own).
        caldav_url: {
          type: 'string',
          minLength: 8,
          maxLength: 2048,
          description:
            "imap, icloud, yahoo: the CalDAV server (its root, the account's principal or calendar home); discovered from there.",
        },
        carddav_url: {
          type: 'string',
          minLength: 8,
          maxLength: 2048,
          description:
            "imap, icloud, yahoo: the CardDAV server (its root, the account's principal or address book home); discovered from there.",
        },
        // providers icloud and yahoo (IMAP presets): the account's address and an app password.
        username: {
          type: 'string',
          minLength: 1,
          maxLength: 320,
          description: "icloud, yahoo: the account's email address.",
        },
        password: {
          type: 'string',
          minLength: 1,
          maxLength: 1024,
          description: 'icloud, yahoo: an app password; stored sealed, never answered.',
        },
      },
    },
    external_id: ExternalId,
  },
} as const;
export type CreateCustomGrantBody = FromSchema<typeof CreateCustomGrantBody>;

export const ListGrantsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: Limit,
    offset: {
      type: 'integer',
      minimum: 0,
      maximum: 10000,
      description: 'Number of matching grants to skip (at most 10000; use page_token to go further).',
    },
    page_token: PageToken,
    email: { type: 'string', minLength: 1, maxLength: 254 },
    provider: { type: 'string', minLength: 1, maxLength: 64 },
    grant_status: { type: 'string', minLength: 1, maxLength: 64 },
    since: { ...UnixSeconds, description: 'Grants created at or after this Unix time.' },
    before: { ...UnixSeconds, description: 'Grants created at or before this Unix time.' },
    ip: { type: 'string', minLength: 1, maxLength: 64 },
    order_by: { type: 'string', enum: ['asc', 'desc'] },
    sort_by: { type: 'string', enum: ['created_at', 'updated_at'] },
    // Of the published contract, for features this deployment does not have (400 saying so).
    account_id: { type: 'string', maxLength: 256 },
    account_ids: { type: 'string', maxLength: 4096 },
    workspace_id: { type: 'string', maxLength: 256 },
    select: Select,
  },
} as const;
export type ListGrantsQuery = FromSchema<typeof ListGrantsQuery>;

export const UpdateGrantBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    external_id: { ...ExternalId, type: ['string', 'null'], description: 'New external ID, or null to remove it.' },
    blocked: { type: 'boolean' },
    // The published contract's fields; what applies depends on the grant's provider (400 saying why otherwise).
    settings: { type: 'object', maxProperties: 50 },
    scope: { type: 'array', maxItems: 100, items: { type: 'string', minLength: 1, maxLength: 512 } },
  },
} as const;
export type UpdateGrantBody = FromSchema<typeof UpdateGrantBody>;
