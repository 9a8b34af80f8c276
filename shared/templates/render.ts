/**
 * Email templates: a plain-text subject and an HTML body with placeholders, rendered by mustache,
 * handlebars or twig.
 *
 * Templates come from API users and run on our servers, so each engine is fenced in:
 * - the body HTML-escapes variables and the subject does not (it becomes a header, not HTML);
 *   raw output (`{{{x}}}`, `{{& x}}`, `|raw`) is the author's explicit choice and stays raw;
 * - nothing can load other templates or files (partials; twig include/extends/source and friends);
 * - template code cannot reach JavaScript functions: handlebars keeps its prototype-access ban, and
 *   twig.js, which calls every function it finds on a lookup (a path to `Function`, i.e. running
 *   arbitrary code), is patched so that it does not (see hardenTwig);
 * - output is capped per field, and twig ranges are budgeted so a loop cannot exhaust memory or CPU.
 * Whatever an engine throws becomes an InvalidRequestError that names the field and the engine.
 */
import type { RenderOptions } from 'mustache';
import type Twig from 'twig';
// Read only inside functions: the lazy chunk (scripts/esbuild-plugins.cjs, lazy-chunks) loads the
// engines on the first template checked or rendered.
import { Handlebars, Mustache, Twig as TwigEngine } from '#shared/lazy/templates';
import { InvalidRequestError } from '#shared/errors';
import { TEMPLATE_ENGINES, type TemplateEngine } from '#schemas/templates';

export { TEMPLATE_ENGINES, type TemplateEngine };

export interface TemplateFields {
  subject?: string;
  body?: string;
}

/** Per rendered field: far above any real email, low enough to stop a runaway loop. */
export const MAX_RENDERED_LENGTH = 5_000_000;

/** Elements all twig ranges (`a..b`, `range()`) may produce in one render; nested loops count every repetition. */
export const MAX_TWIG_RANGE_ELEMENTS = 100_000;

/**
 * twig.js builds output level by level (each loop iteration, block and branch is joined, then joined
 * again by its parent), so what it produces while rendering counts nested output once per level. Ten
 * levels of a maximal output is the budget; past it the render stops before memory runs out.
 */
const MAX_TWIG_PRODUCED_LENGTH = 10 * MAX_RENDERED_LENGTH;

/** JSON from the API is never this deep; the limit keeps the defensive copy off the stack limit. */
const MAX_VARIABLE_DEPTH = 64;

const FIELDS = ['subject', 'body'] as const;
type Field = (typeof FIELDS)[number];

type Renderer = (data: Record<string, unknown>) => string;
/** `strict`: a variable the template names that `data` lacks is an error, not an empty string. */
type Prepare = (source: string, field: Field, strict: boolean) => Renderer;

/** Throws InvalidRequestError when `engine` is not one of TEMPLATE_ENGINES (message lists the valid ones). */
export function assertEngine(engine: string): asserts engine is TemplateEngine {
  if (!(TEMPLATE_ENGINES as readonly string[]).includes(engine)) {
    throw new InvalidRequestError(`'engine' must be one of: ${TEMPLATE_ENGINES.join(', ')}; got '${String(engine)}'`);
  }
}

/**
 * Compiles subject and body without rendering; a syntax error → InvalidRequestError naming the field,
 * the engine and the parser's message (with line/column when the engine gives one). Also refuses what
 * would only fail at render time but is visible in the source: partials, loading tags and functions,
 * and twig filters or functions that do not exist. Used when a template is created or updated.
 */
export function checkTemplate(engine: string, fields: TemplateFields): void {
  assertEngine(engine);
  for (const field of FIELDS) {
    const source = fields[field];
    if (source !== undefined) PREPARE[engine](source, field, false);
  }
}

/**
 * Renders subject and body with `variables`. Returns only the fields that were given. `strict`: a
 * variable the template names that `variables` lacks is a 400 naming it (by default it renders empty).
 */
export function renderTemplate(
  engine: string,
  fields: TemplateFields,
  variables: Record<string, unknown>,
  options: { strict?: boolean | undefined } = {},
): TemplateFields {
  assertEngine(engine);
  const rendered: TemplateFields = {};
  for (const field of FIELDS) {
    const source = fields[field];
    if (source === undefined) continue;
    const render = PREPARE[engine](source, field, options.strict === true);
    // A fresh copy per field: twig writes `{% set %}` and loop variables into the context it renders.
    const data = copyVariables(variables);
    const output = run(engine, field, 'render', source, () => render(data));
    if (output.length > MAX_RENDERED_LENGTH) throw tooLong(field);
    rendered[field] = output;
  }
  return rendered;
}

const PREPARE: Record<TemplateEngine, Prepare> = {
  mustache: prepareMustache,
  handlebars: prepareHandlebars,
  twig: prepareTwig,
};

// ---------------------------------------------------------------------------------------------------
// mustache

function prepareMustache(source: string, field: Field, strict: boolean): Renderer {
  // A writer per template: the shared one caches every template it ever parsed, without limit.
  const writer = new Mustache.Writer();
  const tokens: unknown = run('mustache', field, 'compile', source, () => writer.parse(source));
  const partial = findMustachePartial(tokens);
  if (partial) {
    throw new InvalidRequestError(
      `'${field}' uses the mustache partial '{{> ${partial.name}}}' (${position(source, partial.offset)}); partials are not supported`,
    );
  }
  const options: RenderOptions | undefined =
    field === 'subject' ? { escape: (value: unknown) => String(value) } : undefined;
  // No partials are passed; the writer re-uses the tokens it parsed above.
  if (!strict) return (data) => writer.render(source, data, undefined, options);
  // mustache.js has no strict mode: a context whose lookups of names found nowhere throw.
  const parsed = writer.parse(source);
  return (data) => writer.renderTokens(parsed, new (strictMustacheContext())(data), undefined, source, options);
}

let StrictContext: (new (view: unknown) => InstanceType<typeof Mustache.Context>) | undefined;

/** A mustache context whose lookup of a name no context on its chain holds (a dotted name: each step) throws. */
function strictMustacheContext() {
  StrictContext ??= class Strict extends Mustache.Context {
    // A section's context (an item of a list, an object) is strict too.
    override push(view: unknown) {
      return new Strict(view, this);
    }

    override lookup(name: string): unknown {
      const value: unknown = super.lookup(name);
      if (value === undefined && name !== '.' && !holds(this, name.split('.')))
        throw new Error(`the variable '${name}' is not defined in 'variables' (strict)`);
      return value;
    }
  };
  return StrictContext;
}

/** Whether a context on the chain from `context` holds the path (its first name, then each step inside it). */
function holds(context: { view: unknown; parent?: unknown } | undefined, path: string[]): boolean {
  for (let at = context; at; at = at.parent as typeof context) {
    let value: unknown = at.view;
    if (!(value !== null && typeof value === 'object' && path[0]! in value)) continue;
    for (const step of path) {
      if (!(value !== null && typeof value === 'object' && step in value)) return false;
      value = (value as Record<string, unknown>)[step];
    }
    return true;
  }
  return false;
}

/** Mustache tokens are `[type, value, start, end, children?]`; sections nest their children at index 4. */
function findMustachePartial(tokens: unknown): { name: string; offset: number } | undefined {
  const pending: unknown[] = [tokens];
  while (pending.length > 0) {
    const list = pending.pop();
    if (!isList(list)) continue;
    for (const token of list) {
      if (!isList(token)) continue;
      if (token[0] === '>') return { name: String(token[1]), offset: Number(token[2]) };
      if (isList(token[4])) pending.push(token[4]);
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------
// handlebars

let handlebarsEnvironment: ReturnType<typeof Handlebars.create> | undefined;

/** An environment of our own whose `log` helper does nothing: template authors do not write to our logs. Made on first use. */
function handlebarsEnv(): ReturnType<typeof Handlebars.create> {
  if (!handlebarsEnvironment) {
    const environment = Handlebars.create();
    environment.registerHelper('log', () => '');
    handlebarsEnvironment = environment;
  }
  return handlebarsEnvironment;
}

/** Inline partials (`{{#*inline}}`) are decorators; both only exist to feed partials. */
const HANDLEBARS_PARTIAL_NODES: Readonly<Record<string, string>> = {
  PartialStatement: '{{> %}}',
  PartialBlockStatement: '{{#> %}}',
  DecoratorBlock: '{{#* %}}',
  Decorator: '{{* %}}',
};

function prepareHandlebars(source: string, field: Field, strict: boolean): Renderer {
  // Unless `strict`, missing variables render empty; prototype access stays denied (the default).
  const options: CompileOptions = { ...(field === 'subject' ? { noEscape: true } : {}), ...(strict ? { strict } : {}) };
  const handlebars = handlebarsEnv();
  const ast: unknown = run('handlebars', field, 'compile', source, () => handlebars.parse(source));
  const partial = findHandlebarsPartial(ast);
  if (partial) {
    throw new InvalidRequestError(
      `'${field}' uses the handlebars partial '${partial.tag}' (${partial.where}); partials are not supported`,
    );
  }
  // compile() defers compiling to the first call; precompile() runs the compiler now, so its errors
  // ("Invalid path", mismatched blocks) are reported as template errors, not render errors.
  run('handlebars', field, 'compile', source, () => handlebars.precompile(source, options));
  const template = handlebars.compile<Record<string, unknown>>(source, options);
  return (data) => template(data);
}

function findHandlebarsPartial(ast: unknown): { tag: string; where: string } | undefined {
  const pending: unknown[] = [ast];
  while (pending.length > 0) {
    const node = pending.pop();
    if (isList(node)) {
      for (const child of node) pending.push(child);
    } else if (isRecord(node)) {
      const shape = typeof node.type === 'string' ? HANDLEBARS_PARTIAL_NODES[node.type] : undefined;
      if (shape !== undefined) return { tag: shape.replace('%', handlebarsName(node)), where: handlebarsWhere(node) };
      for (const child of Object.values(node)) pending.push(child);
    }
  }
  return undefined;
}

function handlebarsName(node: Record<string, unknown>): string {
  const name = node.name ?? node.path;
  return isRecord(name) && typeof name.original === 'string' ? name.original : '(…)';
}

function handlebarsWhere(node: Record<string, unknown>): string {
  const start = isRecord(node.loc) && isRecord(node.loc.start) ? node.loc.start : undefined;
  if (typeof start?.line !== 'number' || typeof start.column !== 'number') return 'position unknown';
  return `line ${start.line}, column ${start.column + 1}`;
}

// ---------------------------------------------------------------------------------------------------
// twig

const TWIG_LOADING_TAGS: Readonly<Record<string, string>> = {
  'Twig.logic.type.include': 'include',
  'Twig.logic.type.embed': 'embed',
  'Twig.logic.type.extends': 'extends',
  'Twig.logic.type.import': 'import',
  'Twig.logic.type.from': 'from',
  'Twig.logic.type.use': 'use',
};
const TWIG_LOADING_FUNCTIONS: ReadonlySet<string> = new Set(['source', 'include', 'template_from_string']);
const CANNOT_LOAD = 'which is not allowed: templates cannot load other templates or files';

type TwigLimit = 'range' | 'output';

/** Budgets of the twig render in progress (twig.js renders synchronously, so there is at most one). */
interface TwigRender {
  rangeElements: number;
  producedLength: number;
  refuse(limit: TwigLimit): never;
}

/**
 * Shared by every copy of this module in the process (Symbol.for): the hooks are installed on the one
 * twig.js instance once, and read the render in progress from here.
 */
interface TwigGuard {
  active: TwigRender | undefined;
}

const TWIG_GUARD = Symbol.for('switchboard.templates.twig-guard');

let twigState: { internals: Twig.Internals; guard: TwigGuard } | undefined;

/** twig.js's internals, hardened (hardenTwig) before any template reaches twig: on first use. */
function twigHardened(): { internals: Twig.Internals; guard: TwigGuard } {
  if (!twigState) {
    const internals = twigInternals();
    twigState = { internals, guard: hardenTwig(internals) };
  }
  return twigState;
}

function prepareTwig(source: string, field: Field, strict: boolean): Renderer {
  const { guard: twigGuard } = twigHardened();
  const template = run('twig', field, 'compile', source, () =>
    // rethrow: without it twig.js logs errors and renders "". No `id`: nothing enters twig's registry.
    TwigEngine.twig({
      data: source,
      autoescape: field === 'body',
      rethrow: true,
      strict_variables: strict,
      allowInlineIncludes: false,
    }),
  );
  const problem = findTwigProblem(template.tokens, source);
  if (problem) throw new InvalidRequestError(`'${field}' ${problem}`);
  return (data) => {
    twigGuard.active = {
      rangeElements: 0,
      producedLength: 0,
      refuse: (limit) => {
        throw limit === 'output'
          ? tooLong(field)
          : new InvalidRequestError(
              `'${field}' uses twig ranges (a..b, range()) that produce more than ${MAX_TWIG_RANGE_ELEMENTS.toLocaleString('en-US')} elements in one render; nested loops count every repetition`,
            );
      },
    };
    try {
      return template.render(data);
    } finally {
      twigGuard.active = undefined;
    }
  };
}

/** The first tag, function or filter in the compiled template that may not be used, as a sentence. */
function findTwigProblem(tokens: unknown, source: string): string | undefined {
  const pending: Array<{ node: unknown; offset: number | undefined }> = [{ node: tokens, offset: undefined }];
  const seen = new Set<object>();
  while (pending.length > 0) {
    const item = pending.pop();
    if (item === undefined) break;
    const { node } = item;
    if (typeof node !== 'object' || node === null || seen.has(node)) continue;
    seen.add(node);
    if (isList(node)) {
      for (const child of node) pending.push({ node: child, offset: item.offset });
      continue;
    }
    if (!isRecord(node)) continue;
    // Expression tokens inside tags carry no position; they inherit their tag's.
    const offset = twigOffset(node) ?? item.offset;
    const problem = twigTokenProblem(node, offset === undefined ? '' : ` (${position(source, offset)})`);
    if (problem) return problem;
    for (const child of Object.values(node)) pending.push({ node: child, offset });
  }
  return undefined;
}

function twigTokenProblem(token: Record<string, unknown>, where: string): string | undefined {
  const { type } = token;
  if (typeof type !== 'string') return undefined;
  const tag = TWIG_LOADING_TAGS[type];
  if (tag !== undefined) return `uses the twig tag '{% ${tag} %}'${where}, ${CANNOT_LOAD}`;
  if (type === 'Twig.logic.type.deprecated') {
    return `uses the twig tag '{% deprecated %}'${where}, which is not allowed: templates cannot write to server logs`;
  }
  if (type === 'Twig.expression.type._function' && typeof token.fn === 'string') {
    if (TWIG_LOADING_FUNCTIONS.has(token.fn)) return `uses the twig function '${token.fn}()'${where}, ${CANNOT_LOAD}`;
    if (!Object.hasOwn(twigHardened().internals.functions, token.fn))
      return `uses the twig function '${token.fn}()'${where}, which does not exist`;
  }
  if (
    type === 'Twig.expression.type.filter' &&
    typeof token.value === 'string' &&
    !Object.hasOwn(twigHardened().internals.filters, token.value)
  ) {
    return `uses the twig filter '|${token.value}'${where}, which does not exist`;
  }
  return undefined;
}

function twigOffset(token: Record<string, unknown>): number | undefined {
  const at = isRecord(token.position) ? token.position : undefined;
  if (typeof at?.start === 'number') return at.start;
  if (isRecord(at?.open) && typeof at.open.start === 'number') return at.open.start;
  return undefined;
}

function twigInternals(): Twig.Internals {
  const handedOut: Twig.Internals[] = [];
  TwigEngine.extend((internals) => handedOut.push(internals));
  const [internals] = handedOut;
  if (!internals) throw new Error('twig.extend() did not hand out the twig internals');
  return internals;
}

/**
 * Patches the process-wide twig.js instance (nothing else in Switchboard uses twig) so user templates
 * cannot run JavaScript, read files or build unbounded ranges. Idempotent. Runs once, before the first
 * twig template is compiled (twigHardened), and throws then when twig.js no longer looks the way these
 * patches expect, rather than running unpatched.
 */
function hardenTwig(internals: Twig.Internals): TwigGuard {
  const installed = internals[TWIG_GUARD];
  if (isTwigGuard(installed)) return installed;
  const guard: TwigGuard = { active: undefined };

  // `functions.constructor`, `filters.__lookupGetter__`… would otherwise resolve through Object.prototype.
  for (const registry of [internals.functions, internals.filters, internals.tests])
    Object.setPrototypeOf(registry, null);
  for (const name of TWIG_LOADING_FUNCTIONS) delete internals.functions[name];

  // twig.js calls any function a lookup lands on (`x.constructor`, `x.__lookupGetter__(…)`), with the
  // template's arguments. Variables are JSON data, so no legitimate value is a function: never call one.
  const resolveAsync = internals.expression.resolveAsync;
  internals.expression.resolveAsync = function (this: unknown, value: unknown, ...rest: unknown[]) {
    return resolveAsync.call(this, typeof value === 'function' ? undefined : value, ...rest);
  };

  // `name(…)` falls back to calling `context[name]`, i.e. prototype methods of the context: only the
  // registered twig functions may be called.
  const callHandler = internals.expression.handler['Twig.expression.type._function'];
  if (!callHandler) throw new Error('twig.js has no function-call expression handler to restrict');
  const parseCall = callHandler.parse;
  callHandler.parse = function (this: unknown, token: Record<string, unknown>, ...rest: unknown[]) {
    if (typeof token.fn !== 'string' || !Object.hasOwn(internals.functions, token.fn)) {
      throw new Error(`the twig function '${String(token.fn)}()' does not exist`);
    }
    return parseCall.call(this, token, ...rest);
  };

  // The stock attribute() returns inherited members uncalled (a way to `Function`) and calls own ones.
  internals.functions.attribute = (object: unknown, key: unknown) => {
    if (typeof object !== 'object' || object === null || !Object.hasOwn(object, String(key))) return undefined;
    const value: unknown = Reflect.get(object, String(key));
    return typeof value === 'function' ? undefined : value;
  };

  // range() builds its whole array before a loop starts, and `a..b` calls it too: count first.
  const range = internals.functions.range;
  if (!range) throw new Error('twig.js has no range() function to bound');
  internals.functions.range = function (this: unknown, ...args: unknown[]) {
    const length = twigRangeLength(args[0], args[1], args[2]);
    const active = guard.active;
    if (active) {
      active.rangeElements += length;
      if (active.rangeElements > MAX_TWIG_RANGE_ELEMENTS) active.refuse('range');
    } else if (length > MAX_TWIG_RANGE_ELEMENTS) {
      throw new Error(`twig range() would produce more than ${MAX_TWIG_RANGE_ELEMENTS} elements`);
    }
    return range.apply(this, args);
  };

  // Every loop iteration, block and branch goes through Twig.output: the place to stop a render that
  // produces too much before the final string exists.
  const output = internals.output;
  internals.output = function (this: unknown, chunks: unknown[]) {
    const joined = output.call(this, chunks);
    const active = guard.active;
    if (active) {
      active.producedLength += joined.length;
      if (active.producedLength > MAX_TWIG_PRODUCED_LENGTH) active.refuse('output');
    }
    return joined;
  };

  // `{% deprecated "…" %}` writes its text to the console while compiling; findTwigProblem refuses it after.
  const deprecated = internals.logic.handler['Twig.logic.type.deprecated'];
  if (!deprecated) throw new Error('twig.js has no deprecated tag handler to silence');
  deprecated.compile = (token: Record<string, unknown>) => token;

  // Behind include/extends/embed/import/from/use and source(), which findTwigProblem refuses already.
  internals.Templates.loadRemote = () => {
    throw new Error('twig templates cannot load other templates or files');
  };

  TwigEngine.cache(false);
  internals[TWIG_GUARD] = guard;
  return guard;
}

/**
 * How many elements twig.js's range(low, high, step) builds, worked out the way it does (numbers,
 * single characters, or a number and 0) without building them. twig.js walks from low towards high by
 * `step || 1`; a step that is not a positive number never arrives, so it is refused.
 */
function twigRangeLength(low: unknown, high: unknown, step: unknown): number {
  const walker = step || 1;
  if (typeof walker !== 'number' || !Number.isFinite(walker) || walker <= 0) {
    throw new Error(`the twig range() step must be a positive number, got ${String(step)}`);
  }
  const isNumeric = (value: unknown) => !Number.isNaN(Number(value));
  const charCode = (value: unknown) => (typeof value === 'string' ? value.charCodeAt(0) : Number.NaN);
  let start: number;
  let end: number;
  if (isNumeric(low) && isNumeric(high)) {
    start = Number.parseInt(String(low), 10);
    end = Number.parseInt(String(high), 10);
  } else if (!isNumeric(low) && !isNumeric(high)) {
    start = charCode(low);
    end = charCode(high);
  } else {
    start = isNumeric(low) ? Number(low) : 0;
    end = isNumeric(high) ? Number(high) : 0;
  }
  const length = Math.floor(Math.abs(end - start) / walker) + 1;
  // A NaN bound fails twig's first comparison: no elements. An infinite one never ends: refused by the budget.
  return Number.isNaN(length) ? 0 : length;
}

// ---------------------------------------------------------------------------------------------------
// shared

/** Runs engine code; anything it throws becomes an InvalidRequestError naming the field and the engine. */
function run<T>(engine: TemplateEngine, field: Field, phase: 'compile' | 'render', source: string, step: () => T): T {
  try {
    return step();
  } catch (error) {
    if (error instanceof InvalidRequestError) throw error;
    // V8's own string limit (~2^29 characters): only reachable by output far past our cap.
    if (error instanceof RangeError && error.message === 'Invalid string length') throw tooLong(field, error);
    const detail = describeEngineError(engine, error, source);
    throw new InvalidRequestError(
      phase === 'compile'
        ? `'${field}' is not a valid ${engine} template: ${detail}`
        : `'${field}' could not be rendered with ${engine}: ${detail}`,
      { cause: error },
    );
  }
}

/** The engine's message on one line, with character offsets turned into line and column. */
function describeEngineError(engine: TemplateEngine, error: unknown, source: string): string {
  const message = errorMessage(error);
  switch (engine) {
    case 'mustache':
      // "Unclosed tag at 6"
      return message.replace(/ at (\d+)$/, (_match, offset: string) => ` at ${position(source, Number(offset))}`);
    case 'twig':
      // "… opened near template position 2", "Unable to parse 'x' at template position13",
      // "Unable to find an end tag for Twig.logic.type.for"
      return message
        .replace(/template position\s*(\d+)/, (_match, offset: string) => position(source, Number(offset)))
        .replace(/Twig\.logic\.type\.(\w+)/g, "'{% $1 %}'");
    case 'handlebars': {
      // "Parse error on line 2:\n<excerpt>\n---^\nExpecting 'ID', got 'INVALID'"
      const lines = message.split('\n');
      const [first, excerpt, pointer] = lines;
      if (first !== undefined && excerpt !== undefined && pointer !== undefined && /^-*\^$/.test(pointer)) {
        return `${first} ${lines.slice(3).join(' ')} (near ${JSON.stringify(excerpt)})`;
      }
      return lines.join(' ');
    }
  }
}

function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  // twig.js throws plain `{ name: 'TwigException', message }` objects rather than Errors.
  if (isRecord(error) && typeof error.message === 'string') return error.message;
  return String(error);
}

function position(source: string, offset: number): string {
  const before = source.slice(0, offset);
  const line = before.split('\n').length;
  return `line ${line}, column ${offset - before.lastIndexOf('\n')}`;
}

function tooLong(field: Field, cause?: unknown): InvalidRequestError {
  return new InvalidRequestError(
    `'${field}' renders to more than ${MAX_RENDERED_LENGTH.toLocaleString('en-US')} characters`,
    { cause },
  );
}

/**
 * A deep copy of JSON-like data: engines may mutate what they render with (twig's `set`, loops and
 * `sort`), and only data may reach a template — no functions, getters or class instances.
 */
function copyVariables(variables: Record<string, unknown>): Record<string, unknown> {
  return copyRecord(variables, 0);
}

function copyValue(value: unknown, depth: number): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
    return value;
  if (typeof value === 'bigint') return value.toString();
  if (typeof value !== 'object') return undefined; // functions, symbols, undefined
  if (depth >= MAX_VARIABLE_DEPTH) {
    throw new InvalidRequestError(`template variables are nested more than ${MAX_VARIABLE_DEPTH} levels deep`);
  }
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (isList(value)) return value.map((item) => copyValue(item, depth + 1));
  return copyRecord(value, depth + 1);
}

function copyRecord(value: object, depth: number): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const copied = copyValue(item, depth);
    // defineProperty rather than assignment: a JSON key "__proto__" stays data instead of becoming the prototype.
    if (copied !== undefined)
      Object.defineProperty(copy, key, { value: copied, enumerable: true, writable: true, configurable: true });
  }
  return copy;
}

function isTwigGuard(value: unknown): value is TwigGuard {
  return isRecord(value) && 'active' in value;
}

function isList(value: unknown): value is readonly unknown[] {
  return Array.isArray(value);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
