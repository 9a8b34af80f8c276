import type { MessageBounced, MessageComplaint, MessageDelivered, MessageRejected } from '#schemas/deliverability';

/**
 * Example objects of the deliverability notifications (`message.delivered` … and their
 * `message.transactional.*` forms), for POST /v3/webhooks/mock-payload and test events
 * (shared/webhooks/payloads.ts). Undefined for any other type.
 */
export function deliverabilityExample(
  base: string,
  now: number,
): MessageDelivered | MessageBounced | MessageComplaint | MessageRejected | undefined {
  const kind = /^message\.(?:transactional\.)?(delivered|bounced|complaint|rejected)$/.exec(base)?.[1];
  if (!kind) return undefined;
  const message = {
    id: 'msg_01jd6abcdefghjkmnpqrstvwxy',
    subject: 'Example subject',
    from: 'agent@agents.example.com',
    to: ['ann@example.com'],
    sent_at: now - 60,
  };
  switch (kind) {
    case 'delivered':
      return {
        message,
        delivered: { delivered_at: now, recipients: ['ann@example.com'], smtp_response: '250 2.0.0 OK' },
      };
    case 'bounced':
      return {
        message,
        bounce: {
          bounced_at: now,
          type: 'NoEmail',
          bounce_type: 'permanent',
          recipients: [{ email: 'ann@example.com', status: '5.1.1', diagnostic_code: 'smtp; 550 5.1.1 user unknown' }],
        },
      };
    case 'complaint':
      return { message, complaint: { complained_at: now, type: 'abuse', recipients: [{ email: 'ann@example.com' }] } };
    default:
      return {
        message,
        rejected: { rejected_at: now, reason: 'Bad content', recipients: [{ email: 'ann@example.com' }] },
      };
  }
}
