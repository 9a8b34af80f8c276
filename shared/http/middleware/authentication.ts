import type middy from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { authenticate, bearerToken, type SessionAuthenticator } from '#shared/applications/authenticate';
import { AuthenticationError } from '#shared/errors';
import { stateOf } from '#shared/http/middleware/state';

/**
 * `Authorization: Bearer <API key>` → the calling application (401 otherwise), unless the route is
 * public. An `optional` route is public without the header; with it, the bearer is a session of
 * `sessions` (when the function accepts them) or an API key, and anything else is a 401 here,
 * before the body is read or validated.
 */
export const authentication = (sessions?: SessionAuthenticator): middy.MiddlewareObj<APIGatewayProxyEventV2> => ({
  before: async (request) => {
    const state = stateOf(request);
    const auth = state.route!.spec.auth ?? 'api_key';
    if (auth === 'none') return;
    const header = state.headers.authorization;
    if (auth === 'optional') {
      if (header === undefined || header.trim() === '') return;
      const session = sessions ? await sessions.resolve(bearerToken(header)) : undefined;
      if (session) {
        state.session = session;
        state.log = state.log.child({ application_id: session.applicationId });
        return;
      }
      try {
        state.app = await authenticate(header);
      } catch (error) {
        if (sessions && error instanceof AuthenticationError) throw new AuthenticationError(sessions.rejection);
        throw error;
      }
    } else {
      state.app = await authenticate(header);
    }
    state.log = state.log.child({ application_id: state.app.applicationId });
  },
});
