import { httpApi } from '#shared/http/stack';
import { ok, text } from '#shared/http/route';
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
  microsoftPush: async ({ query, body }) => {
    const answer = await pushReceivers.microsoft(query, body);
    if (answer.kind === 'validation') return text(answer.token);
    const { kind: _kind, ...receipt } = answer;
    return ok(receipt, { status: 202 });
  },
});
