import { deleteBlobs } from '#shared/aws/mail-bucket';
import * as messages from '#shared/db/messages';
import type { OutboxEntry } from '#shared/db/outbox';
import type { GrantId } from '#shared/ids';
import { newId } from '#shared/ids';
import type { Job } from '#shared/jobs/job';
import { logger } from '#shared/logger';

/**
 * Contents that cannot be removed in a change's own transaction (S3 is not transactional) travel as
 * jobs committed with the change (outbox entries), and the jobs worker completes them idempotently.
 * The request still does the same work right after its commit; when the request dies first, or that
 * work fails, the job finishes it. Nothing is undone in a catch block.
 */
type Owner = { id: GrantId; application_id: string };

export const removeContentsJob = (
  grant: Owner,
  ownerId: string,
  what: { postings?: string[]; blobs: (string | undefined)[] },
): OutboxEntry => ({
  job: {
    kind: 'remove-contents',
    application_id: grant.application_id,
    grant_id: grant.id,
    owner_id: ownerId,
    postings: what.postings ?? [],
    blobs: [...new Set(what.blobs.filter((k): k is string => !!k))],
  },
  id: newId('job'),
  applicationId: grant.application_id,
});

/** The remove-contents job (and the request's own attempt right after its commit). */
export async function runRemoveContents(job: Extract<Job, { kind: 'remove-contents' }>): Promise<void> {
  if (job.postings.length) await messages.deletePostings(job.grant_id as GrantId, job.owner_id, job.postings);
  if (job.blobs.length) await deleteBlobs(job.blobs);
}

/** The request's attempt: a failure is logged, and the committed job does it later. */
export async function removeContentsNow(entry: OutboxEntry): Promise<void> {
  if (!('job' in entry) || entry.job.kind !== 'remove-contents') return;
  await runRemoveContents(entry.job).catch((error) =>
    logger.warn('contents left for the remove-contents job', {
      owner_id: (entry.job as { owner_id: string }).owner_id,
      error,
    }),
  );
}
