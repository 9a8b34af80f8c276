import middy from '@middy/core';
import type { SessionAuthenticator } from '#shared/applications/authenticate';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { authentication } from '#shared/http/middleware/authentication';
import { grantResolution, providerParameters } from '#shared/http/middleware/grant-resolution';
import { jsonBody, type MultipartParser } from '#shared/http/middleware/json-body';
import { rateLimit } from '#shared/http/middleware/rate-limit';
import { responseMiddleware } from '#shared/http/middleware/response';
import { routing } from '#shared/http/middleware/routing';
import { stateOf, type CompiledRoute } from '#shared/http/middleware/state';
import { validation } from '#shared/http/middleware/validation';
import {
  routeKey,
  type GeneratedRoutes,
  type RouteHandlers,
  type RouteResult,
  type RouteTable,
} from '#shared/http/route';
import { toValidator } from '#shared/http/validation';
import { runWithLogKeys } from '#shared/logger';

/**
 * The one HTTP middleware stack. Every endpoint function is `httpApi<typeof routes>(generated, handlers)`;
 * the middlewares (shared/http/middleware/) run in this order:
 *
 *   1. response  (after/onError, runs last): envelope, select, x-request-id, gzip, access log, errors
 *   2. routing   match the API Gateway route key, decode path parameters (404/405 when nothing matches)
 *   3. auth      `Authorization: Bearer <API key>` → application; on `optional` routes, a session of
 *                the function's session authenticator or an API key when the header is there
 *   4. limit     the calling application's request rate bucket (429 with Retry-After; its
 *                DynamoDB write runs while the grant is resolved)
 *   5. grant     resolve `{grant_id}` within the calling application (an unknown grant is a 404
 *                whatever the request carries, as the published contract answers); then the
 *                application's bucket's outcome, and the grant's own rate bucket (429)
 *   6. body      size limit, content type, JSON parsing (@middy/http-json-body-parser)
 *   7. validate  generated ajv validators for query and body, `select`; then provider-only
 *                parameters the grant's provider cannot honour (400)
 *   8. handler   one domain call, returns a RouteResult
 */
function compile(
  generated: GeneratedRoutes,
  handlers: Record<string, (request: never) => Promise<RouteResult>>,
): Map<string, CompiledRoute> {
  const compiled = new Map<string, CompiledRoute>();
  for (const [name, spec] of Object.entries(generated.routes)) {
    const handler = handlers[name];
    const body = generated.body[name];
    // Fail at cold start, not on a request, when the generated module does not match the handlers.
    if (!handler) throw new Error(`No handler for route ${name}`);
    compiled.set(routeKey(spec), {
      spec,
      handler,
      validateQuery: toValidator(generated.query[name]!, 'query'),
      validateBody: body ? toValidator(body, 'body') : undefined,
    });
  }
  const extra = Object.keys(handlers).find((name) => !(name in generated.routes));
  if (extra) throw new Error(`Handler ${extra} has no generated route; run \`npm run generate\``);
  return compiled;
}

/**
 * Builds the Lambda handler of one endpoint group from its generated routes module
 * (`functions/<group>/routes.generated.cjs`: the route table without schemas, and the validators
 * compiled from them) and one handler per route, typed by the group's route table:
 * `httpApi<typeof routes>(generated, handlers)`. Functions with multipart routes pass `multipart`;
 * functions whose `optional` routes accept sessions as bearer tokens pass `sessions`.
 */
export function httpApi<T extends RouteTable>(
  generated: GeneratedRoutes,
  handlers: RouteHandlers<T>,
  options: { multipart?: MultipartParser; sessions?: SessionAuthenticator } = {},
) {
  const compiled = compile(generated, handlers as unknown as Record<string, (request: never) => Promise<RouteResult>>);
  const known = Object.values(generated.routes);
  const needsMultipart = Object.entries(generated.routes).find(([, spec]) => spec.multipartMaxBytes);
  if (needsMultipart && !options.multipart)
    throw new Error(`Route ${needsMultipart[0]} accepts multipart bodies but no multipart parser was given`);
  const api = middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2>()
    .use(responseMiddleware())
    .use(routing(compiled, known))
    .use(authentication(options.sessions))
    .use(rateLimit('application'))
    .use(grantResolution())
    .use(rateLimit('grant'))
    .use(jsonBody(options.multipart))
    .use(validation())
    .use(providerParameters())
    .handler(async (event) => {
      const state = stateOf({ event });
      const result = await state.route!.handler({
        requestId: state.requestId,
        app: state.app,
        session: state.session,
        params: state.params,
        query: state.query,
        body: state.body,
        headers: state.headers,
        files: state.files,
        sourceIp: event.requestContext?.http?.sourceIp ?? '',
        userAgent: state.headers['user-agent'] ?? '',
        log: state.log,
        event,
        grant: state.grant,
      } as never);
      // The response middleware turns the RouteResult into the API Gateway result.
      return result as unknown as APIGatewayProxyStructuredResultV2;
    });
  // Each request is served with log keys of its own (shared/logger.ts): every line written while it is
  // served says its request_id, application_id and grant_id, concurrent requests of one process apart.
  return (event: APIGatewayProxyEventV2, context: Context): Promise<APIGatewayProxyStructuredResultV2> =>
    runWithLogKeys({}, () => api(event, context));
}
