import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';

/**
 * Google's own API Discovery documents (schemas/providers/google/) turned into a strict checker for
 * the local fakes: which method a URL is, whether a request's query and body are what the document
 * allows, and whether an answer has the shape the document gives it. A fake checked this way cannot
 * drift from Google, and a client tested against it cannot lean on something Google never answers.
 * Two things Google takes that the schemas alone would refuse pass: null for a field of a PATCH body
 * (it clears the field) and an EventDateTime's dateTime without offset when its timeZone is given.
 */

export type GoogleApi = 'gmail-v1' | 'calendar-v3' | 'people-v1' | 'admin-directory_v1';

export interface DiscoveryParameter {
  type: 'string' | 'integer' | 'number' | 'boolean';
  location?: 'query' | 'path';
  format?: string;
  required?: boolean;
  repeated?: boolean;
  enum?: string[];
  pattern?: string;
  minimum?: string;
  maximum?: string;
  default?: string;
}

export interface DiscoveryMethod {
  id: string;
  path: string;
  httpMethod: string;
  parameters?: Record<string, DiscoveryParameter>;
  request?: { $ref: string };
  response?: { $ref: string };
  /** A method that also takes its content as a media upload (Gmail's messages.send, drafts.create, …). */
  mediaUpload?: { accept: string[]; maxSize: string; protocols: { simple?: { multipart: boolean; path: string } } };
}

interface DiscoveryResource {
  methods?: Record<string, DiscoveryMethod>;
  resources?: Record<string, DiscoveryResource>;
}

export interface DiscoverySchema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean' | 'any';
  $ref?: string;
  format?: string;
  enum?: string[];
  properties?: Record<string, DiscoverySchema>;
  additionalProperties?: DiscoverySchema;
  items?: DiscoverySchema;
  annotations?: { required?: string[] };
}

export interface DiscoveryDocument {
  id: string;
  name: string;
  version: string;
  revision: string;
  servicePath: string;
  parameters: Record<string, DiscoveryParameter>;
  schemas: Record<string, DiscoverySchema>;
  resources: Record<string, DiscoveryResource>;
  methods?: Record<string, DiscoveryMethod>;
}

export interface MatchedMethod {
  id: string;
  method: DiscoveryMethod;
  /** Path parameters, percent-decoded (`{+resourceName}` keeps its slashes: `people/me`). */
  pathParams: Record<string, string>;
}

export interface RequestToCheck {
  httpMethod: string;
  pathname: string;
  query: URLSearchParams;
  /** The parsed JSON body; undefined when the request has none. */
  body?: unknown;
  /** The request's Content-Type, when it has a body: Google reads JSON bodies only. */
  contentType?: string;
}

const SCHEMA_DIR = new URL('../../../schemas/providers/google/', import.meta.url);

/** Reads one of the stored documents (unchanged copies of Google's, see the README beside them). */
export function loadDiscovery(api: GoogleApi): DiscoveryDocument {
  return JSON.parse(readFileSync(fileURLToPath(new URL(`${api}.json`, SCHEMA_DIR)), 'utf8')) as DiscoveryDocument;
}

/** Every method of the document, nested resources included. */
function methodsOf(doc: DiscoveryDocument): DiscoveryMethod[] {
  const walk = (resource: DiscoveryResource): DiscoveryMethod[] => [
    ...Object.values(resource.methods ?? {}),
    ...Object.values(resource.resources ?? {}).flatMap(walk),
  ];
  return walk({ methods: doc.methods, resources: doc.resources });
}

interface Route {
  method: DiscoveryMethod;
  regex: RegExp;
  /** Characters of the template outside its parameters: the more, the more specific the route. */
  literal: number;
}

/**
 * A path template as a regular expression: `{name}` is one segment, `{+name}` (reserved expansion)
 * may hold slashes and, where the parameter has a `pattern` (People: `^people/[^/]+$`), must match it,
 * which is what tells `v1/{+resourceName}` for a person from the same template for a contact group.
 */
function compileRoute(servicePath: string, method: DiscoveryMethod): Route {
  const template = `/${servicePath}${method.path}`;
  let source = '';
  let literal = 0;
  let last = 0;
  for (const m of template.matchAll(/\{(\+?)([A-Za-z_][A-Za-z0-9_]*)\}/g)) {
    const text = template.slice(last, m.index);
    source += text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    literal += text.length;
    const pattern = method.parameters?.[m[2]!]?.pattern;
    const inner = m[1] ? (pattern ? pattern.replace(/^\^/, '').replace(/\$$/, '') : '.+') : '[^/]+';
    source += `(?<${m[2]!}>${inner})`;
    last = m.index + m[0].length;
  }
  const rest = template.slice(last);
  source += rest.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  literal += rest.length;
  return { method, regex: new RegExp(`^${source}$`), literal };
}

const INT_RANGES: Record<string, [number, number]> = {
  int32: [-2147483648, 2147483647],
  uint32: [0, 4294967295],
};

/** Discovery's base64 (`format: byte`): standard or URL-safe alphabet, padded or not. */
const BASE64 = '^(?:[A-Za-z0-9+/]*|[A-Za-z0-9_-]*)={0,2}$';
const DIGITS: Record<string, string> = { int64: '^-?[0-9]+$', uint64: '^[0-9]+$' };
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** The ajv format of a date-time whose zone offset may be left out: a local time, read in the zone given beside it. */
const LOCAL_DATE_TIME_FORMAT = 'date-time-offset-optional';
const LOCAL_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|[+-](?:[01]\d|2[0-3])(?::?[0-5]\d)?)?$/i;

function isLocalDateTime(text: string): boolean {
  const m = LOCAL_DATE_TIME.exec(text);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return month >= 1 && month <= 12 && day >= 1 && day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

const isDateTime = (s: DiscoverySchema | undefined) =>
  s?.type === 'string' && (s.format === 'date-time' || s.format === 'google-datetime');

/**
 * Calendar's EventDateTime: its `dateTime` is RFC 3339 and "a time zone offset is required unless a
 * time zone is explicitly specified in timeZone". An object with a date-time `dateTime` and a string
 * `timeZone` beside it takes a `dateTime` without offset when `timeZone` is there, and only then.
 */
function zoneMayReplaceOffset(s: DiscoverySchema): boolean {
  return isDateTime(s.properties?.dateTime) && s.properties?.timeZone?.type === 'string';
}

type JsonSchema = Record<string, unknown>;

/**
 * One Discovery schema as JSON Schema for ajv. Objects refuse properties they do not declare unless
 * the document gives `additionalProperties`; 64-bit integers are strings of digits and 32-bit ones
 * numbers in range, as Discovery's formats define them.
 */
function toJsonSchema(s: DiscoverySchema): JsonSchema {
  if (s.$ref) return { $ref: s.$ref };
  const withEnum = (schema: JsonSchema): JsonSchema => (s.enum ? { ...schema, enum: s.enum } : schema);
  switch (s.type) {
    case 'any':
      return {};
    case 'object': {
      const properties = Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k, toJsonSchema(v)]));
      const schema: JsonSchema = {
        type: 'object',
        properties,
        additionalProperties: s.additionalProperties ? toJsonSchema(s.additionalProperties) : false,
      };
      if (!zoneMayReplaceOffset(s)) return schema;
      // The format of `dateTime` depends on its sibling; the `if` itself reports nothing (see validate).
      return {
        ...schema,
        properties: { ...properties, dateTime: { type: 'string' } },
        if: { required: ['timeZone'] },
        then: { properties: { dateTime: { format: LOCAL_DATE_TIME_FORMAT } } },
        else: { properties: { dateTime: { format: 'date-time' } } },
      };
    }
    case 'array':
      return { type: 'array', items: s.items ? toJsonSchema(s.items) : {} };
    case 'boolean':
      return { type: 'boolean' };
    case 'number':
      return { type: 'number' };
    case 'integer': {
      const range = INT_RANGES[s.format ?? 'int32'] ?? INT_RANGES.int32!;
      return withEnum({ type: 'integer', minimum: range[0], maximum: range[1] });
    }
    case 'string': {
      const format = s.format ?? '';
      if (DIGITS[format]) return withEnum({ type: 'string', pattern: DIGITS[format] });
      if (format === 'byte') return { type: 'string', pattern: BASE64 };
      if (format === 'date-time' || format === 'google-datetime')
        return withEnum({ type: 'string', format: 'date-time' });
      if (format === 'date') return withEnum({ type: 'string', format: 'date' });
      if (format === 'google-duration') return { type: 'string', pattern: '^-?[0-9]+(\\.[0-9]{1,9})?s$' };
      return withEnum({ type: 'string' });
    }
    default:
      throw new Error(`Discovery schema of unknown type ${JSON.stringify(s.type)}`);
  }
}

function describeError(where: string, e: ErrorObject): string {
  const at = e.instancePath || '/';
  if (e.keyword === 'additionalProperties')
    return `${where}: ${at} has property '${String(e.params.additionalProperty)}', which the schema does not declare`;
  if (e.keyword === 'enum') return `${where}: ${at} must be one of ${JSON.stringify(e.params.allowedValues)}`;
  return `${where}: ${at} ${e.message ?? e.keyword}`;
}

/** A `fields` selector parsed: each name maps to its sub-selection, or to `true` for the whole value. */
export type FieldSelection = Map<string, FieldSelection | true>;

/**
 * Parses Google's partial-response syntax (`messages(id,threadId),nextPageToken`, `a/b`, `*`);
 * undefined when it is not well formed.
 */
export function parseFields(text: string): FieldSelection | undefined {
  let pos = 0;
  const merge = (into: FieldSelection, name: string, value: FieldSelection | true) => {
    const had = into.get(name);
    if (had === true || value === true) into.set(name, true);
    else if (had) for (const [k, v] of value) merge(had, k, v);
    else into.set(name, value);
  };
  const list = (closing: string): FieldSelection | undefined => {
    const out: FieldSelection = new Map();
    for (;;) {
      const path: string[] = [];
      for (;;) {
        const name = /^(\*|[A-Za-z_][A-Za-z0-9_]*)/.exec(text.slice(pos))?.[0];
        if (!name) return undefined;
        path.push(name);
        pos += name.length;
        if (text[pos] !== '/') break;
        pos++;
      }
      let leaf: FieldSelection | true = true;
      if (text[pos] === '(') {
        pos++;
        const inner = list(')');
        if (!inner || text[pos] !== ')') return undefined;
        pos++;
        leaf = inner;
      }
      const value = path.slice(1).reduceRight<FieldSelection | true>((acc, name) => new Map([[name, acc]]), leaf);
      merge(out, path[0]!, value);
      if (text[pos] === ',') {
        pos++;
        continue;
      }
      return pos === text.length || text[pos] === closing ? out : undefined;
    }
  };
  const parsed = list('');
  return parsed && pos === text.length ? parsed : undefined;
}

/** The parts of a JSON value a `fields` selection keeps (arrays are selected item by item). */
export function selectFields(value: unknown, selection: FieldSelection): unknown {
  if (Array.isArray(value)) return value.map((item) => selectFields(item, selection));
  if (!value || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const sub = selection.get(key) ?? selection.get('*');
    if (sub === undefined) continue;
    out[key] = sub === true ? v : selectFields(v, sub);
  }
  return out;
}

/** Checks requests and answers of one API against its Discovery document. */
export class DiscoveryChecker {
  readonly doc: DiscoveryDocument;
  private readonly routes: Route[];
  private readonly byId = new Map<string, DiscoveryMethod>();
  private readonly ajv: Ajv;
  private readonly base: string;

  constructor(doc: DiscoveryDocument) {
    this.doc = doc;
    const methods = methodsOf(doc);
    for (const m of methods) this.byId.set(m.id, m);
    // Most literal characters first: `v1/people:batchGet` before `v1/{+resourceName}`.
    this.routes = methods.map((m) => compileRoute(doc.servicePath, m)).sort((a, b) => b.literal - a.literal);
    this.ajv = new Ajv({ allErrors: true, strict: false });
    addFormats(this.ajv, ['date-time', 'date']);
    this.ajv.addFormat(LOCAL_DATE_TIME_FORMAT, { type: 'string', validate: isLocalDateTime });
    // `$ref: "Message"` resolves against the id of the schema it is in, so the document's refs stay as they are.
    this.base = `https://discovery.invalid/${doc.name}/${doc.version}/`;
    for (const [name, schema] of Object.entries(doc.schemas))
      this.ajv.addSchema({ $id: this.base + name, ...toJsonSchema(schema) });
  }

  method(id: string): DiscoveryMethod | undefined {
    return this.byId.get(id);
  }

  matchMethod(httpMethod: string, pathname: string): MatchedMethod | undefined {
    for (const route of this.routes) {
      if (route.method.httpMethod !== httpMethod.toUpperCase()) continue;
      const m = route.regex.exec(pathname);
      if (!m) continue;
      const pathParams: Record<string, string> = {};
      try {
        for (const [name, raw] of Object.entries(m.groups ?? {})) pathParams[name] = decodeURIComponent(raw);
      } catch {
        continue;
      }
      return { id: route.method.id, method: route.method, pathParams };
    }
    return undefined;
  }

  checkRequest(request: RequestToCheck): string[] {
    const matched = this.matchMethod(request.httpMethod, request.pathname);
    if (!matched) return [`no ${this.doc.id} method answers ${request.httpMethod} ${request.pathname}`];
    const { id, method } = matched;
    const violations: string[] = [];
    const params = method.parameters ?? {};
    for (const [name, value] of Object.entries(matched.pathParams)) {
      const pattern = params[name]?.pattern;
      if (pattern && !new RegExp(pattern).test(value))
        violations.push(`${id}: path parameter ${name}=${JSON.stringify(value)} does not match ${pattern}`);
    }
    for (const name of new Set(request.query.keys())) {
      const own = params[name];
      const param = own?.location === 'query' ? own : own ? undefined : this.doc.parameters[name];
      if (!param) {
        violations.push(`${id}: unknown query parameter '${name}'`);
        continue;
      }
      const values = request.query.getAll(name);
      if (values.length > 1 && !param.repeated)
        violations.push(`${id}: query parameter '${name}' is not repeated but was given ${values.length} times`);
      for (const value of values) {
        const problem = parameterProblem(param, value);
        if (problem) violations.push(`${id}: query parameter '${name}'=${JSON.stringify(value)} ${problem}`);
      }
      if (name === 'fields') violations.push(...values.flatMap((v) => this.fieldsProblems(id, method, v)));
    }
    for (const [name, param] of Object.entries(params))
      if (param.location === 'query' && param.required && !request.query.has(name))
        violations.push(`${id}: required query parameter '${name}' is missing`);
    violations.push(...this.bodyProblems(id, method, request));
    return violations;
  }

  checkResponse(methodId: string, body: unknown): string[] {
    const method = this.byId.get(methodId);
    if (!method) return [`${methodId}: no such method in ${this.doc.id}`];
    if (!method.response)
      return body === undefined || body === '' ? [] : [`${methodId} answers with an empty body, not ${typeof body}`];
    if (body === undefined) return [`${methodId} must answer a ${method.response.$ref}, not an empty body`];
    return this.validate(`response of ${methodId} (${method.response.$ref})`, method.response.$ref, body);
  }

  /** The violations of `value` against the named schema of the document. */
  validate(where: string, schemaName: string, value: unknown): string[] {
    const validator = this.validatorOf(schemaName);
    if (!validator) return [`${where}: the document has no schema ${schemaName}`];
    if (validator(value)) return [];
    // A failed `if` (EventDateTime's dateTime) is told by the error of the branch that failed.
    return (validator.errors ?? []).filter((e) => e.keyword !== 'if').map((e) => describeError(where, e));
  }

  private validatorOf(schemaName: string): ValidateFunction | undefined {
    // ajv compiles a schema on its first use and keeps it.
    return this.doc.schemas[schemaName] ? this.ajv.getSchema(this.base + schemaName) : undefined;
  }

  private bodyProblems(id: string, method: DiscoveryMethod, request: RequestToCheck): string[] {
    if (request.body === undefined)
      return method.request ? this.requiredProblems(id, this.doc.schemas[method.request.$ref], {}, '') : [];
    if (!method.request) return [`${id} takes no request body`];
    const problems: string[] = [];
    if (request.contentType !== undefined && !/^application\/json\b/i.test(request.contentType))
      problems.push(`${id}: the body must be application/json, not ${request.contentType || 'untyped'}`);
    // In a PATCH, null clears a field (Google's patch semantics), so it is not checked against the field's type.
    const body =
      method.httpMethod === 'PATCH'
        ? this.withoutClearedFields({ $ref: method.request.$ref }, request.body)
        : request.body;
    problems.push(...this.validate(`request of ${id} (${method.request.$ref})`, method.request.$ref, body));
    problems.push(...this.requiredProblems(id, this.doc.schemas[method.request.$ref], body, ''));
    return problems;
  }

  /**
   * A PATCH body without its nulls: every property the schema declares (or its map of
   * additionalProperties allows) whose value is null, at any depth. Nulls elsewhere stay to be
   * refused: the body itself, array items, properties the schema does not have.
   */
  private withoutClearedFields(schema: DiscoverySchema | undefined, value: unknown): unknown {
    const resolved = schema?.$ref ? this.doc.schemas[schema.$ref] : schema;
    if (!resolved || value === null || typeof value !== 'object') return value;
    if (Array.isArray(value))
      return resolved.type === 'array' ? value.map((item) => this.withoutClearedFields(resolved.items, item)) : value;
    const out: Record<string, unknown> = {};
    for (const [name, v] of Object.entries(value)) {
      const property = resolved.properties?.[name] ?? resolved.additionalProperties;
      if (v === null && property) continue;
      out[name] = property ? this.withoutClearedFields(property, v) : v;
    }
    return out;
  }

  /** Fields the document marks required for this very method (`annotations.required`), at any depth. */
  private requiredProblems(id: string, schema: DiscoverySchema | undefined, value: unknown, at: string): string[] {
    const resolved = schema?.$ref ? this.doc.schemas[schema.$ref] : schema;
    if (!resolved || value === null || typeof value !== 'object') return [];
    if (Array.isArray(value))
      return resolved.type === 'array'
        ? value.flatMap((item, i) => this.requiredProblems(id, resolved.items, item, `${at}/${i}`))
        : [];
    const record = value as Record<string, unknown>;
    return Object.entries(resolved.properties ?? {}).flatMap(([name, property]) => {
      if (record[name] === undefined)
        return property.annotations?.required?.includes(id) ? [`${id}: body field ${at}/${name} is required`] : [];
      return this.requiredProblems(id, property, record[name], `${at}/${name}`);
    });
  }

  /** A `fields` selector must parse and name only fields of the method's response. */
  private fieldsProblems(id: string, method: DiscoveryMethod, text: string): string[] {
    const selection = parseFields(text);
    if (!selection) return [`${id}: fields=${JSON.stringify(text)} is not a field selector`];
    if (!method.response) return [`${id}: fields given, but the method answers no body`];
    const unknown: string[] = [];
    const walk = (schema: DiscoverySchema | undefined, sel: FieldSelection, at: string) => {
      let s = schema?.$ref ? this.doc.schemas[schema.$ref] : schema;
      while (s?.type === 'array') s = s.items?.$ref ? this.doc.schemas[s.items.$ref] : s.items;
      for (const [name, sub] of sel) {
        if (name === '*' || s?.additionalProperties || s?.type === 'any') continue;
        const property = s?.properties?.[name];
        if (!property) unknown.push(`${at}${name}`);
        else if (sub !== true) walk(property, sub, `${at}${name}/`);
      }
    };
    walk({ $ref: method.response.$ref }, selection, '');
    return unknown.map((f) => `${id}: fields names '${f}', which ${method.response!.$ref} does not have`);
  }
}

/** Why a query value does not fit its parameter, or undefined when it does. */
function parameterProblem(param: DiscoveryParameter, value: string): string | undefined {
  if (param.enum && !param.enum.includes(value)) return `is not one of ${JSON.stringify(param.enum)}`;
  switch (param.type) {
    case 'boolean':
      return value === 'true' || value === 'false' ? undefined : 'is not a boolean (true or false)';
    case 'integer': {
      if (!/^-?[0-9]+$/.test(value)) return 'is not an integer';
      const n = Number(value);
      const range = INT_RANGES[param.format ?? 'int32'];
      if (range && (n < range[0] || n > range[1])) return `is out of the ${param.format ?? 'int32'} range`;
      if (param.minimum !== undefined && n < Number(param.minimum)) return `is below the minimum ${param.minimum}`;
      if (param.maximum !== undefined && n > Number(param.maximum)) return `is above the maximum ${param.maximum}`;
      return undefined;
    }
    case 'number':
      return value.trim() !== '' && Number.isFinite(Number(value)) ? undefined : 'is not a number';
    case 'string': {
      const digits = DIGITS[param.format ?? ''];
      if (digits && !new RegExp(digits).test(value)) return `is not a ${param.format} (digits)`;
      if (param.format === 'date-time' && !(RFC3339.test(value) && !Number.isNaN(Date.parse(value))))
        return 'is not an RFC 3339 date-time';
      if (param.pattern && !new RegExp(param.pattern).test(value)) return `does not match ${param.pattern}`;
      return undefined;
    }
    default:
      return undefined;
  }
}

const checkers = new Map<GoogleApi, DiscoveryChecker>();

/** The checker of one API, built once (the documents are large). */
export function discoveryChecker(api: GoogleApi): DiscoveryChecker {
  let checker = checkers.get(api);
  if (!checker) checkers.set(api, (checker = new DiscoveryChecker(loadDiscovery(api))));
  return checker;
}
