import type { RouteSpec } from '#shared/http/route';
import { routes as connect } from './connect/routes';
import { routes as grants } from './grants/routes';

/**
 * Every HTTP route of the API, by endpoint group (function name in serverless.yml). Data only: the
 * `$default` function, the OpenAPI generator and the serverless.yml consistency test read it.
 */
export const API_ROUTES = {
  connect,
  grants,
} as const;

export const ALL_ROUTES: readonly RouteSpec[] = Object.values(API_ROUTES).flatMap((group) => Object.values(group));
