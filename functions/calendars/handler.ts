import { pageSize } from '#shared/answer-limits';
import { empty, list, ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import { calendarsOf } from '#shared/registries/calendars';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  listCalendars: async ({ grant, query }) => {
    const page = await calendarsOf(grant).list(grant, query, pageSize(query.limit));
    return list(page.items, page.nextCursor);
  },
  createCalendar: async ({ grant, body }) => ok(await calendarsOf(grant).create(grant, body)),
  getCalendar: async ({ grant, params }) => ok(await calendarsOf(grant).get(grant, params.calendar_id)),
  updateCalendar: async ({ grant, params, body }) =>
    ok(await calendarsOf(grant).update(grant, params.calendar_id, body)),
  deleteCalendar: async ({ grant, params }) => {
    await calendarsOf(grant).delete(grant, params.calendar_id);
    return empty();
  },
});
