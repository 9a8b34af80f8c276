import { pageSize } from '#shared/answer-limits';
import * as domains from '#shared/domains/service';
import { empty, list, ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  createDomain: async ({ app, body }) => ok(await domains.createDomain(app, body)),
  listDomains: async ({ app, query }) => {
    const page = await domains.listDomains(app, pageSize(query.limit), query.page_token);
    return list(page.items, page.nextCursor);
  },
  getDomain: async ({ app, params }) => ok(await domains.getDomain(app, params.domain_id)),
  updateDomain: async ({ app, params, body }) => ok(await domains.updateDomain(app, params.domain_id, body.name)),
  deleteDomain: async ({ app, params }) => {
    await domains.deleteDomain(app, params.domain_id);
    return empty();
  },
  getDomainInfo: async ({ app, params, body }) => ok(await domains.domainInfo(app, params.domain_id, body.type)),
  verifyDomain: async ({ app, params, body }) => ok(await domains.verifyDomain(app, params.domain_id, body.type)),
});
