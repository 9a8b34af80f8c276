import { BookingPageQuery } from '#schemas/scheduling';
import type { RouteTable } from '#shared/http/route';

/**
 * The scheduler's booking pages (HTML, auth: none; a session in `?session=` for a private page, a
 * booking reference for the manage page): a function of their own, apart from functions/scheduling,
 * because they render pages and read a configuration and a booking, and never run the availability,
 * booking, event and email code the API's bookings need (the page's script calls that API).
 */
export const routes = {
  bookingPage: {
    method: 'GET',
    path: '/scheduling/{slug}',
    summary: 'The booking page of a configuration (HTML)',
    auth: 'none',
    query: BookingPageQuery,
    responseKind: 'page',
    tag: 'scheduling',
  },
  managePage: {
    method: 'GET',
    path: '/scheduling/{slug}/booking/{reference}',
    summary: 'The page a booking reference opens: reschedule or cancel (HTML)',
    auth: 'none',
    responseKind: 'page',
    tag: 'scheduling',
  },
} as const satisfies RouteTable;
