import middy from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { authentication } from '#shared/http/middleware/authentication';
import { grantResolution } from '#shared/http/middleware/grant-resolution';
import { jsonBody, type MultipartParser } from '#shared/http/middleware/json-body';
import { responseMiddleware } from '#shared/http/middleware/response';
import { routing } from '#shared/http/middleware/routing';
import { stateOf, type CompiledRoute } from '#shared/http/middleware/state';
import { validation } from '#shared/http/middleware/validation';
import { routeKey, type RouteHandlers, type RouteResult, type RouteSpec, type RouteTable } from '#shared/http/route';
import { selectableFields } from '#shared/http/select';
import { toValidator, type GeneratedValidators } from '#shared/http/validation';

/**
 * The one HTTP middleware stack. Every endpoint function is `httpApi(routes, validators, handlers)`;
 * the middlewares (shared/http/middleware/) run in this order:
 *
 *   1. response  (after/onError, runs last): envelope, select, x-request-id, gzip, access log, errors
 *   2. routing   match the API Gateway route key, decode path parameters (404/405 when nothing matches)
 *   3. auth      `Authorization: Bearer <API key>` → application
 *   4. body      size limit, content type, JSON parsing (@middy/http-json-body-parser)
 *   5. validate  generated ajv validators for query and body, `select`
 *   6. grant     resolve `{grant_id}` within the calling application
 *   7. handler   one domain call, returns a RouteResult
 */
function compile(
  routes: RouteTable,
  validators: GeneratedValidators,
  handlers: Record<string, (request: never) => Promise<RouteResult>>,
): Map<string, CompiledRoute> {
  const compiled = new Map<string, CompiledRoute>();
  for (const [name, spec] of Object.entries(routes)) {
    const handler = handlers[name];
    const query = validators.query[name];
    const body = validators.body[name];
    // Fail at cold start, not on a request, when the generated validators do not match the table.
    if (!handler) throw new Error(`No handler for route ${name}`);
    if (!query || (spec.body !== undefined) !== (body !== undefined)) {
      throw new Error(`Validators for route ${name} are missing or stale; run \`npm run generate\``);
    }
    compiled.set(routeKey(spec), {
      spec,
      handler,
      validateQuery: toValidator(query, 'query'),
      validateBody: body ? toValidator(body, 'body') : undefined,
      selectable: selectableFields(spec.response),
    });
  }
  return compiled;
}

/**
 * Builds the Lambda handler of one endpoint group from its route table, its generated validators and
 * one handler per route. Functions with multipart routes pass `multipart` (parseMultipart).
 */
export function httpApi<T extends RouteTable>(routes: T, validators: GeneratedValidators, handlers: RouteHandlers<T>, options: { multipart?: MultipartParser } = {}) {
  const compiled = compile(routes, validators, handlers as unknown as Record<string, (request: never) => Promise<RouteResult>>);
  const needsMultipart = Object.entries(routes).find(([, spec]) => spec.multipartMaxBytes);
  if (needsMultipart && !options.multipart) throw new Error(`Route ${needsMultipart[0]} accepts multipart bodies but no multipart parser was given`);
  const known: readonly RouteSpec[] = Object.values(routes);
  return middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2>()
    .use(responseMiddleware())
    .use(routing(compiled, known))
    .use(authentication())
    .use(jsonBody(options.multipart))
    .use(validation())
    .use(grantResolution())
    .handler(async (event) => {
      const state = stateOf({ event });
      const result = await state.route!.handler({
        requestId: state.requestId,
        app: state.app,
        params: state.params,
        query: state.query,
        body: state.body,
        headers: state.headers,
        files: state.files,
        rawBody: state.rawBody,
        sourceIp: event.requestContext?.http?.sourceIp ?? '',
        userAgent: state.headers['user-agent'] ?? '',
        log: state.log,
        event,
        grant: state.grant,
      } as never);
      // The response middleware turns the RouteResult into the API Gateway result.
      return result as unknown as APIGatewayProxyStructuredResultV2;
    });
}
