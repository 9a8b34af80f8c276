import httpMultipartBodyParser from '@middy/http-multipart-body-parser';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { InvalidRequestError, UnsupportedMediaTypeError } from '#shared/http/errors';
import type { UploadedFile } from '#shared/http/route';

/**
 * multipart/form-data bodies (@middy/http-multipart-body-parser): a `message` part holding the JSON
 * body and one file part per attachment. Only functions with multipart routes pass this parser to
 * the stack, so the others do not carry busboy.
 */
interface MultipartFile {
  filename: string;
  mimetype: string;
  content: Buffer;
}

/** One parser per size limit (routes share a few), built on first use. */
const parsers = new Map<number, ReturnType<typeof httpMultipartBodyParser>>();
const parserFor = (maxBytes: number) => {
  let parser = parsers.get(maxBytes);
  if (!parser) parsers.set(maxBytes, (parser = httpMultipartBodyParser({ busboy: { limits: { fieldSize: maxBytes } } })));
  return parser;
};

export async function parseMultipart(event: APIGatewayProxyEventV2, contentType: string, maxBytes: number): Promise<{ message: unknown; files: UploadedFile[] }> {
  const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const value = boundary?.[1] ?? boundary?.[2];
  if (!value || !/^[a-zA-Z0-9-]{1,70}$/.test(value)) {
    throw new UnsupportedMediaTypeError('multipart/form-data needs a boundary of 1 to 70 letters, digits or hyphens');
  }
  const copy = { ...event, headers: { 'content-type': `multipart/form-data; boundary=${value}` } };
  try {
    await parserFor(maxBytes).before!({ event: copy } as never);
  } catch (error) {
    const detail = (error as { cause?: { message?: string } }).cause?.message;
    throw new InvalidRequestError(`The multipart/form-data body could not be parsed${detail ? `: ${detail}` : ''}`, { cause: error });
  }
  const parts = copy.body as unknown as Record<string, string | string[] | MultipartFile | MultipartFile[]>;
  const files: UploadedFile[] = [];
  let message: unknown = {};
  for (const [fieldname, part] of Object.entries(parts)) {
    if (fieldname === 'message') {
      if (typeof part !== 'string') throw new InvalidRequestError("The multipart 'message' part must be a JSON text field, not a file");
      try {
        message = JSON.parse(part);
      } catch (error) {
        throw new InvalidRequestError(`The multipart 'message' part is not valid JSON: ${(error as Error).message}`, { cause: error });
      }
      continue;
    }
    // The parser lists repeated file fields newest first; restore the order they were sent in.
    const list = Array.isArray(part) ? [...part].reverse() : [part];
    for (const item of list) {
      if (typeof item === 'string') throw new InvalidRequestError(`Unknown multipart field '${fieldname}'; send the JSON body in a 'message' part`);
      files.push({ fieldname, filename: item.filename || fieldname, contentType: item.mimetype || 'application/octet-stream', content: item.content });
    }
  }
  return { message, files };
}
