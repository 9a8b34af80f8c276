import { copyBlob, putBlob } from '#shared/aws/mail-bucket';
import type { GrantRecord } from '#shared/db/grants';
import type { CopiedAttachment, NewAttachment } from '#shared/db/mail-records';
import type { Job } from '#shared/jobs/job';
import type { DeliveredCopy } from '#shared/providers/contract';

/**
 * Delivery of a sent message to the mailboxes this deployment hosts among its recipients (through
 * the hosting provider: shared/registries/hosted-mailboxes.ts). The
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
 * This module writes the spool (the send's side); shared/services/local-delivery.ts runs the jobs.
 */
export const OUTGOING_PREFIX = 'outgoing/';
/** Mailboxes per delivery job: batches run side by side on as many workers. */
export const BATCH_MAX = 200;

/** What every receiving mailbox's copy is made of (the raw MIME travels beside it). */
export type LocalCopy = Omit<DeliveredCopy, 'attachments' | 'rawSize' | 'calendarParts'> & {
  attachments: (NewAttachment | CopiedAttachment)[];
  raw: Buffer;
};

export type LocalRecipient = LocalDeliveryJob['recipients'][number];

export type LocalDeliveryJob = Extract<Job, { kind: 'deliver-local' }>;

/** The spooled copy: attachments as objects of their own (a calendar part also inline, for its invitation job). */
export interface SpooledCopy extends Omit<LocalCopy, 'attachments' | 'raw'> {
  attachments: (Omit<NewAttachment, 'content'> & { size?: number; content?: string })[];
  rawSize?: number;
  /** Whether the body is spooled as an object of its own (large bodies, stored apart in each copy). */
  bodyObject?: boolean;
}

export const copyKey = (spool: string) => `${spool}copy.json`;
export const rawKey = (spool: string) => `${spool}raw.eml`;
export const attachmentKey = (spool: string, i: number) => `${spool}att/${i}`;
export const bodyObjectKey = (spool: string) => `${spool}body`;
export const markerKey = (spool: string, batch: number) => `${spool}batch-${batch}`;
export const isCalendarPart = (a: { contentType: string; filename: string }) =>
  /^(text\/calendar|application\/ics)/i.test(a.contentType) || /\.ics$/i.test(a.filename);

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
    attachments: attachments.map((a) => {
      if ('copyFrom' in a) {
        const { copyFrom: _, ...described } = a;
        return described;
      }
      const { content, ...described } = a;
      return {
        ...described,
        size: content.length,
        ...(isCalendarPart(a) ? { content: content.toString('base64') } : {}),
      };
    }),
  };
  const batches = batchesOf(recipients);
  await Promise.all([
    putBlob(copyKey(spool), JSON.stringify(spooled), 'application/json'),
    putBlob(rawKey(spool), raw, 'message/rfc822'),
    ...attachments.map((a, i) =>
      'copyFrom' in a
        ? copyBlob(a.copyFrom, attachmentKey(spool, i))
        : putBlob(attachmentKey(spool, i), a.content, a.contentType),
    ),
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
