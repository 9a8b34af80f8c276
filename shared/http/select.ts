import type { JSONSchema } from 'json-schema-to-ts';
import { InvalidRequestError } from '#shared/errors';

/** Top-level property names of an object schema (what `select` may name). */
export function selectableFields(schema: JSONSchema | undefined): readonly string[] | undefined {
  if (!schema || typeof schema !== 'object' || !('properties' in schema) || !schema.properties) return undefined;
  return Object.keys(schema.properties);
}

/** Parses and checks `select=a,b`: top-level fields only, each one the resource actually has. */
export function parseSelect(raw: string, allowed: readonly string[] | undefined): string[] {
  const fields = [
    ...new Set(
      raw
        .split(',')
        .map((f) => f.trim())
        .filter(Boolean),
    ),
  ];
  if (fields.length === 0) throw new InvalidRequestError("'select' must name at least one field");
  const nested = fields.find((f) => f.includes('.'));
  if (nested) throw new InvalidRequestError(`'select' takes top-level fields only; '${nested}' is nested`);
  if (allowed) {
    const unknown = fields.filter((f) => !allowed.includes(f));
    if (unknown.length) {
      throw new InvalidRequestError(
        `'select' names unknown field(s): ${unknown.join(', ')}; available: ${allowed.join(', ')}`,
      );
    }
  }
  return fields;
}

export function project<T extends object>(value: T, fields: readonly string[]): Partial<T> {
  const out: Record<string, unknown> = {};
  for (const field of fields) if (field in value) out[field] = (value as Record<string, unknown>)[field];
  return out as Partial<T>;
}
