import * as grants from '#shared/grants/service';
import { httpApi } from '#shared/http/stack';
import { ok } from '#shared/http/route';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  createCustomGrant: async ({ app, body, sourceIp, userAgent }) => {
    const grant = await grants.createCustomGrant(app, body, { ip: sourceIp, userAgent });
    return ok(grants.toGrantResource(grant));
  },
});
