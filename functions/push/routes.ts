import {
  GraphPushBody,
  GraphPushQuery,
  GraphPushReceipt,
  PubSubPushBody,
  PubSubPushQuery,
  PushReceipt,
} from '#schemas/push';
import type { RouteTable } from '#shared/http/route';

/**
 * Provider pushes. No API key: a push proves itself with its provider's signed token (checked
 * against the application's connector: shared/services/provider-push.ts).
 */
export const routes = {
  googlePush: {
    method: 'POST',
    path: '/v3/push/google/pubsub',
    summary:
      "Provider A's Pub/Sub push of Gmail mailbox changes (the push subscription of the connector's topic_name, with the application's ID in its URL): verified by its OIDC token, it brings the grant's next change read forward",
    auth: 'none',
    query: PubSubPushQuery,
    body: PubSubPushBody,
    response: PushReceipt,
  },
  googleCalendarPush: {
    method: 'POST',
    path: '/v3/push/google/calendar',
    summary:
      "Provider A's Calendar watch-channel notifications (channels the grants' runs create with this address): verified by the channel's token, they bring the grant's next change read forward",
    auth: 'none',
    response: PushReceipt,
  },
  microsoftPush: {
    method: 'POST',
    path: '/v3/push/microsoft',
    summary:
      "Provider B's change and lifecycle notifications (Graph subscriptions the grants' runs create with this address): verified by their clientState, answered 202, they bring the grant's next change read forward; Graph's validation request (`validationToken`) is answered with the token as text/plain",
    auth: 'none',
    query: GraphPushQuery,
    body: GraphPushBody,
    bodyOptional: true,
    response: GraphPushReceipt,
  },
} as const satisfies RouteTable;
