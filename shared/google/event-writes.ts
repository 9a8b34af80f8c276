import { createHash, randomUUID } from 'node:crypto';
import type { CreateEventBody, SendRsvpBody, UpdateEventBody } from '#schemas/event';
import { resolveWhen } from '#shared/mailbox/events';
import type { GrantRecord } from '#shared/db/grants';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { normalizeRecurrence } from '#shared/calendar/recurrence';
import { eventFromGoogle, type GoogleDateTime, type GoogleEvent } from '#shared/google/calendar-event';
import { googleClientOf, GoogleNotFoundError, type GoogleClient } from '#shared/google/client';
import type { CalendarEvent } from '#shared/providers/contract';

/**
 * Provider A's event writes, live (Calendar v3 events.insert, patch, delete; an RSVP is a patch of
 * the account's own attendee entry). Our fields as Google's: `when` as EventDateTime (all-day end
 * dates exclusive, as ours), participants and resources as attendees, `busy` as transparency,
 * `maybe` as tentative, metadata as private extended properties, reminders, recurrence lines as
 * given (checked by our engine first), conferencing `autocreate` as a Meet createRequest, given
 * details kept. `notify` is `sendUpdates`. An idempotency key becomes the event's own ID (Google
 * takes a client's ID: base32hex, 5 to 1024 characters), so a retried create finds the first one.
 */

const PARTICIPANT_STATUS = { noreply: 'needsAction', no: 'declined', maybe: 'tentative', yes: 'accepted' } as const;
const EVENT_STATUS = { confirmed: 'confirmed', maybe: 'tentative', cancelled: 'cancelled' } as const;

interface CalendarInfo {
  id: string;
  timeZone?: string;
}

const segment = (id: string, what: string) => {
  if (!id || id.length > 1024 || /[\u0000-\u001f]/.test(id)) throw new NotFoundError(`No ${what} '${id}'`);
  return encodeURIComponent(id);
};
const eventsPath = (calendarId: string) => `/calendar/v3/calendars/${segment(calendarId, 'calendar')}/events`;

async function calendarOf(client: GoogleClient, calendarId: string): Promise<CalendarInfo> {
  try {
    return await client.call<CalendarInfo>({
      api: 'calendar',
      path: `/calendar/v3/users/me/calendarList/${segment(calendarId, 'calendar')}`,
    });
  } catch (error) {
    if (error instanceof GoogleNotFoundError) throw new NotFoundError(`No calendar '${calendarId}' in this grant`);
    throw error;
  }
}

/** An event ID Google takes (base32hex), the same for every attempt with one key. */
export const eventIdOfKey = (key: string) =>
  [...createHash('sha256').update(key).digest()]
    .slice(0, 20)
    .map((b) => '0123456789abcdefghijklmnopqrstuv'[b & 31])
    .join('');

const dayAfter = (date: string) => {
  const next = new Date(`${date}T00:00:00Z`);
  next.setUTCDate(next.getUTCDate() + 1);
  return next.toISOString().slice(0, 10);
};

function timesOf(
  when: NonNullable<CreateEventBody['when']>,
  zone: string,
): { start: GoogleDateTime; end: GoogleDateTime; resolved: ReturnType<typeof resolveWhen> } {
  const resolved = resolveWhen(when, zone);
  const w = resolved.when;
  if (w.object === 'date') return { start: { date: w.date }, end: { date: dayAfter(w.date) }, resolved };
  if (w.object === 'datespan') return { start: { date: w.start_date }, end: { date: w.end_date }, resolved };
  const iso = (s: number) => new Date(s * 1000).toISOString();
  return {
    start: { dateTime: iso(w.start_time), timeZone: w.start_timezone ?? zone },
    end: { dateTime: iso(w.end_time), timeZone: w.end_timezone ?? w.start_timezone ?? zone },
    resolved,
  };
}

/** The fields a body sets, as Google's Event (only those given: a patch changes nothing else). */
function googleFields(
  body: UpdateEventBody,
  calendar: CalendarInfo,
  previous?: GoogleEvent,
): Partial<GoogleEvent> & Record<string, unknown> {
  if (body.capacity !== undefined)
    throw new InvalidRequestError("'capacity' is not available for google grants' events");
  const zone = calendar.timeZone ?? 'UTC';
  const out: Partial<GoogleEvent> & Record<string, unknown> = {};
  if (body.title !== undefined) out.summary = body.title;
  if (body.description !== undefined) out.description = body.description ?? '';
  if (body.location !== undefined) out.location = body.location ?? '';
  let times: ReturnType<typeof timesOf> | undefined;
  if (body.when !== undefined) {
    times = timesOf(body.when, zone);
    out.start = times.start;
    out.end = times.end;
  }
  if (body.recurrence !== undefined) {
    if (body.recurrence.length) {
      // Checked by our engine first: a rule it cannot read is a 400 here, not a surprise at Google.
      const base = times?.resolved ?? (previous ? timesOf(whenOfGoogle(previous), zone).resolved : undefined);
      if (!base) throw new InvalidRequestError("'recurrence' needs the event's 'when'");
      normalizeRecurrence(body.recurrence, base.when, base.zone);
    }
    out.recurrence = [...body.recurrence];
  }
  if (body.busy !== undefined) out.transparency = body.busy ? 'opaque' : 'transparent';
  if (body.status !== undefined) out.status = EVENT_STATUS[body.status];
  if (body.visibility !== undefined) out.visibility = body.visibility;
  if (body.hide_participants !== undefined) out.guestsCanSeeOtherGuests = !body.hide_participants;
  if (body.participants !== undefined || body.resources !== undefined) {
    const kept = previous?.attendees ?? [];
    const people =
      body.participants?.map((p) => ({
        email: p.email,
        ...(p.name ? { displayName: p.name } : {}),
        ...(p.status ? { responseStatus: PARTICIPANT_STATUS[p.status] } : {}),
        ...(p.comment ? { comment: p.comment } : {}),
      })) ?? kept.filter((a) => !a.resource);
    const rooms =
      body.resources?.map((r) => ({ email: r.email, ...(r.name ? { displayName: r.name } : {}), resource: true })) ??
      kept.filter((a) => a.resource);
    out.attendees = [...people, ...rooms];
  }
  if (body.metadata !== undefined) out.extendedProperties = { private: { ...body.metadata } };
  if (body.reminders !== undefined)
    out.reminders = {
      useDefault: body.reminders.use_default ?? false,
      ...(body.reminders.overrides
        ? {
            overrides: body.reminders.overrides.map((o) => ({
              method: o.reminder_method === 'email' ? 'email' : 'popup',
              minutes: o.reminder_minutes,
            })),
          }
        : {}),
    };
  if (body.conferencing !== undefined) {
    const c = body.conferencing;
    if (c.autocreate !== undefined)
      out.conferenceData = {
        createRequest: {
          requestId: randomUUID(),
          conferenceSolutionKey: { type: 'hangoutsMeet' },
        },
      } as never;
    else if (c.details?.url)
      out.conferenceData = {
        conferenceSolution: {
          name: c.provider ?? 'unknown',
          key: { type: c.provider === 'Google Meet' ? 'hangoutsMeet' : 'addOn' },
        },
        entryPoints: [
          {
            entryPointType: 'video',
            uri: c.details.url,
            ...(c.details.meeting_code ? { meetingCode: c.details.meeting_code } : {}),
          },
        ],
      };
  }
  return out;
}

/** The `when` of an event as Google holds it, in the shape a request gives it. */
function whenOfGoogle(event: GoogleEvent): NonNullable<CreateEventBody['when']> {
  if (event.start?.date)
    return { start_date: event.start.date, end_date: event.end?.date ?? dayAfter(event.start.date) };
  return {
    start_time: Math.floor(Date.parse(event.start?.dateTime ?? '') / 1000),
    end_time: Math.floor(Date.parse(event.end?.dateTime ?? event.start?.dateTime ?? '') / 1000),
    ...(event.start?.timeZone ? { start_timezone: event.start.timeZone } : {}),
  };
}

async function readEvent(client: GoogleClient, calendarId: string, eventId: string): Promise<GoogleEvent> {
  try {
    return await client.call<GoogleEvent>({
      api: 'calendar',
      path: `${eventsPath(calendarId)}/${segment(eventId, 'event')}`,
    });
  } catch (error) {
    if (error instanceof GoogleNotFoundError)
      throw new NotFoundError(`No event '${eventId}' in calendar '${calendarId}'`);
    throw error;
  }
}

export async function createGoogleEvent(
  grant: GrantRecord,
  calendarId: string,
  body: CreateEventBody,
  notify: boolean,
  idempotencyKey?: string,
): Promise<CalendarEvent> {
  const client = await googleClientOf(grant);
  const calendar = await calendarOf(client, calendarId);
  const fields = googleFields(body, calendar);
  const id = idempotencyKey !== undefined ? eventIdOfKey(`${grant.id}\n${idempotencyKey}`) : undefined;
  try {
    const created = await client.call<GoogleEvent>({
      api: 'calendar',
      method: 'POST',
      path: eventsPath(calendar.id),
      query: { sendUpdates: notify ? 'all' : 'none', ...(fields.conferenceData ? { conferenceDataVersion: 1 } : {}) },
      body: { ...fields, ...(id ? { id } : {}) },
    });
    return eventFromGoogle(grant, calendar.id, created, calendar.timeZone);
  } catch (error) {
    // An earlier attempt of the same create: the event it made.
    if (id && error instanceof ConflictError)
      return eventFromGoogle(grant, calendar.id, await readEvent(client, calendar.id, id), calendar.timeZone);
    throw error;
  }
}

export async function updateGoogleEvent(
  grant: GrantRecord,
  eventId: string,
  calendarId: string,
  body: UpdateEventBody,
  notify: boolean,
): Promise<CalendarEvent> {
  const client = await googleClientOf(grant);
  const calendar = await calendarOf(client, calendarId);
  const previous = await readEvent(client, calendar.id, eventId);
  const fields = googleFields(body, calendar, previous);
  const changed = await client.call<GoogleEvent>({
    api: 'calendar',
    method: 'PATCH',
    path: `${eventsPath(calendar.id)}/${segment(eventId, 'event')}`,
    query: { sendUpdates: notify ? 'all' : 'none', ...(fields.conferenceData ? { conferenceDataVersion: 1 } : {}) },
    body: fields,
  });
  return eventFromGoogle(grant, calendar.id, changed, calendar.timeZone);
}

export async function deleteGoogleEvent(
  grant: GrantRecord,
  eventId: string,
  calendarId: string,
  notify: boolean,
): Promise<void> {
  const client = await googleClientOf(grant);
  try {
    await client.call({
      api: 'calendar',
      method: 'DELETE',
      path: `${eventsPath(calendarId)}/${segment(eventId, 'event')}`,
      query: { sendUpdates: notify ? 'all' : 'none' },
    });
  } catch (error) {
    if (error instanceof GoogleNotFoundError)
      throw new NotFoundError(`No event '${eventId}' in calendar '${calendarId}'`);
    throw error;
  }
}

/** The account's answer to an invitation: its own attendee entry, with the organizer told. */
export async function sendGoogleRsvp(
  grant: GrantRecord,
  eventId: string,
  calendarId: string,
  body: SendRsvpBody,
): Promise<object> {
  const client = await googleClientOf(grant);
  const event = await readEvent(client, calendarId, eventId);
  const self = (event.attendees ?? []).find((a) => a.self || a.email?.toLowerCase() === grant.email.toLowerCase());
  if (!self)
    throw new InvalidRequestError(
      `'${grant.email}' is not a participant of event '${eventId}': there is nothing to answer`,
    );
  await client.call({
    api: 'calendar',
    method: 'PATCH',
    path: `${eventsPath(calendarId)}/${segment(eventId, 'event')}`,
    query: { sendUpdates: 'all' },
    body: {
      attendees: (event.attendees ?? []).map((a) =>
        a === self
          ? {
              ...a,
              responseStatus: PARTICIPANT_STATUS[body.status],
              ...(body.comment !== undefined ? { comment: body.comment } : {}),
            }
          : a,
      ),
    },
  });
  return {};
}
