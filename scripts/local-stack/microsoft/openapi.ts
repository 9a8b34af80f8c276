import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';

/**
 * Microsoft Graph v1.0's OpenAPI descriptions (schemas/providers/microsoft/, trimmed copies of the
 * PowerShell SDK's, see the README there) turned into a strict checker for the local Graph fake: which
 * operation a URL is, whether its query options and body are what the description allows, and whether
 * an answer has the shape it gives. Graph's wire form differs from the descriptions in ways this module
 * bridges, each on purpose:
 *
 * - `/me/X` is `/users/{user-id}/X`; `segment('key')` (the key syntax of Graph's own links) is
 *   `segment/key`; literal path segments match without regard to case, as Graph's do.
 * - Actions and functions are described as `.../microsoft.graph.send` and `.../microsoft.graph.delta()`
 *   and called as `.../send` and `.../delta`; a namespace written out (`/places/microsoft.graph.room`,
 *   the form Graph's reference pages give a type cast) matches too.
 * - Action parameters are described PascalCase (`DestinationId`, `Message`) and sent camelCase as
 *   Graph's reference pages show them: the top-level names of an action's body match without regard to case.
 * - Every described object says `additionalProperties: {type: object}`, the generator's boilerplate, not
 *   an open type: an object with declared properties takes only those, plus OData annotations
 *   (`@odata.type`, `@odata.etag`, `@odata.context`, `@odata.count`, `name@odata.type`), which Graph adds
 *   to payloads and the descriptions never list. An object that declares no property (InnerError, "service
 *   specific") takes anything.
 * - A value whose `@odata.type` names a type derived from the declared one (`#microsoft.graph.fileAttachment`
 *   where an attachment is declared) is checked as that type.
 * - Delta answers carry `@removed` items (`{id, @removed: {reason}}`), an instance annotation the
 *   descriptions cannot say; they are checked for that shape instead of the entity's.
 * - The OData paging options Graph writes into its own links (`$skiptoken`; `$deltatoken` for delta)
 *   are taken where Graph pages, though the descriptions do not list them. Such a token stands for the
 *   query options of the request that began the round, so a request carrying one may leave out the
 *   required ones (calendarView/delta's `startDateTime`, which Graph's links drop).
 * - An `$expand` item may carry nested options in parentheses (`singleValueExtendedProperties($filter=…)`),
 *   as OData and Graph's reference pages write it; the property is checked, the nested options are left to
 *   the handler.
 * - A request body of another media type than JSON (the base64 MIME of `sendMail` and of a message
 *   created in MIME, `text/plain`) is taken where the supplement describes it, checked as the string it is.
 */

export type OpenApiSchema = {
  $ref?: string;
  allOf?: OpenApiSchema[];
  type?: string;
  format?: string;
  enum?: unknown[];
  nullable?: boolean;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  uniqueItems?: boolean;
  required?: string[];
  properties?: Record<string, OpenApiSchema>;
  additionalProperties?: OpenApiSchema | boolean;
  items?: OpenApiSchema;
  'x-ms-enum-flags'?: { isFlags?: boolean };
  'x-ms-navigationProperty'?: boolean;
};

interface OpenApiParameter {
  $ref?: string;
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema?: OpenApiSchema;
}

interface OpenApiContent {
  content?: Record<string, { schema?: OpenApiSchema }>;
  $ref?: string;
  required?: boolean;
}

interface OpenApiOperation {
  operationId: string;
  parameters?: OpenApiParameter[];
  requestBody?: OpenApiContent;
  responses: Record<string, OpenApiContent>;
  'x-ms-pageable'?: unknown;
  'x-ms-docs-operation-type'?: string;
}

interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: {
    schemas?: Record<string, OpenApiSchema>;
    responses?: Record<string, OpenApiContent>;
    parameters?: Record<string, OpenApiParameter>;
    requestBodies?: Record<string, OpenApiContent>;
  };
}

/** The stored descriptions; the supplement (ours, see the README) joins the mail one's namespace. */
const DOCUMENTS = [
  'mail',
  'users-actions',
  'users-functions',
  'users',
  'calendar',
  'users-actions-calendar',
  'users-functions-calendar',
  'subscriptions',
  'contacts',
  'users-functions-contacts',
  'places',
] as const;
type DocumentName = (typeof DOCUMENTS)[number];

const SCHEMA_DIR = new URL('../../../schemas/providers/microsoft/', import.meta.url);

function loadDocument(name: string): OpenApiDocument {
  return JSON.parse(readFileSync(fileURLToPath(new URL(`${name}.json`, SCHEMA_DIR)), 'utf8')) as OpenApiDocument;
}

/** What one operation answers when it succeeds. */
export type SuccessAnswer = { kind: 'json'; schema: OpenApiSchema } | { kind: 'binary' } | { kind: 'empty' };

export interface GraphOperation {
  /** The description's operationId (`user_ListMessage`, `user.message_move`). */
  id: string;
  httpMethod: string;
  /** The described path (`/users/{user-id}/messages/{message-id}/microsoft.graph.move`). */
  template: string;
  document: DocumentName;
  kind: 'operation' | 'action' | 'function';
  query: Map<string, OpenApiParameter>;
  /** The JSON body; `text`: the schema of a `text/plain` body, where one is described (MIME in base64). */
  body?: { schema: OpenApiSchema; required: boolean; text?: OpenApiSchema };
  success: SuccessAnswer;
  /** The entity type `$select`, `$orderby` and `$expand` name properties of (the items' of a collection). */
  entity?: string;
  pageable: boolean;
  delta: boolean;
}

export interface MatchedOperation {
  operation: GraphOperation;
  /** Path parameters by their described names (`user-id`, `message-id`), percent-decoded. */
  params: Record<string, string>;
}

export interface RequestToCheck {
  httpMethod: string;
  /** The path after `/v1.0`, as sent (`/me/messages`). */
  pathname: string;
  query: URLSearchParams;
  body?: unknown;
  contentType?: string;
}

interface Route {
  operation: GraphOperation;
  regex: RegExp;
  names: string[];
  literal: number;
}

/** Standard or URL-safe base64, padded or not: Graph sends Edm.Binary (`format: base64url`) both ways. */
const BASE64 = '^(?:[A-Za-z0-9+/]*|[A-Za-z0-9_-]*)={0,2}$';
const UUID = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
/** OData annotations: `@odata.type`, `@odata.etag`, ... and property annotations `name@odata.type`. */
const ANNOTATION = '^[A-Za-z0-9_]*@odata\\.';
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `/me/…` as `/users/me/…` and `segment('key')` as `segment/key`, the two ways Graph writes a path. */
export function normalizePath(pathname: string): string {
  let path = pathname.replace(/\/+$/, '') || '/';
  if (/^\/me(\/|$)/i.test(path)) path = `/users/me${path.slice(3)}`;
  return path.replace(/\(('(?:[^']|'')*'|[^)'/]+)\)/g, (_, key: string) => {
    const bare = key.startsWith("'") ? key.slice(1, -1).replace(/''/g, "'") : key;
    return `/${encodeURIComponent(bare)}`;
  });
}

/** Checks requests and answers of the Graph fake against the stored descriptions. */
export class GraphChecker {
  private readonly documents = new Map<DocumentName, OpenApiDocument>();
  private readonly routes: Route[] = [];
  private readonly byId = new Map<string, GraphOperation>();
  private readonly ajv: Ajv;
  private readonly inline = {
    request: new Map<OpenApiSchema, ValidateFunction>(),
    response: new Map<OpenApiSchema, ValidateFunction>(),
  };

  constructor() {
    this.ajv = new Ajv({ allErrors: true, strict: false });
    addFormats(this.ajv, ['date']);
    const supplement = loadDocument('supplement');
    const documents = DOCUMENTS.map((name) => [name, loadDocument(name)] as const);
    // A supplement path that a description already holds adds the request media types it describes to
    // that description's operations (the MIME forms); the others are paths of their own, in mail's namespace.
    const own = { ...supplement.paths };
    for (const [template, item] of Object.entries(supplement.paths))
      for (const [, doc] of documents)
        if (doc.paths[template]) {
          addRequestContent(doc, template, doc.paths[template]!, item);
          delete own[template];
        }
    for (const [name, doc] of documents) {
      if (name === 'mail') {
        Object.assign(doc.paths, own);
        Object.assign(doc.components.schemas!, supplement.components.schemas);
      }
      this.documents.set(name, doc);
      this.register(name, doc);
      for (const [template, item] of Object.entries(doc.paths))
        for (const [method, op] of Object.entries(item)) {
          if (!op || typeof op !== 'object' || !('operationId' in op)) continue;
          const operation = this.operationOf(name, doc, template, method.toUpperCase(), op);
          this.byId.set(operation.id, operation);
          this.routes.push(compileRoute(operation));
        }
    }
    // Most literal characters first: `/messages/delta` before `/messages/{message-id}`.
    this.routes.sort((a, b) => b.literal - a.literal);
  }

  operation(id: string): GraphOperation | undefined {
    return this.byId.get(id);
  }

  match(httpMethod: string, pathname: string): MatchedOperation | undefined {
    const path = normalizePath(pathname);
    for (const route of this.routes) {
      if (route.operation.httpMethod !== httpMethod.toUpperCase()) continue;
      const m = route.regex.exec(path);
      if (!m) continue;
      const params: Record<string, string> = {};
      try {
        route.names.forEach((name, i) => (params[name] = decodeURIComponent(m[i + 1]!)));
      } catch {
        continue;
      }
      return { operation: route.operation, params };
    }
    return undefined;
  }

  checkRequest(request: RequestToCheck): string[] {
    const matched = this.match(request.httpMethod, request.pathname);
    if (!matched) return [`no Graph v1.0 operation answers ${request.httpMethod} ${request.pathname}`];
    const op = matched.operation;
    const violations: string[] = [];
    const resumed = op.pageable && (request.query.has('$skiptoken') || request.query.has('$deltatoken'));
    for (const [name, param] of op.query)
      if (param.required && !resumed && !request.query.has(name))
        violations.push(`${op.id}: the query option '${name}' is required`);
    for (const name of new Set(request.query.keys())) {
      const param = op.query.get(name);
      if (!param) {
        violations.push(`${op.id}: unknown query option '${name}'`);
        continue;
      }
      const values = request.query.getAll(name);
      if (values.length > 1) violations.push(`${op.id}: query option '${name}' was given ${values.length} times`);
      const problem = parameterProblem(param.schema ?? {}, values[0]!);
      if (problem) violations.push(`${op.id}: query option '${name}'=${JSON.stringify(values[0])} ${problem}`);
      else violations.push(...this.optionProblems(op, name, values[0]!));
    }
    violations.push(...this.bodyProblems(op, request));
    return violations;
  }

  /** The violations of an answer: a 2XX against the operation's success answer, any other status against ODataError. */
  checkResponse(operationId: string, status: number, body: unknown): string[] {
    const op = this.byId.get(operationId);
    if (!op) return [`${operationId}: no such operation in the descriptions`];
    if (status < 200 || status > 299) return this.checkError(body);
    switch (op.success.kind) {
      case 'empty':
        return body === undefined ? [] : [`${op.id} answers with an empty body, not ${typeof body}`];
      case 'binary':
        return Buffer.isBuffer(body) ? [] : [`${op.id} answers raw content, not ${typeof body}`];
      case 'json': {
        if (body === undefined) return [`${op.id} must answer a JSON body, not an empty one`];
        const where = `response of ${op.id}`;
        if (!op.delta) return this.validate(where, op.document, op.success.schema, body, 'response');
        const { rest, problems } = removedItems(where, body);
        return [...problems, ...this.validate(where, op.document, op.success.schema, rest, 'response')];
      }
    }
  }

  /** An error body against `#/components/responses/error` (ODataError). */
  checkError(body: unknown): string[] {
    return this.validate('error answer (ODataError)', 'mail', ODATA_ERROR, body, 'response');
  }

  /** Declared properties of an entity type, inherited ones included, with whether each is a navigation property. */
  propertiesOf(document: DocumentName, schemaName: string): Map<string, OpenApiSchema> {
    const doc = this.documents.get(document)!;
    return new Map(Object.entries(flatten(doc, { $ref: `#/components/schemas/${schemaName}` }).properties ?? {}));
  }

  private validate(where: string, document: DocumentName, schema: OpenApiSchema, value: unknown, mode: Mode): string[] {
    let validator = this.inline[mode].get(schema);
    if (!validator) {
      const doc = this.documents.get(document)!;
      validator = this.ajv.compile(toJsonSchema(schema, doc, document, mode));
      this.inline[mode].set(schema, validator);
    }
    if (validator(value)) return [];
    return (validator.errors ?? []).filter((e) => e.keyword !== 'if').map((e) => describeError(where, e));
  }

  /** Every component schema as JSON Schema under its own $id, derived types dispatched by `@odata.type`. */
  private register(name: DocumentName, doc: OpenApiDocument): void {
    const derived = new Map<string, string[]>();
    for (const [schemaName, s] of Object.entries(doc.components.schemas ?? {})) {
      const base = s.allOf?.[0]?.$ref?.replace('#/components/schemas/', '');
      if (base && base !== 'microsoft.graph.entity') derived.set(base, [...(derived.get(base) ?? []), schemaName]);
    }
    const descendants = (schemaName: string): string[] =>
      (derived.get(schemaName) ?? []).flatMap((d) => [d, ...descendants(d)]);
    for (const mode of ['request', 'response'] as const)
      for (const [schemaName, s] of Object.entries(doc.components.schemas ?? {})) {
        let schema = toJsonSchema(s, doc, name, mode);
        for (const sub of descendants(schemaName).reverse())
          schema = {
            if: { required: ['@odata.type'], properties: { '@odata.type': { const: `#${sub}` } } },
            then: { $ref: schemaId(name, sub, mode) },
            else: schema,
          };
        this.ajv.addSchema({ $id: schemaId(name, schemaName, mode), ...schema });
      }
  }

  private operationOf(
    document: DocumentName,
    doc: OpenApiDocument,
    template: string,
    httpMethod: string,
    op: OpenApiOperation,
  ): GraphOperation {
    const query = new Map<string, OpenApiParameter>();
    for (const p of op.parameters ?? []) {
      const param = p.$ref ? doc.components.parameters![p.$ref.replace('#/components/parameters/', '')]! : p;
      if (param.in === 'query') query.set(param.name, param);
    }
    const kind = (op['x-ms-docs-operation-type'] ?? 'operation') as GraphOperation['kind'];
    const delta = kind === 'function' && template.endsWith('/microsoft.graph.delta()');
    const pageable = op['x-ms-pageable'] !== undefined;
    const text = { name: '$skiptoken', in: 'query', schema: { type: 'string' } } as const;
    if (pageable || delta) query.set('$skiptoken', text);
    if (delta) query.set('$deltatoken', { ...text, name: '$deltatoken' });
    const requestBody = op.requestBody?.$ref
      ? doc.components.requestBodies![op.requestBody.$ref.replace('#/components/requestBodies/', '')]!
      : op.requestBody;
    const bodySchema = requestBody?.content?.['application/json']?.schema;
    const textSchema = requestBody?.content?.['text/plain']?.schema;
    const success = successOf(doc, op);
    return {
      id: op.operationId,
      httpMethod,
      template,
      document,
      kind,
      query,
      ...(bodySchema
        ? {
            body: {
              schema: bodySchema,
              required: requestBody?.required === true,
              ...(textSchema ? { text: textSchema } : {}),
            },
          }
        : {}),
      success,
      ...(success.kind === 'json' ? { entity: entityOf(doc, success.schema) } : {}),
      pageable: pageable || delta,
      delta,
    } as GraphOperation;
  }

  /** `$select`, `$orderby` and `$expand` name properties of the operation's entity type. */
  private optionProblems(op: GraphOperation, name: string, value: string): string[] {
    if (!['$select', '$orderby', '$expand'].includes(name)) return [];
    if (!op.entity) return [`${op.id}: ${name} given, but the operation answers no entity`];
    const properties = this.propertiesOf(op.document, op.entity);
    const problems: string[] = [];
    for (const item of topLevelItems(value)) {
      const term = item.trim();
      const m =
        name === '$orderby'
          ? /^([A-Za-z][\w/]*)(?:\s+(asc|desc))?$/i.exec(term)
          : name === '$expand'
            ? /^([A-Za-z]\w*)(?:\(.*\))?$/s.exec(term)
            : /^([A-Za-z]\w*)$/.exec(term);
      if (!m) {
        problems.push(`${op.id}: ${name} item ${JSON.stringify(term)} is not well formed`);
        continue;
      }
      const property = properties.get(m[1]!.split('/')[0]!);
      if (!property) problems.push(`${op.id}: ${name} names '${m[1]}', which ${op.entity} does not have`);
      else if (name === '$expand' && !property['x-ms-navigationProperty'])
        problems.push(`${op.id}: $expand names '${m[1]}', which is not a navigation property of ${op.entity}`);
    }
    return problems;
  }

  private bodyProblems(op: GraphOperation, request: RequestToCheck): string[] {
    if (request.body === undefined)
      return op.body?.required ? [`${op.id}: a request body is required (${describeSchema(op.body.schema)})`] : [];
    if (!op.body) return [`${op.id} takes no request body`];
    if (request.contentType !== undefined && /^text\/plain\b/i.test(request.contentType)) {
      if (!op.body.text) return [`${op.id}: the body must be application/json, not ${request.contentType}`];
      return this.validate(`request of ${op.id} (text/plain)`, op.document, op.body.text, request.body, 'request');
    }
    const problems: string[] = [];
    if (request.contentType !== undefined && !/^application\/json\b/i.test(request.contentType))
      problems.push(`${op.id}: the body must be application/json, not ${request.contentType || 'untyped'}`);
    const body = op.kind === 'action' ? this.actionNamesAsDescribed(op, request.body) : request.body;
    problems.push(...this.validate(`request of ${op.id}`, op.document, op.body.schema, body, 'request'));
    return problems;
  }

  /** An action's parameters renamed to the description's spelling (`destinationId` → `DestinationId`). */
  private actionNamesAsDescribed(op: GraphOperation, body: unknown): unknown {
    const declared = Object.keys(op.body?.schema.properties ?? {});
    if (!body || typeof body !== 'object' || Array.isArray(body)) return body;
    return Object.fromEntries(
      Object.entries(body).map(([k, v]) => [declared.find((d) => d.toLowerCase() === k.toLowerCase()) ?? k, v]),
    );
  }
}

const ODATA_ERROR: OpenApiSchema = { $ref: '#/components/schemas/microsoft.graph.ODataErrors.ODataError' };
const schemaId = (document: string, name: string, mode: Mode) => `https://graph.invalid/${mode}/${document}/${name}`;

/**
 * Requests and answers are checked apart in one respect: Graph reads an enum member in a request
 * without regard to case (its reference pages send `"contentType": "Text"`, the description says
 * `text`), and answers it as described.
 */
type Mode = 'request' | 'response';

/** A regular expression source matching `text` in any case (`[tT][eE][xX][tT]`). */
const anyCase = (text: string) =>
  [...text]
    .map((c) => (c.toLowerCase() !== c.toUpperCase() ? `[${c.toLowerCase()}${c.toUpperCase()}]` : escape(c)))
    .join('');

function compileRoute(operation: GraphOperation): Route {
  const names: string[] = [];
  let literal = 0;
  const segments = operation.template
    .split('/')
    .slice(1)
    .map((segment) => {
      const param = /^\{(.+)\}$/.exec(segment);
      if (param) {
        names.push(param[1]!);
        return '([^/]+)';
      }
      const wire = segment.replace(/^microsoft\.graph\./, '').replace(/\(\)$/, '');
      literal += wire.length;
      // The namespace may also be written out (a type cast such as `/places/microsoft.graph.room` is documented so).
      return segment.startsWith('microsoft.graph.') ? `(?:microsoft\\.graph\\.)?${escape(wire)}` : escape(wire);
    });
  return { operation, names, literal, regex: new RegExp(`^/${segments.join('/')}$`, 'i') };
}

/**
 * The supplement's request media types of an operation a description holds, added to its request body
 * (resolved from its `$ref` into a copy of its own); the supplement must name the same operationId.
 */
function addRequestContent(
  doc: OpenApiDocument,
  template: string,
  described: Record<string, OpenApiOperation>,
  extra: Record<string, OpenApiOperation>,
): void {
  for (const [method, op] of Object.entries(extra)) {
    const target = described[method];
    if (!target || target.operationId !== op.operationId)
      throw new Error(
        `supplement: ${method.toUpperCase()} ${template} is described as ${target?.operationId ?? 'nothing'}, not ${op.operationId}`,
      );
    const body = target.requestBody?.$ref
      ? doc.components.requestBodies![target.requestBody.$ref.replace('#/components/requestBodies/', '')]!
      : target.requestBody;
    target.requestBody = { ...body, content: { ...body?.content, ...op.requestBody?.content } };
  }
}

function resolveContent(doc: OpenApiDocument, content: OpenApiContent): OpenApiContent {
  return content.$ref ? doc.components.responses![content.$ref.replace('#/components/responses/', '')]! : content;
}

function successOf(doc: OpenApiDocument, op: OpenApiOperation): SuccessAnswer {
  const answer = op.responses['2XX'] ?? op.responses['200'] ?? op.responses['201'] ?? op.responses['204'];
  const content = answer ? resolveContent(doc, answer).content : undefined;
  if (!content) return { kind: 'empty' };
  const json = content['application/json']?.schema;
  return json ? { kind: 'json', schema: json } : { kind: 'binary' };
}

/** The entity type of an answer: the schema it names, or the items' of its `value` for a collection. */
function entityOf(doc: OpenApiDocument, schema: OpenApiSchema): string | undefined {
  const resolved = schema.$ref ? doc.components.schemas![schema.$ref.replace('#/components/schemas/', '')] : schema;
  const items = resolved?.properties?.value?.items?.$ref;
  const ref = items ?? schema.$ref;
  return ref?.replace('#/components/schemas/', '');
}

/** A schema with its allOf chain merged into one object (properties and required of every member). */
function flatten(doc: OpenApiDocument, schema: OpenApiSchema): OpenApiSchema {
  const s = schema.$ref ? doc.components.schemas![schema.$ref.replace('#/components/schemas/', '')]! : schema;
  if (!s.allOf) return s;
  const members = s.allOf.map((m) => flatten(doc, m));
  return {
    type: 'object',
    properties: Object.assign({}, ...members.map((m) => m.properties ?? {})) as Record<string, OpenApiSchema>,
    required: members.flatMap((m) => m.required ?? []),
  };
}

type JsonSchema = Record<string, unknown>;

/** One OpenAPI 3.0 schema as JSON Schema (draft-07) for ajv, with the readings the module comment gives. */
function toJsonSchema(s: OpenApiSchema, doc: OpenApiDocument, document: DocumentName, mode: Mode): JsonSchema {
  if (s.$ref) return { $ref: schemaId(document, s.$ref.replace('#/components/schemas/', ''), mode) };
  if (s.allOf) return toJsonSchema(flatten(doc, s), doc, document, mode);
  const convert = (inner: OpenApiSchema) => toJsonSchema(inner, doc, document, mode);
  const nullable = s.nullable === true;
  const out: JsonSchema = {};
  switch (s.type) {
    case 'object': {
      const properties = Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k, convert(v)]));
      out.type = 'object';
      out.properties = properties;
      if (s.required?.length) out.required = s.required;
      const boilerplate =
        s.additionalProperties === undefined ||
        (typeof s.additionalProperties === 'object' &&
          s.additionalProperties.type === 'object' &&
          !s.additionalProperties.properties);
      if (!boilerplate)
        out.additionalProperties = typeof s.additionalProperties === 'object' ? convert(s.additionalProperties) : true;
      else if (Object.keys(properties).length) {
        out.patternProperties = { [ANNOTATION]: {} };
        out.additionalProperties = false;
      }
      break;
    }
    case 'array':
      out.type = 'array';
      out.items = s.items ? convert(s.items) : {};
      if (s.minItems !== undefined) out.minItems = s.minItems;
      if (s.maxItems !== undefined) out.maxItems = s.maxItems;
      break;
    case 'string':
      out.type = 'string';
      if (s.pattern) out.pattern = s.pattern;
      else if (s.format === 'base64url') out.pattern = BASE64;
      else if (s.format === 'uuid') out.pattern = UUID;
      else if (s.format === 'date') out.format = 'date';
      if (s.minLength !== undefined) out.minLength = s.minLength;
      break;
    case 'integer':
    case 'number':
      out.type = s.type;
      if (s.minimum !== undefined) out.minimum = s.minimum;
      if (s.maximum !== undefined) out.maximum = s.maximum;
      break;
    case 'boolean':
      out.type = 'boolean';
      break;
  }
  if (s.enum) {
    const flags = s['x-ms-enum-flags']?.isFlags === true;
    if (flags || (mode === 'request' && s.enum.every((e) => typeof e === 'string'))) {
      // A flags enum takes a comma-separated set of its members.
      const one = `(?:${s.enum.map((e) => (mode === 'request' ? anyCase(String(e)) : escape(String(e)))).join('|')})`;
      out.pattern = flags ? `^${one}(?:\\s*,\\s*${one})*$` : `^${one}$`;
    } else out.enum = nullable ? [...s.enum, null] : s.enum;
  }
  if (nullable && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}

/** The `@removed` items of a delta answer checked for their shape, and the answer without them. */
function removedItems(where: string, body: unknown): { rest: unknown; problems: string[] } {
  if (!body || typeof body !== 'object' || !Array.isArray((body as { value?: unknown }).value))
    return { rest: body, problems: [] };
  const problems: string[] = [];
  const value = (body as { value: unknown[] }).value.filter((item, i) => {
    if (!item || typeof item !== 'object' || !('@removed' in item)) return true;
    const { id, '@removed': removed, ...others } = item as Record<string, unknown>;
    const extra = Object.keys(others).filter((k) => !new RegExp(ANNOTATION).test(k));
    if (typeof id !== 'string') problems.push(`${where}: /value/${i} is removed but has no id`);
    const reason = (removed as { reason?: unknown } | null)?.reason;
    if (reason !== 'deleted' && reason !== 'changed')
      problems.push(`${where}: /value/${i}/@removed/reason must be 'deleted' or 'changed'`);
    if (extra.length) problems.push(`${where}: /value/${i} is removed but carries ${extra.join(', ')}`);
    return false;
  });
  return { rest: { ...body, value }, problems };
}

/** The comma-separated items of a query option, commas inside parentheses or quotes kept (`a($filter=x eq 'b,c'),d`). */
export function topLevelItems(value: string): string[] {
  const items: string[] = [];
  let [depth, quoted, start] = [0, false, 0];
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === "'") quoted = !quoted;
    else if (!quoted && c === '(') depth++;
    else if (!quoted && c === ')') depth--;
    else if (!quoted && depth === 0 && c === ',') {
      items.push(value.slice(start, i));
      start = i + 1;
    }
  }
  items.push(value.slice(start));
  return items;
}

/** Why a query option's value does not fit its described schema, or undefined when it does. */
function parameterProblem(schema: OpenApiSchema, value: string): string | undefined {
  switch (schema.type) {
    case 'integer': {
      if (!/^-?[0-9]+$/.test(value)) return 'is not an integer';
      if (schema.minimum !== undefined && Number(value) < schema.minimum) return `is below ${schema.minimum}`;
      return undefined;
    }
    case 'boolean':
      return value === 'true' || value === 'false' ? undefined : 'is not a boolean (true or false)';
    case 'array': {
      const items = value.split(',').map((v) => v.trim());
      if (items.some((v) => v === '')) return 'has an empty item';
      if (schema.uniqueItems && new Set(items).size !== items.length) return 'repeats an item';
      return undefined;
    }
    default:
      return value === '' ? 'is empty' : undefined;
  }
}

function describeSchema(schema: OpenApiSchema): string {
  return schema.$ref?.replace('#/components/schemas/', '') ?? 'an object';
}

function describeError(where: string, e: ErrorObject): string {
  const at = e.instancePath || '/';
  if (e.keyword === 'additionalProperties')
    return `${where}: ${at} has property '${String(e.params.additionalProperty)}', which the description does not declare`;
  if (e.keyword === 'enum') return `${where}: ${at} must be one of ${JSON.stringify(e.params.allowedValues)}`;
  return `${where}: ${at} ${e.message ?? e.keyword}`;
}

let checker: GraphChecker | undefined;

/** The checker, built once (the user description alone holds 550 schemas). */
export function graphChecker(): GraphChecker {
  return (checker ??= new GraphChecker());
}
