import { runRemoveContents } from '#shared/mailbox/cleanup';
import { runMergeSearchJob, runMessageStoredJob, runMessagesStoredJob } from '#shared/mailbox/search-index';
import { runThreadRefreshJob } from '#shared/mailbox/thread-refresh';
import { purgeCalendarEvents } from '#shared/db/events';
import { collectInboxContacts } from '#shared/contacts/collect';
import type { ApplicationId, CalendarId, GrantId, MessageId } from '#shared/ids';
import type { ProviderJobs } from '#shared/providers/contract';

/**
 * The jobs the Agent Account's own storage commits (shared/registries/jobs.ts): its threads, its
 * search index, the contacts its mail collects, contents nothing points to any more, and the events
 * of a deleted calendar.
 */
export const agentJobs: ProviderJobs = {
  // Throws while concurrent refreshes keep winning: SQS delivers the job again later.
  'refresh-thread': async (job) => {
    await runThreadRefreshJob(job);
    return 'done';
  },
  // Throws while concurrent refreshes of its thread keep winning: SQS delivers the job again later.
  'message-stored': async (job, outOfTime) => {
    await runMessageStoredJob(job, outOfTime);
    await collectInboxContacts(job.application_id as ApplicationId, job.grant_id as GrantId, [
      job.message_id as MessageId,
    ]);
    return 'done';
  },
  'messages-stored': async (job, outOfTime) => {
    await runMessagesStoredJob(job, outOfTime);
    await collectInboxContacts(
      job.application_id as ApplicationId,
      job.grant_id as GrantId,
      (job.message_ids ?? []) as MessageId[],
    );
    return 'done';
  },
  'merge-search': async (job, outOfTime) => {
    await runMergeSearchJob(job, outOfTime);
    return 'done';
  },
  // Committed by a version before the search index: the message's postings were written then.
  'index-message': async () => 'done',
  'remove-contents': async (job) => {
    await runRemoveContents(job);
    return 'done';
  },
  'purge-calendar': (job, outOfTime) =>
    purgeCalendarEvents(job.grant_id as GrantId, job.calendar_id as CalendarId, outOfTime),
};
