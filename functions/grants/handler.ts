import * as grants from '#shared/grants/service';
import { httpApi } from '#shared/http/stack';
import { empty, list, ok } from '#shared/http/route';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  listGrants: async ({ app, query }) => {
    const page = await grants.listGrants(app, query);
    return list(page.items.map(grants.toGrantResource), page.nextCursor);
  },
  getGrant: async ({ grant }) => ok(await grants.grantWithSync(grant)),
  updateGrant: async ({ grant, body }) => ok(grants.toGrantResource(await grants.updateGrant(grant, body))),
  deleteGrant: async ({ grant }) => {
    await grants.deleteGrant(grant);
    return empty();
  },
});
