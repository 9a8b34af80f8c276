import { list } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import { messageCleanerOf } from '#shared/registries/message-cleaning';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  cleanMessages: async ({ grant, body }) => list(await messageCleanerOf(grant).clean(grant, body)),
});
