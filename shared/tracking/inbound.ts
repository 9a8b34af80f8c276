import type { GrantRecord } from '#shared/db/grants';
import type { MessageRecord } from '#shared/db/mail-records';
import { getMessageIdHeaders, getMessages } from '#shared/db/messages';
import type { OutboxEntry } from '#shared/db/outbox';
import type { NamedTransactItem } from '#shared/db/transact';
import type { MessageId } from '#shared/ids';
import { failedRecipients, parseDeliveryReport, smtpCodeOf, type DsnRecipient } from '#shared/mail/dsn';
import type { ParsedMail } from '#shared/mail/parse';
import type { StoreExtras } from '#shared/mailbox/store';
import { newNotification } from '#shared/notifications/notification';
import { clock } from '#shared/time';
import type { BounceDetected, ThreadReplied } from '#schemas/tracking';
import { replyCountItem, trackedMessagesOf } from '#shared/tracking/records';

/**
 * What a message arriving in a mailbox announces besides message.created: `thread.replied` when it
 * replies (In-Reply-To, References) to a sent message whose thread replies are tracked, and
 * `message.bounce_detected` when it is a delivery status notification (RFC 3464) about a message
 * the mailbox sent, one per recipient the report says failed. Both are committed with the arriving
 * message (its store's transaction), so they are announced once per arriving message: a copy stored
 * again (the same Message-ID) is a duplicate that commits nothing. Read before the store; undefined
 * when there is nothing to announce.
 */
export async function inboundNotices(
  grant: GrantRecord,
  mail: ParsedMail,
  raw: Buffer,
): Promise<StoreExtras | undefined> {
  const report = parseDeliveryReport(raw);
  if (report) return bounceNotices(grant, mail, report);
  return replyNotices(grant, mail);
}

/** Headers a reply names the messages it answers with, nearest first (at most 20 read). */
const answered = (mail: ParsedMail) =>
  [...new Set([mail.inReplyTo, ...[...mail.references].reverse()].filter((h): h is string => !!h))].slice(0, 20);

/** Whether the message says it was sent by a program, not a person (RFC 3834: out-of-office answers and the like). */
const autoSubmitted = (mail: ParsedMail) =>
  mail.headers.some((h) => h.name.toLowerCase() === 'auto-submitted' && h.value.trim().toLowerCase() !== 'no');

async function replyNotices(grant: GrantRecord, mail: ParsedMail): Promise<StoreExtras | undefined> {
  const headers = answered(mail);
  if (!headers.length || autoSubmitted(mail)) return undefined;
  const own = grant.email.toLowerCase();
  if (mail.from.some((f) => f.email === own)) return undefined;
  const stored = await getMessageIdHeaders(grant.id, headers);
  const ids = headers.map((h) => stored.get(h)?.message_id).filter((id): id is MessageId => !!id);
  const tracked = await trackedMessagesOf(grant.id, ids);
  const root = ids
    .map((id) => tracked.get(id))
    .find((t) => t?.thread_replies && t.application_id === grant.application_id);
  if (!root) return undefined;
  return (record) => {
    const now = clock.nowSeconds();
    const object: ThreadReplied = {
      message_id: record.id,
      root_message_id: root.message_id,
      thread_id: record.thread_id,
      ...(root.label !== undefined ? { label: root.label } : {}),
      sender_app_id: root.application_id,
      timestamp: now,
      reply_data: { count: (root.reply_count ?? 0) + 1 },
    };
    const notification = newNotification({
      type: 'thread.replied',
      applicationId: grant.application_id,
      grantId: grant.id,
      object,
    });
    return { items: [replyCountItem(grant.id, root.message_id, now)], outbox: [{ notification }] };
  };
}

/** The RFC 3463 subject of a status code (its middle number). */
const SUBJECTS = [
  'other',
  'addressing',
  'mailbox',
  'mail_system',
  'network',
  'protocol',
  'content',
  'security',
] as const;

async function bounceNotices(
  grant: GrantRecord,
  mail: ParsedMail,
  report: NonNullable<ReturnType<typeof parseDeliveryReport>>,
): Promise<StoreExtras | undefined> {
  const failed = failedRecipients(report);
  // Reporting MTAs that leave the original's ID out of the report often still thread the report to it.
  const header = report.originalMessageId ?? mail.inReplyTo;
  if (!failed.length || !header) return undefined;
  const found = (await getMessageIdHeaders(grant.id, [header])).get(header);
  if (!found) return undefined;
  const [original] = await getMessages(grant.id, [found.message_id]);
  if (!original || !sentBy(grant, original)) return undefined;
  return (record) => {
    const now = clock.nowSeconds();
    const outbox: OutboxEntry[] = failed.map((recipient) => ({
      notification: newNotification({
        type: 'message.bounce_detected',
        applicationId: grant.application_id,
        grantId: grant.id,
        object: bounceObject(original, recipient, record, now),
      }),
    }));
    return { items: [] as NamedTransactItem[], outbox };
  };
}

/** A message of the mailbox that it sent: in its Sent folder, or from its own address. */
function sentBy(grant: GrantRecord, message: MessageRecord): boolean {
  const own = grant.email.toLowerCase();
  return message.folders.includes('sent') || message.from.some((f) => f.email.toLowerCase() === own);
}

function bounceObject(original: MessageRecord, recipient: DsnRecipient, report: MessageRecord, now: number) {
  const code = smtpCodeOf(recipient.diagnosticCode);
  const subject = Number(recipient.status.split('.')[1]);
  const object: BounceDetected = {
    bounced_address: recipient.address,
    bounce_reason: recipient.diagnosticCode ?? `Delivery failed with status ${recipient.status}`,
    bounce_date: now,
    type: SUBJECTS[subject] ?? 'other',
    status: recipient.status,
    ...(code !== undefined ? { code } : {}),
    report_message_id: report.id,
    origin: {
      id: original.id,
      grant_id: original.grant_id,
      thread_id: original.thread_id,
      subject: original.subject,
      date: original.date,
      from: original.from,
      to: original.to,
      cc: original.cc,
      bcc: original.bcc,
    },
  };
  return object;
}
