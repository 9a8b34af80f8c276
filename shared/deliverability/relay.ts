import {
  announceOnce,
  deliverabilityEntry,
  eventIdentity,
  type DeliverabilityEvent,
  type Sender,
} from '#shared/deliverability/announce';
import type { OutboxEntry } from '#shared/db/outbox';
import { env } from '#shared/config';
import { logger } from '#shared/logger';
import type { TransportAnswer } from '#shared/mail/transport';
import { clock } from '#shared/time';
import type { SentMessageSummary } from '#schemas/deliverability';

/**
 * The deliverability events of the SMTP relay (`MAIL_TRANSPORT=smtp`: locally, the sink `npm start`
 * runs): its answer is all it ever tells. The recipients it accepted the message for are
 * `delivered`; those it refused while accepting the others are `rejected`, each with its SMTP answer.
 * With SES the answer says nothing yet (every recipient accepted, nothing refused) and its events
 * come later through functions/ses-events: nothing is announced here.
 */
const TRANSPORT = env.mailTransport();

export function relayAnswerEvents(message: SentMessageSummary, answer: TransportAnswer): DeliverabilityEvent[] {
  if (TRANSPORT !== 'smtp') return [];
  const now = clock.nowSeconds();
  const events: DeliverabilityEvent[] = [];
  if (answer.accepted.length)
    events.push({
      kind: 'delivered',
      object: {
        message,
        delivered: {
          delivered_at: now,
          recipients: answer.accepted,
          ...(answer.response ? { smtp_response: answer.response } : {}),
        },
      },
    });
  if (answer.rejected.length)
    events.push({
      kind: 'rejected',
      object: {
        message,
        rejected: {
          rejected_at: now,
          reason: 'The relay refused these recipients',
          recipients: answer.rejected.map((r) => ({ email: r.address, diagnostic_code: r.reason })),
        },
      },
    });
  return events;
}

/** The relay's answer as outbox entries, for a send to commit with what it stores (an Agent Account's Sent copy). */
export const relayAnswerEntries = (
  sender: Sender,
  message: SentMessageSummary,
  answer: TransportAnswer,
): OutboxEntry[] => relayAnswerEvents(message, answer).map((event) => deliverabilityEntry(sender, event));

/**
 * Announces the relay's answer for a send that stores nothing to commit it with (a transactional
 * send), once per message and kind. The message has left: a failure to announce is logged, never
 * turned into an error of the send, which a client would retry and so send twice.
 */
export async function announceRelayAnswer(
  sender: Sender,
  message: SentMessageSummary,
  answer: TransportAnswer,
): Promise<void> {
  for (const event of relayAnswerEvents(message, answer)) {
    try {
      await announceOnce(eventIdentity('relay', message.id, event.kind), sender, event);
    } catch (error) {
      logger.error('deliverability: the relay answer was not announced', {
        message_id: message.id,
        kind: event.kind,
        error,
      });
    }
  }
}
