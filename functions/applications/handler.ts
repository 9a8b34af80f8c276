import * as apiKeys from '#shared/applications/api-key-management';
import * as redirectUris from '#shared/applications/redirect-uris';
import * as settings from '#shared/applications/settings';
import { pageSize } from '#shared/answer-limits';
import { empty, list, ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  getApplication: async ({ app }) => ok(await settings.getApplication(app)),
  updateApplication: async ({ app, body }) => ok(await settings.updateApplication(app, body)),
  listRedirectUris: async ({ app, query }) => {
    const page = await redirectUris.listRedirectUris(app, pageSize(query.limit), query.page_token);
    return list(page.items, page.nextCursor);
  },
  createRedirectUri: async ({ app, body }) => ok(await redirectUris.createRedirectUri(app, body)),
  getRedirectUri: async ({ app, params }) => ok(await redirectUris.getRedirectUri(app, params.id)),
  updateRedirectUri: async ({ app, params, body }) => ok(await redirectUris.updateRedirectUri(app, params.id, body)),
  replaceRedirectUri: async ({ app, params, body }) => ok(await redirectUris.updateRedirectUri(app, params.id, body)),
  deleteRedirectUri: async ({ app, params }) => {
    await redirectUris.deleteRedirectUri(app, params.id);
    return empty();
  },
  // The API keys operations read the key the request is made with (its Authorization header): see indexCallingKey.
  createApiKey: async ({ app, params, headers, body }) =>
    ok(await apiKeys.createApiKey(app, params.application_id, headers.authorization, body)),
  listApiKeys: async ({ app, params, headers, query }) => {
    const page = await apiKeys.listApiKeys(
      app,
      params.application_id,
      headers.authorization,
      pageSize(query.limit),
      query.page_token,
    );
    return list(page.items, page.nextCursor);
  },
  getApiKey: async ({ app, params }) => ok(await apiKeys.getApiKey(app, params.application_id, params.api_key_id)),
  deleteApiKey: async ({ app, params, headers }) => {
    await apiKeys.deleteApiKey(app, params.application_id, params.api_key_id, headers.authorization);
    return empty();
  },
});
