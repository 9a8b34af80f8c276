import type middy from '@middy/core';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { InvalidRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from '#shared/http/errors';
import { stateOf } from '#shared/http/middleware/state';

/**
 * For routes with a JSON body: size limit (413), content type (415), then parsing with
 * @middy/http-json-body-parser (malformed JSON → 400). Routes without a body schema ignore any body.
 */
const DEFAULT_MAX_BODY = 1024 * 1024;
const JSON_CONTENT_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;.*)?$/i;

export const jsonBody = (): middy.MiddlewareObj<APIGatewayProxyEventV2> => {
  const parse = httpJsonBodyParser().before!;
  return {
    before: async (request) => {
      const state = stateOf(request);
      const spec = state.route!.spec;
      if (!spec.body) return;
      const raw = request.event.body;
      if (raw === undefined || raw === null || raw === '') {
        throw new InvalidRequestError('A JSON request body is required');
      }
      const size = request.event.isBase64Encoded ? Math.floor((raw.length * 3) / 4) : Buffer.byteLength(raw);
      const max = spec.maxBodyBytes ?? DEFAULT_MAX_BODY;
      if (size > max) throw new PayloadTooLargeError(`The request body is larger than ${Math.round(max / 1024)} KB`);
      const contentType = state.headers['content-type'];
      if (!contentType || !JSON_CONTENT_TYPE.test(contentType)) {
        throw new UnsupportedMediaTypeError(`Content-Type must be application/json (got ${contentType ? `'${contentType.slice(0, 100)}'` : 'none'})`);
      }
      // Our own check above gives the precise 415; the parser sees a normalised content type.
      const event = { ...request.event, headers: { 'content-type': 'application/json' } };
      try {
        await parse({ ...request, event } as never);
      } catch (error) {
        const detail = (error as { cause?: { message?: string } }).cause?.message;
        throw new InvalidRequestError(`The request body is not valid JSON${detail ? `: ${detail}` : ''}`, { cause: error });
      }
      state.body = event.body;
    },
  };
};

