import { availability, freeBusy } from '#shared/availability/service';
import { list, ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  freeBusy: async ({ app, body }) => list(await freeBusy(app, body)),
  availability: async ({ app, body }) => ok(await availability(app, body)),
});
