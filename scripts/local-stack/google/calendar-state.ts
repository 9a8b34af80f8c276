/**
 * The state of the local Google Calendar fake: calendars with their events and change counters, each
 * user's account with its calendar list, recorded channels; who may read or write a calendar; and the
 * shape of a call to a handler and of its answer.
 */

import type { DiscoveryMethod } from './discovery';
import { notFound } from './errors';
import {
  CALENDAR_COLORS,
  forbidden,
  type AccessRole,
  type ConferenceData,
  type EventAttendee,
  type EventStatus,
  type EventType,
  type ExtendedProperties,
  type RecordedChannel,
  type Reminder,
} from './calendar-resources';
import { validZone, type When } from './recurrence';

// ---------------------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------------------

/** What a client can set on an event, normalized. */
export interface EventFields {
  summary?: string;
  description?: string;
  location?: string;
  start: When;
  end: When;
  recurrence?: string[];
  attendees?: EventAttendee[];
  eventType: EventType;
  transparency: 'opaque' | 'transparent';
  extendedProperties?: ExtendedProperties;
  conferenceData?: ConferenceData;
  sequence: number;
  iCalUID: string;
  /** Fields kept as sent (colorId, reminders, visibility, type properties...): the server checked their shape. */
  other: Record<string, unknown>;
}

export interface StoredEvent {
  id: string;
  fields: EventFields;
  status: EventStatus;
  created: number;
  updated: number;
  /** The calendar's change counter when this event last changed: what sync tokens compare. */
  seq: number;
  etag: string;
  creator: string;
  /** For an exception (a changed or cancelled instance): its series and the instance's original start. */
  recurringEventId?: string;
  originalStart?: When;
}

export class CalendarStore {
  readonly id: string;
  readonly owner: string;
  readonly primary: boolean;
  summary: string;
  description?: string;
  location?: string;
  timeZone: string;
  /** Bumped by every change of the calendar or its events: sync tokens, the events list's etag. */
  seq = 1;
  /** Sync tokens older than this are answered 410. */
  syncFloor = 0;
  updated: number;
  etag: string;
  deleted = false;
  readonly events = new Map<string, StoredEvent>();

  constructor(init: { id: string; owner: string; primary: boolean; summary: string; timeZone: string; now: number }) {
    this.id = init.id;
    this.owner = init.owner;
    this.primary = init.primary;
    this.summary = init.summary;
    this.timeZone = init.timeZone;
    this.updated = init.now;
    this.etag = etagOf(init.now, this.seq);
  }

  /** Records a change: the calendar's sync state, etag and updated move on. */
  bump(now: number): number {
    this.seq++;
    this.updated = now;
    this.etag = etagOf(now, this.seq);
    return this.seq;
  }
}

export interface ListEntry {
  calendarId: string;
  accessRole: AccessRole;
  seq: number;
  etag: string;
  deleted: boolean;
  hidden?: boolean;
  selected?: boolean;
  summaryOverride?: string;
  colorId: string;
  backgroundColor: string;
  foregroundColor: string;
  defaultReminders: Reminder[];
  notificationSettings?: { notifications: { type: string; method: string }[] };
}

export class CalendarAccount {
  readonly email: string;
  readonly entries = new Map<string, ListEntry>();
  listSeq = 1;
  listFloor = 0;

  constructor(email: string) {
    this.email = email;
  }
}

export interface CalendarEnvironment {
  now: () => number;
}

/** Quoted like Google's etags: microseconds of the change, the counter in the last digits. */
export function etagOf(now: number, seq: number): string {
  return `"${now * 1000 + (seq % 1000)}"`;
}

export class CalendarState {
  readonly env: CalendarEnvironment;
  readonly calendars = new Map<string, CalendarStore>();
  readonly accounts = new Map<string, CalendarAccount>();
  readonly channels = new Map<string, RecordedChannel>();
  private counter = 0;

  constructor(env: CalendarEnvironment) {
    this.env = env;
  }

  get now(): number {
    return this.env.now();
  }

  /** IDs in Google's alphabet for event ids (base32hex: 0-9, a-v), growing with time. */
  newId(): string {
    return ((BigInt(this.now) << 20n) | BigInt(this.counter++ & 0xfffff)).toString(32);
  }

  /** A user: their account and primary calendar (id: the address), in their list as owner. */
  addUser(email: string, timeZone = 'UTC'): void {
    const id = email.toLowerCase();
    if (this.accounts.has(id)) return;
    if (!validZone(timeZone)) throw new Error(`The Google fake: ${timeZone} is not an IANA time zone`);
    const account = new CalendarAccount(id);
    this.accounts.set(id, account);
    const calendar = new CalendarStore({ id, owner: id, primary: true, summary: id, timeZone, now: this.now });
    this.calendars.set(id, calendar);
    this.listCalendar(account, calendar, 'owner', {
      selected: true,
      defaultReminders: [{ method: 'popup', minutes: 10 }],
      notificationSettings: {
        notifications: [
          { type: 'eventCreation', method: 'email' },
          { type: 'eventChange', method: 'email' },
          { type: 'eventCancellation', method: 'email' },
          { type: 'eventResponse', method: 'email' },
        ],
      },
    });
  }

  account(email: string): CalendarAccount | undefined {
    return this.accounts.get(email.toLowerCase());
  }

  /** The account of a test-only helper's `email`, or a plain error naming it. */
  requiredAccount(email: string): CalendarAccount {
    const account = this.account(email);
    if (!account) throw new Error(`The Google fake has no user ${email}; addUser first`);
    return account;
  }

  listCalendar(
    account: CalendarAccount,
    calendar: CalendarStore,
    accessRole: AccessRole,
    extra: Partial<ListEntry>,
  ): ListEntry {
    const colorId = calendar.primary ? '14' : String((account.entries.size % 24) + 1);
    const color = CALENDAR_COLORS[colorId]!;
    const entry: ListEntry = {
      calendarId: calendar.id,
      accessRole,
      seq: ++account.listSeq,
      etag: etagOf(this.now, account.listSeq),
      deleted: false,
      colorId,
      backgroundColor: color.background,
      foregroundColor: color.foreground,
      defaultReminders: [],
      ...extra,
    };
    account.entries.set(calendar.id, entry);
    return entry;
  }

  /** Marks a list entry changed: it comes back in the next incremental calendarList sync. */
  touchEntry(account: CalendarAccount, entry: ListEntry): void {
    entry.seq = ++account.listSeq;
    entry.etag = etagOf(this.now, entry.seq);
  }

  reset(): void {
    this.calendars.clear();
    this.accounts.clear();
    this.channels.clear();
  }
}

// ---------------------------------------------------------------------------------------------------
// Access
// ---------------------------------------------------------------------------------------------------

interface Access {
  calendar: CalendarStore;
  role: AccessRole;
  entry?: ListEntry;
}

/**
 * The calendar a request names (`primary`: the caller's) and the caller's role on it. A calendar the
 * caller neither owns nor has in their list is answered 404, as Google hides what one cannot see.
 */
export function access(call: CalendarCall, calendarId: string, need: 'read' | 'write'): Access {
  const id = calendarId === 'primary' ? call.account.email : calendarId.toLowerCase();
  const calendar = call.state.calendars.get(id);
  if (!calendar || calendar.deleted) throw notFound();
  const entry = call.account.entries.get(id);
  const role: AccessRole =
    calendar.owner === call.account.email ? 'owner' : entry && !entry.deleted ? entry.accessRole : 'freeBusyReader';
  if (role === 'freeBusyReader') throw notFound();
  if (need === 'write' && role !== 'owner' && role !== 'writer') throw forbidden();
  return { calendar, role, ...(entry ? { entry } : {}) };
}
// ---------------------------------------------------------------------------------------------------
// Calls and answers
// ---------------------------------------------------------------------------------------------------

export interface CalendarCall {
  account: CalendarAccount;
  state: CalendarState;
  method: DiscoveryMethod;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
}

export interface CalendarAnswer {
  status: number;
  /** JSON body; undefined for an empty answer (204). */
  body?: unknown;
}

export const ok = (body: unknown): CalendarAnswer => ({ status: 200, body });
export const empty: CalendarAnswer = { status: 204 };
