import type middy from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { authenticate } from '#shared/applications/authenticate';
import { stateOf } from '#shared/http/middleware/state';

/** `Authorization: Bearer <API key>` → the calling application (401 otherwise), unless the route is public. */
export const authentication = (): middy.MiddlewareObj<APIGatewayProxyEventV2> => ({
  before: async (request) => {
    const state = stateOf(request);
    if ((state.route!.spec.auth ?? 'api_key') === 'none') return;
    state.app = await authenticate(state.headers.authorization);
    state.log = state.log.child({ application_id: state.app.applicationId });
  },
});

