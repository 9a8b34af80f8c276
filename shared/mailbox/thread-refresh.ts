import { kinds } from '#shared/mailbox/postings';
import { AGGREGATED_FIELDS, aggregateThread, sameAggregate } from '#shared/mail/threading';
import type { ThreadRecord } from '#shared/mailbox/types';
import { postingPartition } from '#shared/db/keys';
import { getMessages, queryIds } from '#shared/db/messages';
import * as threads from '#shared/db/threads';
import { ThreadChangedError } from '#shared/db/threads';
import type { OutboxEntry } from '#shared/db/outbox';
import { getGrant } from '#shared/db/grants';
import { newId, type ApplicationId, type GrantId, type MessageId, type ThreadId } from '#shared/ids';
import type { Job } from '#shared/jobs/job';
import { logger } from '#shared/logger';
import { CONTENTION_ATTEMPTS, contentionPause } from '#shared/contention';
import { inPool } from '#shared/pool';

/**
 * An Agent Account thread's aggregate, recomputed from its messages (shared/mail/threading.ts) after
 * every change to them; the write is conditional on the version read, and retried when a concurrent
 * refresh won.
 */
const MAX_THREAD_MESSAGES = 1000;

/** Concurrent refreshes of one thread kept winning over this one. */
export class ThreadKeptChangingError extends Error {
  constructor(threadId: string) {
    super(`Thread ${threadId} kept changing while it was refreshed`);
    this.name = 'ThreadKeptChangingError';
  }
}

/**
 * The job committed with every change to a thread's messages (in the change's own transaction, an
 * outbox entry): whatever happens to the refresh a request makes at once, the aggregate converges.
 */
export const threadRefreshJob = (grant: { id: GrantId; application_id: string }, threadId: ThreadId): OutboxEntry => ({
  job: { kind: 'refresh-thread', application_id: grant.application_id, grant_id: grant.id, thread_id: threadId },
  id: newId('job'),
  applicationId: grant.application_id,
});

/** The refresh job, as the jobs worker runs it: nothing for a grant deleted since (its data is being purged). */
export async function runThreadRefreshJob(job: Extract<Job, { kind: 'refresh-thread' }>): Promise<void> {
  if (!(await getGrant(job.application_id as ApplicationId, job.grant_id as GrantId))) return;
  await refreshThread(job.grant_id as GrantId, job.thread_id as ThreadId);
}

/**
 * The refresh a request makes right after its change, so that the answer and the next read show it.
 * When concurrent refreshes keep winning (many changes to one thread at once), the request does not
 * fail for it: the change committed, and its committed refresh job brings the aggregate up to date.
 */
export async function refreshThreadNow(grantId: GrantId, threadId: ThreadId): Promise<ThreadRecord | undefined> {
  try {
    return await refreshThread(grantId, threadId);
  } catch (error) {
    if (!(error instanceof ThreadKeptChangingError)) throw error;
    logger.info('thread refresh left to its job', { grant_id: grantId, thread_id: threadId });
    return threads.getThread(grantId, threadId);
  }
}

/**
 * The thread refresh of a message-stored job: the request that stored the message refreshed its
 * thread when it could (shared/mailbox/store.ts), so the job recomputes it only when the aggregate does
 * not hold the message yet (a copy stored in a batch of local deliveries, or a request whose refresh
 * kept losing to concurrent ones): the thread is computed in one place, not twice.
 */
export async function refreshThreadFor(grantId: GrantId, threadId: ThreadId, messageId: MessageId): Promise<void> {
  const thread = await threads.getThread(grantId, threadId);
  if (thread?.message_ids.includes(messageId)) return;
  await refreshThread(grantId, threadId, { previous: thread });
}

/**
 * The IDs of a thread's messages, newest first, from its postings: what the thread holds now, even
 * when its aggregate is not refreshed yet (copies delivered locally leave that to their jobs).
 */
export async function threadMessageIds(grantId: GrantId, threadId: ThreadId): Promise<string[]> {
  return (await queryIds(postingPartition(grantId, kinds.thread(threadId)), {}, MAX_THREAD_MESSAGES)).ids;
}

/** `read`: the thread as the caller has just read it, used by the first attempt instead of reading it again. */
export async function refreshThread(
  grantId: GrantId,
  threadId: ThreadId,
  read?: { previous: ThreadRecord | undefined },
): Promise<ThreadRecord | undefined> {
  for (let attempt = 0; attempt < CONTENTION_ATTEMPTS; attempt++) {
    if (attempt) await contentionPause(attempt - 1);
    const previous = attempt === 0 && read ? read.previous : await threads.getThread(grantId, threadId);
    const [messagePage, draftPage] = await Promise.all([
      queryIds(postingPartition(grantId, kinds.thread(threadId)), {}, MAX_THREAD_MESSAGES),
      queryIds(postingPartition(grantId, kinds.draftThread(threadId)), {}, 100),
    ]);
    const messages = await getMessages(grantId, messagePage.ids, AGGREGATED_FIELDS);
    try {
      if (!messages.length) {
        if (previous) await threads.deleteThread(previous);
        return undefined;
      }
      const record = aggregateThread(grantId, threadId, messages, draftPage.ids, (previous?.version ?? 0) + 1, 'sent');
      // Already so (the request that changed a message refreshed it, and this is its job): nothing to write.
      if (previous && sameAggregate(previous, record)) return previous;
      await threads.putThread(record, previous);
      return record;
    } catch (error) {
      if (!(error instanceof ThreadChangedError)) throw error;
    }
  }
  throw new ThreadKeptChangingError(threadId);
}

/**
 * The threads of a batch of stored messages, brought up to date together (the messages-stored job):
 * the batch's thread records and messages are read in one BatchGet each, then per thread
 *   - an aggregate that already holds the batch's messages is left as it is;
 *   - a thread with no record yet is aggregated from the batch's messages alone, with no read of its
 *     postings: if another batch's messages belong to it too, the other batch's job finds this record
 *     without its messages (or loses the conditional write to it) and refreshes the thread whole;
 *   - any other thread is refreshed whole (refreshThread) from the record just read.
 * A write that loses to a concurrent refresh refreshes the thread whole. Threads that kept changing
 * are refreshed again by the job's next delivery: the error is thrown once every other thread is done.
 */
export async function refreshBatchThreads(
  grantId: GrantId,
  threadIds: readonly ThreadId[],
  messageIds: readonly MessageId[],
): Promise<void> {
  const unique = [...new Set(threadIds)];
  if (!unique.length) return;
  const [records, stored] = await Promise.all([
    threads.getThreads(grantId, unique),
    getMessages(grantId, [...messageIds], [...AGGREGATED_FIELDS, 'thread_id'] as const),
  ]);
  const previousOf = new Map(records.map((r) => [r.id, r]));
  const members = new Map<string, typeof stored>();
  for (const message of stored) members.set(message.thread_id, [...(members.get(message.thread_id) ?? []), message]);
  const failed: ThreadId[] = [];
  await inPool(unique, 8, async (threadId) => {
    const previous = previousOf.get(threadId);
    const batch = members.get(threadId) ?? [];
    try {
      if (previous && batch.length && batch.every((m) => previous.message_ids.includes(m.id))) return;
      if (!previous && batch.length) {
        // Newest first, as the thread's postings list them (by message ID, descending).
        const newestFirst = [...batch].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
        try {
          await threads.putThread(aggregateThread(grantId, threadId, newestFirst, [], 1, 'sent'));
          return;
        } catch (error) {
          if (!(error instanceof ThreadChangedError)) throw error;
        }
      }
      await refreshThread(grantId, threadId, previous ? { previous } : undefined);
    } catch (error) {
      if (!(error instanceof ThreadKeptChangingError)) throw error;
      failed.push(threadId);
    }
  });
  if (failed.length) throw new ThreadKeptChangingError(failed.join(', '));
}
