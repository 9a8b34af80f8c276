import type middy from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { gzipSync } from 'node:zlib';
import { ApiError, InvalidRequestError, NotFoundError, oauthCodeOf } from '#shared/errors';
import { KEY_BYTES, KeyTooLongError } from '#shared/aws/key-bounds';
import { routeKey, type RouteResult } from '#shared/http/route';
import { project } from '#shared/http/select';
import { beginState, existingState, stateOf, type State } from '#shared/http/middleware/state';
import { addLogKeys, resampleLogs } from '#shared/logger';
import { emitMetrics, METRICS, MetricUnit } from '#shared/metrics';

/**
 * First in the stack, so its `after`/`onError` run last: wraps results in the envelope
 * (`{request_id, data}`, `{request_id, data, next_cursor?}`, `{request_id}`), applies `select`,
 * sets `x-request-id`, gzips bodies of 200 bytes or more when the client accepts it, writes the
 * access log line and the route's metrics, and turns every error into `{request_id, error: {type, message}}`.
 */
const GZIP_MIN_BYTES = 200;

function render(state: State, status: number, payload: object, extra: Record<string, string> = {}) {
  const json = JSON.stringify(payload);
  const headers: Record<string, string> = {
    'content-type': 'application/json; charset=utf-8',
    'x-content-type-options': 'nosniff',
    'x-request-id': state.requestId,
    ...extra,
  };
  const acceptsGzip = /\bgzip\b/i.test(state.headers['accept-encoding'] ?? '');
  if (acceptsGzip && Buffer.byteLength(json) >= GZIP_MIN_BYTES) {
    headers['content-encoding'] = 'gzip';
    headers.vary = 'accept-encoding';
    return { statusCode: status, headers, body: gzipSync(json).toString('base64'), isBase64Encoded: true };
  }
  return { statusCode: status, headers, body: json, isBase64Encoded: false };
}

/** The access log line, and the route's metrics: the request, whether it was a 4xx or 5xx, its latency. */
function accessLog(state: State, event: APIGatewayProxyEventV2, status: number) {
  const durationMs = Date.now() - state.started;
  state.log.info('request', {
    method: event.requestContext?.http?.method,
    route: state.route ? routeKey(state.route.spec) : event.rawPath,
    status,
    duration_ms: durationMs,
    application_id: state.app?.applicationId,
  });
  // Unmatched paths share one route value: a scan of random paths must not make a metric per path.
  emitMetrics({ route: state.route ? routeKey(state.route.spec) : 'unmatched' }, [
    [METRICS.requests, MetricUnit.Count, 1],
    [METRICS.clientErrors, MetricUnit.Count, status >= 400 && status < 500 ? 1 : 0],
    [METRICS.serverErrors, MetricUnit.Count, status >= 500 ? 1 : 0],
    [METRICS.latency, MetricUnit.Milliseconds, durationMs],
    ...(status === 429 ? [[METRICS.rateLimited, MetricUnit.Count, 1] as const] : []),
  ]);
}

export const responseMiddleware = (): middy.MiddlewareObj<
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2
> => ({
  before: (request) => {
    const state = beginState(request.event, request.context?.awsRequestId);
    addLogKeys({ request_id: state.requestId });
    resampleLogs();
  },
  after: (request) => {
    const state = stateOf(request);
    const result = request.response as unknown as RouteResult;
    const select = state.select;
    let status = 200;
    let payload: object;
    let extra: Record<string, string> = {};
    switch (result.kind) {
      case 'object':
        // A route that creates something answers the status its spec names (201).
        status = result.status ?? state.route?.spec.status ?? 200;
        extra = result.headers ?? {};
        payload = {
          request_id: state.requestId,
          ...result.envelope,
          data: select ? project(result.data, select) : result.data,
        };
        break;
      case 'list':
        payload = {
          request_id: state.requestId,
          data: select ? result.data.map((item) => project(item, select)) : result.data,
          // Present only when more results exist (the spec's list envelope): absent on the last page.
          ...(result.nextCursor ? { next_cursor: result.nextCursor } : {}),
        };
        break;
      case 'empty':
        status = result.status ?? 200;
        payload = { request_id: state.requestId };
        break;
      case 'flat':
        payload = { request_id: state.requestId, ...result.data };
        break;
      case 'redirect':
        status = 302;
        // Each follow reaches us (a tracked link counts its clicks): no cache keeps the answer.
        extra = { location: result.location, 'cache-control': 'no-store' };
        payload = { request_id: state.requestId, data: { url: result.location } };
        break;
      case 'page': {
        const status = result.status ?? 200;
        request.response = {
          statusCode: status,
          headers: {
            'content-type': 'text/html; charset=utf-8',
            // Only the page's own nonce'd script and style run; it talks to this origin only and cannot be framed.
            // A form's redirect counts as its action: a form answered by a redirect elsewhere names that origin.
            'content-security-policy': `default-src 'none'; script-src 'nonce-${result.nonce}'; style-src 'nonce-${result.nonce}'; connect-src 'self'; img-src 'self' data:; form-action ${["'self'", ...(result.formActions ?? [])].join(' ')}; base-uri 'none'; frame-ancestors 'none'`,
            'x-content-type-options': 'nosniff',
            // Booking references travel in page URLs: never to other sites.
            'referrer-policy': 'no-referrer',
            'cache-control': 'no-store',
            'x-request-id': state.requestId,
          },
          body: result.html,
        };
        accessLog(state, request.event, status);
        return;
      }
      case 'binary': {
        request.response = {
          statusCode: 200,
          headers: {
            // The published contract's media type for downloads; the file's own type goes beside it.
            'content-type': result.ownType ? result.contentType : 'application/octet-stream',
            'x-attachment-content-type': result.contentType,
            'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(result.filename)}`,
            'content-length': String(result.content.length),
            // The uploader chose the content type (text/html included): browsers must not render or sniff it.
            'x-content-type-options': 'nosniff',
            ...(result.noStore ? { 'cache-control': 'no-store' } : {}),
            'x-request-id': state.requestId,
          },
          body: result.content.toString('base64'),
          isBase64Encoded: true,
        };
        accessLog(state, request.event, 200);
        return;
      }
      case 'text': {
        request.response = {
          statusCode: 200,
          headers: {
            'content-type': 'text/plain; charset=utf-8',
            'x-content-type-options': 'nosniff',
            'cache-control': 'no-store',
            'x-request-id': state.requestId,
          },
          body: result.text,
        };
        accessLog(state, request.event, 200);
        return;
      }
      default: {
        const exhaustive: never = result;
        throw new Error(`Unknown result ${JSON.stringify(exhaustive)}`);
      }
    }
    request.response = render(state, status, payload, extra);
    accessLog(state, request.event, status);
  },
  onError: (request) => {
    const state = existingState(request.event) ?? beginState(request.event);
    const error = request.error;
    let apiError: ApiError;
    if (error instanceof ApiError && error.expose) {
      apiError = error;
    } else if (error instanceof KeyTooLongError) {
      // A value of the request is longer than any key holds: nothing can be stored under it, nor found.
      apiError = error.write
        ? new InvalidRequestError(
            `A value of this request is too long to be stored: it makes a key of ${error.bytes} bytes, and keys hold at most ${KEY_BYTES[error.attribute]}; shorten names, IDs and other values that identify things`,
          )
        : new NotFoundError(
            `Not found: a value of this request is longer than any stored name or ID can be (${error.bytes} bytes in a key that holds at most ${KEY_BYTES[error.attribute]})`,
          );
    } else {
      state.log.error('unhandled error', { error: error ?? undefined });
      apiError = new ApiError(500, `Internal error; quote request id ${state.requestId} when reporting it`, {
        expose: false,
      });
    }
    const payload =
      state.route?.spec.errors === 'oauth'
        ? {
            request_id: state.requestId,
            error: oauthCodeOf(apiError),
            error_description: apiError.message,
            error_code: String(apiError.status),
            error_uri: `https://www.rfc-editor.org/rfc/rfc6749#section-5.2`,
          }
        : { request_id: state.requestId, error: { type: apiError.type, message: apiError.message } };
    request.response = render(state, apiError.status, payload, apiError.headers);
    accessLog(state, request.event, apiError.status);
  },
});
