import type middy from '@middy/core';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { InvalidRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from '#shared/errors';
import type { UploadedFile } from '#shared/uploaded-file';
import { stateOf } from '#shared/http/middleware/state';

/**
 * Request bodies. For routes with a body schema: size limit (413), content type (415), then parsing
 * with @middy/http-json-body-parser (malformed JSON → 400) or, where the route and its function
 * allow it, the multipart parser (a `message` JSON part plus file parts). Routes without a body
 * schema ignore any body. The raw bytes are kept for idempotency hashing.
 */
const DEFAULT_MAX_BODY = 1024 * 1024;
const JSON_CONTENT_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;.*)?$/i;
const MULTIPART = /^multipart\/form-data\s*;/i;
const FORM = /^application\/x-www-form-urlencoded\s*(?:;.*)?$/i;

/** A size as people read it, rounded up (a body over a limit never reads as equal to it): `16 KB`, `3 MB`, `1.05 MB`. */
const megabytes = (bytes: number) =>
  bytes < 1024 * 1024 ? `${Math.ceil(bytes / 1024)} KB` : `${Math.ceil((bytes / (1024 * 1024)) * 100) / 100} MB`;

/** Parses a multipart/form-data body (shared/http/middleware/multipart.ts), given only to functions that accept one. */
export type MultipartParser = (
  event: APIGatewayProxyEventV2,
  contentType: string,
  maxBytes: number,
) => Promise<{ message: unknown; files: UploadedFile[] }>;

/** Every body schema describes an object: anything else is refused here, naming what came. */
function jsonObject(value: unknown, what: string): unknown {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value;
  throw new InvalidRequestError(
    `${what} must be a JSON object (got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`})`,
  );
}

export const jsonBody = (multipart?: MultipartParser): middy.MiddlewareObj<APIGatewayProxyEventV2> => {
  const parseJsonBody = httpJsonBodyParser().before!;
  return {
    before: async (request) => {
      const state = stateOf(request);
      const spec = state.route!.spec;
      if (!state.route!.validateBody) return;
      // API Gateway hands the body over as text; some local layers hand JSON over already parsed, and
      // turn falsy values (`0`, `false`, `null`, `""`) into no body at all. Text it is again, and a
      // body that Content-Length announced but that did not arrive is not "no body".
      const given: unknown = request.event.body;
      const raw = given === undefined || given === null || typeof given === 'string' ? given : JSON.stringify(given);
      if (raw === undefined || raw === null || raw === '') {
        if (Number(state.headers['content-length'] ?? 0) > 0)
          throw new InvalidRequestError('The request body must be a JSON object');
        if (spec.bodyOptional) {
          state.body = {};
          return;
        }
        throw new InvalidRequestError('A JSON request body is required');
      }
      // The decoded size, without copying the body.
      const size = Buffer.byteLength(raw, request.event.isBase64Encoded ? 'base64' : 'utf8');
      const contentType = state.headers['content-type'] ?? '';

      if (MULTIPART.test(contentType)) {
        if (!spec.multipartMaxBytes || !multipart) {
          throw new UnsupportedMediaTypeError('Content-Type must be application/json on this endpoint');
        }
        if (size > spec.multipartMaxBytes) {
          throw new PayloadTooLargeError(
            `multipart/form-data requests are limited to ${megabytes(spec.multipartMaxBytes)} (got ${megabytes(size)})`,
          );
        }
        const parsed = await multipart(request.event, contentType, spec.multipartMaxBytes);
        state.body = jsonObject(parsed.message, "The multipart 'message' part");
        state.files = parsed.files;
        return;
      }

      const max = spec.maxBodyBytes ?? DEFAULT_MAX_BODY;
      if (spec.formBody && FORM.test(contentType)) {
        if (size > max)
          throw new PayloadTooLargeError(`Requests are limited to ${megabytes(max)} (got ${megabytes(size)})`);
        const text = request.event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
        const fields: Record<string, string> = {};
        for (const [name, value] of new URLSearchParams(text)) {
          if (name in fields) throw new InvalidRequestError(`'${name}' is sent twice`);
          fields[name] = value;
        }
        state.body = fields;
        return;
      }
      if (size > max) {
        throw new PayloadTooLargeError(
          `JSON requests are limited to ${megabytes(max)} (got ${megabytes(size)})${spec.maxBodyHint ? `; ${spec.maxBodyHint}` : ''}`,
        );
      }
      if (!JSON_CONTENT_TYPE.test(contentType)) {
        throw new UnsupportedMediaTypeError(
          `Content-Type must be application/json${spec.multipartMaxBytes ? ' or multipart/form-data' : ''}${spec.formBody ? ' or application/x-www-form-urlencoded' : ''} (got ${contentType ? `'${contentType.slice(0, 100)}'` : 'none'})`,
        );
      }
      // Our own checks above give the precise 413/415; the parser sees a normalised content type.
      const event = { ...request.event, body: raw, headers: { 'content-type': 'application/json' } };
      try {
        await parseJsonBody({ ...request, event } as never);
      } catch (error) {
        const detail = (error as { cause?: { message?: string } }).cause?.message;
        throw new InvalidRequestError(`The request body is not valid JSON${detail ? `: ${detail}` : ''}`, {
          cause: error,
        });
      }
      state.body =
        spec.arrayBody && Array.isArray(event.body) ? event.body : jsonObject(event.body, 'The request body');
    },
  };
};
