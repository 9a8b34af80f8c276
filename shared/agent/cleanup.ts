import { deleteBlobs, storedImmutablePostings } from '#shared/agent/blobs';
import type { MessageRecord } from '#shared/agent/types';
import * as messages from '#shared/db/messages';
import type { OutboxEntry } from '#shared/db/outbox';
import type { GrantId, MessageId } from '#shared/ids';
import { newId } from '#shared/ids';
import type { Job } from '#shared/jobs/job';
import { logger } from '#shared/logger';

/**
 * Derived data and contents that cannot be written in a change's own transaction (a message's
 * search postings number up to a thousand; S3 is not transactional) travel as jobs committed with
 * the change (outbox entries), and the jobs worker completes them idempotently. The request still
 * does the same work right after its commit, so a reader sees it at once; when the request dies
 * first, or that work fails, the job finishes it. Nothing is undone in a catch block.
 */
type Owner = { id: GrantId; application_id: string };

export const indexMessageJob = (grant: Owner, messageId: MessageId): OutboxEntry => ({
  job: { kind: 'index-message', application_id: grant.application_id, grant_id: grant.id, message_id: messageId },
  id: newId('job'),
  applicationId: grant.application_id,
});

export const removeContentsJob = (grant: Owner, ownerId: string, what: { postings?: string[]; blobs: (string | undefined)[] }): OutboxEntry => ({
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

/** The index-message job: writes the postings of a message stored without them (nothing once indexed, or deleted). */
export async function runIndexMessage(job: Extract<Job, { kind: 'index-message' }>): Promise<void> {
  const message: MessageRecord | undefined = await messages.getMessage(job.grant_id as GrantId, job.message_id as MessageId);
  if (!message || message.indexed) return;
  await messages.writePostings(message.grant_id, message.id, await storedImmutablePostings(message));
}

/** The remove-contents job (and the request's own attempt right after its commit). */
export async function runRemoveContents(job: Extract<Job, { kind: 'remove-contents' }>): Promise<void> {
  if (job.postings.length) await messages.deletePostings(job.grant_id as GrantId, job.owner_id, job.postings);
  if (job.blobs.length) await deleteBlobs(job.blobs);
}

/** The request's attempt: a failure is logged, and the committed job does it later. */
export async function removeContentsNow(entry: OutboxEntry): Promise<void> {
  if (!('job' in entry) || entry.job.kind !== 'remove-contents') return;
  await runRemoveContents(entry.job).catch((error) => logger.warn('contents left for the remove-contents job', { owner_id: (entry.job as { owner_id: string }).owner_id, error }));
}
