import { composePrepared, type PreparedMessage } from '#shared/mailbox/send';
import type { GrantRecord } from '#shared/db/grants';
import { googleClientOf } from '#shared/google/client';
import { gmailMessages } from '#shared/google/messages';
import { newId } from '#shared/ids';
import type { Message } from '#shared/providers/contract';
import { clock } from '#shared/time';

/**
 * Provider A's submission: a prepared message (shared/mailbox/send.ts) composed as MIME and handed to
 * Gmail's users.messages.send, which delivers it and keeps the Sent copy. Used by sends, scheduled
 * sends and mail the API sends from the account (shared/google/account-mail.ts).
 */
/** Hands a prepared message to Gmail (which delivers it and keeps the Sent copy); the copy as Gmail holds it. */
export async function sendThroughGmail(
  grant: GrantRecord,
  prepared: PreparedMessage,
  beforeRelay: () => void | Promise<void>,
): Promise<Message> {
  const domain = grant.email.slice(grant.email.lastIndexOf('@') + 1);
  const raw = await composePrepared(prepared, `<${newId('message').slice(4)}@${domain}>`, new Date(clock.nowMs()));
  const client = await googleClientOf(grant);
  await beforeRelay();
  const sent = await client.call<{ id: string }>({
    api: 'gmail',
    method: 'POST',
    path: '/gmail/v1/users/me/messages/send',
    body: { raw: raw.toString('base64url'), ...(prepared.threadId ? { threadId: prepared.threadId } : {}) },
  });
  return gmailMessages.get(grant, sent.id, {});
}
