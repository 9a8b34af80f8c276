import { pageSize } from '#shared/answer-limits';
import { document, empty, list, ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import { eventsOf, importEvents } from '#shared/registries/events';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  listEvents: async ({ grant, query }) => {
    const page = await eventsOf(grant).list(grant, query, pageSize(query.limit));
    return list(page.items, page.nextCursor);
  },
  importEvents: async ({ grant, query }) => {
    const page = await importEvents(grant, query, pageSize(query.limit));
    return list(page.items, page.nextCursor);
  },
  createEvent: async ({ grant, query, body }) =>
    ok(await eventsOf(grant).create(grant, query.calendar_id, body, query.notify_participants ?? true)),
  getEvent: async ({ grant, params, query }) => {
    if (query.format === 'ics') {
      const ics = await eventsOf(grant).ics(grant, params.event_id, query.calendar_id);
      return document(Buffer.from(ics, 'utf8'), 'text/calendar; charset=utf-8', `${params.event_id}.ics`);
    }
    return ok(await eventsOf(grant).get(grant, params.event_id, query.calendar_id));
  },
  updateEvent: async ({ grant, params, query, body }) =>
    ok(
      await eventsOf(grant).update(grant, params.event_id, query.calendar_id, body, query.notify_participants ?? true),
    ),
  deleteEvent: async ({ grant, params, query }) => {
    await eventsOf(grant).delete(grant, params.event_id, query.calendar_id, query.notify_participants ?? true);
    return empty();
  },
  sendRsvp: async ({ grant, params, query, body }) =>
    ok(await eventsOf(grant).sendRsvp(grant, params.event_id, query.calendar_id, body)),
});
