import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_ROUTES } from '#functions/routes';
import type { RouteSpec } from '#shared/http/route';
import { apiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import {
  bodyTextWith,
  bodyWith,
  fieldLabel,
  numberFields,
  outOfBounds,
  requiredQuery,
  stringFields,
} from '../support/schema-fields';

/**
 * Property, over every route of the API: whatever defective request a client sends, the answer is a
 * 4xx in the error envelope, at once — never a 5xx, never a bare body, never a hang or a crash. Each
 * generated request carries at least one defect by construction: bad credentials, an unknown query
 * parameter, a forged page token, an unknown object ID, a body that is not a JSON object, broken
 * JSON, a wrong content type, a multipart body that is malformed or names a part after an
 * Object.prototype member, a number beyond its field's bounds (in every integer and number field
 * of every query and body, generated from the schemas), a path with a trailing slash or an empty
 * segment (another path, which no route has: 404, never the route without the slash), or a value
 * longer than any key holds, on every route, public ones included: a path parameter of thousands of
 * characters (404: nothing is named so), a query or body string past its schema's bound (400 naming
 * it), an Idempotency-Key past its bound (400). DynamoDB refuses key values over 2,048 / 1,024 bytes,
 * which reached clients as a 500 (`GET /scheduling/<2,100 × "a">`).
 */
let gateway: Gateway;
let apiKey: string;
let grantId: string;

beforeAll(async () => {
  // Routes as serverless offline matches (a trailing slash ignored), so a misshapen path reaches the
  // function of the route without the slash, which must refuse it itself; other requests route as API Gateway's.
  gateway = await startGateway({ ignoreTrailingSlash: true });
  apiKey = (await makeApplication('fuzz-routes')).apiKey;
  grantId = (await makeAgentGrant(apiClient(gateway.url, apiKey))).id;
});

afterAll(async () => {
  await gateway?.close();
});

interface BadRequest {
  method: string;
  path: string;
  query?: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  defect: string;
  /** The status this defect must get, when it is one status (otherwise any 4xx). */
  status?: number;
  /** What the error message must say. */
  mentions?: string;
}

const routes = ALL_ROUTES.filter((r) => (r.auth ?? 'api_key') === 'api_key');
const bodyRoutes = routes.filter((r) => r.body);
const multipartRoutes = routes.filter((r) => r.multipartMaxBytes);
const listRoutes = routes.filter((r) => r.responseKind === 'list');
const idRoutes = routes.filter((r) => /\{(?!grant_id\})\w+\}/.test(r.path));

/** An ID of the right shape that names nothing (all path parameters but the grant). */
const MISSING_ID = 'zz_01jzzzzzzzzzzzzzzzzzzzzzzz';

function path(route: RouteSpec, ids: Record<string, string> = {}) {
  return route.path.replace(
    /\{(\w+)\}/g,
    (_, name: string) => ids[name] ?? (name === 'grant_id' ? grantId : MISSING_ID),
  );
}

const route = (list: RouteSpec[]) => fc.constantFrom(...list);
const junk = fc.string({ unit: 'binary', maxLength: 60 });
const headerJunk = fc.stringMatching(/^[\x21-\x7e]{0,60}$/).filter((j) => !j.includes(','));
const known = (r: RouteSpec) =>
  new Set(Object.keys((r.query as { properties?: object } | undefined)?.properties ?? {}));

/** Every number field of every route, with each value beyond its bounds and the message that refuses it. */
const numberCases = routes.flatMap((r) =>
  numberFields(r).fields.flatMap((field) => outOfBounds(field).map((bad) => ({ r, field, ...bad }))),
);

/** A request that carries `literal` in one number field and is otherwise as plain as the route allows. */
function withNumber({
  r,
  field,
  literal,
}: (typeof numberCases)[number]): Pick<BadRequest, 'method' | 'path' | 'query' | 'headers'> & { body?: string } {
  const query = new URLSearchParams(requiredQuery(r));
  if (field.where === 'query') query.set(field.steps[0]!, literal);
  return {
    method: r.method,
    path: path(r),
    query: query.size ? query.toString() : undefined,
    headers: { 'content-type': 'application/json' },
    body: field.where === 'body' ? bodyTextWith(field, literal) : r.body ? '{}' : undefined,
  };
}

/**
 * Values longer than any key holds, for every route (public ones too: the probe's was a booking page):
 * each path parameter, and each string of the query and body one character past its schema's bound
 * (or thousands past it). Strings that take whole bodies and files (tens of MiB) are left to the
 * schema test, which checks their bound without sending it.
 */
const PARAMETER_VALUES = ['a'.repeat(2100), 'x'.repeat(5012), '\u{1D49C}'.repeat(300)];
const overLongPaths = ALL_ROUTES.flatMap((r) =>
  [...r.path.matchAll(/\{(\w+)\}/g)].map(([, param]) => ({ r, param: param! })),
);
const overLongStrings = ALL_ROUTES.flatMap((r) =>
  stringFields(r)
    .fields.filter((f) => f.maxLength !== undefined && f.maxLength < 100_000)
    .map((field) => ({ r, field })),
);
const pathWith = (r: RouteSpec, param: string, value: string) =>
  r.path.replace(/\{(\w+)\}/g, (_, name: string) =>
    name === param ? encodeURIComponent(value) : name === 'grant_id' ? grantId : MISSING_ID,
  );

/**
 * `length` characters of `unit`; in a query, four-byte characters only while the URL stays within what
 * an HTTP server reads (each is 12 characters percent-encoded; Node answers 431 past 16 KiB of headers).
 */
const longText = (field: (typeof overLongStrings)[number]['field'], unit: string, length: number) =>
  (field.where === 'query' && length * 12 > 8000 ? 'a' : unit).repeat(length);

/**
 * A request whose one defect is `value`, past its bound, in the string `field`: a 400 naming the field
 * (its bound, whose words test/unit/schema-strings.test.ts checks, or why the route takes no such
 * field), or a 413 when the body grew past the route's size limit (1 MiB unless it says less).
 */
function withString(
  { r, field }: (typeof overLongStrings)[number],
  value: string,
): Pick<BadRequest, 'method' | 'path' | 'query' | 'headers' | 'status' | 'mentions'> & { body?: string } {
  const query = new URLSearchParams(requiredQuery(r));
  if (field.where === 'query') query.set(field.steps[0] === '*' ? 'key' : field.steps[0]!, value);
  const body = field.where === 'body' ? JSON.stringify(bodyWith(field, value)) : r.body ? '{}' : undefined;
  const tooLarge = body !== undefined && Buffer.byteLength(body) > (r.maxBodyBytes ?? 1024 * 1024);
  return {
    method: r.method,
    path: path(r),
    query: query.size ? query.toString() : undefined,
    headers: { 'content-type': 'application/json' },
    body,
    ...(tooLarge ? { status: 413, mentions: 'limited to' } : { status: 400, mentions: `'${fieldLabel(field)}'` }),
  };
}

/** The message of an error answer: the envelope's, or the OAuth shape's (the token endpoints). */
const errorMessage = (body: { error?: { message?: unknown } | string; error_description?: unknown }) =>
  typeof body.error === 'string' ? body.error_description : body.error?.message;

/** The path with a trailing slash, or with an empty segment after its first. */
const misshapen = (p: string, kind: 'trailing' | 'empty') =>
  kind === 'trailing' ? `${p}/` : p.replace(/^(\/[^/]+)\//, '$1//');

/** Names that mean something on every JavaScript object, in the shapes form parsers give meaning to. */
const HOSTILE = Object.getOwnPropertyNames(Object.prototype).concat('prototype');
const hostileName = fc
  .record({ base: fc.constantFrom(...HOSTILE), suffix: fc.constantFrom('', '[]', '[x]', '[0]', '[a][b]', '.x') })
  .map(({ base, suffix }) => base + suffix);

const CRLF = '\r\n';
const part = (name: string, content: string, filename?: string) =>
  `Content-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"${CRLF}Content-Type: application/octet-stream` : ''}${CRLF}${CRLF}${content}`;
const form = (boundary: string, parts: string[]) =>
  `${parts.map((p) => `--${boundary}${CRLF}${p}${CRLF}`).join('')}--${boundary}--${CRLF}`;

/** Multipart bodies that must be refused: malformed structure, or a hostile part name beside a valid message. */
const badMultipart = fc.oneof(
  fc
    .record({ name: hostileName, file: fc.boolean() })
    .map(({ name, file }) =>
      form('fz', [part('message', '{"subject":"x"}'), part(name, 'v', file ? 'f.txt' : undefined)]),
    ),
  fc.constantFrom(
    '--fz\r\ngarbage without headers\r\n--fz--\r\n',
    '--fz\r\n\r\n\r\n--fz--\r\n',
    '--fz\r\nContent-Disposition: form-data; name="message"\r\n\r\n{"subject":"x"}',
    '--fz\r\nContent-Disposition: form-data; name="f"; filename="a"\r\n\r\nabc',
    '--fz--\r\n',
    '',
    'garbage',
    form('fz', [part('message', '{"subject":'), part('f', 'x', 'a.txt')]),
    form('fz', [part('message', '[1,2]')]),
    form('fz', [part('message', '{}'), part('message', '{}')]),
    form('fz', [part('message', '{}', 'message.json')]),
    form('fz', [part('message', '{}'), part('other', 'text')]),
  ),
  junk.map((j) => `--fz\r\n${j}`),
);

const badRequest: fc.Arbitrary<BadRequest> = fc.oneof(
  // Bad or missing credentials, on every route.
  fc
    .record({
      r: route(routes),
      auth: fc.oneof(
        fc.constant(''),
        fc.constant('Bearer'),
        headerJunk.map((j) => `Bearer x${j}`),
        headerJunk.map((j) => `Basic ${j}`),
      ),
    })
    .map(({ r, auth }) => ({
      method: r.method,
      path: path(r),
      headers: { ...(auth ? { authorization: auth } : {}), 'content-type': 'application/json' },
      body: r.body ? '{}' : undefined,
      defect: 'auth',
    })),
  // Unknown query parameters, on every route.
  fc
    .record({ r: route(routes), key: fc.stringMatching(/^[a-z_]{1,12}$/), value: fc.string({ maxLength: 20 }) })
    .filter(({ r, key }) => !known(r).has(key))
    .map(({ r, key, value }) => ({
      method: r.method,
      path: path(r),
      query: `${key}=${encodeURIComponent(value)}`,
      headers: { 'content-type': 'application/json' },
      body: r.body ? '{}' : undefined,
      defect: 'unknown query',
    })),
  // Forged page tokens, on every list.
  fc.record({ r: route(listRoutes), j: junk }).map(({ r, j }) => ({
    method: r.method,
    path: path(r),
    query: `page_token=${encodeURIComponent(`x${j}`)}`,
    headers: {},
    defect: 'page token',
  })),
  // Objects that do not exist (or junk IDs), on every route with an ID; bodies valid enough to reach the lookup.
  fc
    .record({
      r: route(idRoutes),
      id: fc.oneof(
        fc.constant(MISSING_ID),
        fc
          .string({ minLength: 1, maxLength: 40 })
          .filter((s) => s.trim() !== '' && !s.includes('/') && s !== '.' && s !== '..'),
      ),
    })
    .map(({ r, id }) => {
      const ids = Object.fromEntries(
        [...r.path.matchAll(/\{(\w+)\}/g)]
          .filter(([, name]) => name !== 'grant_id')
          .map(([, name]) => [name!, encodeURIComponent(id)]),
      );
      return {
        method: r.method,
        path: path(r, ids),
        query: r.path.includes('{attachment_id}') ? `message_id=${MISSING_ID}` : undefined,
        headers: { 'content-type': 'application/json' },
        body: r.body ? '{}' : undefined,
        defect: 'unknown id',
      };
    }),
  // A body that is JSON but not an object, on every body route.
  fc
    .record({
      r: route(bodyRoutes),
      body: fc.constantFrom('0', '-0', '0.0', 'false', 'true', 'null', '""', '"text"', '[]', '[{}]', '1e400'),
    })
    .map(({ r, body }) => ({
      method: r.method,
      path: path(r),
      headers: { 'content-type': 'application/json' },
      body,
      defect: 'not an object',
    })),
  // Broken JSON, on every body route.
  fc
    .record({
      r: route(bodyRoutes),
      body: fc.oneof(
        fc.constantFrom(
          '{',
          '{"a":',
          "{'a':1}",
          'undefined',
          '[1,2',
          '{"a":1}}',
          '\u0000',
          'NaN',
          '{"__proto__":',
          '{"a":1,}',
        ),
        junk.filter((s) => {
          try {
            JSON.parse(s);
            return false;
          } catch {
            return true;
          }
        }),
      ),
    })
    .map(({ r, body }) => ({
      method: r.method,
      path: path(r),
      headers: { 'content-type': 'application/json' },
      body,
      defect: 'malformed json',
    })),
  // Wrong content types, on every body route (multipart is a wrong type where the route takes only JSON).
  fc
    .record({
      r: route(bodyRoutes),
      type: fc.constantFrom(
        'text/plain',
        'json',
        'application/xml',
        'application/x-www-form-urlencoded',
        'image/png',
        'multipart/form-data',
        'multipart/form-data; boundary=',
        'multipart/form-data; boundary=fz',
        'multipart/mixed; boundary=fz',
      ),
    })
    .filter(({ r, type }) => !(r.multipartMaxBytes && type === 'multipart/form-data; boundary=fz'))
    .map(({ r, type }) => ({
      method: r.method,
      path: path(r),
      headers: { 'content-type': type },
      body: '{"subject":"x"}',
      defect: 'content type',
    })),
  // A number beyond its field's bounds (2**53 + 2, 23 digits, ±1e308, the maximum + 1), in every number field of every route.
  fc
    .constantFrom(...numberCases)
    .map((c) => ({ ...withNumber(c), defect: 'number out of bounds', status: 400, mentions: c.message })),
  // A trailing slash or an empty segment: another path, which no route has.
  fc.record({ r: route(routes), kind: fc.constantFrom('trailing' as const, 'empty' as const) }).map(({ r, kind }) => ({
    method: r.method,
    path: misshapen(path(r), kind),
    query: new URLSearchParams(requiredQuery(r)).toString() || undefined,
    headers: { 'content-type': 'application/json' },
    body: r.body ? '{}' : undefined,
    defect: 'misshapen path',
    status: 404,
  })),
  // Over-long key values, on every route: a path parameter, a string past its bound, an Idempotency-Key.
  fc
    .record({
      c: fc.constantFrom(...overLongPaths),
      value: fc.oneof(
        fc.constantFrom(...PARAMETER_VALUES),
        fc.string({ minLength: 1101, maxLength: 6000 }).filter((v) => Buffer.byteLength(v) > 1100),
      ),
    })
    .map(({ c, value }) => ({
      method: c.r.method,
      path: pathWith(c.r, c.param, value),
      query: new URLSearchParams(requiredQuery(c.r)).toString() || undefined,
      headers: { 'content-type': 'application/json' },
      body: c.r.body ? '{}' : undefined,
      defect: 'over-long key value',
      status: 404,
      // A random value may hold '/' or other characters that make it no path of the route at all: still a 404.
      ...(PARAMETER_VALUES.includes(value) ? { mentions: c.param } : {}),
    })),
  fc
    .record({
      c: fc.constantFrom(...overLongStrings),
      extra: fc.constantFrom(1, 5012),
      unit: fc.constantFrom('a', '\u{1D49C}'),
    })
    .map(({ c, extra, unit }) => ({
      ...withString(c, longText(c.field, unit, c.field.maxLength! + extra)),
      defect: 'over-long key value',
    })),
  fc.constantFrom(256, 5012).map((length) => ({
    method: 'POST',
    path: `/v3/grants/${grantId}/messages/send`,
    headers: { 'content-type': 'application/json', 'idempotency-key': 'k'.repeat(length) },
    body: '{"to":[{"email":"someone@example.net"}],"subject":"x"}',
    defect: 'over-long key value',
    status: 400,
    mentions: 'Idempotency-Key',
  })),
  // Malformed multipart bodies and hostile part names, where multipart is accepted.
  fc.record({ r: route(multipartRoutes), body: badMultipart }).map(({ r, body }) => ({
    method: r.method,
    path: path(r, { draft_id: 'DRAFT' }),
    headers: { 'content-type': 'multipart/form-data; boundary=fz' },
    body,
    defect: 'multipart',
  })),
);

describe('bad input, every route', () => {
  it('answers every defective request with a 4xx envelope', async () => {
    // A real draft, so that draft updates reach the multipart parser rather than a 404.
    const api = apiClient(gateway.url, apiKey);
    const draft = (await api.post(`/v3/grants/${grantId}/drafts`, { subject: 'fuzz' })).body.data.id as string;
    const seen = new Map<string, number>();
    const routesSeen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(badRequest, async (req) => {
        const headers = { ...req.headers };
        if (req.defect !== 'auth') headers.authorization = `Bearer ${apiKey}`;
        const url = `${gateway.url}${req.path.replace('DRAFT', draft)}${req.query ? `?${req.query}` : ''}`;
        const response = await fetch(url, {
          method: req.method,
          headers,
          body: req.body,
          signal: AbortSignal.timeout(10_000),
        });
        const text = await response.text();
        const what = `${req.defect}: ${req.method} ${req.path}?${req.query ?? ''} ${String(req.body ?? '').slice(0, 200)} → ${response.status} ${text.slice(0, 300)}`;
        expect(response.status, what).toBeGreaterThanOrEqual(400);
        expect(response.status, what).toBeLessThan(500);
        const body = JSON.parse(text);
        expect(body.request_id, what).toBe(response.headers.get('x-request-id'));
        expect(typeof (body.error?.type ?? body.error), what).toBe('string');
        expect(typeof errorMessage(body), what).toBe('string');
        if (req.status !== undefined) expect(response.status, what).toBe(req.status);
        if (req.mentions !== undefined) expect(errorMessage(body), what).toContain(req.mentions);
        seen.set(req.defect, (seen.get(req.defect) ?? 0) + 1);
        routesSeen.add(`${req.method} ${req.path.split('?')[0]}`);
      }),
      { numRuns: 800 },
    );
    // Every kind of defect was exercised, and no part of the prototype was touched.
    expect([...seen.keys()].sort()).toEqual(
      [
        'auth',
        'content type',
        'malformed json',
        'misshapen path',
        'multipart',
        'not an object',
        'number out of bounds',
        'over-long key value',
        'page token',
        'unknown id',
        'unknown query',
      ].sort(),
    );
    expect(Object.keys(Object.prototype)).toEqual([]);
  }, 240_000);

  it('reaches every route with each kind of defect that applies to it', async () => {
    // Deterministic sweep beside the random one: one request per route and defect kind.
    const api = apiClient(gateway.url, apiKey);
    const draft = (await api.post(`/v3/grants/${grantId}/drafts`, { subject: 'sweep' })).body.data.id as string;
    const failures: string[] = [];
    const check = async (
      r: RouteSpec,
      defect: string,
      init: {
        query?: string;
        headers?: Record<string, string>;
        body?: string;
        ids?: Record<string, string>;
        path?: string;
        status?: number;
        mentions?: string;
      },
    ) => {
      const url = `${gateway.url}${init.path ?? path(r, init.ids)}${init.query ? `?${init.query}` : ''}`;
      const response = await fetch(url, {
        method: r.method,
        headers: { authorization: `Bearer ${apiKey}`, ...init.headers },
        body: init.body,
        signal: AbortSignal.timeout(10_000),
      });
      const text = await response.text();
      let ok = response.status >= 400 && response.status < 500;
      try {
        const body = JSON.parse(text);
        ok &&= body.request_id === response.headers.get('x-request-id') && typeof errorMessage(body) === 'string';
        if (init.status !== undefined) ok &&= response.status === init.status;
        if (init.mentions !== undefined) ok &&= String(errorMessage(body)).includes(init.mentions);
      } catch {
        ok = false;
      }
      if (!ok) failures.push(`${defect}: ${r.method} ${r.path} → ${response.status} ${text.slice(0, 200)}`);
    };
    for (const r of routes) {
      await check(r, 'bad key', { headers: { authorization: 'Bearer nope' } });
      await check(r, 'unknown query', {
        query: 'no_such_parameter=1',
        headers: { 'content-type': 'application/json' },
        body: r.body ? '{}' : undefined,
      });
      if (r.responseKind === 'list') await check(r, 'page token', { query: 'page_token=forged' });
      const plain = {
        query: new URLSearchParams(requiredQuery(r)).toString(),
        headers: { 'content-type': 'application/json' },
        body: r.body ? '{}' : undefined,
        status: 404,
      };
      await check(r, 'trailing slash', { ...plain, path: misshapen(path(r), 'trailing') });
      await check(r, 'empty segment', { ...plain, path: misshapen(path(r), 'empty') });
      for (const c of numberCases.filter((c) => c.r === r && ['9007199254740993', '1e308'].includes(c.literal))) {
        const { query, headers, body } = withNumber(c);
        await check(r, `${c.field.where} ${fieldLabel(c.field)}=${c.literal}`, {
          query,
          headers,
          body,
          status: 400,
          mentions: c.message,
        });
      }
      if (r.body) {
        for (const body of ['0', 'null', '""', '[]'])
          await check(r, `body ${body}`, { headers: { 'content-type': 'application/json' }, body });
        await check(r, 'broken json', { headers: { 'content-type': 'application/json' }, body: '{"a":' });
        await check(r, 'text/plain', { headers: { 'content-type': 'text/plain' }, body: '{}' });
      }
      if (r.multipartMaxBytes) {
        await check(r, 'hostile part', {
          ids: { draft_id: draft },
          headers: { 'content-type': 'multipart/form-data; boundary=fz' },
          body: form('fz', [part('message', '{}'), part('__proto__[x]', 'v')]),
        });
        await check(r, 'headerless part', {
          ids: { draft_id: draft },
          headers: { 'content-type': 'multipart/form-data; boundary=fz' },
          body: '--fz\r\ngarbage without headers\r\n--fz--\r\n',
        });
      }
    }
    // Over-long key values, on every route, public ones included.
    for (const { r, param } of overLongPaths) {
      await check(r, `path ${param} of 2,100 characters`, {
        path: pathWith(r, param, PARAMETER_VALUES[0]!),
        query: new URLSearchParams(requiredQuery(r)).toString(),
        headers: { 'content-type': 'application/json' },
        body: r.body ? '{}' : undefined,
        status: 404,
        mentions: param,
      });
    }
    for (const c of overLongStrings) {
      const { query, headers, body, status, mentions } = withString(
        c,
        longText(c.field, '\u{1D49C}', c.field.maxLength! + 1),
      );
      await check(c.r, `${c.field.where} ${fieldLabel(c.field)} past ${c.field.maxLength}`, {
        query,
        headers,
        body,
        status,
        mentions,
      });
    }
    expect(failures).toEqual([]);
  }, 240_000);
});
