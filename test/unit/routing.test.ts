import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { handler as fallback } from '#functions/fallback/handler';
import { handler as grants } from '#functions/grants/handler';
import { routes as grantRoutes } from '#functions/grants/routes';
import { exactMatch, pathShapeHint } from '#shared/http/paths';
import { routeKey } from '#shared/http/route';
import { buildEvent } from '../../scripts/local-stack/api-gateway-event';

/**
 * Paths match as API Gateway matches them: exactly. A layer that hands a request to a route whose
 * template the raw path does not spell (serverless offline ignores a trailing slash) gets the
 * `$default` answer, before anything is read or written.
 */
const dynamoMock = mockClient(DynamoDBDocumentClient);
const context = { awsRequestId: 'aws-1', getRemainingTimeInMillis: () => 10_000 } as unknown as Context;
const GRANT = 'grant_01jd6abcdefghjkmnpqrstvwxy';

function event(method: string, url: string, route: { routeKey: string; params?: Record<string, string> }) {
  return buildEvent(route, {
    method,
    url,
    headers: { authorization: 'Bearer unit-test-key', 'content-type': 'application/json' },
    body: Buffer.alloc(0),
    sourceIp: '127.0.0.1',
  });
}

describe('Function: exactMatch', () => {
  it('takes the raw path when it spells the template', () => {
    expect(exactMatch('/v3/grants/{grant_id}', '/v3/grants/user%40x.com')).toEqual({ grant_id: 'user@x.com' });
    expect(exactMatch('/v3/grants/{grant_id}/messages/{id}', '/v3/grants/g/messages/m%2Fn')).toEqual({
      grant_id: 'g',
      id: 'm/n',
    });
  });

  it('takes a decoded path whose parameter holds a slash, when the route parameters spell it', () => {
    expect(
      exactMatch('/v3/grants/{grant_id}/messages/{id}', '/v3/grants/g/messages/m/n', { grant_id: 'g', id: 'm/n' }),
    ).toEqual({ grant_id: 'g', id: 'm/n' });
    expect(
      exactMatch('/v3/grants/{grant_id}/messages/{id}', '/v3/grants/g/messages/m/n', { grant_id: 'g', id: 'm%2Fn' }),
    ).toEqual({ grant_id: 'g', id: 'm/n' });
  });

  it('refuses a trailing slash, an empty segment or an empty parameter, whatever parameters the layer gave', () => {
    expect(exactMatch('/v3/grants/{grant_id}', '/v3/grants/g/', { grant_id: 'g' })).toBeUndefined();
    expect(exactMatch('/v3/grants', '/v3/grants/')).toBeUndefined();
    expect(exactMatch('/v3/grants/{grant_id}', '/v3//grants/g', { grant_id: 'g' })).toBeUndefined();
    expect(exactMatch('/v3/grants/{grant_id}', '//v3/grants/g', { grant_id: 'g' })).toBeUndefined();
    expect(exactMatch('/v3/grants/{grant_id}/events', '/v3/grants//events', { grant_id: '' })).toBeUndefined();
    expect(exactMatch('/v3/grants/{grant_id}', '/v3/grants/g', {})).toEqual({ grant_id: 'g' });
  });

  it('explains what is wrong with the shape of a path', () => {
    expect(pathShapeHint('/v3/grants/g/')).toMatch(/trailing slash/);
    expect(pathShapeHint('/v3//grants')).toMatch(/'\/\/'/);
    expect(pathShapeHint('/v3/grants/g')).toBeUndefined();
    expect(pathShapeHint('/')).toBeUndefined();
  });
});

describe('Function: routing middleware', () => {
  beforeEach(() => {
    dynamoMock.reset();
  });

  it.each(Object.values(grantRoutes).map((r) => [routeKey(r), r] as const))(
    '%s with a trailing slash answers 404 before anything is read',
    async (_key, route) => {
      // Prepare: the event serverless offline builds when it ignores the slash: the route's key, its parameters, the path as sent.
      const path = route.path.replace('{grant_id}', GRANT);
      const params = route.path.includes('{grant_id}') ? { grant_id: GRANT } : undefined;

      // Act
      const result = (await grants(
        event(route.method, `${path}/`, { routeKey: routeKey(route), params }),
        context,
      )) as APIGatewayProxyStructuredResultV2;

      // Assess
      expect(result.statusCode, result.body).toBe(404);
      const body = JSON.parse(result.body!);
      expect(body.error).toEqual({
        type: 'not_found_error',
        message: expect.stringContaining(`No endpoint ${route.method} ${path}/; paths do not end with a slash`),
      });
      expect(body.request_id).toBe(result.headers!['x-request-id']);
      expect(dynamoMock.calls()).toHaveLength(0);
    },
  );

  it('answers 404 for an empty segment under a matched route key', async () => {
    const result = (await grants(
      event('DELETE', `/v3//grants/${GRANT}`, {
        routeKey: 'DELETE /v3/grants/{grant_id}',
        params: { grant_id: GRANT },
      }),
      context,
    )) as APIGatewayProxyStructuredResultV2;
    expect(result.statusCode).toBe(404);
    expect(JSON.parse(result.body!).error.message).toMatch(/'\/\/' names another path/);
    expect(dynamoMock.calls()).toHaveLength(0);
  });

  it('still routes the exact path (the lookup of the key and the grant happens)', async () => {
    dynamoMock.onAnyCommand().resolves({});
    const result = (await grants(
      event('DELETE', `/v3/grants/${GRANT}`, { routeKey: 'DELETE /v3/grants/{grant_id}', params: { grant_id: GRANT } }),
      context,
    )) as APIGatewayProxyStructuredResultV2;
    // Unknown API key: the request went past routing to authentication.
    expect(result.statusCode).toBe(401);
    expect(dynamoMock.calls().length).toBeGreaterThan(0);
  });

  it('on $default: 404 with the reason for a trailing slash, 405 with Allow for a known path', async () => {
    const slash = (await fallback(
      event('DELETE', `/v3/grants/${GRANT}/`, { routeKey: '$default' }),
      context,
    )) as APIGatewayProxyStructuredResultV2;
    expect(slash.statusCode).toBe(404);
    expect(JSON.parse(slash.body!).error.message).toMatch(/trailing slash names another path/);
    const wrongMethod = (await fallback(
      event('POST', `/v3/grants/${GRANT}`, { routeKey: '$default' }),
      context,
    )) as APIGatewayProxyStructuredResultV2;
    expect(wrongMethod.statusCode).toBe(405);
    expect(wrongMethod.headers!.allow).toBe('GET, PATCH, DELETE');
  });
});
