import type { RepliedMessage } from '#shared/mailbox/send';
import type { GrantRecord } from '#shared/db/grants';
import { NotFoundError } from '#shared/errors';
import { googleClientOf, GoogleNotFoundError } from '#shared/google/client';
import type { GmailMessage } from '#shared/google/gmail-message';

/**
 * What a reply composed for provider A needs of the message it answers (sends and drafts alike): its
 * Gmail thread, Message-ID and References. A module of its own so that drafts do not bundle sending.
 */
/** The message a reply answers, from Gmail (its headers only). */
export async function repliedOnGmail(grant: GrantRecord, messageId: string): Promise<RepliedMessage> {
  if (!/^[0-9a-zA-Z_-]{1,64}$/.test(messageId))
    throw new NotFoundError(`No message '${messageId}' in this grant's mailbox`);
  const client = await googleClientOf(grant);
  let message: GmailMessage;
  try {
    message = await client.call<GmailMessage>({
      api: 'gmail',
      path: `/gmail/v1/users/me/messages/${messageId}`,
      query: { format: 'metadata', metadataHeaders: ['Message-ID', 'References'] },
    });
  } catch (error) {
    if (error instanceof GoogleNotFoundError)
      throw new NotFoundError(`No message '${messageId}' in this grant's mailbox`);
    throw error;
  }
  const header = (name: string) =>
    message.payload?.headers?.find((h) => h.name?.toLowerCase() === name.toLowerCase())?.value?.trim();
  return {
    thread_id: message.threadId,
    message_id_header: header('Message-ID'),
    references: (header('References') ?? '').split(/\s+/).filter(Boolean),
  };
}
