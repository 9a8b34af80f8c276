import type { FromSchema } from 'json-schema-to-ts';
import { EmailAddress, Limit, PageToken } from '#schemas/common';
import { CONNECTED_PROVIDERS } from '#schemas/grants';
import { CONNECTOR_PROVIDERS } from '#shared/providers/names';

/**
 * Connectors (one per provider and application: the provider auth app's client ID and secret, default
 * scopes, the default credential) and their credentials (service accounts, admin consent, other auth
 * apps). Secrets are write-only: `settings.client_secret` and `credential_data` are sealed at rest
 * and never answered. Which fields a provider or credential type takes is checked in code
 * (shared/connectors/rules.ts), so the 400 names the rule.
 */

/** Providers a connector can be created for (shared/providers/names.ts). */
export { CONNECTOR_PROVIDERS };
export type ConnectorProvider = (typeof CONNECTOR_PROVIDERS)[number];
/** Providers whose connector is a provider auth app (client ID and secret; OAuth). */
export const OAUTH_PROVIDERS = CONNECTED_PROVIDERS;

export const CREDENTIAL_TYPES = ['serviceaccount', 'adminconsent', 'connector'] as const;
export type CredentialType = (typeof CREDENTIAL_TYPES)[number];

const Name = { type: 'string', minLength: 1, maxLength: 256, pattern: '^[^\\u0000-\\u001f\\u007f]*$' } as const;
const Scope = {
  type: 'array',
  maxItems: 100,
  uniqueItems: true,
  items: { type: 'string', minLength: 1, maxLength: 512, pattern: '^[\\x21-\\x7e]+$' },
  description:
    'Default scopes requested when an authorization names none (not for zoom: its scopes are set on the Zoom app; ews: ews.messages, ews.calendar, ews.contacts).',
} as const;

export const ConnectorSettings = {
  type: 'object',
  additionalProperties: false,
  properties: {
    client_id: {
      type: 'string',
      minLength: 1,
      maxLength: 512,
      pattern: '^[\\x21-\\x7e]+$',
      description: "The provider auth app's client ID (google, microsoft, yahoo, zoom: required).",
    },
    client_secret: {
      type: 'string',
      minLength: 1,
      maxLength: 4096,
      description: "The provider auth app's client secret: sealed at rest, never answered.",
    },
    tenant: {
      type: 'string',
      minLength: 1,
      maxLength: 256,
      description: 'microsoft: common, organizations, consumers, a tenant ID or a tenant domain.',
    },
    issuer: {
      type: 'string',
      minLength: 1,
      maxLength: 2048,
      description:
        "Switchboard's extension (OAuth providers): an https OpenID Connect issuer that replaces the provider's default authorization server.",
    },
    api_base_url: {
      type: 'string',
      minLength: 1,
      maxLength: 2048,
      description:
        "Switchboard's extension (google, microsoft): an https base URL that replaces the scheme and host of every REST call to the provider's APIs, their paths kept.",
    },
    topic_name: {
      type: 'string',
      minLength: 1,
      maxLength: 512,
      pattern: '^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/topics/[A-Za-z][A-Za-z0-9._~%+-]{2,254}$',
      description:
        "google: the Pub/Sub topic (projects/<project>/topics/<topic>) Gmail publishes the grants' mailbox changes to (users.watch); its push subscription pushes to POST /v3/push/google/pubsub?application_id=….",
    },
    pubsub_service_account: {
      type: 'string',
      minLength: 3,
      maxLength: 320,
      pattern: '^[^@\\s]+@[^@\\s]+$',
      description:
        "Switchboard's extension (google, with topic_name): the service account the push subscription authenticates as; a push whose token is not this account's is refused.",
    },
    pubsub_audience: {
      type: 'string',
      minLength: 1,
      maxLength: 2048,
      description:
        "Switchboard's extension (google, with topic_name): the audience of the push subscription's tokens (default: the push endpoint's own URL, Pub/Sub's default).",
    },
    imap_host: {
      type: 'string',
      minLength: 1,
      maxLength: 253,
      description:
        "Switchboard's extension (google, microsoft, yahoo): the IMAP server its grants' mail is read from (default: the provider's own).",
    },
    imap_port: {
      type: 'integer',
      minimum: 1,
      maximum: 65535,
      description: 'With imap_host: its port (993: TLS from the first byte; another: STARTTLS).',
    },
    smtp_host: {
      type: 'string',
      minLength: 1,
      maxLength: 253,
      description:
        "Switchboard's extension (google, microsoft, yahoo): the SMTP submission server its grants send through (default: the provider's own).",
    },
    smtp_port: {
      type: 'integer',
      minimum: 1,
      maximum: 65535,
      description: 'With smtp_host: its port (465: TLS from the first byte; another: STARTTLS).',
    },
    caldav_url: {
      type: 'string',
      minLength: 8,
      maxLength: 2048,
      description:
        "Switchboard's extension (icloud): the CalDAV server its grants' calendars are read from (default: iCloud's own).",
    },
    carddav_url: {
      type: 'string',
      minLength: 8,
      maxLength: 2048,
      description:
        "Switchboard's extension (icloud): the CardDAV server its grants' contacts are read from (default: iCloud's own).",
    },
  },
} as const;
export type ConnectorSettings = FromSchema<typeof ConnectorSettings>;

export const ConnectorObject = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'provider', 'settings', 'scope', 'created_at', 'updated_at'],
  properties: {
    name: { type: 'string' },
    provider: { type: 'string', enum: CONNECTOR_PROVIDERS },
    settings: {
      type: 'object',
      additionalProperties: false,
      description: 'The settings without the client secret.',
      properties: {
        client_id: { type: 'string' },
        tenant: { type: 'string' },
        issuer: { type: 'string' },
        api_base_url: { type: 'string' },
        topic_name: { type: 'string' },
        pubsub_service_account: { type: 'string' },
        pubsub_audience: { type: 'string' },
        imap_host: { type: 'string' },
        imap_port: { type: 'integer' },
        smtp_host: { type: 'string' },
        smtp_port: { type: 'integer' },
        caldav_url: { type: 'string' },
        carddav_url: { type: 'string' },
      },
    },
    client_secret_set: {
      type: 'boolean',
      description: 'Whether a client secret is stored (OAuth providers); its value is never answered.',
    },
    scope: { type: 'array', items: { type: 'string' } },
    active_credential_id: { type: 'string' },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

export const CreateConnectorBody = {
  type: 'object',
  additionalProperties: false,
  required: ['provider'],
  properties: {
    provider: { type: 'string', enum: CONNECTOR_PROVIDERS },
    name: { ...Name, description: 'Default: the provider name and "connector".' },
    settings: ConnectorSettings,
    scope: Scope,
  },
} as const;
export type CreateConnectorBody = FromSchema<typeof CreateConnectorBody>;

export const UpdateConnectorBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    name: Name,
    settings: {
      ...ConnectorSettings,
      description:
        'Replaces the stored settings as a whole; client_secret may be left out to keep the stored one while client_id stays the same.',
    },
    scope: Scope,
    active_credential_id: {
      type: ['string', 'null'],
      minLength: 1,
      maxLength: 64,
      description: 'A credential of this connector; null clears it.',
    },
  },
} as const;
export type UpdateConnectorBody = FromSchema<typeof UpdateConnectorBody>;

export const ConnectorListQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { limit: Limit, page_token: PageToken },
} as const;
export type ConnectorListQuery = FromSchema<typeof ConnectorListQuery>;

/** Values of credential_data: strings (a service account key file's fields), checked per type in code. */
const CredentialData = {
  type: 'object',
  maxProperties: 20,
  additionalProperties: { type: 'string', maxLength: 16384 },
  description:
    "serviceaccount (google): type, project_id, private_key_id, private_key (PEM, RSA), client_email, and the key file's other fields; adminconsent (microsoft): client_id, client_secret, tenant; connector (google, microsoft, yahoo, zoom): client_id, client_secret (tenant for microsoft). Sealed at rest, never answered.",
} as const;

export const CredentialObject = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'name', 'credential_type', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    credential_type: { type: 'string', enum: CREDENTIAL_TYPES },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

export const CreateCredentialBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'credential_type', 'credential_data'],
  properties: {
    name: { ...Name, description: "Unique among the connector's credentials (case-insensitive)." },
    credential_type: { type: 'string', enum: CREDENTIAL_TYPES },
    credential_data: CredentialData,
  },
} as const;
export type CreateCredentialBody = FromSchema<typeof CreateCredentialBody>;

export const UpdateCredentialBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    name: Name,
    credential_data: {
      ...CredentialData,
      description: 'Replaces the stored data as a whole (same rules as on create).',
    },
  },
} as const;
export type UpdateCredentialBody = FromSchema<typeof UpdateCredentialBody>;

export const CredentialListQuery = ConnectorListQuery;

/** `POST /v3/providers/detect` takes its fields in the query (as the published contract does) or in a JSON body. */
const DetectFields = {
  email: EmailAddress,
  all_provider_types: {
    type: 'boolean',
    description: 'Detect every provider, not only those the application has a connector for (default false).',
  },
} as const;
export const DetectQuery = { type: 'object', additionalProperties: false, properties: DetectFields } as const;
export type DetectQuery = FromSchema<typeof DetectQuery>;
export const DetectBody = { type: 'object', additionalProperties: false, properties: DetectFields } as const;
export type DetectBody = FromSchema<typeof DetectBody>;

export const DetectObject = {
  type: 'object',
  additionalProperties: false,
  required: ['email_address', 'detected'],
  properties: {
    email_address: { type: 'string' },
    detected: { type: 'boolean' },
    provider: { type: 'string', enum: CONNECTOR_PROVIDERS },
    type: { type: 'string', description: 'For imap: which mail service the address belongs to (e.g. aol).' },
  },
} as const;
