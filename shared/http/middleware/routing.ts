import type middy from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { MethodNotAllowedError, NotFoundError } from '#shared/errors';
import { compareSpecificity, exactMatch, matchTemplate, noEndpointMessage } from '#shared/http/paths';
import type { RouteSpec } from '#shared/http/route';
import { stateOf, type CompiledRoute } from '#shared/http/middleware/state';

/**
 * Finds the route by API Gateway's route key and decodes its path parameters. The raw path must also
 * be the route's template exactly: a request that a layer matched loosely (ignoring a trailing slash,
 * so that `DELETE /v3/grants/{id}/` would reach the grant's DELETE) gets the `$default` answer. On
 * the `$default` route (no key of this function), or for such a path, answers 405 with `Allow` when
 * the path exists under other methods, 404 otherwise. A path parameter longer than anything's name is a 404.
 *
 * This sees the path the event carries. serverless offline also strips the trailing slash from the
 * event it builds, so under `npm start` it is the front door, which sees the request as sent, that
 * must refuse such paths, with the same answer (noEndpointMessage).
 */
/**
 * Longer than any path parameter names anything (the longest is a grant's `external:` with an external
 * ID of 256 characters of four bytes each: 1,033 bytes; IDs, slugs and addresses are far shorter): a
 * longer one is a 404 here, before authentication and before storage is asked.
 */
export const MAX_PATH_PARAMETER_BYTES = 1100;

export function routing(
  compiled: Map<string, CompiledRoute>,
  known: readonly Pick<RouteSpec, 'method' | 'path'>[],
): middy.MiddlewareObj<APIGatewayProxyEventV2> {
  const templates = [...known].sort((a, b) => compareSpecificity(a.path, b.path));
  return {
    before: (request) => {
      const state = stateOf(request);
      const event = request.event;
      const method = (event.requestContext?.http?.method ?? '').toUpperCase();
      const rawPath = event.rawPath ?? event.requestContext?.http?.path ?? '/';
      const route = compiled.get(event.routeKey);
      // Parameters come from the raw path where it matches the template, so they are decoded exactly once.
      const params = route ? exactMatch(route.spec.path, rawPath, event.pathParameters) : undefined;
      if (route && params) {
        for (const [name, value] of Object.entries(params)) {
          if (Buffer.byteLength(value, 'utf8') > MAX_PATH_PARAMETER_BYTES) {
            throw new NotFoundError(
              `No ${name} '${Array.from(value.slice(0, 80)).slice(0, 40).join('')}…' exists: it is longer than any can be (${MAX_PATH_PARAMETER_BYTES} bytes)`,
            );
          }
        }
        state.route = route;
        state.params = params;
        return;
      }
      // $default route, or a path that is not the route's own: tell an unknown path (404) from a
      // known path with the wrong method (405).
      const allowed = templates.filter((t) => matchTemplate(t.path, rawPath)).map((t) => t.method);
      if (allowed.length) throw new MethodNotAllowedError(method, rawPath, [...new Set(allowed)]);
      throw new NotFoundError(noEndpointMessage(method, rawPath));
    },
  };
}
