import { empty, list, ok, page } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import { resolveGrant } from '#shared/grants/resolve';
import { accessOf, bookingAccess, createSession, deleteSession, originOf, schedulerSessions } from '#shared/scheduling/access';
import { bookingPageOf, managePageOf } from '#shared/scheduling/pages';
import { cancelBooking, configurationAvailability, confirmBooking, createBooking, getBooking, requireBooking, rescheduleBooking } from '#shared/scheduling/bookings';
import { configurationView, createConfiguration, deleteConfiguration, listConfigurations, requireConfiguration, updateConfiguration } from '#shared/scheduling/configurations';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  listGrantConfigurations: async ({ app, grant, query }) => {
    const page = await listConfigurations(app, query, grant);
    return list(page.items, page.nextCursor);
  },
  createGrantConfiguration: async ({ grant, body }) => ok(await createConfiguration(grant, body), { status: 201 }),
  getGrantConfiguration: async ({ app, grant, params }) => ok(configurationView(await requireConfiguration(app.applicationId, params.configuration_id, grant))),
  updateGrantConfiguration: async ({ app, grant, params, body }) => ok(await updateConfiguration(grant, await requireConfiguration(app.applicationId, params.configuration_id, grant), body)),
  deleteGrantConfiguration: async ({ app, grant, params }) => {
    await deleteConfiguration(await requireConfiguration(app.applicationId, params.configuration_id, grant));
    return empty();
  },
  listConfigurations: async ({ app, query }) => {
    const page = await listConfigurations(app, query, query.grant_id !== undefined ? await resolveGrant(app, query.grant_id) : undefined);
    return list(page.items, page.nextCursor);
  },
  createConfiguration: async ({ app, body }) => {
    const { grant_id, ...rest } = body;
    return ok(await createConfiguration(await resolveGrant(app, grant_id), rest), { status: 201 });
  },
  getConfiguration: async ({ app, params }) => ok(configurationView(await requireConfiguration(app.applicationId, params.configuration_id))),
  updateConfiguration: async ({ app, params, body }) => {
    const current = await requireConfiguration(app.applicationId, params.configuration_id);
    return ok(await updateConfiguration(await resolveGrant(app, current.grant_id), current, body));
  },
  deleteConfiguration: async ({ app, params }) => {
    await deleteConfiguration(await requireConfiguration(app.applicationId, params.configuration_id));
    return empty();
  },
  createSession: async ({ app, body }) => ok(await createSession(app, body), { status: 201 }),
  deleteSession: async ({ app, params }) => {
    await deleteSession(app, params.session_id);
    return empty();
  },
  availability: async ({ app, session, query }) => {
    const access = await accessOf({ app, session }, query);
    // Rescheduling: the booking's own time counts as free.
    const moving = query.booking_id !== undefined ? await requireBooking(bookingAccess(access, query.booking_id), query.booking_id) : undefined;
    return ok(await configurationAvailability(access.config, query.start_time, query.end_time, { free: moving && moving.status !== 'cancelled' ? { start: moving.start, end: moving.end } : undefined }));
  },
  createBooking: async ({ app, session, headers, query, body }) => ok(await createBooking((await accessOf({ app, session }, query)).config, query, body, originOf(headers)), { status: 201 }),
  getBooking: async ({ app, session, query, params }) => ok(await getBooking(bookingAccess(await accessOf({ app, session }, query), params.booking_id), params.booking_id)),
  confirmBooking: async ({ app, session, query, params, body }) => ok(await confirmBooking(bookingAccess(await accessOf({ app, session }, query), params.booking_id), params.booking_id, body)),
  rescheduleBooking: async ({ app, session, query, params, body }) => ok(await rescheduleBooking(bookingAccess(await accessOf({ app, session }, query), params.booking_id), params.booking_id, body)),
  cancelBooking: async ({ app, session, query, params, body }) =>
    ok(await cancelBooking(bookingAccess(await accessOf({ app, session }, query), params.booking_id), params.booking_id, body?.cancellation_reason)),
  bookingPage: async ({ params, query }) => {
    const { html, nonce, status } = await bookingPageOf(params.slug, query);
    return page(html, nonce, status);
  },
  managePage: async ({ params }) => {
    const { html, nonce, status } = await managePageOf(params.slug, params.reference);
    return page(html, nonce, status);
  },
}, { sessions: schedulerSessions });
