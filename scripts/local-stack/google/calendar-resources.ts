/**
 * What the local Google Calendar fake is made of, as calendar-v3.json names it: the resources' shapes
 * (event times, attendees, conferences, channels), the errors in Calendar's own reasons and the colour
 * palettes of colors.get. Shared by every other part of the fake; it imports none of them.
 */

import { GoogleApiError } from './errors';

// ---------------------------------------------------------------------------------------------------
// Errors in Calendar's own reasons
// ---------------------------------------------------------------------------------------------------

export const bad = (message: string, reason = 'invalid') => new GoogleApiError(400, message, reason);
export const required = (message: string) => new GoogleApiError(400, message, 'required');
export const forbidden = () =>
  new GoogleApiError(403, 'You need to have writer access to this calendar.', 'requiredAccessLevel');
export const emptyRange = () => bad('The specified time range is empty.', 'timeRangeEmpty');
export const fullSyncRequired = () =>
  new GoogleApiError(410, 'Sync token is no longer valid, a full sync is required.', 'fullSyncRequired');

// ---------------------------------------------------------------------------------------------------
// Resources as calendar-v3.json names them
// ---------------------------------------------------------------------------------------------------

export type EventType = 'default' | 'focusTime' | 'outOfOffice' | 'workingLocation' | 'birthday' | 'fromGmail';
export type EventStatus = 'confirmed' | 'tentative' | 'cancelled';
export type AccessRole = 'owner' | 'writer' | 'reader' | 'freeBusyReader';

export interface EventDateTime {
  date?: string;
  dateTime?: string;
  timeZone?: string;
}

export interface EventAttendee {
  email: string;
  displayName?: string;
  optional?: boolean;
  responseStatus: 'needsAction' | 'declined' | 'tentative' | 'accepted';
  comment?: string;
  additionalGuests?: number;
  resource?: boolean;
  organizer?: boolean;
  self?: boolean;
}

export interface EntryPoint {
  entryPointType: string;
  uri: string;
  label?: string;
  meetingCode?: string;
}

export interface ConferenceData {
  conferenceId?: string;
  conferenceSolution?: { key: { type: string }; name?: string; iconUri?: string };
  createRequest?: { requestId?: string; conferenceSolutionKey?: { type?: string }; status?: { statusCode: string } };
  entryPoints?: EntryPoint[];
  notes?: string;
  signature?: string;
}

export interface ExtendedProperties {
  private?: Record<string, string>;
  shared?: Record<string, string>;
}

/** An Event as the API answers it (the fields this fake sets; the rest pass through as sent). */
export interface EventResource {
  kind: 'calendar#event';
  etag: string;
  id: string;
  status: EventStatus;
  updated?: string;
  [field: string]: unknown;
}

export interface Reminder {
  method: 'email' | 'popup';
  minutes: number;
}

/** A watch channel as events.watch recorded it (calendar-push.ts sends its notifications). */
export interface RecordedChannel {
  id: string;
  resourceId: string;
  resourceUri: string;
  calendarId: string;
  address: string;
  type: string;
  token?: string;
  params?: Record<string, string>;
  /** Epoch ms. */
  expiration: number;
  email: string;
}

// ---------------------------------------------------------------------------------------------------
// Answers: unset fields left out, colours by colorId
// ---------------------------------------------------------------------------------------------------

/** Drops keys whose value is undefined, so answers carry only what is set. */
export function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** A value a patch sets whole, its null fields (cleared, at any depth) left out; array items stay as they are. */
export function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => (item === null ? item : withoutNulls(item)));
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== null)
      .map(([k, v]) => [k, withoutNulls(v)]),
  );
}

/** Google's calendar and event palettes (colors.get), by colorId. */
export const CALENDAR_COLORS: Record<string, { background: string; foreground: string }> = Object.fromEntries(
  [
    '#ac725e',
    '#d06b64',
    '#f83a22',
    '#fa573c',
    '#ff7537',
    '#ffad46',
    '#42d692',
    '#16a765',
    '#7bd148',
    '#b3dc6c',
    '#fbe983',
    '#fad165',
    '#92e1c0',
    '#9fe1e7',
    '#9fc6e7',
    '#4986e7',
    '#9a9cff',
    '#b99aff',
    '#c2c2c2',
    '#cabdbf',
    '#cca6ac',
    '#f691b2',
    '#cd74e6',
    '#a47ae2',
  ].map((background, i) => [String(i + 1), { background, foreground: '#000000' }]),
);
export const EVENT_COLORS: Record<string, { background: string; foreground: string }> = Object.fromEntries(
  [
    '#a4bdfc',
    '#7ae7bf',
    '#dbadff',
    '#ff887c',
    '#fbd75b',
    '#ffb878',
    '#46d6db',
    '#e1e1e1',
    '#5484ed',
    '#51b749',
    '#dc2127',
  ].map((background, i) => [String(i + 1), { background, foreground: '#1d1d1d' }]),
);
