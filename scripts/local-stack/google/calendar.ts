import { GoogleApiError, notFound } from './errors';
import {
  bad,
  CALENDAR_COLORS,
  EVENT_COLORS,
  forbidden,
  type AccessRole,
  type EventResource,
  type EventStatus,
} from './calendar-resources';
import {
  access,
  CalendarState,
  CalendarStore,
  empty,
  ok,
  type CalendarAnswer,
  type CalendarCall,
  type StoredEvent,
} from './calendar-state';
import {
  bodyOf,
  cancel,
  changeEvent,
  findEvent,
  insertEvent,
  merge,
  renderEvent,
  renderOptions,
  requiredEvent,
  save,
  writeOptions,
  type EventBody,
} from './calendar-events';
import { listEvents, listInstances } from './calendar-sync';
import { freeBusy } from './freebusy';
import {
  applyCalendar,
  applyEntry,
  listCalendarList,
  listedEntry,
  renderCalendar,
  renderEntry,
  type CalendarBody,
  type EntryBody,
} from './calendar-list';
import { stopChannel, watchEvents } from './calendar-channels';

/**
 * The state and the handlers of the local Google Calendar fake: per user a primary calendar (its id
 * is the user's address) and a calendar list, secondary calendars, events with recurrence expanded
 * the way Google does (RRULE, RDATE, EXDATE, instances with `recurringEventId`/`originalStartTime`,
 * changed or cancelled instances stored as exceptions), incremental sync, conferences, free/busy and
 * watch channels (recorded, not pushed). Names and shapes follow calendar-v3.json; the server checks
 * every request and answer against it, so a handler here only has to be right about behaviour.
 *
 * This file maps discovery method ids to handlers and holds the test helpers; the parts live beside it:
 * calendar-resources.ts (shapes, errors, palettes), recurrence.ts (times, zones, RRULE/RDATE/EXDATE),
 * calendar-state.ts (stores, accounts, access), calendar-events.ts (writing, exceptions, rendering),
 * calendar-sync.ts (events.list/instances, page and sync tokens), freebusy.ts, calendar-list.ts
 * (calendars and the calendar list) and calendar-channels.ts (watch channels).
 */

export { CalendarAccount, CalendarState, CalendarStore, type CalendarEnvironment } from './calendar-state';
export type { CalendarAnswer, CalendarCall } from './calendar-state';
export type { EventResource, RecordedChannel } from './calendar-resources';

// ---------------------------------------------------------------------------------------------------
// Handlers
// ---------------------------------------------------------------------------------------------------

const eventBody = (call: CalendarCall) => (call.body ?? {}) as EventBody;

function eventAnswer(call: CalendarCall, calendar: CalendarStore, event: StoredEvent): CalendarAnswer {
  return ok(renderEvent(calendar, event, renderOptions(call, calendar, false)));
}

/** The handlers, by discovery method id. */
export const CALENDAR_HANDLERS: Record<string, (call: CalendarCall) => CalendarAnswer> = {
  // Calendar list

  'calendar.calendarList.list': listCalendarList,

  'calendar.calendarList.get': (call) => ok(renderEntry(call.state, listedEntry(call), call.account.email)),

  'calendar.calendarList.insert': (call) => {
    const body = (call.body ?? {}) as EntryBody;
    const id = body.id!.toLowerCase();
    const calendar = call.state.calendars.get(id);
    if (!calendar || calendar.deleted) throw notFound();
    let entry = call.account.entries.get(id);
    if (!entry || entry.deleted) {
      const role: AccessRole = calendar.owner === call.account.email ? 'owner' : 'reader';
      entry = call.state.listCalendar(call.account, calendar, role, { selected: true });
    }
    applyEntry(call, entry, body, false);
    return ok(renderEntry(call.state, entry, call.account.email));
  },

  'calendar.calendarList.patch': (call) => {
    const entry = listedEntry(call);
    applyEntry(call, entry, (call.body ?? {}) as EntryBody, false);
    return ok(renderEntry(call.state, entry, call.account.email));
  },

  'calendar.calendarList.update': (call) => {
    const entry = listedEntry(call);
    applyEntry(call, entry, (call.body ?? {}) as EntryBody, true);
    return ok(renderEntry(call.state, entry, call.account.email));
  },

  'calendar.calendarList.delete': (call) => {
    const entry = listedEntry(call);
    if (entry.calendarId === call.account.email) throw bad('The primary calendar cannot be removed from the list.');
    entry.deleted = true;
    call.state.touchEntry(call.account, entry);
    return empty;
  },

  // Calendars

  'calendar.calendars.get': (call) => ok(renderCalendar(access(call, call.params.calendarId!, 'read').calendar)),

  'calendar.calendars.insert': (call) => {
    const body = (call.body ?? {}) as CalendarBody;
    const { state, account } = call;
    const primary = state.calendars.get(account.email)!;
    let id: string;
    do id = `${state.newId()}@group.calendar.google.com`;
    while (state.calendars.has(id));
    const calendar = new CalendarStore({
      id,
      owner: account.email,
      primary: false,
      summary: body.summary ?? '',
      timeZone: primary.timeZone,
      now: state.now,
    });
    applyCalendar(call, calendar, body, true);
    state.calendars.set(id, calendar);
    state.listCalendar(account, calendar, 'owner', { selected: true });
    return ok(renderCalendar(calendar));
  },

  'calendar.calendars.patch': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    applyCalendar(call, calendar, (call.body ?? {}) as CalendarBody, false);
    return ok(renderCalendar(calendar));
  },

  'calendar.calendars.update': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    applyCalendar(call, calendar, (call.body ?? {}) as CalendarBody, true);
    return ok(renderCalendar(calendar));
  },

  'calendar.calendars.delete': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    if (calendar.primary)
      throw bad('The primary calendar cannot be deleted; use calendars.clear.', 'cannotDeletePrimaryCalendar');
    if (calendar.owner !== call.account.email) throw forbidden();
    calendar.deleted = true;
    calendar.bump(call.state.now);
    for (const account of call.state.accounts.values()) {
      const entry = account.entries.get(calendar.id);
      if (entry && !entry.deleted) {
        entry.deleted = true;
        call.state.touchEntry(account, entry);
      }
    }
    return empty;
  },

  'calendar.calendars.clear': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    if (!calendar.primary) throw bad('Only a primary calendar can be cleared; delete a secondary one.');
    for (const e of [...calendar.events.values()])
      if (e.status !== 'cancelled') save(call.state, calendar, { ...e, status: 'cancelled' });
    return empty;
  },

  // Events

  'calendar.events.list': listEvents,
  'calendar.events.instances': listInstances,

  'calendar.events.get': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'read');
    return eventAnswer(call, calendar, requiredEvent(calendar, call.params.eventId!));
  },

  'calendar.events.insert': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    const event = insertEvent(
      call.state,
      calendar,
      eventBody(call),
      writeOptions(call, calendar, false),
      call.account.email,
    );
    return eventAnswer(call, calendar, event);
  },

  'calendar.events.update': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    const event = requiredEvent(calendar, call.params.eventId!);
    const o = writeOptions(call, calendar, !!event.recurringEventId);
    return eventAnswer(call, calendar, changeEvent(call.state, calendar, event, eventBody(call), o));
  },

  'calendar.events.patch': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    const event = requiredEvent(calendar, call.params.eventId!);
    const merged = merge(bodyOf(event.fields, calendar.timeZone), eventBody(call)) as EventBody;
    const o = writeOptions(call, calendar, !!event.recurringEventId);
    return eventAnswer(call, calendar, changeEvent(call.state, calendar, event, merged, o));
  },

  'calendar.events.delete': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    cancel(call.state, calendar, requiredEvent(calendar, call.params.eventId!));
    return empty;
  },

  'calendar.events.move': (call) => {
    const { calendar } = access(call, call.params.calendarId!, 'write');
    const { calendar: destination } = access(call, call.query.get('destination')!, 'write');
    const event = requiredEvent(calendar, call.params.eventId!);
    if (event.status === 'cancelled') throw new GoogleApiError(410, 'Resource has been deleted', 'deleted');
    if (event.fields.eventType !== 'default')
      throw bad(`Events of type ${event.fields.eventType} cannot be moved.`, 'eventTypeRestriction');
    if (event.recurringEventId)
      throw bad('Cannot change the organizer of an instance.', 'cannotChangeOrganizerOfInstance');
    if (destination === calendar) return eventAnswer(call, calendar, event);
    const existing = destination.events.get(event.id);
    if (existing && existing.status !== 'cancelled')
      throw new GoogleApiError(409, 'The requested identifier already exists.', 'duplicate');
    const related = [...calendar.events.values()].filter((e) => e.recurringEventId === event.id);
    for (const e of [event, ...related]) {
      save(call.state, destination, { ...e, fields: { ...e.fields } });
      save(call.state, calendar, { ...e, status: 'cancelled' });
    }
    return eventAnswer(call, destination, destination.events.get(event.id)!);
  },

  'calendar.events.watch': watchEvents,
  'calendar.channels.stop': stopChannel,
  'calendar.freebusy.query': freeBusy,

  'calendar.colors.get': () =>
    ok({
      kind: 'calendar#colors',
      updated: '2012-02-14T00:00:00.000Z',
      calendar: CALENDAR_COLORS,
      event: EVENT_COLORS,
    }),
};

// ---------------------------------------------------------------------------------------------------
// Another client's change (a test helper)
// ---------------------------------------------------------------------------------------------------

/** An event body as another client would send it; with the id of a stored event it changes that one. */
export type OutsideChange = Record<string, unknown> & { id?: string; status?: EventStatus };

/**
 * Changes a calendar as another client of the same account would (Google's web UI, a phone): an
 * insert, a patch (an `id` the calendar has) or a delete (`status: 'cancelled'`); the sync state moves
 * on as for any change. Answers the event as events.get would, to the calendar's owner.
 */
export function changeOutside(
  state: CalendarState,
  email: string,
  calendarId: string,
  change: OutsideChange,
): EventResource {
  const account = state.requiredAccount(email);
  const call: CalendarCall = {
    account,
    state,
    method: { id: 'calendar.events.patch', path: '', httpMethod: 'PATCH' },
    params: {},
    query: new URLSearchParams('conferenceDataVersion=1'),
    body: change,
  };
  const { calendar } = access(call, calendarId, 'write');
  const existing = change.id !== undefined ? findEvent(calendar, change.id) : undefined;
  let event: StoredEvent;
  if (!existing) event = insertEvent(state, calendar, change, writeOptions(call, calendar, false, true), account.email);
  else if (change.status === 'cancelled') {
    cancel(state, calendar, existing);
    event = calendar.events.get(existing.id)!;
  } else {
    const merged = merge(bodyOf(existing.fields, calendar.timeZone), change) as EventBody;
    const o = writeOptions(call, calendar, !!existing.recurringEventId, true);
    event = changeEvent(state, calendar, existing, merged, o);
  }
  return renderEvent(calendar, event, { zone: calendar.timeZone, minimalIfCancelled: false });
}

/** Makes every sync token of the calendar so far unusable: the next incremental sync is answered 410. */
export function expireSync(state: CalendarState, email: string, calendarId: string): void {
  const account = state.requiredAccount(email);
  const id = calendarId === 'primary' ? account.email : calendarId.toLowerCase();
  const calendar = state.calendars.get(id);
  if (!calendar) throw new Error(`The Google fake has no calendar ${calendarId}`);
  calendar.syncFloor = calendar.bump(state.now);
}
