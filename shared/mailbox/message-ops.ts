import { storedLegacyPostings } from '#shared/mailbox/blobs';
import { removeContentsJob, removeContentsNow } from '#shared/mailbox/cleanup';
import { messagePostings, mutablePostings } from '#shared/mailbox/postings';
import { folderDeltas, mergeDeltas, viewOf } from '#shared/mailbox/store';
import { refreshThreadNow, threadRefreshJob } from '#shared/mailbox/thread-refresh';
import type { MessageRecord } from '#shared/mailbox/types';
import type { MessageView } from '#shared/mailbox/views';
import { requireFolders } from '#shared/mailbox/folders';
import type { GrantRecord } from '#shared/db/grants';
import * as messages from '#shared/db/messages';
import { MessageConflictError } from '#shared/db/messages';
import { ConflictError, NotFoundError } from '#shared/errors';
import { newNotification } from '#shared/notifications/notification';
import { clock } from '#shared/time';
import { CONTENTION_ATTEMPTS, contentionPause } from '#shared/contention';
import type { NamedItems } from '#shared/db/transact';

/** Changes to the mutable state of messages: read and star state, folders, metadata, deletion. */
export interface MessageChanges {
  unread?: boolean;
  starred?: boolean;
  folders?: string[];
  /** Replaces the metadata object (nested objects are replaced, as the spec says). */
  metadata?: Record<string, string>;
}

function applyChanges(record: MessageRecord, changes: MessageChanges, server?: ChangeOptions['server']): MessageRecord {
  return {
    ...record,
    ...(server ? { server_uids: server.uids } : {}),
    ...(changes.unread !== undefined ? { unread: changes.unread } : {}),
    ...(changes.starred !== undefined ? { starred: changes.starred } : {}),
    ...(changes.folders !== undefined ? { folders: changes.folders } : {}),
    ...(changes.metadata !== undefined ? { metadata: changes.metadata } : {}),
    updated_at: clock.nowSeconds(),
    version: record.version + 1,
  };
}

const sameState = (a: MessageRecord, b: MessageRecord) =>
  a.unread === b.unread &&
  a.starred === b.starred &&
  JSON.stringify(a.folders) === JSON.stringify(b.folders) &&
  JSON.stringify(a.metadata) === JSON.stringify(b.metadata);

/**
 * How a change fits in a larger one. `threadBatch`: the caller changes every message of one thread,
 * has checked the folders once, and refreshes the thread once afterwards.
 */
export interface ChangeOptions {
  threadBatch?: boolean;
  /**
   * A change a sync found on the message's server (or made there first): the message's UIDs there
   * afterwards, items committed with it (its locations), and whether it is announced
   * (message.updated; not while a first sync is storing history).
   */
  server?: { uids: Record<string, string>; also: NamedItems; announce: boolean };
}

/**
 * Applies changes to one message: its item, counters, mutable indexes and `message.updated` in one
 * transaction, then its thread. A concurrent change of the same message is retried on the
 * fresh copy, so two clients marking it read and starring it both win.
 */
export async function changeMessage(
  grant: GrantRecord,
  record: MessageRecord,
  changes: MessageChanges,
  options: ChangeOptions = {},
): Promise<{ record: MessageRecord; view: MessageView }> {
  if (changes.folders && !options.threadBatch && !options.server) await requireFolders(grant.id, changes.folders);
  let current = record;
  for (let attempt = 0; ; attempt++) {
    const after = applyChanges(current, changes, options.server);
    const sameUids = JSON.stringify(current.server_uids) === JSON.stringify(after.server_uids);
    if (sameState(current, after) && sameUids && !options.server?.also.length)
      return { record: current, view: await viewOf(current) };
    const before = new Set(mutablePostings(current));
    const next = new Set(mutablePostings(after));
    const view = await viewOf(after);
    const announce = options.server ? options.server.announce && !sameState(current, after) : true;
    const updated = newNotification({
      type: 'message.updated',
      applicationId: grant.application_id,
      grantId: grant.id,
      object: view,
    });
    try {
      await messages.updateMessage(
        current,
        after,
        { removed: [...before].filter((k) => !next.has(k)), added: [...next].filter((k) => !before.has(k)) },
        mergeDeltas(folderDeltas(current, -1), folderDeltas(after, 1)),
        [
          ...(announce ? [{ notification: updated, bodyKey: after.body_key }] : []),
          threadRefreshJob(grant, after.thread_id),
        ],
        options.server?.also,
      );
      if (!options.threadBatch) await refreshThreadNow(grant.id, after.thread_id);
      return { record: after, view };
    } catch (error) {
      if (!(error instanceof MessageConflictError) || attempt + 1 >= CONTENTION_ATTEMPTS) {
        if (error instanceof MessageConflictError)
          throw new ConflictError('The message kept changing during the update; retry');
        throw error;
      }
      await contentionPause(attempt);
      const fresh = await messages.getMessage(grant.id, current.id);
      if (!fresh) throw new NotFoundError(`Message '${current.id}' not found`);
      current = fresh;
    }
  }
}

/**
 * Deletes a message for good: item, indexes (a tombstone for its search entry), counters, contents in S3; then its thread.
 * `server`: the message is gone from its server (a sync saw it go): items committed with it (its locations) and message.deleted.
 */
export async function hardDeleteMessage(
  grant: GrantRecord,
  record: MessageRecord,
  server?: { also: NamedItems },
): Promise<void> {
  let current = record;
  // Only a message stored before the search index has postings outside its transaction (read once).
  const legacy = await storedLegacyPostings(record);
  let removal;
  for (let attempt = 0; ; attempt++) {
    // What nothing points to once the message is gone: its contents (and legacy postings).
    removal = removeContentsJob(grant, current.id, {
      postings: legacy,
      blobs: [current.raw_key, current.body_key, ...current.attachments.filter((a) => !a.on_server).map((a) => a.key)],
    });
    try {
      const deleted = server
        ? [
            {
              notification: newNotification({
                type: 'message.deleted',
                applicationId: grant.application_id,
                grantId: grant.id,
                object: { id: current.id, object: 'message', grant_id: grant.id },
              }),
            },
          ]
        : [];
      await messages.deleteMessage(
        current,
        { postings: messagePostings(current) },
        folderDeltas(current, -1),
        [threadRefreshJob(grant, current.thread_id), removal, ...deleted],
        server?.also,
      );
      break;
    } catch (error) {
      if (!(error instanceof MessageConflictError) || attempt + 1 >= CONTENTION_ATTEMPTS) throw error;
      await contentionPause(attempt);
      const fresh = await messages.getMessage(grant.id, current.id);
      if (!fresh) return;
      current = fresh;
    }
  }
  await removeContentsNow(removal);
  await refreshThreadNow(grant.id, current.thread_id);
}

/** DELETE without hard_delete: the message moves to Trash (and stays there if it already is). */
export async function trashMessage(
  grant: GrantRecord,
  record: MessageRecord,
  options: ChangeOptions = {},
): Promise<void> {
  if (record.folders.length === 1 && record.folders[0] === 'trash') return;
  await changeMessage(grant, record, { folders: ['trash'] }, options);
}
