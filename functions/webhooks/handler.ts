import { pageSize } from '#shared/http/page';
import { empty, list, ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import * as webhooks from '#shared/webhooks/service';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  listWebhooks: async ({ app, query }) => {
    const page = await webhooks.listWebhooks(app, pageSize(query.limit), query.page_token);
    return list(page.items, page.nextCursor);
  },
  createWebhook: async ({ app, body }) => ok(await webhooks.createWebhook(app, body)),
  ipAddresses: async () => ok(webhooks.ipAddresses()),
  mockPayload: async ({ app, body }) => ok(webhooks.mockPayload(app, body)),
  sendTestEvent: async ({ app, body }) => ok(await webhooks.sendTestEvent(app, body)),
  rotateSecret: async ({ app, params }) => ok(await webhooks.rotateSecret(app, params.webhook_id)),
  getWebhook: async ({ app, params }) => ok(await webhooks.getWebhook(app, params.webhook_id)),
  updateWebhook: async ({ app, params, body }) => ok(await webhooks.updateWebhook(app, params.webhook_id, body)),
  deleteWebhook: async ({ app, params }) => {
    await webhooks.deleteWebhook(app, params.webhook_id);
    return empty();
  },
  listDeliveries: async ({ app, params, query }) => {
    const page = await webhooks.listDeliveries(app, params.webhook_id, pageSize(query.limit), query.page_token);
    return list(page.items, page.nextCursor);
  },
});
