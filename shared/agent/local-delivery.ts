import { calendarJobs } from '#shared/agent/invitations';
import { deleteBlobs, getBlob, putBlob } from '#shared/agent/blobs';
import { storeMessage } from '#shared/agent/store';
import type { HeaderRecord, NewAttachment, ParticipantRecord } from '#shared/agent/types';
import { getGrant, type GrantRecord } from '#shared/db/grants';
import { getMessageIdHeader } from '#shared/db/messages';
import type { ApplicationId, GrantId } from '#shared/ids';
import type { Job } from '#shared/jobs/job';
import { logger } from '#shared/logger';

/**
 * Delivery of a sent message to the Agent Accounts of this deployment among its recipients. The
 * send request does not store their copies itself: a send to hundreds of local mailboxes (each copy
 * with its raw MIME and attachments) would not answer in bounded time, and one cut short would
 * leave some inboxes served and no Sent copy. Instead the request writes the message once to
 * `outgoing/` in S3 and commits, with the Sent copy, one `deliver-local` job naming every receiving
 * mailbox. The jobs worker stores the copies (several at a time), each deduplicated by the message's
 * Message-ID in its mailbox, so a job run twice, or killed half-way and retried, leaves exactly one
 * copy per mailbox. A job that runs out of time sends its own continuation with the mailboxes left.
 * The last run deletes the `outgoing/` objects; those of a send that never committed expire with
 * the bucket's lifecycle rule.
 */
export const OUTGOING_PREFIX = 'outgoing/';
const CONCURRENCY = 8;

/** What every receiving mailbox's copy is made of (the raw MIME travels beside it). */
export interface LocalCopy {
  subject: string;
  from: ParticipantRecord[];
  to: ParticipantRecord[];
  cc: ParticipantRecord[];
  replyTo: ParticipantRecord[];
  date: number;
  body: string;
  isPlaintext: boolean;
  attachments: NewAttachment[];
  headers: HeaderRecord[];
  raw: Buffer;
  messageIdHeader: string;
  inReplyTo?: string;
  references: string[];
}

export type LocalRecipient = LocalDeliveryJob['recipients'][number];

export type LocalDeliveryJob = Extract<Job, { kind: 'deliver-local' }>;

interface SpooledCopy extends Omit<LocalCopy, 'attachments' | 'raw'> {
  attachments: (Omit<NewAttachment, 'content'> & { content: string })[];
}

const copyKey = (spool: string) => `${spool}copy.json`;
const rawKey = (spool: string) => `${spool}raw.eml`;

/**
 * Writes the copy to `outgoing/<id>/` and returns the job to commit with the Sent copy. `id` is
 * unique per send (the local part of its Message-ID).
 */
export async function spoolLocalCopies(id: string, copy: LocalCopy, recipients: readonly GrantRecord[], sender: GrantRecord): Promise<LocalDeliveryJob> {
  const spool = `${OUTGOING_PREFIX}${id}/`;
  const { raw, attachments, ...fields } = copy;
  const spooled: SpooledCopy = { ...fields, attachments: attachments.map((a) => ({ ...a, content: a.content.toString('base64') })) };
  await Promise.all([putBlob(copyKey(spool), JSON.stringify(spooled), 'application/json'), putBlob(rawKey(spool), raw, 'message/rfc822')]);
  return {
    kind: 'deliver-local',
    application_id: sender.application_id,
    spool,
    message_id_header: copy.messageIdHeader,
    recipients: recipients.map((g) => ({ application_id: g.application_id, grant_id: g.id })),
  };
}

async function readSpool(spool: string): Promise<LocalCopy | undefined> {
  try {
    const [json, raw] = await Promise.all([getBlob(copyKey(spool)), getBlob(rawKey(spool))]);
    const spooled = JSON.parse(json.toString('utf8')) as SpooledCopy;
    return { ...spooled, raw, attachments: spooled.attachments.map((a) => ({ ...a, content: Buffer.from(a.content, 'base64') })) };
  } catch (error) {
    if ((error as { name?: string }).name === 'NoSuchKey') return undefined;
    throw error;
  }
}

async function deliverOne(recipient: LocalRecipient, copy: LocalCopy): Promise<void> {
  const grant = await getGrant(recipient.application_id as ApplicationId, recipient.grant_id as GrantId);
  // A mailbox deleted since the send receives nothing (its data is being purged).
  if (!grant) return;
  await storeMessage({ ...copy, grant, bcc: [], unread: true, starred: false, folders: ['inbox'], metadata: {}, jobs: calendarJobs(grant, copy.attachments, copy.from[0]?.email) });
}

export type LocalDeliveryOutcome = { done: true } | { done: false; rest: LocalDeliveryJob };

/**
 * Runs a `deliver-local` job: stores the copies not stored yet, `CONCURRENCY` at a time, until
 * every mailbox has its copy or `outOfTime()` says to stop (the rest is returned, to continue as a
 * new job). Idempotent: a mailbox that already holds the Message-ID is left as it is.
 */
export async function runLocalDelivery(job: LocalDeliveryJob, outOfTime: () => boolean): Promise<LocalDeliveryOutcome> {
  const copy = await readSpool(job.spool);
  if (!copy) {
    // Gone: a run of this job (or its continuation) finished and removed it. Unless a copy is missing.
    const missing = [];
    for (const r of job.recipients) {
      if (!(await getMessageIdHeader(r.grant_id as GrantId, job.message_id_header)) && (await getGrant(r.application_id as ApplicationId, r.grant_id as GrantId))) missing.push(r.grant_id);
    }
    if (missing.length) throw new Error(`deliver-local ${job.spool}: the message is no longer in S3 and ${missing.length} mailbox(es) lack their copy`);
    return { done: true };
  }
  const queue = [...job.recipients];
  const worker = async () => {
    for (let next = queue.shift(); next; next = outOfTime() ? undefined : queue.shift()) await deliverOne(next, copy);
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, queue.length) }, worker));
  if (queue.length) return { done: false, rest: { ...job, recipients: queue } };
  await deleteBlobs([copyKey(job.spool), rawKey(job.spool)]);
  logger.info('deliver-local', { spool: job.spool, mailboxes: job.recipients.length });
  return { done: true };
}
