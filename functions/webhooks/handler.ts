import { pageSize } from '#shared/answer-limits';
import { list, ok } from '#shared/http/route';
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
  sendTestEvent: async ({ app, body }) => {
    // As the published contract answers: `data` says what happened; the details are in `delivery`.
    const delivery = await webhooks.sendTestEvent(app, body);
    const summary = delivery.delivered
      ? `Test event ${body.trigger_type} delivered to ${body.webhook_url}`
      : `Test event ${body.trigger_type} not delivered to ${body.webhook_url}: ${delivery.status_code === null ? (delivery.error ?? 'no answer') : `HTTP ${delivery.status_code}`}`;
    return ok(summary, { envelope: { delivery } });
  },
  rotateSecret: async ({ app, params }) => ok(await webhooks.rotateSecret(app, params.webhook_id)),
  getWebhook: async ({ app, params }) => ok(await webhooks.getWebhook(app, params.webhook_id)),
  updateWebhook: async ({ app, params, body }) => ok(await webhooks.updateWebhook(app, params.webhook_id, body)),
  deleteWebhook: async ({ app, params }) => {
    await webhooks.deleteWebhook(app, params.webhook_id);
    // The published contract answers a destination's deletion with a status.
    return ok({ status: 'success' as const });
  },
  listDeliveries: async ({ app, params, query }) => {
    const page = await webhooks.listDeliveries(app, params.webhook_id, pageSize(query.limit), query.page_token);
    return list(page.items, page.nextCursor);
  },
});
