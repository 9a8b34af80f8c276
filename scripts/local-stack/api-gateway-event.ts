import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { decodeParam } from '#shared/http/paths';

/**
 * Builds the events API Gateway (HTTP API, payload format 2.0) and the Lambda runtime hand to a
 * function: route key, URL-decoded path and path parameters, comma-joined query values and headers,
 * base64 for binary bodies. Used by the test gateway and by the in-process benchmarks.
 */
const TEXT_TYPES = /^(text\/|application\/(json|[\w.+-]+\+json|xml|javascript|x-www-form-urlencoded)\b)/i;

export function buildEvent(
  route: { routeKey: string; params?: Record<string, string> },
  request: { method: string; url: string; headers: Record<string, string>; body: Buffer; sourceIp: string },
): APIGatewayProxyEventV2 {
  const [rawPathEncoded, rawQueryString = ''] = request.url.split(/\?(.*)/s, 2) as [string, string?];
  // HTTP APIs hand the path to the function URL-decoded.
  const rawPath = decodeParam(rawPathEncoded);
  const query: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(rawQueryString))
    query[key] = key in query ? `${query[key]},${value}` : value;
  const contentType = request.headers['content-type'] ?? '';
  const isText = TEXT_TYPES.test(contentType) || contentType === '';
  const now = new Date();
  return {
    version: '2.0',
    routeKey: route.routeKey,
    rawPath,
    rawQueryString,
    headers: request.headers,
    queryStringParameters: Object.keys(query).length ? query : undefined,
    pathParameters: route.params && Object.keys(route.params).length ? route.params : undefined,
    requestContext: {
      accountId: '123456789012',
      apiId: 'local',
      domainName: request.headers.host ?? 'localhost',
      domainPrefix: 'local',
      http: {
        method: request.method,
        path: rawPath,
        protocol: 'HTTP/1.1',
        sourceIp: request.sourceIp,
        userAgent: request.headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: route.routeKey,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    body: request.body.length ? (isText ? request.body.toString('utf8') : request.body.toString('base64')) : undefined,
    isBase64Encoded: request.body.length > 0 && !isText,
    stageVariables: undefined,
  } as APIGatewayProxyEventV2;
}

export function lambdaContext(fn: string, timeoutMs = 29_000): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    awsRequestId: randomUUID(),
    functionName: fn,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${fn}`,
    memoryLimitInMB: '512',
    logGroupName: `/aws/lambda/${fn}`,
    logStreamName: 'local',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
