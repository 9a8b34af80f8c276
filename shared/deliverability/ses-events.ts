import { getGrant } from '#shared/db/grants';
import { parseId, type ApplicationId, type GrantId, type MessageId } from '#shared/ids';
import { logger } from '#shared/logger';
import type { SentMessageSummary } from '#schemas/deliverability';
import { announceOnce, eventIdentity, type DeliverabilityEvent, type Sender } from '#shared/deliverability/announce';
import { SES_TAG_NAMES, TRANSACTIONAL } from '#shared/deliverability/tags';

/**
 * The events SES publishes for messages sent through the deployment's configuration set (its event
 * destination: an SNS topic feeding the ses-events queue), in SES's event publishing format:
 * `eventType` Delivery, Bounce, Complaint or Reject, `mail` (with the message's tags) and one object
 * named for the event. Our tags (shared/mail/transport.ts) say whose message it is.
 *
 * A body that is not such an event is malformed: `readSesEvent` throws, the message fails and, after
 * the queue's receives, waits in the dead-letter queue for an operator (it will not read better on a
 * retry, but it is kept, not lost). An event without our tags (another sender of the configuration
 * set), of a grant since deleted, or of a type not announced (Send, DeliveryDelay, Open, ...) is
 * logged and dropped. Only failures of ours (the table) make a well-formed event come back.
 */
export class MalformedSesEvent extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedSesEvent';
  }
}

interface SesMail {
  messageId: string;
  timestamp: string;
  source?: string;
  destination?: string[];
  commonHeaders?: { from?: string[]; to?: string[]; cc?: string[]; subject?: string };
  tags?: Record<string, string[]>;
}
interface SesRecipient {
  emailAddress: string;
  status?: string;
  diagnosticCode?: string;
}
export interface SesEvent {
  eventType: string;
  mail: SesMail;
  delivery?: { timestamp: string; recipients: string[]; smtpResponse?: string };
  bounce?: {
    timestamp: string;
    bounceType: string;
    bounceSubType?: string;
    bouncedRecipients: SesRecipient[];
  };
  complaint?: { timestamp: string; complainedRecipients: SesRecipient[]; complaintFeedbackType?: string };
  reject?: { reason?: string };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The SES event of a queue message's body: SNS's envelope around it, or the event itself (raw message delivery). */
export function readSesEvent(body: string): SesEvent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
    if (isObject(parsed) && parsed.Type === 'Notification' && typeof parsed.Message === 'string')
      parsed = JSON.parse(parsed.Message);
  } catch {
    throw new MalformedSesEvent('The message is not JSON, nor an SNS notification of JSON');
  }
  if (!isObject(parsed)) throw new MalformedSesEvent('The message is not an SES event object');
  // Event publishing says eventType; SES's older feedback notifications say notificationType.
  const eventType = parsed.eventType ?? parsed.notificationType;
  const mail = parsed.mail;
  if (typeof eventType !== 'string' || !isObject(mail) || typeof mail.messageId !== 'string')
    throw new MalformedSesEvent('The message is not an SES event: no eventType, or no mail.messageId');
  const details: Record<string, (value: Record<string, unknown>) => boolean> = {
    Delivery: (v) => isObject(v.delivery) && Array.isArray(v.delivery.recipients),
    Bounce: (v) => isObject(v.bounce) && Array.isArray(v.bounce.bouncedRecipients),
    Complaint: (v) => isObject(v.complaint) && Array.isArray(v.complaint.complainedRecipients),
    Reject: (v) => isObject(v.reject),
  };
  if (details[eventType] && !details[eventType](parsed))
    throw new MalformedSesEvent(`The ${eventType} event has no ${eventType.toLowerCase()} details`);
  return { ...(parsed as unknown as SesEvent), eventType };
}

const seconds = (timestamp: string | undefined, fallback: string) => {
  const ms = Date.parse(timestamp ?? fallback);
  return Math.floor((Number.isNaN(ms) ? Date.parse(fallback) || 0 : ms) / 1000);
};

/** The address of a header value (`Name <a@b>` or `a@b`). */
const addressOf = (value: string) => (value.match(/<([^<>]+)>\s*$/)?.[1] ?? value).trim();

/** The sent message, as the event's `mail` describes it (SES keeps no metadata of ours). */
function summaryOf(mail: SesMail, id: MessageId): SentMessageSummary {
  const headers = mail.commonHeaders ?? {};
  const to = (headers.to ?? []).map(addressOf);
  const cc = (headers.cc ?? []).map(addressOf);
  const shown = new Set([...to, ...cc].map((a) => a.toLowerCase()));
  const bcc = (mail.destination ?? []).filter((a) => !shown.has(a.toLowerCase()));
  return {
    id,
    subject: headers.subject ?? '',
    from: headers.from?.[0] ? addressOf(headers.from[0]) : (mail.source ?? ''),
    to,
    ...(cc.length ? { cc } : {}),
    ...(bcc.length ? { bcc } : {}),
    sent_at: seconds(mail.timestamp, mail.timestamp),
  };
}

const recipient = (r: SesRecipient) => ({
  email: r.emailAddress,
  ...(r.diagnosticCode ? { diagnostic_code: r.diagnosticCode } : {}),
  ...(r.status ? { status: r.status } : {}),
});

/** The event to announce, with the parts that identify it; undefined for a type that announces nothing. */
function eventOf(
  event: SesEvent,
  message: SentMessageSummary,
): { event: DeliverabilityEvent; identity: (string | number)[] } | undefined {
  const { mail } = event;
  switch (event.eventType) {
    case 'Delivery': {
      const d = event.delivery!;
      return {
        identity: [mail.messageId, 'Delivery', d.timestamp, ...d.recipients],
        event: {
          kind: 'delivered',
          object: {
            message,
            delivered: {
              delivered_at: seconds(d.timestamp, mail.timestamp),
              recipients: d.recipients,
              ...(d.smtpResponse ? { smtp_response: d.smtpResponse } : {}),
            },
          },
        },
      };
    }
    case 'Bounce': {
      const b = event.bounce!;
      const type = b.bounceType.toLowerCase();
      return {
        identity: [mail.messageId, 'Bounce', b.timestamp, ...b.bouncedRecipients.map((r) => r.emailAddress)],
        event: {
          kind: 'bounced',
          object: {
            message,
            bounce: {
              bounced_at: seconds(b.timestamp, mail.timestamp),
              type: b.bounceSubType ?? b.bounceType,
              bounce_type: type === 'permanent' || type === 'transient' ? type : 'undetermined',
              recipients: b.bouncedRecipients.map(recipient),
            },
          },
        },
      };
    }
    case 'Complaint': {
      const c = event.complaint!;
      return {
        identity: [mail.messageId, 'Complaint', c.timestamp, ...c.complainedRecipients.map((r) => r.emailAddress)],
        event: {
          kind: 'complaint',
          object: {
            message,
            complaint: {
              complained_at: seconds(c.timestamp, mail.timestamp),
              ...(c.complaintFeedbackType ? { type: c.complaintFeedbackType } : {}),
              recipients: c.complainedRecipients.map(recipient),
            },
          },
        },
      };
    }
    case 'Reject':
      // A rejection is of the whole message (SES found a virus in it): every recipient, at once.
      return {
        identity: [mail.messageId, 'Reject'],
        event: {
          kind: 'rejected',
          object: {
            message,
            rejected: {
              rejected_at: seconds(undefined, mail.timestamp),
              reason: event.reject!.reason ?? 'Rejected by Amazon SES',
              recipients: (mail.destination ?? []).map((email) => ({ email })),
            },
          },
        },
      };
    default:
      return undefined;
  }
}

/** Whose message the event is about, from our tags; undefined when they are missing or not ours. */
function senderOf(mail: SesMail): { sender: Sender; message: MessageId } | undefined {
  const tag = (name: string) => mail.tags?.[name]?.[0];
  const applicationId = parseId('application', tag(SES_TAG_NAMES.application) ?? '');
  const message = parseId('message', tag(SES_TAG_NAMES.message) ?? '');
  const grantTag = tag(SES_TAG_NAMES.grant);
  const grantId = grantTag === TRANSACTIONAL ? null : parseId('grant', grantTag ?? '');
  if (!applicationId || !message || grantId === undefined) return undefined;
  return { sender: { applicationId, grantId }, message };
}

export type Outcome = 'announced' | 'duplicate' | 'untagged' | 'grant_gone' | 'ignored';

/** Announces one SES event (see above); answers what became of it. */
export async function handleSesEvent(event: SesEvent): Promise<Outcome> {
  const log = { ses_message_id: event.mail.messageId, event_type: event.eventType };
  const who = senderOf(event.mail);
  if (!who) {
    logger.warn('ses-events: an event without our tags, dropped', log);
    return 'untagged';
  }
  const made = eventOf(event, summaryOf(event.mail, who.message));
  if (!made) {
    logger.info('ses-events: an event type that is not announced, dropped', log);
    return 'ignored';
  }
  const { applicationId, grantId } = who.sender;
  if (grantId && !(await getGrant(applicationId as ApplicationId, grantId as GrantId))) {
    logger.info('ses-events: the grant that sent the message is gone, dropped', { ...log, grant_id: grantId });
    return 'grant_gone';
  }
  const announced = await announceOnce(eventIdentity(...made.identity), who.sender, made.event);
  return announced ? 'announced' : 'duplicate';
}
