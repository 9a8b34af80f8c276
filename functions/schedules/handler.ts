import { list, ok } from '#shared/http/route';
import { pageSize } from '#shared/answer-limits';
import { httpApi } from '#shared/http/stack';
import { schedulesOf } from '#shared/registries/schedules';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  listSchedules: async ({ grant, query }) => {
    const page = await schedulesOf(grant).listSchedules(grant, query, pageSize(query.limit));
    return list(page.items, page.nextCursor);
  },
  getSchedule: async ({ grant, params }) => ok(await schedulesOf(grant).getSchedule(grant, params.schedule_id)),
  cancelSchedule: async ({ grant, params }) => ok(await schedulesOf(grant).cancelSchedule(grant, params.schedule_id)),
});
