import type { ResponseOf } from '#shared/schema-types';

/**
 * Message tracking: what a message read with `fields=include_tracking_options` shows, and the
 * objects of the tracking and bounce notifications (`data.object`). The contract names these
 * notifications but shows no payload schema; the field names are those its vendor documents.
 */

/** A sent message's tracking settings, as `fields=include_tracking_options` shows them. */
export const MessageTrackingOptions = {
  type: 'object',
  additionalProperties: false,
  required: ['opens', 'links', 'thread_replies'],
  properties: {
    opens: { type: 'boolean' },
    links: { type: 'boolean' },
    thread_replies: { type: 'boolean' },
    label: { type: 'string', maxLength: 2048 },
  },
} as const;
export type MessageTrackingOptionsView = ResponseOf<typeof MessageTrackingOptions>;

/** One request that opened a message or clicked a link (the latest ones, in `recents`). */
const Recent = {
  type: 'object',
  required: ['ip', 'user_agent', 'timestamp'],
  properties: {
    opened_id: { type: 'integer' },
    click_id: { type: 'string' },
    link_index: { type: 'string' },
    ip: { type: 'string' },
    user_agent: { type: 'string' },
    timestamp: { type: 'integer' },
  },
} as const;

/** What every tracking notification says of the tracked message. */
const tracked = {
  message_id: { type: 'string', description: 'The tracked sent message.' },
  label: { type: 'string' },
  sender_app_id: { type: 'string', description: 'The application that sent it.' },
  timestamp: { type: 'integer', description: 'When the event happened (Unix seconds).' },
} as const;

/** `message.opened`: the first open of a tracked message by a person. */
export const MessageOpenedObject = {
  type: 'object',
  required: ['message_id', 'sender_app_id', 'timestamp', 'message_data', 'recents'],
  properties: {
    ...tracked,
    message_data: {
      type: 'object',
      required: ['count', 'timestamp'],
      properties: { count: { type: 'integer' }, timestamp: { type: 'integer' } },
    },
    recents: { type: 'array', items: Recent },
  },
} as const;
export type MessageOpened = ResponseOf<typeof MessageOpenedObject>;

/** `message.link_clicked`: the first click of one link of a tracked message by a person. */
export const LinkClickedObject = {
  type: 'object',
  required: ['message_id', 'sender_app_id', 'timestamp', 'link_data', 'recents'],
  properties: {
    ...tracked,
    link_data: {
      type: 'array',
      description: 'The links of the message clicked so far, with their counts.',
      items: {
        type: 'object',
        required: ['url', 'count'],
        properties: { url: { type: 'string' }, count: { type: 'integer' } },
      },
    },
    recents: { type: 'array', items: Recent },
  },
} as const;
export type LinkClicked = ResponseOf<typeof LinkClickedObject>;

/** `thread.replied`: a reply to a message whose thread replies are tracked. */
export const ThreadRepliedObject = {
  type: 'object',
  required: ['message_id', 'root_message_id', 'thread_id', 'sender_app_id', 'timestamp', 'reply_data'],
  properties: {
    ...tracked,
    message_id: { type: 'string', description: 'The reply.' },
    root_message_id: { type: 'string', description: 'The tracked message it replies to.' },
    thread_id: { type: 'string' },
    reply_data: { type: 'object', required: ['count'], properties: { count: { type: 'integer' } } },
  },
} as const;
export type ThreadReplied = ResponseOf<typeof ThreadRepliedObject>;

const Participant = {
  type: 'object',
  required: ['email'],
  properties: { email: { type: 'string' }, name: { type: 'string' } },
} as const;

/** `message.bounce_detected`: a delivery status notification (RFC 3464) saying a sent message failed for a recipient. */
export const BounceDetectedObject = {
  type: 'object',
  required: ['bounced_address', 'bounce_reason', 'bounce_date', 'type', 'status', 'origin'],
  properties: {
    bounced_address: { type: 'string' },
    bounce_reason: { type: 'string', description: 'The Diagnostic-Code, else the status.' },
    bounce_date: { type: 'integer', description: 'When the report arrived (Unix seconds).' },
    type: {
      type: 'string',
      description: 'The subject of the status code (RFC 3463).',
      enum: ['other', 'addressing', 'mailbox', 'mail_system', 'network', 'protocol', 'content', 'security'],
    },
    status: { type: 'string', description: 'The enhanced status code, such as 5.1.1.' },
    code: { type: 'integer', description: 'The SMTP reply code of the Diagnostic-Code, when it has one.' },
    report_message_id: { type: 'string', description: 'The stored delivery status notification.' },
    origin: {
      type: 'object',
      description: 'The sent message that bounced.',
      required: ['id', 'grant_id', 'thread_id', 'subject', 'date', 'from', 'to', 'cc', 'bcc'],
      properties: {
        id: { type: 'string' },
        grant_id: { type: 'string' },
        thread_id: { type: 'string' },
        subject: { type: 'string' },
        date: { type: 'integer' },
        from: { type: 'array', items: Participant },
        to: { type: 'array', items: Participant },
        cc: { type: 'array', items: Participant },
        bcc: { type: 'array', items: Participant },
      },
    },
  },
} as const;
export type BounceDetected = ResponseOf<typeof BounceDetectedObject>;
