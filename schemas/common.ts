import type { FromSchema } from 'json-schema-to-ts';

/**
 * Schema fragments shared by several endpoints. Schemas are the single source of truth: the HTTP
 * stack compiles them with ajv at load time, handlers get their TypeScript types from them
 * (json-schema-to-ts), and the OpenAPI document is generated from them.
 */

/**
 * Every integer or number a request schema accepts has a `minimum` and a `maximum` that JavaScript
 * and the DynamoDB client hold exactly (the client refuses numbers beyond Number.MAX_SAFE_INTEGER,
 * which would otherwise surface as a 500); test/unit/schema-integers.test.ts checks every route.
 * Use the field's real range where it has one, these helpers where it has none.
 */
export const safeInteger = (minimum = -Number.MAX_SAFE_INTEGER, maximum = Number.MAX_SAFE_INTEGER) =>
  ({ type: 'integer', minimum, maximum }) as const;

/** 9999-12-31T23:59:59Z: the last second of four-digit years (what ISO 8601 dates and iCalendar write). */
export const MAX_UNIX_SECONDS = 253_402_300_799;

/** A point in time in Unix seconds, from 1970 to the end of year 9999. */
export const UnixSeconds = {
  type: 'integer',
  minimum: 0,
  maximum: MAX_UNIX_SECONDS,
  description: 'Unix seconds.',
} as const;

export const Limit = {
  type: 'integer',
  minimum: 1,
  // Any larger page size is treated as 200 (shared/answer-limits.ts); only unsafe numbers are refused.
  maximum: Number.MAX_SAFE_INTEGER,
  description: 'Page size; default 50, values above 200 are treated as 200.',
} as const;

export const PageToken = {
  type: 'string',
  minLength: 1,
  maxLength: 4096,
  description: 'The `next_cursor` of the previous page.',
} as const;

export const Select = {
  type: 'string',
  minLength: 1,
  maxLength: 2000,
  description: 'Comma-separated top-level fields to return.',
} as const;

/** Query of a paginated list with no filters. */
export const PageQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { limit: Limit, page_token: PageToken, select: Select },
} as const;
export type PageQuery = FromSchema<typeof PageQuery>;

/** Query of an endpoint that returns one object: only `select`. */
export const SelectQuery = { type: 'object', additionalProperties: false, properties: { select: Select } } as const;

/**
 * Parameters the published contract lists for other providers' mailboxes (IMAP search, provider B
 * shared mailboxes and folders). They are accepted by the schemas wherever the contract lists them,
 * and answered by the grant's provider: one clear 400 from every operation when it has no use for
 * them (shared/registries/parameters.ts).
 */
export const SharedFrom = { shared_from: { type: 'string', minLength: 1, maxLength: 256 } } as const;
export const SharedFolderId = { shared_folder_id: { type: 'string', minLength: 1, maxLength: 256 } } as const;
export const QueryImap = { query_imap: { type: 'boolean' } } as const;
export const IncludeHiddenFolders = { include_hidden_folders: { type: 'boolean' } } as const;
const query = <P extends object>(properties: P) =>
  ({ type: 'object', additionalProperties: false, properties }) as const;
export const SharedFromQuery = query({ ...SharedFrom });
export const SelectSharedQuery = query({ select: Select, ...SharedFrom, ...SharedFolderId });
export const SharedQuery = query({ ...SharedFrom, ...SharedFolderId });
export const SelectImapQuery = query({ select: Select, ...QueryImap });
export const SelectImapSharedFromQuery = query({ select: Select, ...QueryImap, ...SharedFrom });
export const FolderIdQuery = query({ select: Select, ...SharedFrom, ...IncludeHiddenFolders });

/**
 * The longest text a message's body or one attachment's base64 content can be: the size of a
 * multipart request (25 MiB); a JSON request stops sooner, at its own size limit.
 */
export const MAX_MESSAGE_TEXT = 25 * 1024 * 1024;

export const EmailAddress = { type: 'string', format: 'email', maxLength: 254 } as const;

/** Every error type the API answers, by HTTP status: the `error.type` of the envelope below. */
export const ERROR_TYPES = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'forbidden_error',
  404: 'not_found_error',
  405: 'method_not_allowed_error',
  409: 'conflict_error',
  413: 'payload_too_large',
  415: 'unsupported_media_type_error',
  429: 'rate_limit_error',
  500: 'internal_error',
  502: 'mail_delivery_error',
  503: 'service_unavailable',
  504: 'provider_error',
} as const;

export const ErrorEnvelope = {
  type: 'object',
  additionalProperties: false,
  required: ['request_id', 'error'],
  properties: {
    request_id: { type: 'string' },
    error: {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'message'],
      properties: {
        type: { type: 'string', enum: /* @__PURE__ */ Object.values(ERROR_TYPES) },
        message: { type: 'string' },
      },
    },
  },
} as const;
