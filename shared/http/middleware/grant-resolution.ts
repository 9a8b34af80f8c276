import type middy from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { attachEarlyReads, startEarlyReads } from '#shared/accounts/early-reads';
import { grantIdNamed, resolveGrant } from '#shared/grants/resolve';
import { ForbiddenError } from '#shared/errors';
import { stateOf } from '#shared/http/middleware/state';
import { checkProviderParameters } from '#shared/registries/parameters';
import { addLogKeys } from '#shared/logger';

/**
 * Resolves `{grant_id}` by any of the spec's patterns, always within the calling application (404
 * otherwise). A grant named by ID whose earlier requests read its provider tokens or its connector
 * has them read again at the same time (shared/accounts/early-reads.ts).
 */
export const grantResolution = (): middy.MiddlewareObj<APIGatewayProxyEventV2> => ({
  before: async (request) => {
    const state = stateOf(request);
    const raw = state.params.grant_id;
    if (raw === undefined || !state.app) return;
    const named = grantIdNamed(state.app, raw);
    const early = named && startEarlyReads(state.app.applicationId, named);
    state.grant = await resolveGrant(state.app, raw);
    attachEarlyReads(state.grant, early);
    state.log = state.log.child({ grant_id: state.grant.id });
    addLogKeys({ grant_id: state.grant.id });
    if (state.grant.blocked && !state.route!.spec.allowBlockedGrant) {
      throw new ForbiddenError(
        `Grant '${state.grant.id}' is blocked; unblock it with PATCH /v3/grants/{grant_id} {"blocked": false}`,
      );
    }
  },
});

/** After validation: provider-only query parameters the grant's provider cannot honour answer 400 (shared/registries/parameters.ts). */
export const providerParameters = (): middy.MiddlewareObj<APIGatewayProxyEventV2> => ({
  before: (request) => {
    const state = stateOf(request);
    if (state.grant) checkProviderParameters(state.grant.provider, state.query as Record<string, unknown>);
  },
});
