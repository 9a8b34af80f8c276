import type middy from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { authenticate, bearerToken, type SessionAuthenticator } from '#shared/applications/authenticate';
import { AuthenticationError } from '#shared/errors';
import { stateOf } from '#shared/http/middleware/state';
import { addLogKeys } from '#shared/logger';

/**
 * `Authorization: Bearer <API key>` → the calling application (401 otherwise), unless the route is
 * public; `Authorization: Bearer <access token>` → the application too, for grant-scoped routes only. An `optional` route is public without the header; with it, the bearer is a session of
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
        addLogKeys({ application_id: session.applicationId });
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
    // An access token opens its own grant's endpoints only; everything else of the application needs its API key.
    if (state.app.credential === 'access_token' && !state.route!.spec.path.includes('{grant_id}')) {
      throw new AuthenticationError(
        `An access token opens only its own grant's endpoints (/v3/grants/me/… or /v3/grants/<its grant>/…); ${state.route!.spec.method} ${state.route!.spec.path} needs the application's API key`,
      );
    }
    state.log = state.log.child({ application_id: state.app.applicationId });
    addLogKeys({ application_id: state.app.applicationId });
  },
});
