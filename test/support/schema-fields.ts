import type { RouteSpec } from '#shared/http/route';

/**
 * The numbers and strings a route accepts, read from its query and body schemas (the same objects that
 * generate the validators), so tests can send each one a value beyond its bounds without a list kept
 * by hand.
 */
export interface NumberField {
  where: 'query' | 'body';
  /** Steps from the root: a property name, `[]` (an array's items) or `*` (an object's additional properties). */
  steps: readonly string[];
  type: 'integer' | 'number';
  minimum: number | undefined;
  maximum: number | undefined;
  exclusiveMinimum: boolean;
  exclusiveMaximum: boolean;
}

export interface StringField {
  where: 'query' | 'body';
  /** Steps from the root, as NumberField's. */
  steps: readonly string[];
  minLength: number | undefined;
  maxLength: number | undefined;
  /** Its values are listed (`enum` or `const`): bounded whatever its length keywords. */
  listed: boolean;
  /** Its pattern is anchored at both ends and repeats nothing without bound (`^#[0-9a-f]{6}$`): it bounds the length itself. */
  boundedPattern: boolean;
}

/** Whether a pattern bounds the length of what it matches: anchored, with no `*`, `+` or `{n,}` outside character classes. */
export function boundsLength(pattern: string): boolean {
  const bare = pattern.replace(/\\./g, 'x').replace(/\[[^\]]*\]/g, 'x');
  return bare.startsWith('^') && bare.endsWith('$') && !/[*+]|\{\d*,\}/.test(bare);
}

/** A schema position that no walker rule reaches (a `$ref`, or a keyword this walker does not know). */
export interface Unwalkable {
  where: 'query' | 'body';
  steps: readonly string[];
  why: string;
}

type Schema = Record<string, unknown>;

const isSchema = (value: unknown): value is Schema => !!value && typeof value === 'object' && !Array.isArray(value);
/** Keywords under which a schema holds further schemas this walker follows (or refuses: `$ref`). */
const COMBINATORS = ['anyOf', 'oneOf', 'allOf'] as const;
const CONDITIONALS = ['if', 'then', 'else'] as const;

interface Found {
  numbers: NumberField[];
  strings: StringField[];
  unwalkable: Unwalkable[];
}

function walk(schema: unknown, where: 'query' | 'body', steps: string[], found: Found): void {
  const { numbers: fields, unwalkable } = found;
  if (schema === true) {
    unwalkable.push({ where, steps, why: 'accepts anything (true)' });
    return;
  }
  if (!isSchema(schema)) return;
  const unknown = [
    '$ref',
    '$dynamicRef',
    'dependentSchemas',
    'prefixItems',
    'contains',
    'unevaluatedProperties',
    'unevaluatedItems',
  ].find((key) => key in schema);
  if (unknown) {
    unwalkable.push({ where, steps, why: `uses ${unknown}, which this walker does not follow` });
    return;
  }
  const types = (Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type]) as string[];
  const combined = COMBINATORS.some((k) => k in schema) || 'enum' in schema || 'const' in schema || 'not' in schema;
  if (types.length === 0 && !combined && !CONDITIONALS.some((k) => k in schema)) {
    unwalkable.push({ where, steps, why: 'has no type: it accepts any number' });
  }
  const numeric = types.find((t) => t === 'integer' || t === 'number') as 'integer' | 'number' | undefined;
  if (numeric) {
    const bound = (inclusive: unknown, exclusive: unknown) =>
      typeof exclusive === 'number'
        ? { value: exclusive, exclusive: true }
        : typeof inclusive === 'number'
          ? { value: inclusive, exclusive: false }
          : { value: undefined, exclusive: false };
    const minimum = bound(schema.minimum, schema.exclusiveMinimum);
    const maximum = bound(schema.maximum, schema.exclusiveMaximum);
    fields.push({
      where,
      steps,
      type: numeric,
      minimum: minimum.value,
      maximum: maximum.value,
      exclusiveMinimum: minimum.exclusive,
      exclusiveMaximum: maximum.exclusive,
    });
  }
  if (types.includes('string')) {
    const length = (value: unknown) => (typeof value === 'number' ? value : undefined);
    found.strings.push({
      where,
      steps,
      minLength: length(schema.minLength),
      maxLength: length(schema.maxLength),
      listed: 'enum' in schema || 'const' in schema,
      boundedPattern: typeof schema.pattern === 'string' && boundsLength(schema.pattern),
    });
  }
  if (isSchema(schema.properties))
    for (const [name, sub] of Object.entries(schema.properties)) walk(sub, where, [...steps, name], found);
  if (isSchema(schema.patternProperties))
    for (const sub of Object.values(schema.patternProperties)) walk(sub, where, [...steps, '*'], found);
  if (isSchema(schema.additionalProperties) || schema.additionalProperties === true)
    walk(schema.additionalProperties, where, [...steps, '*'], found);
  if (schema.items !== undefined) {
    if (Array.isArray(schema.items)) schema.items.forEach((sub) => walk(sub, where, [...steps, '[]'], found));
    else walk(schema.items, where, [...steps, '[]'], found);
  }
  for (const key of [...COMBINATORS, ...CONDITIONALS, 'not'] as const) {
    const sub = schema[key];
    if (Array.isArray(sub)) sub.forEach((s) => walk(s, where, steps, found));
    else if (sub !== undefined) walk(sub, where, steps, found);
  }
}

/** One entry per position: a field reached through several branches is sent once. */
function distinct<F extends { where: string; steps: readonly string[] }>(fields: F[]): F[] {
  const seen = new Set<string>();
  return fields.filter((f) => {
    const key = `${f.where} ${f.steps.join('/')}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function walkRoute(route: Pick<RouteSpec, 'query' | 'body'>): Found {
  const found: Found = { numbers: [], strings: [], unwalkable: [] };
  if (route.query) walk(route.query, 'query', [], found);
  if (route.body) walk(route.body, 'body', [], found);
  return found;
}

/** Every integer and number field of a route's query and body schemas (one entry per schema position). */
export function numberFields(route: Pick<RouteSpec, 'query' | 'body'>): {
  fields: NumberField[];
  unwalkable: Unwalkable[];
} {
  const { numbers, unwalkable } = walkRoute(route);
  return { fields: distinct(numbers), unwalkable };
}

/** Every string field of a route's query and body schemas (one entry per schema position). */
export function stringFields(route: Pick<RouteSpec, 'query' | 'body'>): {
  fields: StringField[];
  unwalkable: Unwalkable[];
} {
  const { strings, unwalkable } = walkRoute(route);
  return { fields: distinct(strings), unwalkable };
}

/** The field's name as error messages write it (shared/http/validation.ts): `a.b[0].c`, `x.key`. */
export function fieldLabel(field: Pick<NumberField, 'steps'>): string {
  return field.steps.reduce(
    (acc, step) =>
      step === '[]' ? `${acc}[0]` : step === '*' ? (acc ? `${acc}.key` : 'key') : acc ? `${acc}.${step}` : step,
    '',
  );
}

/** A body that holds `value` at the field's position and nothing else. */
export function bodyWith(field: Pick<NumberField, 'steps'>, value: unknown): unknown {
  return field.steps.reduceRight<unknown>(
    (inner, step) => (step === '[]' ? [inner] : { [step === '*' ? 'key' : step]: inner }),
    value,
  );
}

/** JSON text of a body holding `literal` (a JSON number as written, e.g. `9007199254740993`) at the field's position. */
export function bodyTextWith(field: Pick<NumberField, 'steps'>, literal: string): string {
  const SENTINEL = '"__number__"';
  return JSON.stringify(bodyWith(field, '__number__')).replace(SENTINEL, literal);
}

/**
 * Values beyond a field's bounds, as JSON number literals (also what a query string carries): past
 * the largest safe integer (2**53 + 2, which JSON.parse rounds to 2**53), a number of 23 digits,
 * the largest double, one past the field's own maximum; and the most negative double. Each with the
 * message it must be answered with.
 */
export function outOfBounds(field: NumberField): { literal: string; message: string }[] {
  const cases: { literal: string; message: string }[] = [];
  if (field.maximum !== undefined) {
    const message = `'${fieldLabel(field)}' must be ${field.exclusiveMaximum ? '<' : '<='} ${field.maximum}`;
    for (const literal of ['9007199254740993', '99999999999999999999999', '1e308', String(field.maximum + 1)])
      cases.push({ literal, message });
  }
  if (field.minimum !== undefined)
    cases.push({
      literal: '-1e308',
      message: `'${fieldLabel(field)}' must be ${field.exclusiveMinimum ? '>' : '>='} ${field.minimum}`,
    });
  return cases;
}

/** Harmless values for a route's required query parameters (`primary` for text, 0 for integers), so a request is refused for what a test sends, not for what it left out. */
export function requiredQuery(route: Pick<RouteSpec, 'query'>): Record<string, string> {
  const query = route.query as
    { required?: readonly string[]; properties?: Record<string, { type?: unknown }> } | undefined;
  return Object.fromEntries(
    (query?.required ?? []).map((name) => [name, query?.properties?.[name]?.type === 'integer' ? '0' : 'primary']),
  );
}
