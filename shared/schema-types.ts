import type { FromSchema, JSONSchema } from 'json-schema-to-ts';

/**
 * A response schema's type without the open index signatures FromSchema adds to objects that do not
 * forbid additional properties: a result must have the documented fields, with their types.
 */
export type Documented<T> = T extends readonly (infer U)[]
  ? Documented<U>[]
  : T extends Buffer
    ? T
    : T extends object
      ? { [K in keyof T as string extends K ? never : K]: Documented<T[K]> }
      : T;

/** What a response schema documents, as a type (the views and providers return exactly this). */
export type ResponseOf<S extends JSONSchema> = Documented<FromSchema<S>>;
