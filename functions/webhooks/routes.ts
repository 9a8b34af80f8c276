import { PageQuery, SelectQuery } from '#schemas/common';
import {
  CreateWebhookBody,
  DeliveryObject,
  IpAddressesObject,
  MockPayloadBody,
  SendTestEventBody,
  UpdateWebhookBody,
  WebhookObject,
} from '#schemas/webhooks';
import type { RouteTable } from '#shared/http/route';

/** Webhook destinations of the calling application. */
export const routes = {
  listWebhooks: {
    method: 'GET',
    path: '/v3/webhooks',
    summary: 'List webhook destinations',
    query: PageQuery,
    response: WebhookObject,
    responseKind: 'list',
    select: true,
  },
  createWebhook: {
    method: 'POST',
    path: '/v3/webhooks',
    summary: 'Create a destination: the URL is verified with a challenge, then a webhook_secret is returned once',
    body: CreateWebhookBody,
    response: WebhookObject,
  },
  ipAddresses: {
    method: 'GET',
    path: '/v3/webhooks/ip-addresses',
    summary: 'Addresses webhook requests come from',
    response: IpAddressesObject,
  },
  mockPayload: {
    method: 'POST',
    path: '/v3/webhooks/mock-payload',
    summary: 'An example payload of a trigger type',
    body: MockPayloadBody,
    response: { type: 'object' },
  },
  sendTestEvent: {
    method: 'POST',
    path: '/v3/webhooks/send-test-event',
    summary:
      "Deliver one signed test payload to one of the application's destinations (data: what happened, in words; delivery: its details)",
    body: SendTestEventBody,
    response: { type: 'string' },
  },
  rotateSecret: {
    method: 'POST',
    path: '/v3/webhooks/rotate-secret/{webhook_id}',
    summary: 'Issue a new webhook_secret (returned once)',
    response: WebhookObject,
  },
  getWebhook: {
    method: 'GET',
    path: '/v3/webhooks/{webhook_id}',
    summary: 'Get a destination',
    query: SelectQuery,
    response: WebhookObject,
    select: true,
  },
  updateWebhook: {
    method: 'PUT',
    path: '/v3/webhooks/{webhook_id}',
    summary: 'Update a destination; status active re-verifies it (failed destinations come back only this way)',
    query: SelectQuery,
    body: UpdateWebhookBody,
    response: WebhookObject,
    select: true,
  },
  deleteWebhook: {
    method: 'DELETE',
    path: '/v3/webhooks/{webhook_id}',
    summary: 'Delete a destination',
    response: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['success'] } } },
  },
  listDeliveries: {
    method: 'GET',
    path: '/v3/webhooks/{webhook_id}/deliveries',
    summary: 'Delivery attempts of a destination, newest first',
    query: PageQuery,
    response: DeliveryObject,
    responseKind: 'list',
    select: true,
  },
} as const satisfies RouteTable;
