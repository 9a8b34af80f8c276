import { blobExists, deleteBlobs, getBlob, putBlob } from '#shared/aws/mail-bucket';
import { getGrant, getGrants } from '#shared/db/grants';
import type { NewAttachment } from '#shared/db/mail-records';
import type { ApplicationId, GrantId } from '#shared/ids';
import { logger } from '#shared/logger';
import {
  attachmentKey,
  bodyObjectKey,
  copyKey,
  isCalendarPart,
  markerKey,
  rawKey,
  type LocalDeliveryJob,
  type SpooledCopy,
} from '#shared/mail/local-spool';
import type { CopySources, DeliveredCopy } from '#shared/providers/contract';
import { hostedMailboxes } from '#shared/registries/hosted-mailboxes';

/**
 * The `deliver-local` jobs (shared/mail/local-spool.ts says how a send spools its copies): each job
 * reads the spool and has the hosting provider store its batch's copies (HostedMailboxes), ROUND
 * mailboxes at a time; the batch that finishes last removes the spool.
 */
/** Copies stored per round of a job (between two looks at the clock). */
const ROUND = 150;

interface Spool {
  copy: DeliveredCopy;
  sources: CopySources;
  keys: string[];
}

async function readSpool(spool: string): Promise<Spool | undefined> {
  let spooled: SpooledCopy;
  try {
    spooled = JSON.parse((await getBlob(copyKey(spool))).toString('utf8')) as SpooledCopy;
  } catch (error) {
    if ((error as { name?: string }).name === 'NoSuchKey') return undefined;
    throw error;
  }
  const { attachments, rawSize, bodyObject, ...fields } = spooled;
  // Spooled by a version that kept attachments inline in copy.json: given objects of their own first.
  if (attachments.some((a) => a.content !== undefined && a.size === undefined)) {
    await Promise.all(
      attachments.map((a, i) =>
        a.size === undefined && a.content !== undefined
          ? putBlob(attachmentKey(spool, i), Buffer.from(a.content, 'base64'), a.contentType)
          : undefined,
      ),
    );
  }
  const sizes = attachments.map((a) => a.size ?? Buffer.from(a.content ?? '', 'base64').length);
  const size = rawSize ?? (await getBlob(rawKey(spool))).length;
  const copy: DeliveredCopy = {
    ...fields,
    rawSize: size,
    attachments: attachments.map(({ content: _content, size: _size, ...a }, i) => ({ ...a, size: sizes[i]! })),
    calendarParts: attachments.flatMap((a) =>
      a.content !== undefined && isCalendarPart(a)
        ? [{ ...a, content: Buffer.from(a.content, 'base64') } as NewAttachment]
        : [],
    ),
  };
  const large = Buffer.byteLength(copy.body) > hostedMailboxes.bodyInlineMax;
  if (large && !bodyObject) await putBlob(bodyObjectKey(spool), copy.body, 'application/octet-stream');
  return {
    copy,
    sources: {
      raw: rawKey(spool),
      attachments: attachments.map((_, i) => attachmentKey(spool, i)),
      ...(large ? { body: bodyObjectKey(spool) } : {}),
    },
    keys: [
      copyKey(spool),
      rawKey(spool),
      ...attachments.map((_, i) => attachmentKey(spool, i)),
      ...(large ? [bodyObjectKey(spool)] : []),
    ],
  };
}

export type LocalDeliveryOutcome = { done: true } | { done: false; rest: LocalDeliveryJob };

/**
 * Runs a `deliver-local` job: stores the copies not stored yet, ROUND mailboxes at a time (their
 * writes batched), until every mailbox of the batch has its copy or `outOfTime()` says to stop (the
 * rest is returned, to continue as a new job). Idempotent: a mailbox that already holds the
 * Message-ID is left as it is.
 */
export async function runLocalDelivery(job: LocalDeliveryJob, outOfTime: () => boolean): Promise<LocalDeliveryOutcome> {
  const spooled = await readSpool(job.spool);
  if (!spooled) {
    // Gone: the last batch finished and removed it. Unless a copy of this batch is missing.
    const holders = await hostedMailboxes.holding(
      job.recipients.map((r) => r.grant_id as GrantId),
      job.message_id_header,
    );
    const missing = [];
    for (const r of job.recipients) {
      if (
        !holders.has(r.grant_id as GrantId) &&
        (await getGrant(r.application_id as ApplicationId, r.grant_id as GrantId))
      )
        missing.push(r.grant_id);
    }
    if (missing.length)
      throw new Error(
        `deliver-local ${job.spool}: the message is no longer in S3 and ${missing.length} mailbox(es) lack their copy`,
      );
    return { done: true };
  }
  const queue = [...job.recipients];
  while (queue.length) {
    const round = queue.splice(0, ROUND);
    // A mailbox deleted since the send receives nothing (its data is being purged).
    const live = await getGrants(
      round.map((r) => ({ applicationId: r.application_id as ApplicationId, grantId: r.grant_id as GrantId })),
    );
    await hostedMailboxes.storeCopies(spooled.copy, live, spooled.sources);
    if (queue.length && outOfTime()) return { done: false, rest: { ...job, recipients: queue } };
  }
  await finishBatch(job, spooled.keys);
  logger.info('deliver-local', { spool: job.spool, batch: job.batch, mailboxes: job.recipients.length });
  return { done: true };
}

/** Removes this batch's marker; the batch that finds none of the others left removes the spool. */
async function finishBatch(job: LocalDeliveryJob, keys: string[]): Promise<void> {
  if (job.batch === undefined || job.batches === undefined) {
    await deleteBlobs(keys);
    return;
  }
  await deleteBlobs([markerKey(job.spool, job.batch)]);
  const others = Array.from({ length: job.batches }, (_, i) => i).filter((i) => i !== job.batch);
  const left = await Promise.all(others.map((i) => blobExists(markerKey(job.spool, i))));
  if (left.some(Boolean)) return;
  await deleteBlobs([...keys, ...Array.from({ length: job.batches }, (_, i) => markerKey(job.spool, i))]);
}
