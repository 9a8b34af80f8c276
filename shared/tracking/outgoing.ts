import type { GrantRecord } from '#shared/db/grants';
import type { MessageRecord, TrackingSettings } from '#shared/db/mail-records';
import type { NamedTransactItem } from '#shared/db/transact';
import type { MessageId } from '#shared/ids';
import { trackedMessagePut } from '#shared/tracking/records';
import type { TrackedBody } from '#shared/tracking/rewrite';

/**
 * The tracking of one message being sent (an Agent Account's send, a draft's): what composing does
 * to its HTML (shared/mail/compose.ts), and the item the Sent copy's transaction commits so that
 * opens, clicks and replies find it. Undefined when the send tracks nothing. The message's ID is
 * taken before composing, since the tracking URLs name it.
 */
export interface OutgoingTracking {
  /** For composePrepared: undefined when only thread replies are tracked (the body is left as it is). */
  body?: TrackedBody;
  /** The tracked message's item, for the Sent copy's transaction. */
  item(record: MessageRecord): NamedTransactItem;
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
        message_id: record.id,
        thread_id: record.thread_id,
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
