import { CalendarObject, CreateCalendarBody, ListCalendarsQuery, UpdateCalendarBody } from '#schemas/calendar';
import { SelectQuery } from '#schemas/common';
import type { RouteTable } from '#shared/http/route';

/** Calendars of a grant (`primary` is an alias of its primary calendar's ID). */
export const routes = {
  listCalendars: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/calendars',
    summary: 'Calendars of a grant, the primary one first',
    query: ListCalendarsQuery,
    response: CalendarObject,
    responseKind: 'list',
    select: true,
  },
  createCalendar: {
    method: 'POST',
    path: '/v3/grants/{grant_id}/calendars',
    summary: 'Create a calendar',
    body: CreateCalendarBody,
    response: CalendarObject,
    status: 201,
  },
  getCalendar: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/calendars/{calendar_id}',
    summary: 'One calendar (primary: the primary one)',
    query: SelectQuery,
    response: CalendarObject,
    select: true,
  },
  updateCalendar: {
    method: 'PUT',
    path: '/v3/grants/{grant_id}/calendars/{calendar_id}',
    summary: 'Change a calendar',
    body: UpdateCalendarBody,
    response: CalendarObject,
  },
  deleteCalendar: {
    method: 'DELETE',
    path: '/v3/grants/{grant_id}/calendars/{calendar_id}',
    summary: 'Delete a calendar (not the primary one)',
    responseKind: 'empty',
  },
} as const satisfies RouteTable;
