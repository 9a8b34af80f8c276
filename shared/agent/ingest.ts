import { createHash } from 'node:crypto';
import { normalAddress } from '#shared/mailbox/postings';
import { parsedMessageFields, storeMessage } from '#shared/mailbox/store';
import { placementOf } from '#shared/governance/placement';
import { getAgentAddressOwner, getGrant, resolveAgentAddresses } from '#shared/db/grants';
import { evaluationOf, governanceOf, partyOf, recordEvaluation } from '#shared/governance/decide';
import { checkAttachmentLimits } from '#shared/mailbox/send';
import * as sending from '#shared/db/sending';
import type { PolicyLimits } from '#schemas/governance';
import { parseMime } from '#shared/mail/parse';
import { calendarJobs } from '#shared/calendar/imip';
import { clock } from '#shared/time';
import { listFolders } from '#shared/mailbox/folders';
import { inboundNotices } from '#shared/tracking/inbound';

/**
 * Inbound mail for Agent Accounts, whatever carried it: the local SMTP listener (`npm start`) or, on
 * AWS, SES receipt → S3 → the `inbound` function. A message is stored once per receiving mailbox
 * (several of its addresses among the recipients still make one copy) and is deduplicated by its
 * Message-ID, so a sender retrying after a lost acknowledgement does not create a second copy.
 */
/**
 * Whether mail for `address` is taken at RCPT TO: false when no Agent Account has it; a refusal
 * (the text of a 5.7.1 reply) when the inbound rules of its workspace block the envelope sender,
 * recorded as a `smtp_rcpt` evaluation; true otherwise.
 */
export async function acceptsRecipient(
  address: string,
  mailFrom?: string,
): Promise<boolean | string | { code: number; message: string }> {
  const owner = await getAgentAddressOwner(normalAddress(address));
  if (!owner) return false;
  const grant = await getGrant(owner.application_id, owner.grant_id);
  if (!grant) return false;
  const governance = await governanceOf(grant);
  const { limit_count_daily_message_received: dailyLimit } = governance.limits;
  if (dailyLimit !== undefined && (await sending.receivedOn(grant.id, utcDay())) >= dailyLimit) {
    return {
      code: 452,
      message: `4.2.2 <${address}>: this mailbox has received its ${dailyLimit} messages for today; try again tomorrow`,
    };
  }
  const from = partyOf(mailFrom);
  if (!from) return true;
  const decision = await governance.decide('inbound', { from, recipients: [] });
  if (!decision?.actions.blocked) return true;
  await recordEvaluation(evaluationOf(grant, 'smtp_rcpt', decision, null));
  return `<${address}>: message refused by the recipient's mail rules`;
}

const utcDay = () => new Date(clock.nowMs()).toISOString().slice(0, 10);

/** Every receiving mailbox's policy refused the message: the SMTP answer to give. */
export class IngestRefusedError extends Error {
  constructor(
    readonly responseCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'IngestRefusedError';
  }
}

/** Why an account's workspace policy refuses a received message (an SMTP reply), if it does. */
function receiptRefusal(
  limits: PolicyLimits,
  raw: Buffer,
  attachments: { filename: string; contentType: string; content: Buffer }[],
): { code: number; message: string } | undefined {
  if (limits.limit_size_total_mime !== undefined && raw.length > limits.limit_size_total_mime) {
    return {
      code: 552,
      message: `5.3.4 message of ${raw.length} bytes exceeds the recipient's limit of ${limits.limit_size_total_mime}`,
    };
  }
  try {
    checkAttachmentLimits(limits, attachments);
  } catch (error) {
    return { code: 554, message: `5.7.1 refused by the recipient's policy: ${(error as Error).message}` };
  }
  return undefined;
}

export interface IngestResult {
  delivered: { grant_id: string; message_id: string; duplicate: boolean }[];
  unknown: string[];
  /** Mailboxes whose inbound rules blocked the message (nothing stored for them). */
  blocked?: number;
}

export async function ingestMessage(
  raw: Buffer,
  envelope: { mailFrom: string; recipients: string[] },
): Promise<IngestResult> {
  const { grants, unknown } = await resolveAgentAddresses(envelope.recipients.map(normalAddress));
  const result: IngestResult = { delivered: [], unknown };
  if (!grants.length) return result;

  const mail = await parseMime(raw);
  // Without a Message-ID the content itself identifies a retry of the same message.
  const messageIdHeader = mail.messageId ?? `<${createHash('sha256').update(raw).digest('hex')}@inbound.switchboard>`;
  const now = clock.nowSeconds();
  const from = mail.from.length ? mail.from : envelope.mailFrom ? [{ email: normalAddress(envelope.mailFrom) }] : [];
  // Each recipient mailbox stores its own copy; they share no items, so they are stored side by side.
  // The inbound rules of each mailbox's workspace decide first: a block stores nothing, other
  // actions place the copy before it is stored (message.created shows the result).
  const refusals: { code: number; message: string }[] = [];
  const stored = await Promise.all(
    grants.map(async (grant) => {
      // The limits of the mailbox's workspace policy first: a refused copy is not stored.
      const governance = await governanceOf(grant);
      const { limits } = governance;
      const refusal = receiptRefusal(limits, raw, mail.attachments);
      if (refusal) {
        refusals.push(refusal);
        return undefined;
      }
      if (
        limits.limit_count_daily_message_received !== undefined &&
        !(await sending.consumeReceiveQuota(
          grant.id,
          utcDay(),
          limits.limit_count_daily_message_received,
          now + 2 * 86400,
        ))
      ) {
        refusals.push({
          code: 452,
          message: `4.2.2 the mailbox has received its ${limits.limit_count_daily_message_received} messages for today`,
        });
        return undefined;
      }
      const decision = await governance.decide('inbound', {
        from: partyOf(from[0]?.email ?? envelope.mailFrom),
        recipients: [],
      });
      if (decision?.actions.blocked) {
        await recordEvaluation(evaluationOf(grant, 'inbox_processing', decision, null));
        return undefined;
      }
      const placed = decision
        ? await placementOf(grant, decision.actions, { folders: ['inbox'], unread: true, starred: false }, listFolders)
        : undefined;
      // A reply to a tracked message, a bounce of a sent one: announced with the stored copy.
      const notices = await inboundNotices(grant, mail, raw);
      const { record, duplicate } = await storeMessage({
        grant,
        ...parsedMessageFields(mail, raw),
        from,
        date: mail.date ?? now,
        unread: placed?.unread ?? true,
        starred: placed?.starred ?? false,
        folders: placed?.folders ?? ['inbox'],
        messageIdHeader,
        jobs: calendarJobs(grant, mail.attachments, from[0]?.email),
        ...(notices ? { also: notices } : {}),
      });
      if (decision && !duplicate)
        await recordEvaluation(
          evaluationOf(grant, 'inbox_processing', decision, record.id, { folder_ids: placed!.folderIds }),
        );
      return { grant_id: grant.id, message_id: record.id, duplicate };
    }),
  );
  result.delivered.push(...stored.filter((s) => s !== undefined));
  result.blocked = stored.filter((s) => s === undefined).length - refusals.length;
  // Refused by every receiving mailbox's policy: the sender is told (over SMTP) rather than the
  // message being accepted and dropped.
  if (refusals.length === grants.length) throw new IngestRefusedError(refusals[0]!.code, refusals[0]!.message);
  return result;
}
