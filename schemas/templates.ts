import type { FromSchema } from 'json-schema-to-ts';

const Engine = { type: 'string', enum: ['mustache', 'handlebars', 'twig'] } as const;
const TemplateText = { type: 'string', maxLength: 1_000_000 } as const;

export const TemplateObject = {
  type: 'object',
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

export const CreateTemplateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'engine', 'body'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 256 },
    engine: Engine,
    subject: { ...TemplateText, maxLength: 10_000 },
    body: TemplateText,
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

export const RenderTemplateBody = {
  type: 'object',
  additionalProperties: false,
  properties: { variables: { type: 'object' } },
} as const;
export type RenderTemplateBody = FromSchema<typeof RenderTemplateBody>;

export const RenderedTemplateObject = {
  type: 'object',
  properties: { subject: { type: 'string' }, body: { type: 'string' } },
} as const;

export const SignatureObject = {
  type: 'object',
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
    body: { type: 'string', minLength: 1, maxLength: 100_000 },
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
