import type Busboy from '@fastify/busboy';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { InvalidRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from '#shared/errors';
import type { UploadedFile } from '#shared/uploaded-file';

/** The part holding the JSON body: `message`, or `draft` as the published contract names it for drafts. */
const JSON_PARTS = new Set(['message', 'draft']);

/**
 * multipart/form-data bodies: a `message` part holding the JSON body and one file part per
 * attachment, parsed with busboy into a list (never into an object keyed by part names, so no
 * part name can reach a prototype). Only functions with multipart routes pass this parser to the
 * stack, so the others do not carry busboy.
 *
 * The whole body is in memory already (API Gateway hands it over in one piece), so busboy parses it
 * synchronously; what is left afterwards is the file streams' own flushing. Parsing is bounded:
 * part, field, file and header counts are limited, and a body that stops making progress before
 * busboy finishes (a part whose headers never end, which busboy waits on forever) is malformed.
 */
const MAX_FILES = 100;
const MAX_TEXT_FIELDS = 1;
const MAX_HEADER_PAIRS = 20;
/** Event-loop turns without progress after the last byte before a body counts as malformed. */
const STALL_TURNS = 3;
/** Whatever happens, an answer within this time. */
const DEADLINE_MS = 5_000;

/**
 * Names that mean something on every JavaScript object, alone or as the base of the `a[b]` and `a.b`
 * paths that form parsers expand: refused outright, whatever code reads the parts later.
 */
const HOSTILE_NAMES = new Set([...Object.getOwnPropertyNames(Object.prototype), 'prototype']);
const hostile = (name: string) => HOSTILE_NAMES.has(name.split(/[[.]/, 1)[0]!.trim());

const malformed = (detail: string, cause?: unknown) =>
  new InvalidRequestError(
    `The multipart/form-data body could not be parsed: ${detail}`,
    cause === undefined ? undefined : { cause },
  );

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export async function parseMultipart(
  event: APIGatewayProxyEventV2,
  contentType: string,
  maxBytes: number,
): Promise<{ message: unknown; files: UploadedFile[] }> {
  const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const value = boundary?.[1] ?? boundary?.[2];
  if (!value || !/^[a-zA-Z0-9'()+_,./:=?-]{1,70}$/.test(value) || value.endsWith(' ')) {
    throw new UnsupportedMediaTypeError(
      'multipart/form-data needs a boundary parameter of 1 to 70 characters (RFC 2046)',
    );
  }

  let failure: Error | undefined;
  let finished = false;
  let progress = 0;
  let messageText: string | undefined;
  let openFiles = 0;
  const files: UploadedFile[] = [];
  const fail = (error: Error) => {
    failure ??= error;
  };

  // busboy loads with the first multipart body (scripts/esbuild-plugins.cjs, lazy-chunks).
  const { Busboy: busboy } = await import('#shared/lazy/busboy');
  let parser: ReturnType<typeof Busboy>;
  try {
    parser = busboy({
      headers: { 'content-type': `multipart/form-data; boundary=${value}` },
      limits: {
        fieldSize: maxBytes,
        fileSize: maxBytes,
        files: MAX_FILES,
        fields: MAX_TEXT_FIELDS + 1,
        parts: MAX_FILES + MAX_TEXT_FIELDS + 1,
        headerPairs: MAX_HEADER_PAIRS,
      },
    });
  } catch (error) {
    throw malformed((error as Error).message, error);
  }
  parser.on('field', (name, text, nameTruncated, valueTruncated) => {
    progress++;
    if (hostile(name))
      return fail(new InvalidRequestError(`Multipart part name '${name.slice(0, 100)}' is not allowed`));
    if (nameTruncated) return fail(new InvalidRequestError('A multipart part name is longer than 100 bytes'));
    if (!JSON_PARTS.has(name))
      return fail(
        new InvalidRequestError(
          `Unknown multipart field '${name.slice(0, 100)}'; send the JSON body in a 'message' part`,
        ),
      );
    if (messageText !== undefined)
      return fail(new InvalidRequestError("The multipart body has more than one 'message' (or 'draft') part"));
    if (valueTruncated) return fail(new PayloadTooLargeError("The multipart 'message' part is too large"));
    messageText = text;
  });
  parser.on('file', (name, stream, filename, _encoding, mimeType) => {
    progress++;
    if (hostile(name))
      return fail(new InvalidRequestError(`Multipart part name '${name.slice(0, 100)}' is not allowed`));
    if (JSON_PARTS.has(name))
      return fail(new InvalidRequestError(`The multipart '${name}' part must be a JSON text field, not a file`));
    const chunks: Buffer[] = [];
    openFiles++;
    stream.on('data', (chunk: Buffer) => {
      progress++;
      chunks.push(chunk);
    });
    stream.once('error', (error: Error) => {
      progress++;
      openFiles--;
      fail(malformed(error.message, error));
    });
    stream.once('end', () => {
      progress++;
      openFiles--;
      if (stream.truncated)
        fail(
          new PayloadTooLargeError(`An attachment is larger than the ${maxBytes} bytes a multipart request may carry`),
        );
      else
        files.push({
          fieldname: name,
          filename: filename || name,
          contentType: mimeType || 'application/octet-stream',
          content: Buffer.concat(chunks),
        });
    });
  });
  parser.on('partsLimit', () =>
    fail(new InvalidRequestError(`A multipart body may have at most ${MAX_FILES + MAX_TEXT_FIELDS} parts`)),
  );
  parser.on('filesLimit', () => fail(new InvalidRequestError(`A message can carry at most ${MAX_FILES} attachments`)));
  parser.on('fieldsLimit', () =>
    fail(new InvalidRequestError("A multipart body has one text part, 'message'; send attachments as file parts")),
  );
  parser.on('error', (error: Error) => {
    finished = true;
    fail(malformed(error.message, error));
  });
  parser.on('finish', () => {
    finished = true;
  });

  try {
    parser.end(Buffer.from(event.body ?? '', event.isBase64Encoded ? 'base64' : 'utf8'));
  } catch (error) {
    fail(malformed((error as Error).message, error));
  }

  // Wait for busboy to finish, or stop when it no longer moves (see above) or the deadline passes.
  const deadline = Date.now() + DEADLINE_MS;
  let still = 0;
  while ((!finished || openFiles > 0) && !failure) {
    const before = progress;
    await nextTurn();
    still = progress === before ? still + 1 : 0;
    if (still >= STALL_TURNS || Date.now() > deadline)
      fail(malformed('a part ends before its headers do, or the body ends early'));
  }
  parser.removeAllListeners();
  if (failure) throw failure;
  if (messageText === undefined && files.length === 0) {
    throw malformed("no part with a Content-Disposition name: send the JSON body as a 'message' part");
  }

  let message: unknown = {};
  if (messageText !== undefined) {
    try {
      message = JSON.parse(messageText);
    } catch (error) {
      throw new InvalidRequestError(`The multipart 'message' part is not valid JSON: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
  return { message, files };
}
