import type { JSONSchema } from 'json-schema-to-ts';
import { ERROR_TYPES, ErrorEnvelope } from '#schemas/common';
import type { RouteSpec, RouteTable } from '#shared/http/route';

/**
 * Builds the OpenAPI 3.1 description of the API from the route tables and their JSON Schemas, the
 * same objects that validate requests. `npm run openapi` prints it.
 */
type Schema = Exclude<JSONSchema, boolean> & { properties?: Record<string, JSONSchema>; required?: readonly string[] };

/** What each error status means; keyed by ERROR_TYPES, so every status the API answers is described. */
const ERROR_DESCRIPTIONS: Record<keyof typeof ERROR_TYPES, string> = {
  400: 'Invalid request: the message names each offending field',
  401: 'Missing or invalid API key, access token or scheduler session',
  403: 'The grant is blocked',
  404: 'Not found (or belongs to another application)',
  405: 'The path exists under other methods (see Allow)',
  409: 'Conflict with existing data',
  413: 'Request body too large',
  415: 'Content-Type not accepted by this endpoint',
  429: 'Rate or quota limit reached; see Retry-After',
  500: 'Internal error; quote the request id',
  502: 'The mail relay refused the message',
  503: "A provider could not be reached just now (a connected grant's token refresh); see Retry-After",
  504: "The provider's API failed or did not answer in time (a live provider's grant)",
};

/** Who may call a route: the API key; anyone; or anyone, and with a bearer a scheduler session or the API key. */
const SECURITY: Record<NonNullable<RouteSpec['auth']>, object[]> = {
  api_key: [{ apiKey: [] }],
  none: [],
  optional: [{}, { schedulerSession: [] }, { apiKey: [] }],
};

function parameters(spec: RouteSpec) {
  const params: object[] = [];
  for (const match of spec.path.matchAll(/\{([^}]+)\}/g)) {
    params.push({
      name: match[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
      description:
        match[1] === 'grant_id'
          ? 'Grant ID, `grant:<id>`, email address, `email:<address>` or `external:<external_id>` (URL-encoded)'
          : undefined,
    });
  }
  const query = spec.query as Schema | undefined;
  for (const [name, schema] of Object.entries(query?.properties ?? {})) {
    params.push({ name, in: 'query', required: query?.required?.includes(name) ?? false, schema });
  }
  return params;
}

function successResponse(spec: RouteSpec) {
  const data = spec.response ?? { type: 'object' };
  const kind = spec.responseKind ?? 'object';
  if (kind === 'page') {
    return {
      description: 'An HTML page',
      headers: { 'x-request-id': { schema: { type: 'string' } } },
      content: { 'text/html': { schema: { type: 'string' } } },
    };
  }
  if (kind === 'binary') {
    return {
      description: 'The file itself (larger files: a 302 to a short-lived download URL)',
      headers: { 'x-request-id': { schema: { type: 'string' } } },
      content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    };
  }
  const properties: Record<string, unknown> = { request_id: { type: 'string' } };
  if (kind === 'object') properties.data = data;
  if (kind === 'list') {
    properties.data = { type: 'array', items: data };
    properties.next_cursor = {
      type: 'string',
      description: 'The page_token of the next page; present only when more results exist (absent on the last page)',
    };
  }
  return {
    description: 'Success',
    headers: { 'x-request-id': { schema: { type: 'string' } } },
    content: {
      'application/json': {
        schema: { type: 'object', required: kind === 'list' ? ['request_id', 'data'] : ['request_id'], properties },
      },
    },
  };
}

export function buildOpenApi(groups: Record<string, RouteTable>) {
  const paths: Record<string, Record<string, object>> = {};
  for (const [group, routes] of Object.entries(groups)) {
    for (const [name, spec] of Object.entries(routes)) {
      const operation: Record<string, unknown> = {
        operationId: name,
        tags: [spec.tag ?? group],
        summary: spec.summary,
        parameters: parameters(spec),
        security: SECURITY[spec.auth ?? 'api_key'],
        responses: {
          [String(spec.status ?? 200)]: successResponse(spec),
          ...Object.fromEntries(
            Object.entries(ERROR_DESCRIPTIONS).map(([status, description]) => [
              status,
              {
                description,
                content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
              },
            ]),
          ),
        },
      };
      if (spec.body) {
        const content: Record<string, object> = { 'application/json': { schema: spec.body } };
        if (spec.multipartMaxBytes) {
          content['multipart/form-data'] = {
            schema: {
              type: 'object',
              properties: { message: { type: 'string', description: 'The JSON body' } },
              additionalProperties: { type: 'string', format: 'binary' },
            },
          };
        }
        operation.requestBody = { required: !spec.bodyOptional, content };
      }
      (paths[spec.path] ??= {})[spec.method.toLowerCase()] = operation;
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Switchboard API', version: 'v3' },
    servers: [{ url: '{base_url}', variables: { base_url: { default: 'http://localhost:3000' } } }],
    paths,
    components: {
      schemas: { ErrorEnvelope },
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'Application API key' },
        schedulerSession: {
          type: 'http',
          scheme: 'bearer',
          description:
            'Scheduler session (POST /v3/scheduling/sessions): one configuration, on the public scheduler endpoints',
        },
      },
    },
  };
}
