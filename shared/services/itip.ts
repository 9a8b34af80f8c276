import { IcsError, parseCalendar, type IcsEvent } from '#shared/calendar/ical';
import { getGrant } from '#shared/db/grants';
import type { ApplicationId, GrantId } from '#shared/ids';
import type { Job } from '#shared/jobs/job';
import { logger } from '#shared/logger';
import type { AccountMailMessage, InvitationMethod } from '#shared/providers/contract';
import { accountMailOf, invitationInboxOf } from '#shared/registries/itip';

/**
 * The jobs behind iMIP (shared/calendar/imip.ts builds what they carry), for every provider.
 * `send-itip` and `send-mail` mail a committed message from the grant's own address through its
 * provider (AccountMail: its send path and quota). `apply-itip` reads a calendar part a grant
 * received and hands each event (by UID) to the grant's InvitationInbox: a REQUEST creates or
 * updates the invitation, a CANCEL cancels it (or one occurrence), a REPLY records a participant's
 * answer on the grant's own event. A job for a grant deleted since does nothing.
 */
type SendItipJob = Extract<Job, { kind: 'send-itip' }>;
type SendMailJob = Extract<Job, { kind: 'send-mail' }>;
type ApplyItipJob = Extract<Job, { kind: 'apply-itip' }>;

const grantOf = (job: { application_id: string; grant_id: string }) =>
  getGrant(job.application_id as ApplicationId, job.grant_id as GrantId);

async function sendFromGrant(
  job: { application_id: string; grant_id: string },
  mail: AccountMailMessage,
  what: string,
): Promise<void> {
  const grant = await grantOf(job);
  if (!grant) return;
  await accountMailOf(grant).send(grant, mail, what);
}

export const runSendItip = (job: SendItipJob) =>
  sendFromGrant(
    job,
    { to: job.to, subject: job.subject, body: job.body, calendar: { method: job.method, content: job.ics } },
    `itip ${job.method}`,
  );

export const runSendMail = (job: SendMailJob) =>
  sendFromGrant(
    job,
    {
      to: job.to,
      subject: job.subject,
      body: job.body,
      ...(job.calendar ? { calendar: { method: job.calendar.method, content: job.calendar.ics } } : {}),
    },
    job.purpose,
  );

const METHODS = new Set<string>(['REQUEST', 'CANCEL', 'REPLY']);

export async function runApplyItip(job: ApplyItipJob): Promise<void> {
  const grant = await grantOf(job);
  if (!grant) return;
  let parsed;
  try {
    parsed = parseCalendar(job.ics);
  } catch (error) {
    // Malformed calendar text: the message is stored as it came, and no event is made of it.
    if (error instanceof IcsError)
      return logger.warn('itip ignored: not iCalendar', { grant_id: grant.id, reason: error.message });
    throw error;
  }
  const method = String(parsed.method ?? '').toUpperCase();
  if (!METHODS.has(method))
    return logger.info('itip', { grant_id: grant.id, method, outcome: `method '${method}' is not applied` });
  const byUid = new Map<string, IcsEvent[]>();
  for (const event of parsed.events) byUid.set(event.uid, [...(byUid.get(event.uid) ?? []), event]);
  const inbox = invitationInboxOf(grant);
  for (const [uid, events] of byUid) {
    const outcome = await inbox.apply(grant, method as InvitationMethod, uid, events, job.sender);
    logger.info('itip', { grant_id: grant.id, method, outcome });
  }
}
