import { pageSize } from '#shared/answer-limits';
import { empty, list, ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import { threadsOf } from '#shared/registries/threads';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  listThreads: async ({ grant, query }) => {
    const page = await threadsOf(grant).list(grant, query, pageSize(query.limit));
    return list(page.items, page.nextCursor);
  },
  getThread: async ({ grant, params }) => ok(await threadsOf(grant).get(grant, params.thread_id)),
  updateThread: async ({ grant, params, body }) => ok(await threadsOf(grant).update(grant, params.thread_id, body)),
  deleteThread: async ({ grant, params }) => {
    await threadsOf(grant).delete(grant, params.thread_id);
    return empty();
  },
});
