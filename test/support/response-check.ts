import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { ALL_ROUTES } from '#functions/routes';
import { ERROR_TYPES, ErrorEnvelope } from '#schemas/common';
import { compareSpecificity } from '#shared/http/paths';
import type { RouteSpec } from '#shared/http/route';

/**
 * Responses are schemas too: the test gateway checks every 2xx JSON body against the response schema
 * of the route that answered (`data`, or each item of a list's `data`), so that views cannot drift
 * from `schemas/`, and every error body against the one error envelope (and its type against the status). With `select`, only the fields asked for are present, so `required` is relaxed.
 */
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validateError = ajv.compile(ErrorEnvelope);

const routes = [...ALL_ROUTES].sort((a, b) => compareSpecificity(a.path, b.path));
const compiled = new Map<string, { full: ValidateFunction; selected: ValidateFunction }>();

function withoutRequired(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutRequired);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) if (key !== 'required') out[key] = withoutRequired(value);
  return out;
}

function matches(template: string, path: string) {
  const want = template.split('/');
  const got = path.split('/');
  return want.length === got.length && want.every((w, i) => (w.startsWith('{') ? got[i] !== '' : w === got[i]));
}

export function routeOf(method: string, path: string): RouteSpec | undefined {
  return routes.find((r) => r.method === method && matches(r.path, path));
}

/** Returns a description of every way the body differs from the route's response schema (empty: it matches). */
export function checkResponse(
  method: string,
  path: string,
  query: URLSearchParams,
  status: number,
  body: unknown,
): string[] {
  if (status >= 400) {
    // Every error, whatever answered it, is the one envelope with a known type for its status.
    if (!validateError(body))
      return (validateError.errors ?? []).map(
        (e) => `error body${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`,
      );
    const expected = (ERROR_TYPES as Record<number, string>)[status];
    const type = (body as { error: { type: string } }).error.type;
    return expected === undefined || expected === type
      ? []
      : [`error type '${type}' for status ${status} (expected '${expected}')`];
  }
  if (status < 200 || status >= 300) return [];
  const route = routeOf(method, path);
  if (!route) return [`no route for ${method} ${path}`];
  const envelope = body as { request_id?: unknown; data?: unknown; next_cursor?: unknown };
  if (typeof envelope?.request_id !== 'string') return ['the body has no request_id'];
  const kind = route.responseKind ?? 'object';
  if (kind === 'binary' || kind === 'empty' || !route.response) return [];
  const key = `${route.method} ${route.path}`;
  let validators = compiled.get(key);
  if (!validators) {
    validators = {
      full: ajv.compile(route.response),
      selected: ajv.compile(withoutRequired(route.response) as object),
    };
    compiled.set(key, validators);
  }
  const validate = query.has('select') ? validators.selected : validators.full;
  const items = kind === 'list' ? (Array.isArray(envelope.data) ? envelope.data : [undefined]) : [envelope.data];
  const problems: string[] = [];
  // `next_cursor` is present only when more results exist: a string, or no key at all on the last page.
  if (kind === 'list' && 'next_cursor' in envelope && typeof envelope.next_cursor !== 'string')
    problems.push('next_cursor must be a string when present (and absent on the last page)');
  items.forEach((item, i) => {
    if (!validate(item))
      for (const e of validate.errors ?? [])
        problems.push(
          `${kind === 'list' ? `data[${i}]` : 'data'}${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`,
        );
  });
  return problems;
}
