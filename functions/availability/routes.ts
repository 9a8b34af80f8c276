import { AvailabilityBody, AvailabilityObject, FreeBusyBody, FreeBusyObject } from '#schemas/availability';
import type { RouteTable } from '#shared/http/route';

/** Free/busy of a grant's colleagues and slot availability across grants of the application. */
export const routes = {
  freeBusy: {
    method: 'POST',
    path: '/v3/grants/{grant_id}/calendars/free-busy',
    summary:
      'Busy time of grants of the application, by address (one entry per address; unknown ones get an error entry)',
    body: FreeBusyBody,
    response: FreeBusyObject,
    responseKind: 'list',
  },
  availability: {
    method: 'POST',
    path: '/v3/calendars/availability',
    summary: 'Meeting slots for participants (grants of the application): collective, max-availability or max-fairness',
    body: AvailabilityBody,
    response: AvailabilityObject,
  },
} as const satisfies RouteTable;
