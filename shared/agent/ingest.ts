import { createHash } from 'node:crypto';
import { normalAddress } from '#shared/agent/postings';
import { storeMessage } from '#shared/agent/store';
import { placementOf } from '#shared/agent/rules';
import { getAgentAddressOwner, getGrant, resolveAgentAddresses } from '#shared/db/grants';
import { decide, evaluationOf, partyOf, recordEvaluation } from '#shared/governance/decide';
import { parseMime } from '#shared/mail/parse';
import { clock } from '#shared/time';

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
export async function acceptsRecipient(address: string, mailFrom?: string): Promise<boolean | string> {
  const owner = await getAgentAddressOwner(normalAddress(address));
  if (!owner) return false;
  const from = partyOf(mailFrom);
  if (!from) return true;
  const grant = await getGrant(owner.application_id, owner.grant_id);
  if (!grant) return false;
  const decision = await decide(grant, 'inbound', { from, recipients: [] });
  if (!decision?.actions.blocked) return true;
  await recordEvaluation(evaluationOf(grant, 'smtp_rcpt', decision, null));
  return `<${address}>: message refused by the recipient's mail rules`;
}

export interface IngestResult {
  delivered: { grant_id: string; message_id: string; duplicate: boolean }[];
  unknown: string[];
  /** Mailboxes whose inbound rules blocked the message (nothing stored for them). */
  blocked?: number;
}

export async function ingestMessage(raw: Buffer, envelope: { mailFrom: string; recipients: string[] }): Promise<IngestResult> {
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
  const stored = await Promise.all(
    grants.map(async (grant) => {
      const decision = await decide(grant, 'inbound', { from: partyOf(from[0]?.email ?? envelope.mailFrom), recipients: [] });
      if (decision?.actions.blocked) {
        await recordEvaluation(evaluationOf(grant, 'inbox_processing', decision, null));
        return undefined;
      }
      const placed = decision ? await placementOf(grant, decision.actions, { folders: ['inbox'], unread: true, starred: false }) : undefined;
      const { record, duplicate } = await storeMessage({
        grant,
        subject: mail.subject,
        from,
        to: mail.to,
        cc: mail.cc,
        bcc: mail.bcc,
        replyTo: mail.replyTo,
        date: mail.date ?? now,
        unread: placed?.unread ?? true,
        starred: placed?.starred ?? false,
        folders: placed?.folders ?? ['inbox'],
        body: mail.html ?? mail.text ?? '',
        isPlaintext: mail.html === undefined,
        attachments: mail.attachments,
        headers: mail.headers,
        raw,
        metadata: {},
        messageIdHeader,
        inReplyTo: mail.inReplyTo,
        references: mail.references,
      });
      if (decision && !duplicate) await recordEvaluation(evaluationOf(grant, 'inbox_processing', decision, record.id, { folder_ids: placed!.folderIds }));
      return { grant_id: grant.id, message_id: record.id, duplicate };
    }),
  );
  result.delivered.push(...stored.filter((s) => s !== undefined));
  result.blocked = stored.filter((s) => s === undefined).length;
  return result;
}
