import { pageSize } from '#shared/answer-limits';
import { empty, list, ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import { messagesOf } from '#shared/registries/messages';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  listMessages: async ({ grant, query }) => {
    const page = await messagesOf(grant).list(grant, query, pageSize(query.limit));
    return list(page.items, page.nextCursor);
  },
  getMessage: async ({ grant, params, query }) => ok(await messagesOf(grant).get(grant, params.message_id, query)),
  updateMessage: async ({ grant, params, body }) => ok(await messagesOf(grant).update(grant, params.message_id, body)),
  deleteMessage: async ({ grant, params, query }) => {
    await messagesOf(grant).delete(grant, params.message_id, query);
    return empty();
  },
});
