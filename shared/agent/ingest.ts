import { createHash } from 'node:crypto';
import { normalAddress } from '#shared/agent/postings';
import { storeMessage } from '#shared/agent/store';
import { getAgentAddressOwner, resolveAgentAddresses } from '#shared/db/grants';
import { parseMime } from '#shared/mail/parse';
import { clock } from '#shared/time';

/**
 * Inbound mail for Agent Accounts, whatever carried it: the local SMTP listener (`npm start`) or, on
 * AWS, SES receipt → S3 → the `inbound` function. A message is stored once per receiving mailbox
 * (several of its addresses among the recipients still make one copy) and is deduplicated by its
 * Message-ID, so a sender retrying after a lost acknowledgement does not create a second copy.
 */
export async function acceptsRecipient(address: string): Promise<boolean> {
  return (await getAgentAddressOwner(normalAddress(address))) !== undefined;
}

export interface IngestResult {
  delivered: { grant_id: string; message_id: string; duplicate: boolean }[];
  unknown: string[];
}

export async function ingestMessage(raw: Buffer, envelope: { mailFrom: string; recipients: string[] }): Promise<IngestResult> {
  const { grants, unknown } = await resolveAgentAddresses(envelope.recipients.map(normalAddress));
  const result: IngestResult = { delivered: [], unknown };
  if (!grants.length) return result;

  const mail = await parseMime(raw);
  // Without a Message-ID the content itself identifies a retry of the same message.
  const messageIdHeader = mail.messageId ?? `<${createHash('sha256').update(raw).digest('hex')}@inbound.switchboard>`;
  const now = clock.nowSeconds();
  // Each recipient mailbox stores its own copy; they share no items, so they are stored side by side.
  const stored = await Promise.all(
    grants.map(async (grant) => {
      const { record, duplicate } = await storeMessage({
        grant,
        subject: mail.subject,
        from: mail.from.length ? mail.from : envelope.mailFrom ? [{ email: normalAddress(envelope.mailFrom) }] : [],
        to: mail.to,
        cc: mail.cc,
        bcc: mail.bcc,
        replyTo: mail.replyTo,
        date: mail.date ?? now,
        unread: true,
        starred: false,
        folders: ['inbox'],
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
      return { grant_id: grant.id, message_id: record.id, duplicate };
    }),
  );
  result.delivered.push(...stored);
  return result;
}
