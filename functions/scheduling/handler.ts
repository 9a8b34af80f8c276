import { empty, list, ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import { originOf } from '#shared/http/origin';
import {
  accessOf,
  bookingAccess,
  createSession,
  deleteSession,
  requireBooking,
  schedulerSessions,
} from '#shared/scheduling/access';
import {
  cancelBooking,
  configurationAvailability,
  confirmBooking,
  createBooking,
  getBooking,
  rescheduleBooking,
} from '#shared/scheduling/bookings';
import { requireConfiguration } from '#shared/scheduling/configurations';
import {
  createGroupEvent,
  deleteGroupEvent,
  importGroupEvents,
  listGroupEvents,
  updateGroupEvent,
  validateTimeslot,
} from '#shared/scheduling/group-events';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(
  generated,
  {
    createSession: async ({ app, body }) => ok(await createSession(app, body), { status: 201 }),
    deleteSession: async ({ app, params }) => {
      await deleteSession(app, params.session_id);
      return empty();
    },
    availability: async ({ app, session, query }) => {
      const access = await accessOf({ app, session }, query);
      // Rescheduling: the booking's own time counts as free.
      const moving =
        query.booking_id !== undefined
          ? await requireBooking(bookingAccess(access, query.booking_id), query.booking_id)
          : undefined;
      return ok(
        await configurationAvailability(access.config, query.start_time, query.end_time, {
          free: moving && moving.status !== 'cancelled' ? { start: moving.start, end: moving.end } : undefined,
        }),
      );
    },
    createBooking: async ({ app, session, headers, query, body }) =>
      ok(await createBooking((await accessOf({ app, session }, query)).config, query, body, originOf(headers)), {
        status: 201,
      }),
    getBooking: async ({ app, session, query, params }) =>
      ok(
        await getBooking(bookingAccess(await accessOf({ app, session }, query), params.booking_id), params.booking_id),
      ),
    confirmBooking: async ({ app, session, query, params, body }) =>
      ok(
        await confirmBooking(
          bookingAccess(await accessOf({ app, session }, query), params.booking_id),
          params.booking_id,
          body,
        ),
      ),
    rescheduleBooking: async ({ app, session, query, params, body }) =>
      ok(
        await rescheduleBooking(
          bookingAccess(await accessOf({ app, session }, query), params.booking_id),
          params.booking_id,
          body,
        ),
      ),
    cancelBooking: async ({ app, session, query, params, body }) =>
      ok(
        await cancelBooking(
          bookingAccess(await accessOf({ app, session }, query), params.booking_id),
          params.booking_id,
          body?.cancellation_reason,
        ),
      ),
    listGroupEvents: async ({ app, grant, params, query }) => {
      const page = await listGroupEvents(
        await requireConfiguration(app.applicationId, params.configuration_id, grant),
        query,
      );
      return list(page.items, page.nextCursor);
    },
    createGroupEvent: async ({ app, grant, params, body }) =>
      ok(
        await createGroupEvent(
          await requireConfiguration(app.applicationId, params.configuration_id, grant),
          grant,
          body,
        ),
      ),
    updateGroupEvent: async ({ app, grant, params, body }) =>
      ok(
        await updateGroupEvent(
          await requireConfiguration(app.applicationId, params.configuration_id, grant),
          grant,
          params.event_id,
          body,
        ),
      ),
    deleteGroupEvent: async ({ app, grant, params }) => {
      await deleteGroupEvent(
        await requireConfiguration(app.applicationId, params.configuration_id, grant),
        params.event_id,
      );
      return empty();
    },
    importGroupEvents: async ({ app, params, body }) =>
      ok(await importGroupEvents(await requireConfiguration(app.applicationId, params.configuration_id), body)),
    validateTimeslot: async ({ app, session, params, body }) =>
      ok(
        await validateTimeslot(
          (await accessOf({ app, session }, { configuration_id: params.configuration_id })).config,
          body,
        ),
      ),
  },
  { sessions: schedulerSessions },
);
