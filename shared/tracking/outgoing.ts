import type { GrantRecord } from '#shared/db/grants';
import type { TrackingSettings } from '#shared/db/mail-records';
import { transactWrite, type NamedTransactItem } from '#shared/db/transact';
import { logger } from '#shared/logger';
import { newId, type MessageId, type ThreadId } from '#shared/ids';
import { trackedAliasPut, trackedMessagePut } from '#shared/tracking/records';
import type { TrackedBody } from '#shared/tracking/rewrite';

/**
 * The tracking of one message being sent (an Agent Account's or an IMAP grant's send, a draft's, a
 * scheduled one's; a live provider's through liveTracking below): what composing does to its HTML
 * (composePrepared, shared/mailbox/send.ts), and the item the Sent copy's transaction commits so
 * that opens, clicks and replies find it. Undefined when the send tracks nothing. The message's ID
 * is taken before composing, since the tracking URLs name it.
 */
export interface OutgoingTracking {
  /** For composePrepared: undefined when only thread replies are tracked (the body is left as it is). */
  body?: TrackedBody;
  /** The tracked message's item, for the Sent copy's transaction. */
  item(record: SentMessage): NamedTransactItem;
}

/** What the tracked message's item takes of the message sent (a live provider's IDs are its own). */
interface SentMessage {
  id: string;
  thread_id: string;
  message_id_header?: string | undefined;
  date: number;
}

export function outgoingTracking(
  grant: GrantRecord,
  messageId: MessageId,
  settings: TrackingSettings | undefined,
): OutgoingTracking | undefined {
  if (!settings || (!settings.opens && !settings.links && !settings.thread_replies)) return undefined;
  const body: TrackedBody | undefined =
    (settings.opens || settings.links) && settings.domain_name
      ? {
          hostname: settings.domain_name,
          opens: settings.opens,
          links: settings.links,
          applicationId: grant.application_id,
          grantId: grant.id,
          messageId,
        }
      : undefined;
  return {
    ...(body ? { body } : {}),
    item: (record) =>
      trackedMessagePut({
        application_id: grant.application_id,
        grant_id: grant.id,
        message_id: record.id as MessageId,
        thread_id: record.thread_id as ThreadId,
        ...(record.message_id_header ? { message_id_header: record.message_id_header } : {}),
        sent_at: record.date,
        opens: settings.opens,
        links: settings.links,
        thread_replies: settings.thread_replies,
        ...(settings.label !== undefined ? { label: settings.label } : {}),
        ...(settings.domain_name !== undefined ? { domain_name: settings.domain_name } : {}),
      }),
  };
}

/**
 * The tracking of a message a live provider sends (A's Gmail, B's Graph), which names the message
 * only once it has left: the tracking URLs name an ID of ours (the alias), and once the provider
 * has answered, `items` record the tracked message under the provider's ID (where
 * `include_tracking_options` finds it, and what the notifications name), with the alias pointing at
 * it. Replies to it are not announced: the mail that arrives at a live provider is not read here.
 */
export function liveTracking(
  grant: GrantRecord,
  settings: TrackingSettings | undefined,
): (OutgoingTracking & { items(sent: SentMessage): NamedTransactItem[] }) | undefined {
  const alias = newId('message');
  const tracking = outgoingTracking(grant, alias, settings);
  if (!tracking) return undefined;
  return {
    ...tracking,
    items: (sent) => [tracking.item(sent), trackedAliasPut(grant.id, alias, sent.id as MessageId)],
  };
}

/**
 * Records a live provider's tracked message once it has left. A failure is logged, not thrown: the
 * message went, and its send answers (a retried send would send it again); its opens and clicks are
 * then not counted.
 */
export async function recordLiveTracking(
  grant: GrantRecord,
  tracking: NonNullable<ReturnType<typeof liveTracking>>,
  sent: SentMessage,
): Promise<void> {
  try {
    await transactWrite(tracking.items(sent));
  } catch (error) {
    logger.warn('the tracking of a sent message was not recorded', {
      grant_id: grant.id,
      message_id: sent.id,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}
