import type { FromSchema } from 'json-schema-to-ts';

/**
 * Provider pushes: what a provider sends to tell that an account changed. Provider A's Gmail publishes
 * to the application's Pub/Sub topic, whose push subscription POSTs each message here (Pub/Sub's push
 * format: `message.data` is base64 of Gmail's `{emailAddress, historyId}`).
 */
export const PubSubPushBody = {
  type: 'object',
  required: ['message'],
  properties: {
    message: {
      type: 'object',
      required: ['data'],
      properties: {
        data: { type: 'string', minLength: 1, maxLength: 4096, description: "Base64 of Gmail's JSON." },
        messageId: { type: 'string', maxLength: 256 },
        message_id: { type: 'string', maxLength: 256 },
        publishTime: { type: 'string', maxLength: 64 },
        attributes: { type: 'object' },
      },
    },
    subscription: { type: 'string', maxLength: 512 },
    deliveryAttempt: { type: 'integer', minimum: 1, maximum: 1000 },
  },
} as const;
export type PubSubPushBody = FromSchema<typeof PubSubPushBody>;

export const PubSubPushQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['application_id'],
  properties: {
    application_id: {
      type: 'string',
      minLength: 1,
      maxLength: 64,
      description:
        "The application whose google connector's topic the subscription pushes (part of the push endpoint's URL).",
    },
  },
} as const;

export const PushReceipt = {
  type: 'object',
  additionalProperties: false,
  required: ['received'],
  properties: {
    received: { type: 'boolean', description: 'The push was verified and read.' },
    grant_id: { type: 'string', description: 'The grant whose next run it brought forward, if one.' },
  },
} as const;
