/**
 * Calendars and the calendar list in the local Google Calendar fake: a calendar and a user's entry for
 * it rendered as the API answers them, calendarList.list with its filters and incremental sync, and
 * what an insert, patch or update of either may change.
 */

import { notFound } from './errors';
import {
  bad,
  CALENDAR_COLORS,
  compact,
  required,
  withoutNulls,
  type AccessRole,
  type Reminder,
} from './calendar-resources';
import { validZone } from './recurrence';
import {
  etagOf,
  ok,
  type CalendarAnswer,
  type CalendarCall,
  type CalendarState,
  type CalendarStore,
  type ListEntry,
} from './calendar-state';
import { encodeToken, maxResultsOf, pageCursor, syncPosition } from './calendar-sync';

export function renderEntry(state: CalendarState, entry: ListEntry, email: string): Record<string, unknown> {
  const calendar = state.calendars.get(entry.calendarId)!;
  return compact({
    kind: 'calendar#calendarListEntry',
    etag: entry.etag,
    id: calendar.id,
    summary: calendar.summary,
    description: calendar.description,
    location: calendar.location,
    timeZone: calendar.timeZone,
    summaryOverride: entry.summaryOverride,
    colorId: entry.colorId,
    backgroundColor: entry.backgroundColor,
    foregroundColor: entry.foregroundColor,
    hidden: entry.hidden || undefined,
    selected: entry.selected || undefined,
    accessRole: entry.accessRole,
    defaultReminders: entry.defaultReminders,
    notificationSettings: entry.notificationSettings,
    primary: calendar.primary && calendar.owner === email ? true : undefined,
    deleted: entry.deleted || undefined,
    dataOwner: calendar.primary ? undefined : calendar.owner,
    conferenceProperties: { allowedConferenceSolutionTypes: ['hangoutsMeet'] },
  });
}

export function renderCalendar(calendar: CalendarStore): Record<string, unknown> {
  return compact({
    kind: 'calendar#calendar',
    etag: calendar.etag,
    id: calendar.id,
    summary: calendar.summary,
    description: calendar.description,
    location: calendar.location,
    timeZone: calendar.timeZone,
    dataOwner: calendar.primary ? undefined : calendar.owner,
    conferenceProperties: { allowedConferenceSolutionTypes: ['hangoutsMeet'] },
  });
}

const ROLE_RANK: Record<AccessRole, number> = { freeBusyReader: 0, reader: 1, writer: 2, owner: 3 };

export function listCalendarList(call: CalendarCall): CalendarAnswer {
  const { account, state, query } = call;
  const syncText = query.get('syncToken');
  const cursor = pageCursor(call, account.listSeq);
  let entries = [...account.entries.values()];
  if (syncText !== null) {
    if (query.has('minAccessRole')) throw bad('The syncToken cannot be used together with minAccessRole.');
    const since = syncPosition(syncText, `list:${account.email}`, account.listFloor, account.listSeq);
    entries = entries.filter((e) => e.seq > since && e.seq <= cursor.s);
  } else {
    const minRole = query.get('minAccessRole') as AccessRole | null;
    entries = entries.filter(
      (e) =>
        (!e.deleted || query.get('showDeleted') === 'true') &&
        (!e.hidden || query.get('showHidden') === 'true') &&
        (!minRole || ROLE_RANK[e.accessRole] >= ROLE_RANK[minRole]),
    );
  }
  const max = maxResultsOf(call, 100, 250);
  const more = entries.length > cursor.o + max;
  return ok({
    kind: 'calendar#calendarList',
    etag: etagOf(state.now, account.listSeq),
    ...(more
      ? { nextPageToken: encodeToken({ o: cursor.o + max, s: cursor.s }) }
      : { nextSyncToken: encodeToken({ c: `list:${account.email}`, s: cursor.s }) }),
    items: entries.slice(cursor.o, cursor.o + max).map((e) => renderEntry(state, e, account.email)),
  });
}

export function listedEntry(call: CalendarCall): ListEntry {
  const id = call.params.calendarId === 'primary' ? call.account.email : call.params.calendarId!.toLowerCase();
  const entry = call.account.entries.get(id);
  if (!entry || entry.deleted) throw notFound();
  return entry;
}

/** A calendarList body; a PATCH may give null for a field to clear it. */
export type EntryBody = { [K in keyof Omit<ListEntry, 'calendarId'>]?: ListEntry[K] | null } & { id?: string };

/** Applies what a calendarList insert/patch/update may set; colours in RGB only with colorRgbFormat=true. */
export function applyEntry(call: CalendarCall, entry: ListEntry, body: EntryBody, replace: boolean): void {
  const rgb = [body.backgroundColor, body.foregroundColor].some((c) => c !== undefined && c !== null);
  if (rgb && call.query.get('colorRgbFormat') !== 'true')
    throw bad('The colorRgbFormat parameter must be true to set backgroundColor or foregroundColor.');
  if (body.colorId !== undefined) {
    const color = body.colorId === null ? undefined : CALENDAR_COLORS[body.colorId];
    if (!color) throw bad('Invalid color id value.');
    Object.assign(entry, {
      colorId: body.colorId,
      backgroundColor: color.background,
      foregroundColor: color.foreground,
    });
  }
  // null (a patch clearing them) goes back to the colours of the entry's colorId.
  const palette = CALENDAR_COLORS[entry.colorId]!;
  if (body.backgroundColor !== undefined) entry.backgroundColor = body.backgroundColor ?? palette.background;
  if (body.foregroundColor !== undefined) entry.foregroundColor = body.foregroundColor ?? palette.foreground;
  if (replace || body.hidden !== undefined) entry.hidden = body.hidden ?? undefined;
  if (replace || body.selected !== undefined) entry.selected = body.selected ?? undefined;
  if (replace || body.summaryOverride !== undefined) entry.summaryOverride = body.summaryOverride ?? undefined;
  if (replace || body.defaultReminders !== undefined)
    entry.defaultReminders = (withoutNulls(body.defaultReminders) as Reminder[] | null | undefined) ?? [];
  if (body.notificationSettings !== undefined) {
    const settings = withoutNulls(body.notificationSettings) as ListEntry['notificationSettings'] | null;
    entry.notificationSettings = settings ?? undefined;
  }
  call.state.touchEntry(call.account, entry);
}

export type CalendarBody = {
  summary?: string | null;
  description?: string | null;
  location?: string | null;
  timeZone?: string | null;
};

export function applyCalendar(call: CalendarCall, calendar: CalendarStore, body: CalendarBody, replace: boolean): void {
  if (body.timeZone !== undefined && (body.timeZone === null || !validZone(body.timeZone)))
    throw bad('Invalid time zone definition.');
  // A calendar keeps its title: a patch cannot clear it.
  if ((replace && !body.summary) || body.summary === null) throw required('Missing title.');
  if (body.summary !== undefined) calendar.summary = body.summary;
  if (replace || body.description !== undefined) calendar.description = body.description ?? undefined;
  if (replace || body.location !== undefined) calendar.location = body.location ?? undefined;
  if (body.timeZone !== undefined) calendar.timeZone = body.timeZone;
  calendar.bump(call.state.now);
  // The entries show the calendar's properties; they are read-only there, so list syncs do not return them.
  for (const account of call.state.accounts.values()) {
    const entry = account.entries.get(calendar.id);
    if (entry) entry.etag = etagOf(call.state.now, calendar.seq);
  }
}
