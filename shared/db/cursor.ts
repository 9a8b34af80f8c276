import { parseId, type IdKind } from '#shared/ids';
import { InvalidRequestError } from '#shared/http/errors';

/**
 * Opaque page tokens. A token is the base64url JSON of the DynamoDB key to continue after. Decoding
 * checks that the key belongs to the partition being queried, so a forged token can neither reach
 * another application's items nor make DynamoDB reject the query with a server error.
 */
export type StartKey = Record<string, string | number>;

export function encodeCursor(key: StartKey): string {
  return Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
}

export function decodeCursor(token: string, expect: { pk: string; skPrefix?: string; keys?: readonly string[] }): StartKey {
  const invalid = () => new InvalidRequestError('page_token is not valid for this request; pass next_cursor from the previous page unchanged');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw invalid();
  const key = parsed as Record<string, unknown>;
  const allowed = new Set(['pk', 'sk', ...(expect.keys ?? [])]);
  for (const [name, value] of Object.entries(key)) {
    if (!allowed.has(name) || (typeof value !== 'string' && typeof value !== 'number')) throw invalid();
  }
  if (key.pk !== expect.pk || typeof key.sk !== 'string') throw invalid();
  if (expect.skPrefix !== undefined && !key.sk.startsWith(expect.skPrefix)) throw invalid();
  for (const name of expect.keys ?? []) if (!(name in key)) throw invalid();
  return key as StartKey;
}

/** Opaque page token for lists built in memory (a position in a stable ordering). */
export function encodeOffsetCursor(scope: string, offset: number): string {
  return Buffer.from(JSON.stringify({ o: offset, s: scope }), 'utf8').toString('base64url');
}

export function decodeOffsetCursor(token: string, scope: string): number {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { o?: unknown; s?: unknown };
    if (parsed.s === scope && Number.isInteger(parsed.o) && (parsed.o as number) >= 0) return parsed.o as number;
  } catch {
    /* fall through */
  }
  throw new InvalidRequestError('page_token is not valid for this request; pass next_cursor from the previous page unchanged');
}

/** Opaque page token that continues a newest-first listing below a sort key. */
export function encodeBeforeCursor(scope: string, before: string): string {
  return Buffer.from(JSON.stringify({ b: before, s: scope }), 'utf8').toString('base64url');
}

/** The sort key of a before-cursor, which must be an ID of `kind`. */
export function decodeBeforeCursor(token: string, scope: string, kind: IdKind): string {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { b?: unknown; s?: unknown };
    if (parsed.s === scope && typeof parsed.b === 'string' && parseId(kind, parsed.b)) return parsed.b;
  } catch {
    /* fall through */
  }
  throw new InvalidRequestError('page_token is not valid for this request; pass next_cursor from the previous page unchanged');
}
