import type { FromSchema } from 'json-schema-to-ts';

export const TEMPLATE_ENGINES = ['mustache', 'handlebars', 'twig'] as const;
export type TemplateEngine = (typeof TEMPLATE_ENGINES)[number];
const Engine = { type: 'string', enum: TEMPLATE_ENGINES } as const;

/**
 * A template or a signature is stored as one DynamoDB item, and an item holds at most 400 KB
 * (409,600 bytes). maxLength counts characters (code points), each up to 4 bytes of UTF-8, so the
 * limits are set for the worst case:
 * - template: 4 × (80,000 body + 998 subject + 256 name) = 325,016 bytes;
 * - signature: 4 × (100,000 body + 256 name) = 401,024 bytes;
 * plus under 1 KB of keys, IDs, engine and timestamps. A longer text would be a 500 from DynamoDB
 * rather than a 400 naming the field.
 */
export const TEMPLATE_BODY_MAX = 80_000;
/** A subject is one header line (RFC 5322 allows 998 characters), like a sent message's. */
export const TEMPLATE_SUBJECT_MAX = 998;
export const SIGNATURE_BODY_MAX = 100_000;

export const TemplateObject = {
  type: 'object',
  required: ['id', 'object', 'grant_id', 'engine', 'name', 'subject', 'body', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string' },
    object: { type: 'string', enum: ['template'] },
    grant_id: { type: 'string' },
    app_id: { type: ['string', 'null'] },
    engine: Engine,
    name: { type: 'string' },
    subject: { type: 'string' },
    body: { type: 'string' },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

/**
 * A template of the application (`/v3/templates`), shared by every grant of the application: the
 * same fields, with `app_id` set and `grant_id` null, as the published contract shows both levels.
 */
export const ApplicationTemplateObject = {
  type: 'object',
  required: ['id', 'object', 'grant_id', 'app_id', 'engine', 'name', 'subject', 'body', 'created_at', 'updated_at'],
  properties: {
    ...TemplateObject.properties,
    grant_id: { type: 'null' },
    app_id: { type: 'string' },
  },
} as const;

export const CreateTemplateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'engine', 'body'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 256 },
    engine: Engine,
    subject: { type: 'string', maxLength: TEMPLATE_SUBJECT_MAX },
    body: { type: 'string', maxLength: TEMPLATE_BODY_MAX },
  },
} as const;
export type CreateTemplateBody = FromSchema<typeof CreateTemplateBody>;

export const UpdateTemplateBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: CreateTemplateBody.properties,
} as const;
export type UpdateTemplateBody = FromSchema<typeof UpdateTemplateBody>;

/** The contract's `strict`: a variable the template names that `variables` lacks is a 400 naming it. Off by default here. */
export const TemplateStrict = {
  type: 'boolean',
  description:
    'When true, a variable the template names that `variables` lacks is an error (400 naming it); by default it renders empty.',
} as const;

export const RenderTemplateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['variables'],
  properties: {
    variables: {
      type: 'object',
      description:
        'Values for the template; a variable the template names that is not here renders empty, unless `strict`.',
    },
    strict: TemplateStrict,
  },
} as const;
export type RenderTemplateBody = FromSchema<typeof RenderTemplateBody>;

/** A stored template rendered: a template without a subject renders an empty one. */
export const RenderedTemplateObject = {
  type: 'object',
  required: ['subject', 'body'],
  properties: { subject: { type: 'string' }, body: { type: 'string' } },
} as const;

/** A template given in the request, rendered without being stored (the contract's "render as HTML"). */
export const RenderInlineTemplateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['engine', 'body', 'variables'],
  properties: {
    engine: Engine,
    body: CreateTemplateBody.properties.body,
    variables: RenderTemplateBody.properties.variables,
    strict: TemplateStrict,
  },
} as const;
export type RenderInlineTemplateBody = FromSchema<typeof RenderInlineTemplateBody>;

export const RenderedInlineTemplateObject = {
  type: 'object',
  required: ['body'],
  properties: { body: { type: 'string' } },
} as const;

export const SignatureObject = {
  type: 'object',
  required: ['id', 'object', 'grant_id', 'name', 'body', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string' },
    object: { type: 'string', enum: ['signature'] },
    grant_id: { type: 'string' },
    name: { type: 'string' },
    body: { type: 'string' },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

export const CreateSignatureBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'body'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 256 },
    body: { type: 'string', minLength: 1, maxLength: SIGNATURE_BODY_MAX },
  },
} as const;
export type CreateSignatureBody = FromSchema<typeof CreateSignatureBody>;

export const UpdateSignatureBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: CreateSignatureBody.properties,
} as const;
export type UpdateSignatureBody = FromSchema<typeof UpdateSignatureBody>;
