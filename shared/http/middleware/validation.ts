import type middy from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { InvalidRequestError } from '#shared/errors';
import { parseSelect } from '#shared/http/select';
import { stateOf } from '#shared/http/middleware/state';
import { refuseUnsafeNumbers } from '#shared/http/validation';

/** Query and body validation with the route's generated validators; `select` parsing and checks. */
export const validation = (): middy.MiddlewareObj<APIGatewayProxyEventV2> => ({
  before: (request) => {
    const state = stateOf(request);
    const route = state.route!;
    const query: Record<string, unknown> = { ...(request.event.queryStringParameters ?? {}) };
    if ('select' in query && !route.spec.select) {
      throw new InvalidRequestError(`'select' is not supported on ${route.spec.method} ${route.spec.path}`);
    }
    route.validateQuery?.(query);
    // ajv does not re-check finiteness after coercing `1e400` or `-Infinity` from a query string, and
    // `99999999999999999999` coerces to 1e20: refused here should a schema ever leave a number unbounded.
    refuseUnsafeNumbers(query, 'query');
    if (typeof query.select === 'string') state.select = parseSelect(query.select, route.spec.selectable);
    state.query = query;
    route.validateBody?.(state.body);
    // Numbers in free-form objects (template variables, grant settings) that could not be stored exactly.
    refuseUnsafeNumbers(state.body, 'body');
  },
});
