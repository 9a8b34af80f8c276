import type middy from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { MethodNotAllowedError, NotFoundError } from '#shared/errors';
import { compareSpecificity, decodeParam, matchTemplate } from '#shared/http/paths';
import type { RouteSpec } from '#shared/http/route';
import { stateOf, type CompiledRoute } from '#shared/http/middleware/state';

/**
 * Finds the route by API Gateway's route key and decodes its path parameters. On the `$default`
 * route (no key of this function), answers 405 with `Allow` when the path exists under other
 * methods, 404 otherwise.
 */
export function routing(compiled: Map<string, CompiledRoute>, known: readonly Pick<RouteSpec, 'method' | 'path'>[]): middy.MiddlewareObj<APIGatewayProxyEventV2> {
  const templates = [...known].sort((a, b) => compareSpecificity(a.path, b.path));
  return {
    before: (request) => {
      const state = stateOf(request);
      const event = request.event;
      const method = (event.requestContext?.http?.method ?? '').toUpperCase();
      const rawPath = event.rawPath ?? event.requestContext?.http?.path ?? '/';
      const route = compiled.get(event.routeKey);
      if (route) {
        state.route = route;
        // Decode from the raw path when it matches the template, so parameters are decoded exactly once.
        const fromPath = matchTemplate(route.spec.path, rawPath);
        const params: Record<string, string> = {};
        for (const [name, value] of Object.entries(event.pathParameters ?? {})) if (value !== undefined) params[name] = decodeParam(value);
        state.params = fromPath ?? params;
        return;
      }
      // $default route: tell an unknown path (404) from a known path with the wrong method (405).
      const allowed = templates.filter((t) => matchTemplate(t.path, rawPath)).map((t) => t.method);
      if (allowed.length) throw new MethodNotAllowedError(method, rawPath, [...new Set(allowed)]);
      throw new NotFoundError(`No endpoint ${method} ${rawPath}; see the API reference for the available /v3 paths`);
    },
  };
}

