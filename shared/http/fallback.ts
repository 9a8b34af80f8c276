import middy from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { responseMiddleware } from '#shared/http/middleware/response';
import { routing } from '#shared/http/middleware/routing';
import type { RouteSpec } from '#shared/http/route';

/**
 * The handler of API Gateway's `$default` route: the response and routing middlewares of the one
 * stack and nothing else (no credentials or database are needed to say 404 or 405), so this
 * function stays small and starts fast.
 */
export function fallbackApi(knownRoutes: readonly Pick<RouteSpec, 'method' | 'path'>[]) {
  return middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2>()
    .use(responseMiddleware())
    .use(routing(new Map(), knownRoutes))
    .handler(async () => {
      throw new Error('The $default route always answers from the routing middleware');
    });
}
