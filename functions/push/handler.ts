import { httpApi } from '#shared/http/stack';
import { ok } from '#shared/http/route';
import { pushReceivers } from '#shared/registries/pushes';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  googlePush: async ({ query, headers, body, event }) =>
    ok(
      await pushReceivers.google(
        query.application_id,
        headers,
        body,
        `${event.rawPath}${event.rawQueryString ? `?${event.rawQueryString}` : ''}`,
      ),
    ),
  googleCalendarPush: async ({ headers }) => ok(await pushReceivers.googleCalendar(headers)),
});
