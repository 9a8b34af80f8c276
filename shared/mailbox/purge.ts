import { grantPrefix, storedLegacyPostings } from '#shared/mailbox/blobs';
import { deletePrefix } from '#shared/aws/mail-bucket';
import { kinds, messagePostings } from '#shared/mailbox/postings';
import { searchPrefix } from '#shared/mailbox/search-index';
import type { DraftRecord, MessageRecord } from '#shared/mailbox/types';
import { batchWrite, deleteRequests } from '#shared/db/batch';
import { allCalendars } from '#shared/db/calendars';
import { purgeCalendarEvents } from '#shared/db/events';
import {
  draftKey,
  draftsOfGrant,
  grantPartitions,
  messageIdHeaderKey,
  messageKey,
  messagesOfGrant,
  postingKey,
  type Key,
} from '#shared/db/keys';
import { deletePartition, listRecords } from '#shared/db/records';
import { deleteSearchManifest } from '#shared/db/search';
import type { GrantId } from '#shared/ids';

/**
 * Deletes everything an Agent Account mailbox stored, after its grant was deleted. Postings are
 * recomputed from each message (no scan needed to find them); then the grant's partitions (the
 * search entries among them), the search manifest and its S3 prefixes (contents, search segments)
 * go. Idempotent and resumable: a run that stops early leaves work a retry finishes.
 */
const PAGE = 100;

export async function purgeAgentMailbox(
  grantId: GrantId,
  shouldStop: () => boolean = () => false,
): Promise<'done' | 'more'> {
  // Messages, newest first, a page at a time; each page is deleted before the next is read.
  // Every step deletes a page before looking at the clock, so each run makes progress.
  for (;;) {
    const page = await listRecords<MessageRecord>(messagesOfGrant(grantId).pk, { limit: PAGE });
    if (!page.items.length) break;
    // Postings of messages stored before the search index may need the body from S3: read side by side.
    const keys: Key[] = (
      await Promise.all(
        page.items.map(async (message) => {
          const postings = [...messagePostings(message), ...(await storedLegacyPostings(message).catch(() => []))];
          return [
            ...postings.map((kind) => postingKey(grantId, kind, message.id)),
            ...(message.message_id_header ? [messageIdHeaderKey(grantId, message.message_id_header)] : []),
            messageKey(grantId, message.id),
          ];
        }),
      )
    ).flat();
    await batchWrite(deleteRequests(keys));
    if (shouldStop()) return 'more';
  }
  for (;;) {
    const page = await listRecords<DraftRecord>(draftsOfGrant(grantId).pk, { limit: PAGE });
    if (!page.items.length) break;
    await batchWrite(
      deleteRequests(
        page.items.flatMap((d) => [
          ...(d.thread_id ? [postingKey(grantId, kinds.draftThread(d.thread_id), d.id)] : []),
          draftKey(grantId, d.id),
        ]),
      ),
    );
    if (shouldStop()) return 'more';
  }
  // Events of every calendar, before the calendars themselves go with the grant's partitions.
  for (const calendar of await allCalendars(grantId)) {
    if ((await purgeCalendarEvents(grantId, calendar.id, shouldStop)) === 'more') return 'more';
  }
  for (const pk of grantPartitions(grantId)) await deletePartition(pk);
  await deleteSearchManifest(grantId);
  await deletePrefix(grantPrefix(grantId));
  await deletePrefix(searchPrefix(grantId));
  return 'done';
}
