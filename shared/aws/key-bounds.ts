/**
 * DynamoDB's bounds on key values, checked before a request leaves: a partition key holds at most
 * 2,048 bytes of UTF-8, a sort key 1,024 (the table's and any index's). DynamoDB answers a longer one
 * with a ValidationException, which reached clients as a 500; here it is a KeyTooLongError that says
 * whether the request would store the value (a client sent something too long to keep: a 400) or only
 * names it (nothing can be stored under it: a 404), and the HTTP layer answers accordingly.
 *
 * Request values are bounded before this (schemas, path parameters, page tokens), and values that come
 * from mail or servers are keyed by a digest when they would not fit (shared/db/keys.ts): this is the
 * one check that holds for every command whatever the caller forgot.
 */
export const KEY_BYTES = { pk: 2048, sk: 1024, gsi1pk: 2048, gsi1sk: 1024 } as const;
type KeyAttribute = keyof typeof KEY_BYTES;
const KEY_ATTRIBUTES = Object.keys(KEY_BYTES) as KeyAttribute[];

export class KeyTooLongError extends Error {
  constructor(
    readonly attribute: KeyAttribute,
    readonly bytes: number,
    /** The request would store an item under the key (Put); otherwise it looks one up, changes or deletes it. */
    readonly write: boolean,
  ) {
    super(`A ${attribute} of ${bytes} bytes is longer than DynamoDB holds (${KEY_BYTES[attribute]} bytes)`);
    this.name = 'KeyTooLongError';
  }
}

/** The string of an attribute value, plain (document client) or marshalled (`{S: …}`). */
function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { S?: unknown }).S === 'string')
    return (value as { S: string }).S;
  return undefined;
}

function checkKey(key: unknown, write: boolean): void {
  if (!key || typeof key !== 'object') return;
  for (const attribute of KEY_ATTRIBUTES) {
    const value = text((key as Record<string, unknown>)[attribute]);
    if (value === undefined || value.length * 3 <= KEY_BYTES[attribute]) continue;
    const bytes = Buffer.byteLength(value, 'utf8');
    if (bytes > KEY_BYTES[attribute]) throw new KeyTooLongError(attribute, bytes, write);
  }
}

/** `pk = :pk`, `begins_with(sk, :p)`, `sk BETWEEN :a AND :b`…: the key attribute each value placeholder is compared with. */
function keyConditionValues(expression: string, names: Record<string, string> = {}): [KeyAttribute, string][] {
  const found: [KeyAttribute, string][] = [];
  const attribute = (name: string) => (names[name] ?? name) as KeyAttribute;
  for (const m of expression.matchAll(/([#\w]+)\s*(?:=|<=|>=|<|>)\s*(:\w+)/g)) found.push([attribute(m[1]!), m[2]!]);
  for (const m of expression.matchAll(/([#\w]+)\s+BETWEEN\s+(:\w+)\s+AND\s+(:\w+)/gi))
    found.push([attribute(m[1]!), m[2]!], [attribute(m[1]!), m[3]!]);
  for (const m of expression.matchAll(/begins_with\s*\(\s*([#\w]+)\s*,\s*(:\w+)\s*\)/gi))
    found.push([attribute(m[1]!), m[2]!]);
  return found.filter(([name]) => name in KEY_BYTES);
}

/**
 * Throws KeyTooLongError when a command's input names or stores a key value DynamoDB would refuse:
 * `Key`, `Item`, `Keys`, `ExclusiveStartKey`, the values of a `KeyConditionExpression`, and the same
 * inside `TransactItems` and `RequestItems`.
 */
export function checkKeyBounds(input: Record<string, unknown>): void {
  checkKey(input.Key, false);
  checkKey(input.Item, true);
  checkKey(input.ExclusiveStartKey, false);
  if (typeof input.KeyConditionExpression === 'string') {
    const values = (input.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
    for (const [attribute, placeholder] of keyConditionValues(
      input.KeyConditionExpression,
      input.ExpressionAttributeNames as Record<string, string> | undefined,
    )) {
      checkKey({ [attribute]: values[placeholder] }, false);
    }
  }
  for (const item of (input.TransactItems ?? []) as Record<string, { Key?: unknown; Item?: unknown }>[]) {
    checkKey(item.Put?.Item, true);
    for (const kind of ['Update', 'Delete', 'ConditionCheck', 'Get']) checkKey(item[kind]?.Key, false);
  }
  for (const request of Object.values((input.RequestItems ?? {}) as Record<string, unknown>)) {
    if (Array.isArray(request)) {
      for (const write of request as { PutRequest?: { Item?: unknown }; DeleteRequest?: { Key?: unknown } }[]) {
        checkKey(write.PutRequest?.Item, true);
        checkKey(write.DeleteRequest?.Key, false);
      }
    } else for (const key of ((request as { Keys?: unknown[] }).Keys ?? []) as unknown[]) checkKey(key, false);
  }
}
