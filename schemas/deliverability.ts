import type { ResponseOf } from '#shared/schema-types';

/**
 * The objects (`data.object`) of the deliverability notifications of the outgoing transport, for
 * Agent Account sends (`message.delivered`, `message.bounced`, `message.complaint`,
 * `message.rejected`) and transactional sends (the same under `message.transactional.*`, with no
 * grant). The contract names these notifications but shows no payload schema; the field names are
 * those its vendor documents: the message the event is about, and one object named for the event.
 */

/** The sent message an event is about. */
const SentMessage = {
  type: 'object',
  required: ['id', 'subject', 'from', 'to', 'sent_at'],
  properties: {
    id: { type: 'string', description: 'The message ID the send answered.' },
    subject: { type: 'string' },
    from: { type: 'string', description: 'The sender address.' },
    to: { type: 'array', items: { type: 'string' } },
    cc: { type: 'array', items: { type: 'string' }, description: 'Omitted when there were none.' },
    bcc: { type: 'array', items: { type: 'string' }, description: 'Omitted when there were none.' },
    sent_at: { type: 'integer', description: 'When it was sent (Unix seconds).' },
    metadata: { type: 'object', description: 'The metadata given with the send, when known.' },
  },
} as const;

const Recipient = {
  type: 'object',
  required: ['email'],
  properties: {
    email: { type: 'string' },
    diagnostic_code: { type: 'string', description: "The receiving server's (or the relay's) answer." },
    status: { type: 'string', description: 'The enhanced status code, such as 5.1.1, when reported.' },
  },
} as const;

/** `message.delivered`: the receiving server accepted the message for these recipients. */
export const MessageDeliveredObject = {
  type: 'object',
  required: ['message', 'delivered'],
  properties: {
    message: SentMessage,
    delivered: {
      type: 'object',
      required: ['delivered_at', 'recipients'],
      properties: {
        delivered_at: { type: 'integer' },
        recipients: { type: 'array', items: { type: 'string' } },
        smtp_response: { type: 'string' },
      },
    },
  },
} as const;
export type MessageDelivered = ResponseOf<typeof MessageDeliveredObject>;

/** `message.bounced`: the message could not be delivered to these recipients. */
export const MessageBouncedObject = {
  type: 'object',
  required: ['message', 'bounce'],
  properties: {
    message: SentMessage,
    bounce: {
      type: 'object',
      required: ['bounced_at', 'type', 'bounce_type', 'recipients'],
      properties: {
        bounced_at: { type: 'integer' },
        type: { type: 'string', description: 'Why, as the transport reports it (MailboxFull, NoEmail, General, ...).' },
        bounce_type: {
          type: 'string',
          enum: ['permanent', 'transient', 'undetermined'],
          description: 'permanent: do not send to these addresses again; transient: the transport gave up for now.',
        },
        recipients: { type: 'array', items: Recipient },
      },
    },
  },
} as const;
export type MessageBounced = ResponseOf<typeof MessageBouncedObject>;

/** `message.complaint`: a recipient marked the delivered message as spam. */
export const MessageComplaintObject = {
  type: 'object',
  required: ['message', 'complaint'],
  properties: {
    message: SentMessage,
    complaint: {
      type: 'object',
      required: ['complained_at', 'recipients'],
      properties: {
        complained_at: { type: 'integer' },
        type: { type: 'string', description: 'The feedback type of the report (abuse, fraud, ...), when it has one.' },
        recipients: { type: 'array', items: Recipient },
      },
    },
  },
} as const;
export type MessageComplaint = ResponseOf<typeof MessageComplaintObject>;

/** `message.rejected`: the transport refused to send the message to these recipients. */
export const MessageRejectedObject = {
  type: 'object',
  required: ['message', 'rejected'],
  properties: {
    message: SentMessage,
    rejected: {
      type: 'object',
      required: ['rejected_at', 'reason', 'recipients'],
      properties: {
        rejected_at: { type: 'integer' },
        reason: { type: 'string' },
        recipients: { type: 'array', items: Recipient },
      },
    },
  },
} as const;
export type MessageRejected = ResponseOf<typeof MessageRejectedObject>;

export type SentMessageSummary = MessageDelivered['message'];
