import { startMailSync } from '#shared/services/mail-sync';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { runApplyItip, runSendItip, runSendMail } from '#shared/services/itip';
import { purgeListItems } from '#shared/db/governance';
import type { GrantId, ListId, WebhookId } from '#shared/ids';
import { eachMessage } from '#shared/jobs/batch';
import type { Job } from '#shared/jobs/job';
import { readJob } from '#shared/jobs/payloads';
import { enqueueJob } from '#shared/jobs/queue';
import { logger } from '#shared/logger';
import { runLocalDelivery } from '#shared/services/local-delivery';
import { runProviderJob } from '#shared/registries/jobs';
import { purgeOf } from '#shared/registries/purge';
import { runBookingEventJob } from '#shared/scheduling/booking-events';
import { runGroupEventDelete } from '#shared/scheduling/group-events';
import { syncReminders } from '#shared/scheduling/reminder-schedules';
import { purgeDeletedWebhook } from '#shared/webhooks/retention';

/**
 * The jobs worker (functions/jobs; SQS, batch size 1): each message is read at the queue boundary
 * (shared/jobs/payloads.ts) and run by kind, the provider-owned kinds through their provider
 * (shared/registries/jobs.ts). A failed job is retried by SQS and lands in the DLQ after three
 * receives; a long job that runs out of time enqueues its own continuation instead.
 */
const RESERVE_MS = 60_000;

export async function runJob(job: Job, outOfTime: () => boolean): Promise<void> {
  switch (job.kind) {
    case 'purge-grant': {
      const purge = purgeOf(job.provider);
      const outcome = purge ? await purge(job.grant_id as GrantId, outOfTime) : 'done';
      if (outcome === 'more') await enqueueJob(job);
      logger.info('purge-grant', { grant_id: job.grant_id, outcome });
      return;
    }
    case 'purge-webhook':
      await purgeDeletedWebhook(job.webhook_id as WebhookId);
      logger.info('purge-webhook', { webhook_id: job.webhook_id });
      return;
    case 'purge-list': {
      const outcome = await purgeListItems(job.list_id as ListId, outOfTime);
      if (outcome === 'more') await enqueueJob(job);
      logger.info('purge-list', { list_id: job.list_id, outcome });
      return;
    }
    case 'send-itip':
      return runSendItip(job);
    case 'send-mail':
      return runSendMail(job);
    case 'apply-itip':
      return runApplyItip(job);
    case 'booking-reminders':
      return syncReminders(job.booking_id);
    case 'booking-event':
      return runBookingEventJob(job);
    case 'group-event-delete':
      if ((await runGroupEventDelete(job, outOfTime)) === 'more') await enqueueJob(job);
      return;
    case 'start-mail-sync':
      return startMailSync(job);
    case 'deliver-local': {
      const outcome = await runLocalDelivery(job, outOfTime);
      if (!outcome.done) await enqueueJob(outcome.rest);
      return;
    }
    case 'refresh-thread':
    case 'message-stored':
    case 'messages-stored':
    case 'merge-search':
    case 'index-message':
    case 'remove-contents':
    case 'purge-calendar': {
      const outcome = await runProviderJob(job, outOfTime);
      if (outcome === 'more') {
        await enqueueJob(job);
        logger.info(job.kind, { outcome });
      }
      return;
    }
    default: {
      const exhaustive: never = job;
      throw new Error(`Unknown job ${JSON.stringify(exhaustive)}`);
    }
  }
}

export const consumeJobsQueue = (event: SQSEvent, context: Context): Promise<SQSBatchResponse> =>
  eachMessage(event, 'job failed', readJob, (job) =>
    runJob(job, () => context.getRemainingTimeInMillis() < RESERVE_MS),
  );
