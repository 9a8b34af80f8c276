import { blobExists, deleteBlobs, getBlob, putBlob } from '#shared/aws/mail-bucket';
import { getGrant, getGrants, type GrantRecord } from '#shared/db/grants';
import type { NewAttachment } from '#shared/db/mail-records';
import type { CopySources, DeliveredCopy } from '#shared/providers/contract';
import type { ApplicationId, GrantId } from '#shared/ids';
import type { Job } from '#shared/jobs/job';
import { logger } from '#shared/logger';
import { hostedMailboxes } from '#shared/providers/hosted-mailboxes';

/**
 * Delivery of a sent message to the mailboxes this deployment hosts among its recipients (through
 * the hosting provider: shared/providers/hosted-mailboxes.ts). The
 * send request does not store their copies itself: a send to hundreds of local mailboxes (each copy
 * with its raw MIME and attachments) would not answer in bounded time, and one cut short would
 * leave some inboxes served and no Sent copy. Instead the request writes the message once to
 * `outgoing/` in S3 (raw MIME, each attachment, the body when large, the rest as JSON) and commits,
 * with the Sent copy, one `deliver-local` job per batch of up to BATCH_MAX receiving mailboxes. The
 * jobs worker has the hosting provider store each batch's copies with their writes batched
 * (Agent Accounts: contents copied inside S3, lookups and upload records in batch requests, several
 * copies per transaction), each deduplicated by the message's Message-ID in its mailbox, so a job run
 * twice, or killed half-way and retried, leaves exactly one copy per mailbox. A job that runs out of
 * time sends its own continuation with the mailboxes left. Each batch removes its marker
 * (`outgoing/<id>/batch-<n>`) when done; the batch that finds no other marker left deletes the
 * `outgoing/` objects. Those of a send that never committed expire with the bucket's lifecycle rule.
 */
export const OUTGOING_PREFIX = 'outgoing/';
/** Mailboxes per delivery job: batches run side by side on as many workers. */
export const BATCH_MAX = 200;
/** Copies stored per round of a job (between two looks at the clock). */
const ROUND = 150;

/** What every receiving mailbox's copy is made of (the raw MIME travels beside it). */
export type LocalCopy = Omit<DeliveredCopy, 'attachments' | 'rawSize' | 'calendarParts'> & { attachments: NewAttachment[]; raw: Buffer };

export type LocalRecipient = LocalDeliveryJob['recipients'][number];

export type LocalDeliveryJob = Extract<Job, { kind: 'deliver-local' }>;

/** The spooled copy: attachments as objects of their own (a calendar part also inline, for its invitation job). */
interface SpooledCopy extends Omit<LocalCopy, 'attachments' | 'raw'> {
  attachments: (Omit<NewAttachment, 'content'> & { size?: number; content?: string })[];
  rawSize?: number;
  /** Whether the body is spooled as an object of its own (large bodies, stored apart in each copy). */
  bodyObject?: boolean;
}

const copyKey = (spool: string) => `${spool}copy.json`;
const rawKey = (spool: string) => `${spool}raw.eml`;
const attachmentKey = (spool: string, i: number) => `${spool}att/${i}`;
const bodyObjectKey = (spool: string) => `${spool}body`;
const markerKey = (spool: string, batch: number) => `${spool}batch-${batch}`;
const isCalendarPart = (a: { contentType: string; filename: string }) => /^(text\/calendar|application\/ics)/i.test(a.contentType) || /\.ics$/i.test(a.filename);

/** Splits mailboxes into batches of at most BATCH_MAX, of even sizes. */
function batchesOf<T>(list: readonly T[]): T[][] {
  const count = Math.ceil(list.length / BATCH_MAX);
  const size = Math.ceil(list.length / count);
  return Array.from({ length: count }, (_, i) => list.slice(i * size, (i + 1) * size));
}

/**
 * Writes the copy to `outgoing/<id>/` and returns the jobs to commit with the Sent copy, one per
 * batch of mailboxes. `id` is unique per send (the local part of its Message-ID).
 */
export async function spoolLocalCopies(
  id: string,
  copy: LocalCopy,
  recipients: readonly GrantRecord[],
  sender: GrantRecord,
  /** The hosting provider's HostedMailboxes.bodyInlineMax (passed by the sender, so a send bundles none of the storing code). */
  bodyInlineMax: number,
): Promise<LocalDeliveryJob[]> {
  const spool = `${OUTGOING_PREFIX}${id}/`;
  const { raw, attachments, ...fields } = copy;
  const bodyObject = Buffer.byteLength(copy.body) > bodyInlineMax;
  const spooled: SpooledCopy = {
    ...fields,
    rawSize: raw.length,
    bodyObject,
    attachments: attachments.map(({ content, ...a }) => ({ ...a, size: content.length, ...(isCalendarPart(a) ? { content: content.toString('base64') } : {}) })),
  };
  const batches = batchesOf(recipients);
  await Promise.all([
    putBlob(copyKey(spool), JSON.stringify(spooled), 'application/json'),
    putBlob(rawKey(spool), raw, 'message/rfc822'),
    ...attachments.map((a, i) => putBlob(attachmentKey(spool, i), a.content, a.contentType)),
    ...(bodyObject ? [putBlob(bodyObjectKey(spool), copy.body, 'application/octet-stream')] : []),
    ...batches.map((_, i) => putBlob(markerKey(spool, i), Buffer.alloc(0), 'application/octet-stream')),
  ]);
  return batches.map((batch, i) => ({
    kind: 'deliver-local',
    application_id: sender.application_id,
    spool,
    message_id_header: copy.messageIdHeader,
    recipients: batch.map((g) => ({ application_id: g.application_id, grant_id: g.id })),
    batch: i,
    batches: batches.length,
  }));
}

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
    await Promise.all(attachments.map((a, i) => (a.size === undefined && a.content !== undefined ? putBlob(attachmentKey(spool, i), Buffer.from(a.content, 'base64'), a.contentType) : undefined)));
  }
  const sizes = attachments.map((a) => a.size ?? Buffer.from(a.content ?? '', 'base64').length);
  const size = rawSize ?? (await getBlob(rawKey(spool))).length;
  const copy: DeliveredCopy = {
    ...fields,
    rawSize: size,
    attachments: attachments.map(({ content: _content, size: _size, ...a }, i) => ({ ...a, size: sizes[i]! })),
    calendarParts: attachments.flatMap((a) => (a.content !== undefined && isCalendarPart(a) ? [{ ...a, content: Buffer.from(a.content, 'base64') } as NewAttachment] : [])),
  };
  const large = Buffer.byteLength(copy.body) > hostedMailboxes.bodyInlineMax;
  if (large && !bodyObject) await putBlob(bodyObjectKey(spool), copy.body, 'application/octet-stream');
  return {
    copy,
    sources: { raw: rawKey(spool), attachments: attachments.map((_, i) => attachmentKey(spool, i)), ...(large ? { body: bodyObjectKey(spool) } : {}) },
    keys: [copyKey(spool), rawKey(spool), ...attachments.map((_, i) => attachmentKey(spool, i)), ...(large ? [bodyObjectKey(spool)] : [])],
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
      if (!holders.has(r.grant_id as GrantId) && (await getGrant(r.application_id as ApplicationId, r.grant_id as GrantId))) missing.push(r.grant_id);
    }
    if (missing.length) throw new Error(`deliver-local ${job.spool}: the message is no longer in S3 and ${missing.length} mailbox(es) lack their copy`);
    return { done: true };
  }
  const queue = [...job.recipients];
  while (queue.length) {
    const round = queue.splice(0, ROUND);
    // A mailbox deleted since the send receives nothing (its data is being purged).
    const live = await getGrants(round.map((r) => ({ applicationId: r.application_id as ApplicationId, grantId: r.grant_id as GrantId })));
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
