import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { runRemoveContents } from '#shared/agent/cleanup';
import { runApplyItip, runSendItip, runSendMail } from '#shared/agent/itip';
import { syncReminders } from '#shared/scheduling/reminder-schedules';
import { runBookingEventJob } from '#shared/scheduling/booking-events';
import { runLocalDelivery } from '#shared/mail/local-delivery';
import { runThreadRefreshJob } from '#shared/agent/thread-refresh';
import { runMergeSearchJob, runMessageStoredJob } from '#shared/agent/search-index';
import { purgeListItems } from '#shared/db/governance';
import { purgeCalendarEvents } from '#shared/db/events';
import type { CalendarId, GrantId, ListId, WebhookId } from '#shared/ids';
import { eachMessage } from '#shared/jobs/batch';
import { enqueueJob, type Job } from '#shared/jobs/queue';
import { logger } from '#shared/logger';
import { purgeOf } from '#shared/providers/purge';
import { purgeDeletedWebhook } from '#shared/webhooks/retention';

/**
 * The jobs worker (SQS, batch size 1). A failed job is retried by SQS and lands in the DLQ after
 * three receives; a long job that runs out of time enqueues its own continuation instead.
 */
const RESERVE_MS = 60_000;

async function run(job: Job, context: Context): Promise<void> {
  switch (job.kind) {
    case 'purge-grant': {
      const purge = purgeOf(job.provider);
      const outcome = purge ? await purge(job.grant_id as GrantId, () => context.getRemainingTimeInMillis() < RESERVE_MS) : 'done';
      if (outcome === 'more') await enqueueJob(job);
      logger.info('purge-grant', { grant_id: job.grant_id, outcome });
      return;
    }
    case 'purge-webhook': {
      await purgeDeletedWebhook(job.webhook_id as WebhookId);
      logger.info('purge-webhook', { webhook_id: job.webhook_id });
      return;
    }
    case 'refresh-thread': {
      // Throws while concurrent refreshes keep winning: SQS delivers the job again later.
      await runThreadRefreshJob(job);
      return;
    }
    case 'message-stored': {
      // Throws while concurrent refreshes of its thread keep winning: SQS delivers the job again later.
      await runMessageStoredJob(job, () => context.getRemainingTimeInMillis() < RESERVE_MS);
      return;
    }
    case 'merge-search': {
      await runMergeSearchJob(job, () => context.getRemainingTimeInMillis() < RESERVE_MS);
      return;
    }
    case 'index-message': {
      // Committed by a version before the search index: the message's postings were written then.
      return;
    }
    case 'remove-contents': {
      await runRemoveContents(job);
      return;
    }
    case 'purge-list': {
      const outcome = await purgeListItems(job.list_id as ListId, () => context.getRemainingTimeInMillis() < RESERVE_MS);
      if (outcome === 'more') await enqueueJob(job);
      logger.info('purge-list', { list_id: job.list_id, outcome });
      return;
    }
    case 'purge-calendar': {
      const outcome = await purgeCalendarEvents(job.grant_id as GrantId, job.calendar_id as CalendarId, () => context.getRemainingTimeInMillis() < RESERVE_MS);
      if (outcome === 'more') await enqueueJob(job);
      logger.info('purge-calendar', { calendar_id: job.calendar_id, outcome });
      return;
    }
    case 'send-itip': {
      await runSendItip(job);
      return;
    }
    case 'send-mail': {
      await runSendMail(job);
      return;
    }
    case 'booking-reminders': {
      await syncReminders(job.booking_id);
      return;
    }
    case 'booking-event': {
      // Throws on a transient provider failure: SQS delivers the job again later.
      await runBookingEventJob(job);
      return;
    }
    case 'apply-itip': {
      await runApplyItip(job);
      return;
    }
    case 'deliver-local': {
      const outcome = await runLocalDelivery(job, () => context.getRemainingTimeInMillis() < RESERVE_MS);
      if (!outcome.done) await enqueueJob(outcome.rest);
      return;
    }
    default: {
      const exhaustive: never = job;
      throw new Error(`Unknown job ${JSON.stringify(exhaustive)}`);
    }
  }
}

export const handler = (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => eachMessage<Job>(event, 'job failed', (job) => run(job, context));
