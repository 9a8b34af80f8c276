import { pageSize } from '#shared/answer-limits';
import { list } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import { roomsOf } from '#shared/registries/resources';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  listRoomResources: async ({ grant, query }) => {
    const page = await roomsOf(grant).list(grant, query, pageSize(query.limit));
    return list(page.items, page.nextCursor);
  },
});
