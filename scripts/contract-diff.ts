/**
 * Developer aid (not run by `npm test`): compares our route tables and JSON Schemas with the published
 * OpenAPI contract and prints the differences per operation.
 *
 *   npx tsx scripts/contract-diff.ts [path-to-openapi.yml] [--json] [--depth N]
 *
 * The contract file is the first argument, or CONTRACT_OPENAPI; without either it says so and exits 0
 * (nothing in the repository needs the file). Operations are
 * matched by method + path with every `{param}` normalised to `{}`. Our success status is the route's
 * `status`, else a `status: NNN` passed to `ok()` by the route's handler in functions/<group>/handler.ts,
 * else 200; our envelope fields beside `data` come from the response kind plus any `envelope: {...}` the
 * handler passes. `--depth` (default 2) is how many levels of nested objects/array items are compared.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parse } from 'yaml';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- untyped YAML / schema data
interface Node {
  types: Set<string>;
  enum?: unknown[];
  props: Record<string, Json>;
  required: Set<string>;
  items?: Json;
  refs: Set<string>;
  cycle?: boolean;
}
interface Diff {
  missing: string[];
  extra: string[];
  types: string[];
  enums: string[];
  required: string[];
  notes: string[];
}

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const asJson = args.includes('--json');
const depthArg = args.indexOf('--depth');
const maxDepth = depthArg >= 0 ? Number(args[depthArg + 1] ?? 2) : 2;
const given = args.find((a, i) => !a.startsWith('--') && args[i - 1] !== '--depth') ?? process.env.CONTRACT_OPENAPI;
if (!given) {
  console.log('contract-diff: pass the published OpenAPI file (or set CONTRACT_OPENAPI); nothing to compare.');
  process.exit(0);
}
const file = resolve(process.cwd(), given);
if (!existsSync(file)) {
  console.log(`contract-diff: no contract at ${file}; nothing to compare.`);
  process.exit(0);
}
const doc: Json = parse(readFileSync(file, 'utf8'), { maxAliasCount: -1 });
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const norm = (p: string) => p.replace(/\{[^}]*\}/g, '{}').replace(/\/+$/, '');

// ---- schema resolution ($ref, allOf, anyOf/oneOf), cycle-safe via the chain of refs on the current path
function lookup(ref: string): Json {
  if (!ref.startsWith('#/')) return undefined;
  return ref
    .slice(2)
    .split('/')
    .reduce((o: Json, k) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
}
function deref(s: Json, chain: Set<string>, refs: Set<string>): Json {
  while (s && typeof s === 'object' && typeof s.$ref === 'string') {
    if (chain.has(s.$ref) || refs.has(s.$ref)) return { 'x-cycle': s.$ref };
    refs.add(s.$ref);
    const { $ref, ...siblings } = s;
    const target = lookup($ref);
    s = target && typeof target === 'object' ? { ...target, ...siblings } : siblings;
  }
  return s;
}
function typesOf(s: Json): Set<string> {
  const t = new Set<string>([s.type ?? []].flat());
  if (s.nullable === true) t.add('null');
  if (!t.size && s.properties) t.add('object');
  if (!t.size && s.items) t.add('array');
  return t;
}
function flat(s: Json, chain: Set<string> = new Set()): Node {
  const refs = new Set<string>();
  s = deref(s, chain, refs);
  const n: Node = { types: new Set(), props: {}, required: new Set(), refs };
  if (!s || typeof s !== 'object') return n;
  if (s['x-cycle']) return { ...n, cycle: true };
  const inner = new Set([...chain, ...refs]);
  n.types = typesOf(s);
  if (Array.isArray(s.enum)) n.enum = s.enum;
  else if ('const' in s) n.enum = [s.const];
  Object.assign(n.props, s.properties ?? {});
  for (const r of s.required ?? []) n.required.add(r);
  if (s.items) n.items = s.items;
  const merge = (m: Node, all: boolean) => {
    m.types.forEach((t) => n.types.add(t));
    for (const [k, v] of Object.entries(m.props)) n.props[k] = k in n.props ? { allOf: [n.props[k], v] } : v;
    if (all) m.required.forEach((r) => n.required.add(r));
    if (m.enum) n.enum = [...new Set([...(n.enum ?? []), ...m.enum])];
    if (m.items) n.items ??= m.items;
    m.refs.forEach((r) => refs.add(r));
  };
  for (const part of s.allOf ?? []) merge(flat(part, inner), true);
  const variants: Node[] = (s.anyOf ?? s.oneOf ?? []).map((v: Json) => flat(v, inner));
  variants.forEach((v) => merge(v, false));
  // required in every variant counts as required
  for (const r of variants[0]?.required ?? []) if (variants.every((v) => v.required.has(r))) n.required.add(r);
  if (n.types.has('integer') && n.types.has('number')) n.types.delete('integer');
  return n;
}
const isObj = (n: Node) => Object.keys(n.props).length > 0;
const fmtTypes = (n: Node) => [...n.types].sort().join('|') || 'any';
const fmtList = (xs: unknown[]) =>
  xs
    .slice(0, 8)
    .map((x) => JSON.stringify(x))
    .join(', ') + (xs.length > 8 ? `, ... (+${xs.length - 8})` : '');

/** `response`: ours narrowing a value the contract leaves open is harmless in an answer, so it is not reported. */
function compare(
  c: Node,
  o: Node,
  path: string,
  depth: number,
  d: Diff,
  response: boolean,
  chain = { c: new Set<string>(), o: new Set<string>() },
) {
  const cc = new Set([...chain.c, ...c.refs]);
  for (const k of Object.keys(c.props)) if (!(k in o.props)) d.missing.push(path + k);
  for (const k of Object.keys(o.props)) if (!(k in c.props)) d.extra.push(path + k);
  for (const r of c.required) if (!o.required.has(r)) d.required.push(path + r + (r in o.props ? '' : ' (absent)'));
  for (const k of Object.keys(c.props)) {
    if (!(k in o.props)) continue;
    const cn = flat(c.props[k], cc),
      on = flat(o.props[k], chain.o);
    if (cn.cycle || on.cycle) continue;
    if (cn.types.size && on.types.size && fmtTypes(cn) !== fmtTypes(on))
      d.types.push(`${path}${k}: contract ${fmtTypes(cn)}, ours ${fmtTypes(on)}`);
    if (cn.enum || on.enum) {
      const ce = new Set(cn.enum ?? []),
        oe = new Set(on.enum ?? []);
      if (!on.enum) d.enums.push(`${path}${k}: contract enum [${fmtList([...ce])}], ours unconstrained`);
      else if (!cn.enum) {
        if (!response) d.enums.push(`${path}${k}: ours enum [${fmtList([...oe])}], contract unconstrained`);
      } else {
        const co = [...ce].filter((x) => !oe.has(x)),
          oo = [...oe].filter((x) => !ce.has(x));
        if (co.length || oo.length)
          d.enums.push(`${path}${k}: contract-only [${fmtList(co)}], ours-only [${fmtList(oo)}]`);
      }
    }
    if (depth <= 0) continue;
    const next = { c: new Set([...cc, ...cn.refs]), o: new Set([...chain.o, ...on.refs]) };
    if (isObj(cn) && isObj(on)) compare(cn, on, `${path}${k}.`, depth - 1, d, response, next);
    else if (cn.items && on.items) {
      const ci = flat(cn.items, next.c),
        oi = flat(on.items, next.o);
      if (isObj(ci) && isObj(oi) && !ci.cycle && !oi.cycle)
        compare(ci, oi, `${path}${k}[].`, depth - 1, d, response, { c: new Set([...next.c, ...ci.refs]), o: next.o });
    }
  }
}
const newDiff = (): Diff => ({ notes: [], missing: [], extra: [], types: [], enums: [], required: [] });

// ---- our side: every functions/*/routes.ts, plus statuses and envelope fields from the handlers
interface Ours {
  group: string;
  name: string;
  spec: Json;
  status: number;
  envelope: string[];
}
const ours: Ours[] = [];
for (const group of readdirSync(join(root, 'functions')).sort()) {
  const routesFile = join(root, 'functions', group, 'routes.ts');
  if (!existsSync(routesFile)) continue;
  const { routes } = (await import(pathToFileURL(routesFile).href)) as { routes: Record<string, Json> };
  const handlerFile = join(root, 'functions', group, 'handler.ts');
  const handler = existsSync(handlerFile) ? readFileSync(handlerFile, 'utf8') : '';
  const owner = (index: number) => [...handler.slice(0, index).matchAll(/^\s{2}(\w+):\s*async/gm)].pop()?.[1];
  const statuses = new Map<string, number>(),
    envelopes = new Map<string, string[]>();
  for (const m of handler.matchAll(/\bstatus:\s*(\d{3})/g)) statuses.set(owner(m.index) ?? '', Number(m[1]));
  for (const m of handler.matchAll(/\benvelope:\s*\{([^}]*)\}/g)) {
    envelopes.set(
      owner(m.index) ?? '',
      (m[1] ?? '')
        .split(',')
        .map((x) => x.split(':')[0]!.trim())
        .filter(Boolean),
    );
  }
  for (const [name, spec] of Object.entries(routes)) {
    ours.push({
      group,
      name,
      spec,
      status: spec.status ?? statuses.get(name) ?? 200,
      envelope: envelopes.get(name) ?? [],
    });
  }
}
const ourByKey = new Map(ours.map((r) => [`${r.spec.method} ${norm(r.spec.path)}`, r]));

// ---- contract side
interface Op {
  method: string;
  path: string;
  id: string;
  op: Json;
  pathItem: Json;
}
const ops: Op[] = [];
for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
  for (const m of METHODS)
    if (item[m])
      ops.push({ method: m.toUpperCase(), path, id: item[m].operationId ?? '?', op: item[m], pathItem: item });
}
const jsonSchemaOf = (content: Json) => content?.['application/json']?.schema;

function diffOperation(c: Op, r: Ours) {
  const out: Record<string, Json> = {};
  const kind: string = r.spec.responseKind ?? 'object';
  // 1. status
  const success = Object.keys(c.op.responses ?? {}).filter((s) => /^[23]\d\d$/.test(s));
  if (success.join() !== String(r.status))
    out.status = `contract ${success.join('/') || 'none'}, ours ${r.status}${success.includes(String(r.status)) ? ' (ours is one of them)' : ' MISMATCH'}`;
  // 2. response envelope and data
  const resp = deref(c.op.responses?.[success.find((s) => s.startsWith('2')) ?? ''] ?? {}, new Set(), new Set());
  const content = resp.content ?? {};
  const envelope = flat(jsonSchemaOf(content) ?? {});
  const dataDiff = newDiff();
  if (kind === 'binary') {
    if (content['application/json'])
      dataDiff.notes.push(`contract answers JSON (${Object.keys(content).join(', ')}), ours raw bytes`);
  } else if (!jsonSchemaOf(content)) {
    if (Object.keys(content).length)
      dataDiff.notes.push(`contract success content: ${Object.keys(content).join(', ')}`);
  } else {
    const ourTop = new Set([
      'request_id',
      ...(kind === 'empty' ? [] : ['data']),
      ...(kind === 'list' ? ['next_cursor'] : []),
      ...r.envelope,
    ]);
    const cTop = Object.keys(envelope.props);
    const env = [
      ...cTop.filter((k) => !ourTop.has(k)).map((k) => `contract has ${k}`),
      ...[...ourTop].filter((k) => !cTop.includes(k)).map((k) => `ours has ${k}`),
    ];
    if (env.length) out.envelope = env;
    const cData = envelope.props.data ? flat(envelope.props.data) : undefined;
    const ourData = r.spec.response ? flat(r.spec.response) : undefined;
    if (kind === 'empty') {
      if (cData && (isObj(cData) || cData.items))
        dataDiff.notes.push(`contract documents data (${fmtTypes(cData)}); ours answers none`);
    } else if (cData && ourData) {
      let cItem: Node | undefined = cData;
      if (kind === 'list') {
        const arrays = Object.entries(cData.props).filter(([, v]) => flat(v).types.has('array'));
        if (cData.types.has('array') || (cData.items && !isObj(cData))) cItem = flat(cData.items ?? {}, cData.refs);
        else if (arrays.length === 1 && arrays[0]) {
          dataDiff.notes.push(
            `contract data is an object {${arrays[0][0]}: [...]}${Object.keys(cData.props).length > 1 ? ` with ${Object.keys(cData.props).join(', ')}` : ''}; ours data is an array`,
          );
          const arr = flat(arrays[0][1], cData.refs);
          cItem = flat(arr.items ?? {}, new Set([...cData.refs, ...arr.refs]));
        } else
          dataDiff.notes.push(
            `contract data is ${fmtTypes(cData)} {${Object.keys(cData.props).join(', ')}}; ours is an array`,
          );
      } else if (cData.types.has('array')) {
        dataDiff.notes.push('contract data is an array; ours is an object');
        cItem = flat(cData.items ?? {}, cData.refs);
      }
      if (cItem && !isObj(cItem) && isObj(ourData))
        dataDiff.notes.push(`contract data schema has no fields (${fmtTypes(cItem)})`);
      else if (cItem && isObj(cItem) && !isObj(ourData))
        dataDiff.notes.push(
          `ours: data is ${fmtTypes(ourData)}; contract fields: ${Object.keys(cItem.props).join(', ')}`,
        );
      else if (cItem) compare(cItem, ourData, '', maxDepth, dataDiff, true);
    } else if (cData && !ourData && (isObj(cData) || cData.items)) dataDiff.notes.push('ours has no response schema');
  }
  // 3. request body
  const bodyDiff = newDiff();
  const reqBody = c.op.requestBody ? deref(c.op.requestBody, new Set(), new Set()) : undefined;
  const bodyContent = reqBody?.content ?? {};
  const cBodySchema = jsonSchemaOf(bodyContent) ?? bodyContent['multipart/form-data']?.schema;
  if (cBodySchema && !jsonSchemaOf(bodyContent))
    bodyDiff.notes.push(`contract body is ${Object.keys(bodyContent).join(', ')}`);
  if (cBodySchema && r.spec.body) {
    compare(flat(cBodySchema), flat(r.spec.body), '', maxDepth, bodyDiff, false);
    const ourReq = flat(r.spec.body).required,
      cReq = flat(cBodySchema).required;
    const extraReq = [...ourReq].filter((k) => !cReq.has(k));
    if (extraReq.length) bodyDiff.notes.push(`ours requires, contract does not: ${extraReq.join(', ')}`);
  } else if (cBodySchema)
    bodyDiff.notes.push(
      `contract has a body (${Object.keys(flat(cBodySchema).props).join(', ') || 'no fields listed'}); ours accepts none`,
    );
  else if (r.spec.body)
    bodyDiff.notes.push(
      `ours accepts a body (${Object.keys(flat(r.spec.body).props).join(', ')}); contract documents none`,
    );
  // 4. query parameters
  const params = [...(c.pathItem.parameters ?? []), ...(c.op.parameters ?? [])].map((p: Json) =>
    deref(p, new Set(), new Set()),
  );
  const cQuery = new Map<string, Json>(params.filter((p: Json) => p?.in === 'query').map((p: Json) => [p.name, p]));
  const oQuery = flat(r.spec.query ?? {});
  const query: Record<string, string[]> = {
    contractOnly: [...cQuery.keys()].filter((k) => !(k in oQuery.props)),
    oursOnly: Object.keys(oQuery.props).filter((k) => !cQuery.has(k)),
    requiredDiff: [...cQuery.values()]
      .filter((p) => p.required && !oQuery.required.has(p.name))
      .map((p) => `${p.name} (contract requires)`),
  };
  const prune = (o: Record<string, Json>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v.length));
  const data = prune(dataDiff),
    body = prune(bodyDiff),
    q = prune(query);
  if (Object.keys(data).length) out.data = data;
  if (Object.keys(body).length) out.body = body;
  if (Object.keys(q).length) out.query = q;
  return {
    operation: `${c.method} ${c.path}`,
    operationId: c.id,
    contractStatus: success,
    ours: `${r.group}.${r.name} ${r.spec.path} (${kind}, ${r.status})`,
    differences: out,
  };
}

const served = ops.filter((c) => ourByKey.has(`${c.method} ${norm(c.path)}`));
const results = served.map((c) => diffOperation(c, ourByKey.get(`${c.method} ${norm(c.path)}`)!));
const contractKeys = new Set(ops.map((c) => `${c.method} ${norm(c.path)}`));
const oursOnly = ours
  .filter((r) => !contractKeys.has(`${r.spec.method} ${norm(r.spec.path)}`))
  .map((r) => `${r.spec.method} ${r.spec.path} (${r.group}.${r.name})`);
// Unserved contract operations under a path we serve (segment prefix); the bare grant prefix only counts per resource.
const ourPaths = [...new Set(ours.map((r) => norm(r.spec.path)))];
const under = (p: string, q: string) => p === q || p.startsWith(`${q}/`);
const unserved: string[] = [];
const otherGrantResources = new Map<string, number>();
for (const c of ops) {
  const p = norm(c.path);
  if (ourByKey.has(`${c.method} ${p}`)) continue;
  const specific = ourPaths.filter((q) => under(p, q) && ((q !== '/v3/grants' && q !== '/v3/grants/{}') || p === q));
  if (specific.length) unserved.push(`${c.method} ${c.path} (${c.id})`);
  else if (under(p, '/v3/grants/{}')) {
    const res = p.split('/')[4] ?? '';
    otherGrantResources.set(res, (otherGrantResources.get(res) ?? 0) + 1);
  }
}
const otherGrants = [...otherGrantResources].map(([k, n]) => `${k} (${n})`).join(', ');

if (asJson) {
  console.log(
    JSON.stringify(
      {
        contract: file,
        operations: ops.length,
        matched: results.length,
        results,
        unserved,
        otherGrantResources: Object.fromEntries(otherGrantResources),
        oursOnly,
      },
      null,
      2,
    ),
  );
} else {
  const lines = [
    `Contract: ${file} (${ops.length} operations); ours: ${ours.length} routes; matched ${results.length}.`,
    `Our status: route \`status\`, else \`status: NNN\` in the handler, else 200. Nested depth compared: ${maxDepth}.`,
    '',
  ];
  const label: Record<string, string> = {
    missing: 'contract fields we lack',
    extra: 'fields only ours has',
    types: 'type differences',
    enums: 'enum differences',
    required: 'contract requires, ours does not',
    notes: 'notes',
    contractOnly: 'contract params we do not accept',
    oursOnly: 'our params not in contract',
    requiredDiff: 'required',
  };
  for (const r of results) {
    lines.push(`${r.operation} (${r.operationId})  [contract ${r.contractStatus.join('/')}; ours: ${r.ours}]`);
    const d = r.differences;
    if (!Object.keys(d).length) lines.push('  no differences');
    if (d.status) lines.push(`  status: ${d.status}`);
    if (d.envelope) lines.push(`  envelope: ${d.envelope.join('; ')}`);
    for (const section of ['data', 'body', 'query'] as const) {
      for (const [k, v] of Object.entries<string[]>(d[section] ?? {})) {
        const long = k === 'types' || k === 'enums' || k === 'notes';
        if (long) for (const x of v) lines.push(`  ${section} ${label[k]}: ${x}`);
        else lines.push(`  ${section} ${label[k] ?? k}: ${v.join(', ')}`);
      }
    }
    lines.push('');
  }
  lines.push(
    `Contract operations under paths we serve, not served (${unserved.length}):`,
    ...unserved.map((u) => `  ${u}`),
  );
  if (otherGrants) lines.push(`Other grant-scoped contract resources we do not serve at all: ${otherGrants}`);
  lines.push('', `Our routes not in the contract (${oursOnly.length}):`, ...oursOnly.map((u) => `  ${u}`));
  console.log(lines.join('\n'));
}
