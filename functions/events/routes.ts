import {
  CalendarIdQuery,
  CreateEventBody,
  EventChangeQuery,
  EventIdQuery,
  EventObject,
  ListEventsQuery,
  SendRsvpBody,
  SendRsvpResult,
  UpdateEventBody,
} from '#schemas/event';
import type { RouteTable } from '#shared/http/route';

/** Events of a grant's calendars (`calendar_id` is required everywhere; `primary` allowed). */
export const routes = {
  listEvents: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/events',
    summary: 'Events of a calendar: filters, a time window, recurring series expanded on request',
    query: ListEventsQuery,
    response: EventObject,
    responseKind: 'list',
    select: true,
  },
  createEvent: {
    method: 'POST',
    path: '/v3/grants/{grant_id}/events',
    summary: 'Create an event (participants are invited by email unless notify_participants=false)',
    query: EventChangeQuery,
    body: CreateEventBody,
    response: EventObject,
    status: 201,
  },
  getEvent: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/events/{event_id}',
    summary: 'One event or occurrence (format=ics: as iCalendar)',
    query: EventIdQuery,
    response: EventObject,
    select: true,
  },
  updateEvent: {
    method: 'PUT',
    path: '/v3/grants/{grant_id}/events/{event_id}',
    summary: 'Change an event, a series, or one occurrence',
    query: EventChangeQuery,
    body: UpdateEventBody,
    response: EventObject,
  },
  deleteEvent: {
    method: 'DELETE',
    path: '/v3/grants/{grant_id}/events/{event_id}',
    summary: 'Delete an event or a series, or cancel one occurrence',
    query: EventChangeQuery,
    responseKind: 'empty',
  },
  sendRsvp: {
    method: 'POST',
    path: '/v3/grants/{grant_id}/events/{event_id}/send-rsvp',
    summary: 'Answer an invitation: the organizer is emailed an iCalendar REPLY',
    query: CalendarIdQuery,
    body: SendRsvpBody,
    response: SendRsvpResult,
  },
} as const satisfies RouteTable;
