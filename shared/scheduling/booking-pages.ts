import type { BookingPageQuery } from '#schemas/scheduling';
import { getGrant } from '#shared/db/grants';
import type { ConfigurationRecord } from '#shared/db/scheduling';
import { ApiError, NotFoundError } from '#shared/errors';
import { accessOf, pageConfiguration, requireBooking } from '#shared/scheduling/access';
import { bookingView } from '#shared/scheduling/view';
import { bookingPage, errorPage, managePage } from '#shared/scheduling/page-html';
import { parseBookingReference } from '#shared/scheduling/reference';

/**
 * The HTML pages of the scheduler, resolved like the API (a slug, a session for private pages, a
 * booking reference for the manage page). A client error is answered as a page with the same
 * status and the same message the API would give.
 */
type Rendered = { html: string; nonce: string; status?: number };

async function rendered(build: () => Promise<Rendered>): Promise<Rendered> {
  try {
    return await build();
  } catch (error) {
    if (error instanceof ApiError && error.status < 500) return { ...errorPage(error.message), status: error.status };
    throw error;
  }
}

async function organizerName(config: ConfigurationRecord): Promise<string> {
  const organizer = await getGrant(config.application_id, config.grant_id);
  const entry = config.participants.find((p) => p.is_organizer === true);
  return config.name ?? entry?.name ?? organizer?.name ?? organizer?.email ?? '';
}

export function bookingPageOf(slug: string, query: BookingPageQuery): Promise<Rendered> {
  return rendered(async () => {
    const config = await pageConfiguration(slug, query.client_id, query.session);
    return bookingPage(config, await organizerName(config), {
      session: query.session,
      clientId: query.client_id,
      zone: query.tz,
    });
  });
}

export function managePageOf(slug: string, reference: string): Promise<Rendered> {
  return rendered(async () => {
    const access = await accessOf({}, { booking_reference: reference });
    if (access.config.slug !== slug) throw new NotFoundError('No booking has this reference on this page');
    const booking = await requireBooking(access.config, access.booking!);
    return managePage(
      access.config,
      await organizerName(access.config),
      booking,
      bookingView(booking),
      reference,
      access.role ?? 'guest',
      parseBookingReference(reference)?.salt ?? '',
    );
  });
}
