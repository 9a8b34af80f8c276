import type { StartKey } from '#shared/db/records';
import { parseId, type IdKind } from '#shared/ids';
import { InvalidRequestError } from '#shared/errors';
import { KEY_BYTES } from '#shared/aws/key-bounds';

/**
 * Opaque page tokens. A token is the base64url JSON of the DynamoDB key to continue after. Decoding
 * checks that the key belongs to the partition being queried, so a forged token can neither reach
 * another application's items nor make DynamoDB reject the query with a server error.
 */
export type { StartKey };

const token = (value: object) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
/** A page token that does not continue this request (forged, of another listing, or no longer followable). */
export const invalidPageToken = () =>
  new InvalidRequestError(
    'page_token is not valid for this request; pass next_cursor from the previous page unchanged',
  );
const invalid = invalidPageToken;
/** The JSON object a token holds, or undefined when it holds none. */
function parsed(value: string): Record<string, unknown> | undefined {
  try {
    const object: unknown = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
    return typeof object === 'object' && object !== null && !Array.isArray(object)
      ? (object as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

export const encodeCursor = (key: StartKey): string => token(key);

export function decodeCursor(
  value: string,
  expect: { pk: string; skPrefix?: string; keys?: readonly string[] },
): StartKey {
  const key = parsed(value);
  if (!key) throw invalid();
  const allowed = new Set(['pk', 'sk', ...(expect.keys ?? [])]);
  for (const [name, field] of Object.entries(key)) {
    if (!allowed.has(name) || (typeof field !== 'string' && typeof field !== 'number')) throw invalid();
    // No sort key we issued is longer than a sort key holds (the partition is compared below).
    if (name !== 'pk' && typeof field === 'string' && Buffer.byteLength(field, 'utf8') > KEY_BYTES.sk) throw invalid();
  }
  if (key.pk !== expect.pk || typeof key.sk !== 'string') throw invalid();
  if (expect.skPrefix !== undefined && !key.sk.startsWith(expect.skPrefix)) throw invalid();
  for (const name of expect.keys ?? []) if (!(name in key)) throw invalid();
  return key as StartKey;
}

/** Opaque page token for lists built in memory (a position in a stable ordering). */
export const encodeOffsetCursor = (scope: string, offset: number): string => token({ o: offset, s: scope });

export function decodeOffsetCursor(value: string, scope: string): number {
  const cursor = parsed(value);
  if (cursor?.s === scope && Number.isInteger(cursor.o) && (cursor.o as number) >= 0) return cursor.o as number;
  throw invalid();
}

/** Opaque page token that continues a newest-first listing below a sort key. */
export const encodeBeforeCursor = (scope: string, before: string): string => token({ b: before, s: scope });

/** The sort key of a before-cursor, which must be an ID of `kind`. */
export function decodeBeforeCursor(value: string, scope: string, kind: IdKind): string {
  const cursor = parsed(value);
  if (cursor?.s === scope && typeof cursor.b === 'string' && parseId(kind, cursor.b)) return cursor.b;
  throw invalid();
}

/** Opaque page token wrapping a provider's own page token (a live provider's listing). */
export const encodeProviderCursor = (scope: string, providerToken: string): string =>
  token({ p: providerToken, s: scope });

/** The provider's page token inside ours; a token of another listing, or not ours, is a 400. */
export function decodeProviderCursor(value: string, scope: string): string {
  const cursor = parsed(value);
  if (cursor?.s === scope && typeof cursor.p === 'string' && cursor.p.length > 0 && cursor.p.length <= 4096)
    return cursor.p;
  throw invalid();
}
