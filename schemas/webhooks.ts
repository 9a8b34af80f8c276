import type { FromSchema } from 'json-schema-to-ts';
import { EmailAddress } from '#schemas/common';
import { CONTRACT_TRIGGER_TYPES, NOTIFICATION_TYPES } from '#schemas/notifications';

/** Trigger types a destination can subscribe to (suffixes such as `.truncated` need no subscription). */
export const TRIGGER_TYPES = NOTIFICATION_TYPES;
export type TriggerType = (typeof TRIGGER_TYPES)[number];

/** One trigger type as sent; checked against TRIGGER_TYPES in code, so the 400 can list the valid ones. */
const TriggerTypeName = { type: 'string', minLength: 1, maxLength: 100 } as const;
const TriggerTypes = {
  type: 'array',
  minItems: 1,
  maxItems: CONTRACT_TRIGGER_TYPES.length,
  uniqueItems: true,
  items: TriggerTypeName,
  description: 'Unknown trigger types are refused with the list of valid ones.',
} as const;

const WebhookUrl = { type: 'string', minLength: 1, maxLength: 2048 } as const;
const Description = { type: 'string', maxLength: 1024 } as const;
const NotificationEmails = { type: 'array', maxItems: 20, uniqueItems: true, items: EmailAddress } as const;
/** What a destination's create and update bodies both accept. */
const DestinationFields = {
  trigger_types: TriggerTypes,
  webhook_url: WebhookUrl,
  description: Description,
  notification_email_addresses: NotificationEmails,
  compressed_delivery: { type: 'boolean' },
} as const;

export const WebhookObject = {
  type: 'object',
  required: [
    'id',
    'object',
    'trigger_types',
    'webhook_url',
    'status',
    'notification_email_addresses',
    'created_at',
    'updated_at',
  ],
  properties: {
    id: { type: 'string' },
    object: { type: 'string', enum: ['webhook'] },
    description: { type: 'string' },
    trigger_types: { type: 'array', items: { type: 'string' } },
    webhook_url: { type: 'string' },
    status: { type: 'string', enum: ['active', 'inactive', 'failing', 'failed'] },
    notification_email_addresses: { type: 'array', items: { type: 'string' } },
    compressed_delivery: { type: 'boolean' },
    status_updated_at: { type: 'integer' },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
    webhook_secret: { type: 'string', description: 'Returned only when created, re-verified or rotated.' },
  },
} as const;

export const CreateWebhookBody = {
  type: 'object',
  additionalProperties: false,
  required: ['trigger_types', 'webhook_url'],
  properties: DestinationFields,
} as const;
export type CreateWebhookBody = FromSchema<typeof CreateWebhookBody>;

export const UpdateWebhookBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    ...DestinationFields,
    status: {
      type: 'string',
      enum: ['active', 'inactive', 'pause'],
      description: "failing and failed are set by the service; 'pause' (the published contract's word) means inactive",
    },
  },
} as const;
export type UpdateWebhookBody = FromSchema<typeof UpdateWebhookBody>;

export const MockPayloadBody = {
  type: 'object',
  additionalProperties: false,
  required: ['trigger_type'],
  properties: {
    trigger_type: TriggerTypeName,
    webhook_url: {
      ...WebhookUrl,
      description: 'Accepted as the published contract sends it; the example does not depend on it.',
    },
  },
} as const;
export type MockPayloadBody = FromSchema<typeof MockPayloadBody>;

export const SendTestEventBody = {
  type: 'object',
  additionalProperties: false,
  required: ['trigger_type', 'webhook_url'],
  properties: { trigger_type: TriggerTypeName, webhook_url: WebhookUrl },
} as const;
export type SendTestEventBody = FromSchema<typeof SendTestEventBody>;

export const DeliveryObject = {
  type: 'object',
  required: ['id', 'object', 'webhook_id', 'notification_id', 'trigger_type', 'attempt', 'outcome', 'time'],
  properties: {
    id: { type: 'string' },
    object: { type: 'string', enum: ['webhook_delivery'] },
    webhook_id: { type: 'string' },
    notification_id: { type: 'string' },
    trigger_type: { type: 'string' },
    attempt: { type: 'integer' },
    outcome: { type: 'string', enum: ['delivered', 'retrying', 'failed', 'given_up'] },
    status_code: { type: ['integer', 'null'] },
    duration_ms: { type: 'integer' },
    error: { type: 'string' },
    time: { type: 'integer' },
  },
} as const;

export const IpAddressesObject = {
  type: 'object',
  required: ['ip_addresses', 'updated_at'],
  properties: {
    ip_addresses: { type: 'array', items: { type: 'string' } },
    updated_at: { type: 'integer', description: 'When the list last changed (Unix seconds; 0 when not configured).' },
  },
} as const;
