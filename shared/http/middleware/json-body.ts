import type middy from '@middy/core';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import httpMultipartBodyParser from '@middy/http-multipart-body-parser';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { InvalidRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from '#shared/http/errors';
import type { UploadedFile } from '#shared/http/route';
import { stateOf } from '#shared/http/middleware/state';

/**
 * Request bodies. For routes with a body schema: size limit (413), content type (415), then parsing
 * with @middy/http-json-body-parser (malformed JSON → 400) or, where the route allows it,
 * @middy/http-multipart-body-parser (a `message` JSON part plus file parts). Routes without a body
 * schema ignore any body. The raw bytes are kept for idempotency hashing.
 */
const DEFAULT_MAX_BODY = 1024 * 1024;
const JSON_CONTENT_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;.*)?$/i;
const MULTIPART = /^multipart\/form-data\s*;/i;

const megabytes = (bytes: number) => `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB`;

interface MultipartFile {
  filename: string;
  mimetype: string;
  content: Buffer;
  truncated?: boolean;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidRequestError(`The request body is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
}

export const jsonBody = (): middy.MiddlewareObj<APIGatewayProxyEventV2> => {
  const parseJsonBody = httpJsonBodyParser().before!;
  return {
    before: async (request) => {
      const state = stateOf(request);
      const spec = state.route!.spec;
      if (!spec.body) return;
      const raw = request.event.body;
      if (raw === undefined || raw === null || raw === '') {
        if (spec.bodyOptional) {
          state.body = {};
          return;
        }
        throw new InvalidRequestError('A JSON request body is required');
      }
      state.rawBody = Buffer.from(raw, request.event.isBase64Encoded ? 'base64' : 'utf8');
      const size = state.rawBody.length;
      const contentType = state.headers['content-type'] ?? '';

      if (MULTIPART.test(contentType)) {
        if (!spec.multipartMaxBytes) {
          throw new UnsupportedMediaTypeError('Content-Type must be application/json on this endpoint');
        }
        if (size > spec.multipartMaxBytes) {
          throw new PayloadTooLargeError(`multipart/form-data requests are limited to ${megabytes(spec.multipartMaxBytes)} (got ${megabytes(size)})`);
        }
        const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
        const value = boundary?.[1] ?? boundary?.[2];
        if (!value || !/^[a-zA-Z0-9-]{1,70}$/.test(value)) {
          throw new UnsupportedMediaTypeError('multipart/form-data needs a boundary of 1 to 70 letters, digits or hyphens');
        }
        const event = { ...request.event, headers: { 'content-type': `multipart/form-data; boundary=${value}` } };
        try {
          await httpMultipartBodyParser({ busboy: { limits: { fieldSize: spec.multipartMaxBytes } } }).before!({ ...request, event } as never);
        } catch (error) {
          const detail = (error as { cause?: { message?: string } }).cause?.message;
          throw new InvalidRequestError(`The multipart/form-data body could not be parsed${detail ? `: ${detail}` : ''}`, { cause: error });
        }
        const parts = event.body as unknown as Record<string, string | string[] | MultipartFile | MultipartFile[]>;
        const files: UploadedFile[] = [];
        let message: unknown = {};
        for (const [fieldname, value] of Object.entries(parts)) {
          if (fieldname === 'message') {
            if (typeof value !== 'string') throw new InvalidRequestError("The multipart 'message' part must be a JSON text field, not a file");
            message = parseJson(value);
            continue;
          }
          // The parser lists repeated file fields newest first; restore the order they were sent in.
          const list = Array.isArray(value) ? [...value].reverse() : [value];
          for (const item of list) {
            if (typeof item === 'string') throw new InvalidRequestError(`Unknown multipart field '${fieldname}'; send the JSON body in a 'message' part`);
            files.push({ fieldname, filename: item.filename || fieldname, contentType: item.mimetype || 'application/octet-stream', content: item.content });
          }
        }
        state.body = message;
        state.files = files;
        return;
      }

      const max = spec.maxBodyBytes ?? DEFAULT_MAX_BODY;
      if (size > max) {
        throw new PayloadTooLargeError(`JSON requests are limited to ${megabytes(max)} (got ${megabytes(size)})${spec.maxBodyHint ? `; ${spec.maxBodyHint}` : ''}`);
      }
      if (!JSON_CONTENT_TYPE.test(contentType)) {
        throw new UnsupportedMediaTypeError(
          `Content-Type must be application/json${spec.multipartMaxBytes ? ' or multipart/form-data' : ''} (got ${contentType ? `'${contentType.slice(0, 100)}'` : 'none'})`,
        );
      }
      // Our own checks above give the precise 413/415; the parser sees a normalised content type.
      const event = { ...request.event, headers: { 'content-type': 'application/json' } };
      try {
        await parseJsonBody({ ...request, event } as never);
      } catch (error) {
        const detail = (error as { cause?: { message?: string } }).cause?.message;
        throw new InvalidRequestError(`The request body is not valid JSON${detail ? `: ${detail}` : ''}`, { cause: error });
      }
      state.body = event.body;
    },
  };
};
