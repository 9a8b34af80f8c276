import { messageView } from '#shared/mailbox/views';
import { isMessageItem, messageOfItem } from '#shared/db/messages';
import type { Outgoing, StoredItemReader } from '#shared/providers/contract';
import type { MessageRecord } from '#shared/mailbox/types';
import type { Job } from '#shared/jobs/job';
import type { ApplicationId, GrantId, MessageId, NotificationId } from '#shared/ids';
import { newNotification, type Notification } from '#shared/notifications/notification';

/**
 * What a stored message announces and sets going, derived from the message item itself as the
 * table's stream carries its insertion to the outbox consumer (shared/db/messages.ts): the item is
 * its own outbox entry, so a message is never stored without them, and no other item is written
 * for them. Derived again on every retry, they are the same each time: the notification's ID is the
 * message's own ULID under the notification prefix (one message.created per message), its time the
 * message's creation.
 */
export function messageCreatedNotification(record: MessageRecord, applicationId: string, body: string): Notification {
  return newNotification({
    type: 'message.created',
    applicationId: applicationId as ApplicationId,
    grantId: record.grant_id as GrantId,
    object: messageView(record, { body }),
    id: createdNotificationId(record.id),
    time: record.created_at,
  });
}

export const createdNotificationId = (messageId: MessageId): NotificationId =>
  `ntf_${messageId.slice(messageId.indexOf('_') + 1)}` as NotificationId;

/** The message-stored job: its thread's refresh, then a merge of its mailbox's search entries (shared/mailbox/search-index.ts). */
export const messageStoredJob = (
  record: MessageRecord,
  applicationId: string,
): Extract<Job, { kind: 'message-stored' }> => ({
  kind: 'message-stored',
  application_id: applicationId,
  grant_id: record.grant_id,
  thread_id: record.thread_id,
  message_id: record.id,
});

/** The Agent Account store's self-announcing items (shared/registries/stored-items.ts): inserted messages. */
export const agentStoredItems: StoredItemReader = {
  owns: isMessageItem,
  async outgoing(item, readBody) {
    if (!isMessageItem(item)) return [];
    const message = messageOfItem(item);
    const body = message.body_key ? await readBody(message.body_key) : (message.body ?? '');
    // A synced message's thread and search merge are its batch's messages-stored job (shared/mailbox/store.ts storeServerMessages).
    const jobs: Outgoing[] = message.server_uids
      ? []
      : [{ kind: 'job', job: messageStoredJob(message, item.application_id) }];
    // History stored by a first sync is not news: no message.created (the spec: notifications are for future changes only).
    if (message.quiet) return jobs;
    return [
      { kind: 'notification', notification: messageCreatedNotification(message, item.application_id, body) },
      ...jobs,
    ];
  },
};
