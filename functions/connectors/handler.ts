import * as connectors from '#shared/connectors/service';
import * as credentials from '#shared/connectors/credentials';
import { detectProvider } from '#shared/connectors/detect';
import { pageSize } from '#shared/answer-limits';
import { empty, list, ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  listConnectors: async ({ app, query }) => {
    const page = await connectors.listConnectors(app, pageSize(query.limit), query.page_token);
    return list(page.items, page.nextCursor);
  },
  createConnector: async ({ app, body }) => ok(await connectors.createConnector(app, body)),
  getConnector: async ({ app, params }) => ok(await connectors.getConnector(app, params.provider)),
  updateConnector: async ({ app, params, body }) => ok(await connectors.updateConnector(app, params.provider, body)),
  replaceConnector: async ({ app, params, body }) => ok(await connectors.updateConnector(app, params.provider, body)),
  deleteConnector: async ({ app, params }) => {
    await connectors.deleteConnector(app, params.provider);
    return empty();
  },
  listCredentials: async ({ app, params, query }) => {
    const page = await credentials.listCredentials(app, params.provider, pageSize(query.limit), query.page_token);
    return list(page.items, page.nextCursor);
  },
  createCredential: async ({ app, params, body }) => ok(await credentials.createCredential(app, params.provider, body)),
  getCredential: async ({ app, params }) => ok(await credentials.getCredential(app, params.provider, params.id)),
  updateCredential: async ({ app, params, body }) =>
    ok(await credentials.updateCredential(app, params.provider, params.id, body)),
  deleteCredential: async ({ app, params }) => {
    await credentials.deleteCredential(app, params.provider, params.id);
    return empty();
  },
  detectProvider: async ({ app, query, body }) => ok(await detectProvider(app, query, body)),
});
