import * as grants from '#shared/grants/service';
import { httpApi } from '#shared/http/stack';
import { ok } from '#shared/http/route';
import { routes } from './routes';
import validators from './validators.generated.cjs';

export const handler = httpApi(routes, validators, {
  createCustomGrant: async ({ app, body, sourceIp, userAgent }) => {
    const grant = await grants.createCustomGrant(app, body, { ip: sourceIp, userAgent });
    return ok(grants.toGrantResource(grant));
  },
});
