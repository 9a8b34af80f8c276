import { composePrepared, type PreparedMessage } from '#shared/mailbox/send';
import type { GrantRecord } from '#shared/db/grants';
import { googleClientOf, type GoogleRequest } from '#shared/google/client';
import { gmailMessages } from '#shared/google/messages';
import { newId } from '#shared/ids';
import type { Message } from '#shared/providers/contract';
import { clock } from '#shared/time';
import { liveTracking, recordLiveTracking } from '#shared/tracking/outgoing';

/**
 * Provider A's submission: a prepared message (shared/mailbox/send.ts) composed as MIME and handed to
 * Gmail's users.messages.send, which delivers it and keeps the Sent copy. Used by sends, scheduled
 * sends and mail the API sends from the account (shared/google/account-mail.ts).
 */
/**
 * The largest message sent to Gmail as `raw` inside a JSON body. Larger ones (attachments named by
 * upload, up to Gmail's 35 MB) go as a media upload: the MIME as it is, a third smaller than its
 * base64 in JSON.
 */
export const RAW_IN_JSON_MAX = 5 * 1024 * 1024;

/**
 * What a call carrying a whole message sends (messages.send, drafts.create, drafts.update): the
 * Message resource `fields` with `raw`, or, for a large message, the same without `raw` as the
 * upload's metadata and the MIME as its media. `wrap` places the Message in the call's body.
 */
export function gmailMessagePayload(
  raw: Buffer,
  fields: { threadId?: string },
  wrap: (message: object) => object = (message) => message,
): Pick<GoogleRequest, 'body' | 'media'> {
  return raw.length <= RAW_IN_JSON_MAX
    ? { body: wrap({ ...fields, raw: raw.toString('base64url') }) }
    : { body: wrap(fields), media: { contentType: 'message/rfc822', content: raw } };
}

/** Hands a prepared message to Gmail (which delivers it and keeps the Sent copy); the copy as Gmail holds it. */
export async function sendThroughGmail(
  grant: GrantRecord,
  prepared: PreparedMessage,
  beforeRelay: () => void | Promise<void>,
): Promise<Message> {
  const domain = grant.email.slice(grant.email.lastIndexOf('@') + 1);
  const header = `<${newId('message').slice(4)}@${domain}>`;
  const tracking = liveTracking(grant, prepared.tracking);
  const raw = await composePrepared(prepared, header, new Date(clock.nowMs()), tracking);
  const client = await googleClientOf(grant);
  await beforeRelay();
  const sent = await client.call<{ id: string }>({
    api: 'gmail',
    method: 'POST',
    path: '/gmail/v1/users/me/messages/send',
    ...gmailMessagePayload(raw, prepared.threadId ? { threadId: prepared.threadId } : {}),
  });
  const message = await gmailMessages.get(grant, sent.id, {});
  if (tracking) await recordLiveTracking(grant, tracking, { ...message, message_id_header: header });
  return message;
}
