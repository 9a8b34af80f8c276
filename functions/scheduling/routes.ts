import {
  BookingObject,
  BookingPageQuery,
  BookingRefQuery,
  CancelBookingBody,
  ConfigurationObject,
  ConfirmBookingBody,
  CreateAppConfigurationBody,
  CreateBookingBody,
  CreateBookingQuery,
  CreateConfigurationBody,
  CreateSessionBody,
  ListConfigurationsQuery,
  RescheduleBookingBody,
  SchedulingAvailabilityObject,
  SchedulingAvailabilityQuery,
  SessionObject,
  UpdateConfigurationBody,
} from '#schemas/scheduling';
import { PageQuery } from '#schemas/common';
import type { RouteTable } from '#shared/http/route';

/**
 * The scheduler. Configurations and sessions take the API key; availability and bookings are
 * public (auth: optional): a session in `Authorization: Bearer`, the application's API key there
 * (its own configurations, private ones included), or, without the header, a public configuration
 * by ID or by slug with `client_id`. The booking pages read no header (auth: none).
 */
export const routes = {
  listGrantConfigurations: { method: 'GET', path: '/v3/grants/{grant_id}/scheduling/configurations', summary: "The grant's scheduler configurations", query: PageQuery, response: ConfigurationObject, responseKind: 'list' },
  createGrantConfiguration: { method: 'POST', path: '/v3/grants/{grant_id}/scheduling/configurations', summary: 'Create a configuration organized by the grant', body: CreateConfigurationBody, response: ConfigurationObject, status: 201 },
  getGrantConfiguration: { method: 'GET', path: '/v3/grants/{grant_id}/scheduling/configurations/{configuration_id}', summary: 'One configuration', response: ConfigurationObject },
  updateGrantConfiguration: { method: 'PUT', path: '/v3/grants/{grant_id}/scheduling/configurations/{configuration_id}', summary: 'Change a configuration', body: UpdateConfigurationBody, response: ConfigurationObject },
  deleteGrantConfiguration: { method: 'DELETE', path: '/v3/grants/{grant_id}/scheduling/configurations/{configuration_id}', summary: 'Delete a configuration', responseKind: 'empty' },
  listConfigurations: { method: 'GET', path: '/v3/scheduling/configurations', summary: "The application's configurations (optionally one grant's)", query: ListConfigurationsQuery, response: ConfigurationObject, responseKind: 'list' },
  createConfiguration: { method: 'POST', path: '/v3/scheduling/configurations', summary: 'Create a configuration, its organizer named by grant_id', body: CreateAppConfigurationBody, response: ConfigurationObject, status: 201 },
  getConfiguration: { method: 'GET', path: '/v3/scheduling/configurations/{configuration_id}', summary: 'One configuration', response: ConfigurationObject },
  updateConfiguration: { method: 'PUT', path: '/v3/scheduling/configurations/{configuration_id}', summary: 'Change a configuration', body: UpdateConfigurationBody, response: ConfigurationObject },
  deleteConfiguration: { method: 'DELETE', path: '/v3/scheduling/configurations/{configuration_id}', summary: 'Delete a configuration', responseKind: 'empty' },
  createSession: { method: 'POST', path: '/v3/scheduling/sessions', summary: 'A session for a configuration (private ones need one)', body: CreateSessionBody, response: SessionObject, status: 201 },
  deleteSession: { method: 'DELETE', path: '/v3/scheduling/sessions/{session_id}', summary: 'End a session', responseKind: 'empty' },
  availability: { method: 'GET', path: '/v3/scheduling/availability', summary: 'Free slots of a configuration', auth: 'optional', query: SchedulingAvailabilityQuery, response: SchedulingAvailabilityObject },
  createBooking: { method: 'POST', path: '/v3/scheduling/bookings', summary: 'Book a slot', auth: 'optional', query: CreateBookingQuery, body: CreateBookingBody, response: BookingObject, status: 201 },
  getBooking: { method: 'GET', path: '/v3/scheduling/bookings/{booking_id}', summary: 'One booking', auth: 'optional', query: BookingRefQuery, response: BookingObject },
  confirmBooking: { method: 'PUT', path: '/v3/scheduling/bookings/{booking_id}', summary: 'Confirm or decline a pending booking (salt of its reference)', auth: 'optional', query: BookingRefQuery, body: ConfirmBookingBody, response: BookingObject },
  rescheduleBooking: { method: 'PATCH', path: '/v3/scheduling/bookings/{booking_id}', summary: 'Move a booking to another free slot', auth: 'optional', query: BookingRefQuery, body: RescheduleBookingBody, response: BookingObject },
  cancelBooking: { method: 'DELETE', path: '/v3/scheduling/bookings/{booking_id}', summary: 'Cancel a booking and its event', auth: 'optional', query: BookingRefQuery, body: CancelBookingBody, bodyOptional: true, response: BookingObject },
  bookingPage: { method: 'GET', path: '/scheduling/{slug}', summary: 'The booking page of a configuration (HTML)', auth: 'none', query: BookingPageQuery, responseKind: 'page' },
  managePage: { method: 'GET', path: '/scheduling/{slug}/booking/{reference}', summary: 'The page a booking reference opens: reschedule or cancel (HTML)', auth: 'none', responseKind: 'page' },
} as const satisfies RouteTable;
