import { escapeHtml } from '#shared/mail/entities';
import { buildCalendar, IcsError, parseCalendar, type IcsEvent, type ItipMethod } from '#shared/calendar/ical';
import type { Participant, Person } from '#shared/calendar/types';
import type { EventRecord } from '#shared/db/events';
import type { GrantRecord } from '#shared/db/grants';
import type { OutboxEntry } from '#shared/db/outbox';
import { newId } from '#shared/ids';
import type { Job } from '#shared/jobs/job';

/**
 * iMIP (RFC 6047): calendar changes travel as email. A change to an event with participants commits
 * a `send-itip` job holding the iCalendar text as of that change (REQUEST, CANCEL or REPLY); the jobs
 * worker mails it from the grant's address through its provider (shared/services/itip.ts). Received
 * mail with a calendar part commits an `apply-itip` job with the message, applied the same way.
 */
export interface ItipChange {
  grant: GrantRecord;
  method: Exclude<ItipMethod, 'PUBLISH'>;
  /** The event (or one occurrence's override) as changed. */
  events: EventRecord[];
  recipients: readonly Person[];
  /** The series, when `events` is one occurrence (its RECURRENCE-ID is taken from it). */
  master?: EventRecord;
  /** REPLY: the answering participant. */
  replier?: Participant;
}

/** Our record as an iCalendar VEVENT. */
export function icsEventOf(record: EventRecord, options: { master?: EventRecord; only?: Participant } = {}): IcsEvent {
  const recurrenceId =
    record.master_event_id && record.original_start_time !== undefined
      ? record.when.object === 'timespan'
        ? { time: record.original_start_time, timezone: record.zone }
        : {
            date: `${record.occurrence_key!.slice(0, 4)}-${record.occurrence_key!.slice(4, 6)}-${record.occurrence_key!.slice(6, 8)}`,
          }
      : undefined;
  const url = typeof record.conferencing?.details.url === 'string' ? record.conferencing.details.url : undefined;
  return {
    uid: record.ical_uid,
    sequence: record.sequence,
    ...(record.title !== undefined ? { title: record.title } : {}),
    ...(record.description !== undefined ? { description: record.description } : {}),
    ...(record.location !== undefined ? { location: record.location } : {}),
    when: record.when,
    ...(record.recurrence?.length ? { recurrence: record.recurrence } : {}),
    ...(recurrenceId ? { recurrence_id: recurrenceId } : {}),
    status: record.status,
    busy: record.busy,
    ...(record.visibility ? { visibility: record.visibility } : {}),
    organizer: record.organizer,
    participants: options.only ? [options.only] : record.hide_participants ? [] : record.participants,
    ...(record.resources.length ? { resources: record.resources } : {}),
    ...(url ? { conferencing_url: url } : {}),
    created_at: record.created_at,
    updated_at: record.updated_at,
    ...(record.reminders?.overrides?.length
      ? {
          reminders: record.reminders.overrides.map((o) => ({
            minutes: o.reminder_minutes,
            method: o.reminder_method === 'email' ? ('email' as const) : ('display' as const),
          })),
        }
      : {}),
  };
}

const dateLine = (record: EventRecord) => {
  if (record.when.object === 'timespan') {
    return (
      new Intl.DateTimeFormat('en-US', { timeZone: record.zone, dateStyle: 'full', timeStyle: 'short' }).format(
        record.start * 1000,
      ) + ` (${record.zone})`
    );
  }
  return record.when.object === 'date'
    ? record.when.date
    : `${record.when.start_date} – ${record.when.end_date} (end exclusive)`;
};

function subjectOf(change: ItipChange, record: EventRecord): string {
  const title = record.title ?? '(no title)';
  switch (change.method) {
    case 'REQUEST':
      return `${record.sequence > 0 ? 'Updated invitation' : 'Invitation'}: ${title} @ ${dateLine(record)}`;
    case 'CANCEL':
      return `Cancelled event: ${title} @ ${dateLine(record)}`;
    default:
      return `${{ yes: 'Accepted', no: 'Declined', maybe: 'Tentatively accepted', noreply: 'Replied' }[change.replier!.status]}: ${title} @ ${dateLine(record)}`;
  }
}

function bodyOf(change: ItipChange, record: EventRecord): string {
  const rows = [
    ['When', dateLine(record)],
    ...(record.location ? [['Where', record.location]] : []),
    [
      'Organizer',
      record.organizer.name ? `${record.organizer.name} <${record.organizer.email}>` : record.organizer.email,
    ],
    ...(change.method === 'REPLY' && change.replier?.comment ? [['Comment', change.replier.comment]] : []),
  ];
  return `<p><strong>${escapeHtml(record.title ?? '(no title)')}</strong></p>${record.description && change.method !== 'REPLY' ? `<p>${escapeHtml(record.description)}</p>` : ''}<table>${rows
    .map(([k, v]) => `<tr><th align="left">${k}</th><td>${escapeHtml(v!)}</td></tr>`)
    .join('')}</table>`;
}

/** The outbox entry that mails a change to its recipients (none when there is nobody to tell). */
export function itipOutbox(change: ItipChange): OutboxEntry[] {
  const me = change.grant.email.toLowerCase();
  const to = change.recipients.filter((p) => p.email !== me);
  if (!to.length || !change.events.length) return [];
  const record = change.events[0]!;
  const ics = buildCalendar(
    change.method,
    change.events.map((e) => icsEventOf(e, change.replier ? { only: change.replier } : {})),
  );
  const job: Job = {
    kind: 'send-itip',
    application_id: change.grant.application_id,
    grant_id: change.grant.id,
    method: change.method,
    to: to.map((p) => ({ email: p.email, ...(p.name ? { name: p.name } : {}) })),
    subject: subjectOf(change, record),
    body: bodyOf(change, record),
    ics,
  };
  return [{ job, id: newId('job'), applicationId: change.grant.application_id }];
}

const ICS_MAX_BYTES = 256 * 1024;

/** The `apply-itip` job for a received message's calendar part, committed with the message. */
export function calendarJobs(
  grant: GrantRecord,
  attachments: readonly { filename: string; contentType: string; content: Buffer }[],
  sender: string | undefined,
): OutboxEntry[] {
  const part = attachments.find(
    (a) => /^(text\/calendar|application\/ics)/i.test(a.contentType) || /\.ics$/i.test(a.filename),
  );
  if (!part || !sender || part.content.length > ICS_MAX_BYTES) return [];
  const job: Job = {
    kind: 'apply-itip',
    application_id: grant.application_id,
    grant_id: grant.id,
    sender: sender.toLowerCase(),
    ics: part.content.toString('utf8'),
  };
  return [{ job, id: newId('job'), applicationId: grant.application_id }];
}

export { IcsError, parseCalendar };
