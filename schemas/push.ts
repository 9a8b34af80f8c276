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

/**
 * Provider B's change and lifecycle notifications (Graph's changeNotificationCollection), POSTed to the
 * address its subscriptions name; the same address first receives Graph's validation request (an empty
 * POST with `?validationToken=`), answered with the token as text/plain.
 */
export const GraphPushQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    validationToken: {
      type: 'string',
      minLength: 1,
      maxLength: 4096,
      description: "Graph's validation of a new subscription's address: answered with this token, as plain text.",
    },
  },
} as const;

const GraphNotification = {
  type: 'object',
  required: ['subscriptionId'],
  properties: {
    subscriptionId: { type: 'string', minLength: 1, maxLength: 128 },
    clientState: { type: 'string', maxLength: 255 },
    changeType: { type: 'string', maxLength: 64 },
    lifecycleEvent: { type: 'string', maxLength: 64 },
    resource: { type: 'string', maxLength: 2048 },
    subscriptionExpirationDateTime: { type: 'string', maxLength: 64 },
    tenantId: { type: 'string', maxLength: 128 },
    resourceData: { type: 'object' },
  },
} as const;

export const GraphPushBody = {
  type: 'object',
  properties: {
    value: { type: 'array', maxItems: 1000, items: GraphNotification },
    validationTokens: { type: 'array', maxItems: 1000, items: { type: 'string', maxLength: 8192 } },
  },
} as const;
export type GraphPushBody = FromSchema<typeof GraphPushBody>;

export const GraphPushReceipt = {
  type: 'object',
  additionalProperties: false,
  required: ['received', 'accepted', 'refused'],
  properties: {
    received: { type: 'boolean', description: 'The notifications were read.' },
    accepted: {
      type: 'integer',
      minimum: 0,
      description:
        'Notifications of subscriptions this deployment holds, with their clientState: each brings its grant’s next run forward.',
    },
    refused: {
      type: 'integer',
      minimum: 0,
      description: 'Notifications of unknown subscriptions or with a wrong clientState: they change nothing.',
    },
  },
} as const;
