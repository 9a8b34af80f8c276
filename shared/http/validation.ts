import type { ErrorObject } from 'ajv';
import { InvalidRequestError } from '#shared/errors';

/**
 * Validators are generated at build time (scripts/generate-routes.ts → ajv standalone code in
 * functions/<group>/routes.generated.cjs), so functions neither bundle ajv nor compile schemas
 * at cold start. This module turns their errors into one message naming every offending field.
 */
/** An ajv error as generated validators report it: without `schemaPath` (see validator-codegen). */
export type ValidationError = Omit<ErrorObject, 'schemaPath'>;

export interface CompiledValidateFunction {
  (data: unknown): boolean;
  errors?: ValidationError[] | null;
}

export type Validator = (value: unknown) => void;

function fieldName(error: ValidationError, where: 'body' | 'query'): string {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (error.keyword === 'additionalProperties') path.push(String(error.params.additionalProperty));
  if (error.keyword === 'required') path.push(String(error.params.missingProperty));
  const name = path.reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part), '');
  return name || (where === 'body' ? 'body' : 'query');
}

const COMPARISONS: Record<string, string> = {
  minimum: '>=',
  maximum: '<=',
  exclusiveMinimum: '>',
  exclusiveMaximum: '<',
};

function describe(error: ValidationError, where: 'body' | 'query'): string {
  const field = fieldName(error, where);
  const noun = where === 'query' ? 'query parameter' : 'field';
  switch (error.keyword) {
    case 'additionalProperties':
      return `unknown ${noun} '${field}'`;
    case 'required':
      return `'${field}' is required`;
    case 'type':
      return `'${field}' must be of type ${String(error.params.type).replace(',', ' or ')}`;
    case 'enum':
      return `'${field}' must be one of: ${(error.params.allowedValues as unknown[]).join(', ')}`;
    case 'format':
      return `'${field}' must be a valid ${error.params.format === 'email' ? 'email address' : String(error.params.format)}`;
    case 'maxLength':
      return `'${field}' must be at most ${error.params.limit} characters`;
    case 'minLength':
      return error.params.limit === 1
        ? `'${field}' must not be empty`
        : `'${field}' must be at least ${error.params.limit} characters`;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return `'${field}' must be ${COMPARISONS[error.keyword]} ${error.params.limit}`;
    case 'multipleOf':
      return `'${field}' must be a multiple of ${error.params.multipleOf}`;
    case 'minProperties':
      return where === 'body' && field === 'body'
        ? 'the request body must set at least one field'
        : `'${field}' must not be empty`;
    case 'maxItems':
      return `'${field}' must have at most ${error.params.limit} items`;
    case 'minItems':
      return `'${field}' must have at least ${error.params.limit} items`;
    case 'maxProperties':
      return `'${field}' must have at most ${error.params.limit} entries`;
    case 'pattern':
      return `'${field}' must match the pattern ${String(error.params.pattern)}`;
    case 'uniqueItems':
      return `'${field}' must not contain duplicates (items ${error.params.j} and ${error.params.i} are equal)`;
    case 'const':
      return `'${field}' must be ${JSON.stringify(error.params.allowedValue)}`;
    default:
      return `'${field}' ${error.message ?? 'is invalid'}`;
  }
}

/** Turns ajv errors into one message naming every offending field (deduplicated, stable order). */
export function formatErrors(errors: readonly ValidationError[], where: 'body' | 'query'): string {
  const messages = [
    ...new Set(errors.filter((e) => e.keyword !== 'if' && e.keyword !== 'anyOf').map((e) => describe(e, where))),
  ];
  const prefix = where === 'body' ? 'Invalid request body' : 'Invalid query';
  return `${prefix}: ${messages.join('; ')}`;
}

/**
 * The first number in `value` (a parsed body or a coerced query) that JavaScript and the DynamoDB
 * client cannot hold exactly: beyond ±Number.MAX_SAFE_INTEGER, or not finite. Every schema bounds
 * its own numbers (test/unit/schema-integers.test.ts); this guards what no schema describes, such as
 * the values of free-form objects. Iterative, so a deeply nested body cannot exhaust the stack.
 */
export function unsafeNumber(value: unknown, where: 'body' | 'query'): { field: string; value: number } | undefined {
  const pending: [unknown, string][] = [[value, '']];
  while (pending.length) {
    const [current, path] = pending.pop()!;
    if (typeof current === 'number') {
      if (!Number.isFinite(current) || Math.abs(current) > Number.MAX_SAFE_INTEGER)
        return { field: path || where, value: current };
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) pending.push([current[i], `${path}[${i}]`]);
    } else if (current && typeof current === 'object') {
      for (const [key, item] of Object.entries(current).reverse()) pending.push([item, path ? `${path}.${key}` : key]);
    }
  }
  return undefined;
}

/** Refuses the first number of `value` that cannot be held exactly (see unsafeNumber), naming its field. */
export function refuseUnsafeNumbers(value: unknown, where: 'body' | 'query'): void {
  const found = unsafeNumber(value, where);
  if (!found) return;
  const prefix = where === 'body' ? 'Invalid request body' : 'Invalid query';
  throw new InvalidRequestError(
    Number.isFinite(found.value)
      ? `${prefix}: '${found.field}' must be between -${Number.MAX_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER} (larger numbers are not held exactly; send them as strings)`
      : `${prefix}: '${found.field}' must be a finite number`,
  );
}

export function toValidator(validate: CompiledValidateFunction, where: 'body' | 'query'): Validator {
  return (value) => {
    if (!validate(value)) throw new InvalidRequestError(formatErrors(validate.errors ?? [], where));
  };
}
