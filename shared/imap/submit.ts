import { composePrepared, type PreparedMessage, type SendClaims } from '#shared/mailbox/send';
import { storeServerMessages } from '#shared/mailbox/store';
import * as folders from '#shared/db/folders';
import type { GrantRecord } from '#shared/db/grants';
import type { MessageRecord } from '#shared/db/mail-records';
import { locationPut, serverPlace, touchSyncState } from '#shared/db/mail-sync';
import type { OutboxEntry } from '#shared/db/outbox';
import type { NamedItems } from '#shared/db/transact';
import { MailDeliveryError } from '#shared/errors';
import { newId, type MessageId } from '#shared/ids';
import { submitSmtp } from '#shared/imap/connect';
import { mailAccessOf, withImap } from '#shared/imap/session';
import { imapMessageId } from '#shared/imap/sync';
import { clock } from '#shared/time';
import { outgoingTracking } from '#shared/tracking/outgoing';

/**
 * Sends a prepared message from an IMAP grant: submits it, puts the copy in Sent and stores it
 * (message.created); `commit` adds items and entries to the stored copy's transaction. `claims` (a
 * draft's) are taken right before the submission, given up if the server refuses the message, and
 * converted by the stored copy's transaction. A message, a due scheduled send and a draft
 * (shared/imap/draft-send.ts) are all sent by it.
 */
export async function submitAndStore(
  grant: GrantRecord,
  prepared: PreparedMessage,
  options: {
    id?: MessageId;
    beforeRelay?: () => Promise<void>;
    commit?: (record: MessageRecord) => { items: NamedItems; outbox: OutboxEntry[] };
    claims?: SendClaims;
  } = {},
): Promise<MessageRecord> {
  const access = await mailAccessOf(grant);
  const domain = grant.email.slice(grant.email.lastIndexOf('@') + 1);
  const messageIdHeader = `<${newId('message').slice(4)}@${domain}>`;
  const date = new Date(clock.nowMs());
  // Taken before composing: the tracking URLs in the MIME name the stored copy.
  const id = options.id ?? imapMessageId(messageIdHeader, Math.floor(date.getTime() / 1000));
  const tracking = outgoingTracking(grant, id, prepared.tracking);
  const raw = await composePrepared(prepared, messageIdHeader, date, tracking);
  // The copy in Sent is the message as written: its reader (the sender) must not count as an open.
  const copy = tracking?.body ? await composePrepared(prepared, messageIdHeader, date) : raw;
  const recipients = [...new Set([...prepared.to, ...prepared.cc, ...prepared.bcc].map((p) => p.email))];
  await options.claims?.take();
  await options.beforeRelay?.();
  const refusal = await submitSmtp(access.account.smtp, access.smtp, raw, {
    from: prepared.from.email,
    to: recipients,
  }).then(
    () => undefined,
    (error: unknown) => {
      if (error instanceof MailDeliveryError) return error;
      throw error;
    },
  );
  if (refusal) {
    // The server's answer that nothing left: the claims go now (a retry sends at once) rather than lapse.
    await options.claims?.giveUp();
    throw refusal;
  }

  // The copy in Sent (when the account has one): where the next sync will find it.
  const sent = await folders.getFolder(grant.id, 'sent');
  const appended = sent?.server_path
    ? await withImap(grant, (client) => client.append(sent.server_path!, copy, ['\\Seen'], date)).catch(
        () => false as const,
      )
    : false;
  const place =
    appended && appended.uid !== undefined && appended.uidValidity !== undefined
      ? { uid: appended.uid, uidValidity: String(appended.uidValidity) }
      : undefined;
  const [stored] = await storeServerMessages(grant, [
    {
      grant,
      id,
      ...(prepared.threadId ? { threadId: prepared.threadId } : {}),
      subject: prepared.subject,
      from: [prepared.from],
      to: prepared.to,
      cc: prepared.cc,
      bcc: prepared.bcc,
      replyTo: prepared.replyTo,
      date: Math.floor(date.getTime() / 1000),
      unread: false,
      starred: prepared.starred,
      // Not in Sent when the server took no copy: the next sync places it if the server filed one itself.
      folders: place ? ['sent'] : [],
      body: prepared.body,
      isPlaintext: prepared.isPlaintext,
      attachments: prepared.attachments,
      headers: prepared.headers,
      raw: copy,
      metadata: prepared.metadata,
      messageIdHeader,
      ...(prepared.inReplyTo ? { inReplyTo: prepared.inReplyTo } : {}),
      references: prepared.references,
      server: { uids: place ? { sent: serverPlace(place.uidValidity, place.uid) } : {}, quiet: false },
      also: (record) => {
        const extra = options.commit?.(record) ?? { items: [], outbox: [] };
        const converted = options.claims?.convert() ?? { items: [], outbox: [] };
        const location = place
          ? [
              [
                'location',
                locationPut(grant.id, {
                  folder_id: 'sent',
                  uid_validity: place.uidValidity,
                  uid: place.uid,
                  message_id: id,
                  flags: ['\\Seen'],
                }),
              ] as const,
            ]
          : [];
        return {
          items: [...location, ...extra.items, ...converted.items, ...(tracking ? [tracking.item(record)] : [])],
          outbox: [...extra.outbox, ...converted.outbox],
        };
      },
    },
  ]);
  await touchSyncState(grant.id, clock.nowSeconds());
  return stored!.record;
}
