import {
  BookingObject,
  BookingRefQuery,
  CancelBookingBody,
  ConfirmBookingBody,
  CreateBookingBody,
  CreateBookingQuery,
  CreateSessionBody,
  RescheduleBookingBody,
  SchedulingAvailabilityObject,
  SchedulingAvailabilityQuery,
  SessionObject,
} from '#schemas/scheduling';
import type { RouteTable } from '#shared/http/route';

/**
 * The scheduler's sessions, availability and bookings (its configurations are
 * functions/scheduling-configurations, its booking pages functions/scheduling-pages). Sessions take
 * the API key; availability and bookings are public (auth: optional): a session in
 * `Authorization: Bearer`, the application's API key there (its own configurations, private ones
 * included), or, without the header, a public configuration by ID or by slug with `client_id`.
 */
export const routes = {
  createSession: {
    method: 'POST',
    path: '/v3/scheduling/sessions',
    summary: 'A session for a configuration (private ones need one)',
    body: CreateSessionBody,
    response: SessionObject,
    status: 201,
  },
  deleteSession: {
    method: 'DELETE',
    path: '/v3/scheduling/sessions/{session_id}',
    summary: 'End a session',
    responseKind: 'empty',
  },
  availability: {
    method: 'GET',
    path: '/v3/scheduling/availability',
    summary: 'Free slots of a configuration',
    auth: 'optional',
    query: SchedulingAvailabilityQuery,
    response: SchedulingAvailabilityObject,
  },
  createBooking: {
    method: 'POST',
    path: '/v3/scheduling/bookings',
    summary: 'Book a slot',
    auth: 'optional',
    query: CreateBookingQuery,
    body: CreateBookingBody,
    response: BookingObject,
    status: 201,
  },
  getBooking: {
    method: 'GET',
    path: '/v3/scheduling/bookings/{booking_id}',
    summary: 'One booking',
    auth: 'optional',
    query: BookingRefQuery,
    response: BookingObject,
  },
  confirmBooking: {
    method: 'PUT',
    path: '/v3/scheduling/bookings/{booking_id}',
    summary: 'Confirm or decline a pending booking (salt of its reference)',
    auth: 'optional',
    query: BookingRefQuery,
    body: ConfirmBookingBody,
    response: BookingObject,
  },
  rescheduleBooking: {
    method: 'PATCH',
    path: '/v3/scheduling/bookings/{booking_id}',
    summary: 'Move a booking to another free slot',
    auth: 'optional',
    query: BookingRefQuery,
    body: RescheduleBookingBody,
    response: BookingObject,
  },
  cancelBooking: {
    method: 'DELETE',
    path: '/v3/scheduling/bookings/{booking_id}',
    summary: 'Cancel a booking and its event',
    auth: 'optional',
    query: BookingRefQuery,
    body: CancelBookingBody,
    bodyOptional: true,
    response: BookingObject,
  },
} as const satisfies RouteTable;
