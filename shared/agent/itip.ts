import { primaryCalendarId, requireCalendar } from '#shared/mailbox/calendars';
import { eventNotification, instanceOf, occurrenceKeyOf } from '#shared/mailbox/events';
import { deliverAndStore, prepareOutgoing } from '#shared/mailbox/send';
import type { IcsEvent } from '#shared/calendar/ical';
import { normalizeRecurrence, occurrenceByKey, seriesBounds, whenBounds } from '#shared/calendar/recurrence';
import type { Participant } from '#shared/calendar/types';
import * as db from '#shared/db/events';
import type { EventRecord } from '#shared/db/events';
import type { GrantRecord } from '#shared/db/grants';
import type { OutboxEntry } from '#shared/db/outbox';
import { ApiError, MailDeliveryError, RateLimitError } from '#shared/errors';
import { newId } from '#shared/ids';
import type { AccountMail, AccountMailMessage, InvitationInbox } from '#shared/providers/contract';
import { logger } from '#shared/logger';
import { clock } from '#shared/time';

/**
 * iMIP for Agent Accounts (shared/services/itip.ts runs the jobs): mail from the account's address
 * goes through the send path, counted against its daily quota; a received REQUEST creates or updates
 * the invitation on its primary calendar, a CANCEL cancels it (or one occurrence), a REPLY records a
 * participant's answer on the account's own event. Idempotent enough for at-least-once delivery:
 * SEQUENCE keeps an older REQUEST from undoing a newer one, and a repeated reply writes the same status.
 */
/**
 * Mails a committed message from an Agent Account through the send path, counted against its daily
 * quota (the send path holds a unit and its Sent copy's commit counts it). A used-up quota or a
 * refusal by rules or policy drops the mail (logged); a relay failure is thrown so SQS tries again.
 */
async function sendFromAccount(grant: GrantRecord, mail: AccountMailMessage, what: string): Promise<void> {
  const prepared = {
    ...(await prepareOutgoing(grant, { to: mail.to, subject: mail.subject, body: mail.body })),
    ...(mail.calendar ? { calendar: mail.calendar } : {}),
  };
  try {
    await deliverAndStore(grant, prepared);
  } catch (error) {
    // A relay that refused may accept later (SQS tries again); a used-up quota, a rule or a policy refusal will not change.
    if (error instanceof MailDeliveryError || !(error instanceof ApiError)) throw error;
    if (error instanceof RateLimitError)
      logger.warn('mail not sent: the daily send quota is used up', { grant_id: grant.id, what });
    else logger.warn('mail not sent', { grant_id: grant.id, what, reason: error.message });
  }
}

const lower = (s: string) => s.toLowerCase();
const keyOfRecurrenceId = (id: NonNullable<IcsEvent['recurrence_id']>) =>
  'date' in id ? id.date.replaceAll('-', '') : occurrenceKeyOf(id.time);

/** Where this UID lives in the account (an invitation, or an event the account organizes). */
async function stored(grant: GrantRecord, uid: string): Promise<EventRecord | undefined> {
  const at = await db.eventByUid(grant.id, uid);
  return at ? db.getEvent(grant.id, at.calendar_id, at.event_id) : undefined;
}

/** The fields an organizer's VEVENT sets on our record. */
function fieldsOf(event: IcsEvent, zoneOfAllDay: string, grant: GrantRecord, previous?: EventRecord) {
  const zone = event.when.object === 'timespan' ? (event.when.start_timezone ?? 'UTC') : zoneOfAllDay;
  const me = lower(grant.email);
  const sameTime = previous && JSON.stringify(previous.when) === JSON.stringify(event.when);
  // The account's own answer stands unless the organizer moved the event (then it is asked again).
  const participants: Participant[] = event.participants.map((p) => {
    const mine = previous?.participants.find((q) => q.email === p.email);
    return p.email === me && p.status === 'noreply' && sameTime && mine ? { ...p, status: mine.status } : p;
  });
  const fields: Partial<EventRecord> & Pick<EventRecord, 'when' | 'zone' | 'start' | 'end' | 'participants'> = {
    when: event.when,
    zone,
    ...whenBounds(event.when, zone),
    participants,
    resources: event.resources ?? [],
    status: event.status,
    busy: event.busy,
    sequence: event.sequence,
    ...(event.visibility ? { visibility: event.visibility } : {}),
    ...(event.conferencing_url
      ? { conferencing: { provider: 'unknown', details: { url: event.conferencing_url } } }
      : {}),
  };
  for (const name of ['title', 'description', 'location'] as const)
    if (event[name] !== undefined) fields[name] = event[name];
  return fields;
}

/** Recurrence lines we can expand; a pattern we cannot is kept out (the first occurrence stands alone). */
function recurrenceOf(event: IcsEvent, zone: string): string[] | undefined {
  if (!event.recurrence?.length) return undefined;
  try {
    return normalizeRecurrence(event.recurrence, event.when, zone);
  } catch (error) {
    logger.warn('itip: recurrence not supported, first occurrence kept', {
      uid: event.uid,
      reason: (error as Error).message,
    });
    return undefined;
  }
}

async function applyRequest(grant: GrantRecord, uid: string, events: IcsEvent[], sender: string): Promise<string> {
  const organizer = events.find((e) => e.organizer)?.organizer;
  if (!organizer || lower(organizer.email) === lower(grant.email))
    return 'ignored: no organizer, or organized by this account';
  if (lower(organizer.email) !== sender) return `ignored: sent by ${sender}, not by its organizer`;
  const calendar = await requireCalendar(grant, primaryCalendarId(grant.id));
  let master = await stored(grant, uid);
  if (master && master.origin !== 'invitation') return "ignored: the UID is one of this account's own events";
  const now = clock.nowSeconds();
  const main = events.find((e) => !e.recurrence_id);
  const puts: db.EventChange['put'] = [];
  const outbox: OutboxEntry[] = [];
  let overridesToDrop: EventRecord[] = [];
  if (main && !(master && main.sequence < master.sequence)) {
    const fields = fieldsOf(main, calendar.timezone, grant, master);
    const recurrence = recurrenceOf(main, fields.zone);
    const patternChanged =
      master &&
      (JSON.stringify(master.recurrence ?? []) !== JSON.stringify(recurrence ?? []) ||
        JSON.stringify(master.when) !== JSON.stringify(fields.when));
    const base: EventRecord = master ?? {
      id: newId('event'),
      grant_id: grant.id,
      calendar_id: calendar.id,
      ical_uid: uid,
      sequence: 0,
      ...fields,
      status: 'confirmed',
      busy: true,
      hide_participants: false,
      organizer: { email: lower(organizer.email), ...(organizer.name ? { name: organizer.name } : {}) },
      creator: { email: lower(organizer.email), ...(organizer.name ? { name: organizer.name } : {}) },
      participants: [],
      resources: [],
      metadata: {},
      origin: 'invitation',
      created_at: now,
      updated_at: now,
      version: 0,
    };
    const { recurrence: _r, last_end: _l, ...rest } = base;
    const next: EventRecord = {
      ...rest,
      ...fields,
      ...(recurrence
        ? {
            recurrence,
            last_end: seriesBounds({ when: fields.when, zone: fields.zone, recurrence }).last_end,
            exceptions: patternChanged ? [] : (base.exceptions ?? []),
            pattern_revision: (base.pattern_revision ?? 0) + (patternChanged ? 1 : 0),
          }
        : {}),
      updated_at: now,
      version: base.version + 1,
    };
    if (patternChanged) overridesToDrop = await db.overridesOf(master!);
    puts.push({ next, ...(master ? { current: master } : {}) });
    outbox.push(eventNotification(grant, master ? 'event.updated' : 'event.created', next));
    master = next;
  }
  // Exceptions: one occurrence changed by the organizer.
  for (const exception of events.filter((e) => e.recurrence_id)) {
    if (!master?.recurrence?.length) continue;
    const key = keyOfRecurrenceId(exception.recurrence_id!);
    const id = `${master.id}_${key}`;
    const current = await db.getEvent(grant.id, master.calendar_id, id);
    const found = occurrenceByKey({ when: master.when, zone: master.zone, recurrence: master.recurrence }, key);
    if (!found && !current) continue;
    if (current && current.series_revision === (master.pattern_revision ?? 0) && exception.sequence < current.sequence)
      continue;
    const base =
      current && current.series_revision === (master.pattern_revision ?? 0)
        ? current
        : instanceOf(master, found!.occurrence);
    const next: EventRecord = {
      ...base,
      ...fieldsOf(exception, calendar.timezone, grant, base),
      series_revision: master.pattern_revision ?? 0,
      updated_at: now,
      version: (current?.version ?? 0) + 1,
    };
    puts.push({ next, ...(current ? { current } : {}) });
    master = { ...master, exceptions: [...new Set([...(master.exceptions ?? []), key])] };
    outbox.push(eventNotification(grant, next.status === 'cancelled' ? 'event.deleted' : 'event.updated', next));
  }
  if (!puts.length) return 'ignored: older than what is stored';
  // The master changed when exceptions were added: its latest state is written once.
  const masterPut = puts.find((p) => p.next.id === master!.id);
  if (masterPut) masterPut.next = { ...master!, version: masterPut.next.version };
  else {
    const current = (await db.getEvent(grant.id, master!.calendar_id, master!.id))!;
    puts.push({ next: { ...master!, version: current.version + 1 }, current });
  }
  if (!(await db.writeEvents({ put: puts, remove: overridesToDrop.slice(0, 40) }, outbox)))
    throw new Error(`itip REQUEST ${uid}: changed meanwhile; SQS tries again`);
  if (overridesToDrop.length > 40) await db.purgeEvents(overridesToDrop.slice(40));
  return `applied ${puts.length} change(s)`;
}

async function applyCancel(grant: GrantRecord, uid: string, events: IcsEvent[], sender: string): Promise<string> {
  const master = await stored(grant, uid);
  if (!master || master.origin !== 'invitation') return 'ignored: no such invitation';
  if (master.organizer.email !== sender) return `ignored: sent by ${sender}, not by its organizer`;
  const now = clock.nowSeconds();
  const puts: db.EventChange['put'] = [];
  const outbox: OutboxEntry[] = [];
  let nextMaster = master;
  for (const event of events) {
    if (!event.recurrence_id) {
      if (event.sequence < master.sequence || master.status === 'cancelled') continue;
      nextMaster = { ...nextMaster, status: 'cancelled', sequence: event.sequence, updated_at: now };
      outbox.push(eventNotification(grant, 'event.deleted', nextMaster));
      continue;
    }
    if (!master.recurrence?.length) continue;
    const key = keyOfRecurrenceId(event.recurrence_id);
    const id = `${master.id}_${key}`;
    const current = await db.getEvent(grant.id, master.calendar_id, id);
    const found = occurrenceByKey({ when: master.when, zone: master.zone, recurrence: master.recurrence }, key);
    if (!found && !current) continue;
    const fresh = current && current.series_revision === (master.pattern_revision ?? 0);
    const base = fresh ? current : instanceOf(master, found!.occurrence);
    if (base.status === 'cancelled') continue;
    const next: EventRecord = {
      ...base,
      status: 'cancelled',
      sequence: event.sequence,
      series_revision: master.pattern_revision ?? 0,
      updated_at: now,
      version: (current?.version ?? 0) + 1,
    };
    puts.push({ next, ...(current ? { current } : {}) });
    nextMaster = { ...nextMaster, exceptions: [...new Set([...(nextMaster.exceptions ?? []), key])] };
    outbox.push(eventNotification(grant, 'event.deleted', next));
  }
  if (!outbox.length) return 'ignored: nothing left to cancel';
  puts.push({ next: { ...nextMaster, version: master.version + 1 }, current: master });
  if (!(await db.writeEvents({ put: puts }, outbox)))
    throw new Error(`itip CANCEL ${uid}: changed meanwhile; SQS tries again`);
  return 'cancelled';
}

async function applyReply(grant: GrantRecord, uid: string, events: IcsEvent[], sender: string): Promise<string> {
  const master = await stored(grant, uid);
  if (!master || master.origin === 'invitation' || master.organizer.email !== lower(grant.email))
    return 'ignored: not an event this account organizes';
  const now = clock.nowSeconds();
  const puts: db.EventChange['put'] = [];
  const outbox: OutboxEntry[] = [];
  let nextMaster = master;
  const answer = (record: EventRecord, replier: Participant): EventRecord => {
    const known = record.participants.some((p) => p.email === replier.email);
    const participants = known
      ? record.participants.map((p) =>
          p.email === replier.email
            ? { ...p, status: replier.status, ...(replier.comment !== undefined ? { comment: replier.comment } : {}) }
            : p,
        )
      : [...record.participants, replier];
    return { ...record, participants, updated_at: now };
  };
  for (const event of events) {
    const replier = event.participants.find((p) => p.email === sender);
    if (!replier) continue;
    if (!event.recurrence_id) {
      nextMaster = answer(nextMaster, replier);
      outbox.push(eventNotification(grant, 'event.updated', nextMaster));
      continue;
    }
    if (!master.recurrence?.length) continue;
    const key = keyOfRecurrenceId(event.recurrence_id);
    const id = `${master.id}_${key}`;
    const current = await db.getEvent(grant.id, master.calendar_id, id);
    const found = occurrenceByKey({ when: master.when, zone: master.zone, recurrence: master.recurrence }, key);
    if (!found && !current) continue;
    const fresh = current && current.series_revision === (master.pattern_revision ?? 0);
    const next: EventRecord = {
      ...answer(fresh ? current : instanceOf(master, found!.occurrence), replier),
      series_revision: master.pattern_revision ?? 0,
      version: (current?.version ?? 0) + 1,
    };
    puts.push({ next, ...(current ? { current } : {}) });
    nextMaster = { ...nextMaster, exceptions: [...new Set([...(nextMaster.exceptions ?? []), key])] };
    outbox.push(eventNotification(grant, 'event.updated', next));
  }
  if (!outbox.length) return `ignored: ${sender} answered for nobody it is`;
  puts.push({ next: { ...nextMaster, version: master.version + 1 }, current: master });
  if (!(await db.writeEvents({ put: puts }, outbox)))
    throw new Error(`itip REPLY ${uid}: changed meanwhile; SQS tries again`);
  return 'recorded';
}

export const agentAccountMail: AccountMail = { send: sendFromAccount };

export const agentInvitations: InvitationInbox = {
  apply(grant, method, uid, events, sender) {
    switch (method) {
      case 'REQUEST':
        return applyRequest(grant, uid, events, sender);
      case 'CANCEL':
        return applyCancel(grant, uid, events, sender);
      case 'REPLY':
        return applyReply(grant, uid, events, sender);
    }
  },
};
