/**
 * Path templates and parameter decoding.
 *
 * API Gateway HTTP APIs hand path parameters over decoded, serverless-offline hands them over
 * encoded, and clients encode `grant:…`, `user@x.com` or draft IDs with `#` differently. We therefore
 * decode exactly once, and only when the value still holds a percent escape: none of our IDs,
 * addresses or prefixes can contain a literal `%XX`, so a decoded value is never decoded twice.
 */
const ESCAPE = /%[0-9a-fA-F]{2}/;

export function decodeParam(value: string): string {
  if (!ESCAPE.test(value)) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** Matches a raw request path against a template such as `/v3/grants/{grant_id}`; returns the decoded parameters. */
export function matchTemplate(template: string, rawPath: string): Record<string, string> | undefined {
  const want = template.split('/');
  const got = rawPath.split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const segment = want[i]!;
    const actual = got[i]!;
    if (segment.startsWith('{') && segment.endsWith('}')) {
      if (actual === '') return undefined;
      params[segment.slice(1, -1)] = decodeParam(actual);
    } else if (segment !== decodeParam(actual)) {
      return undefined;
    }
  }
  return params;
}

/**
 * Orders templates as API Gateway does: at the first segment where two templates differ, a literal
 * beats a parameter, so `/messages/send` wins over `/messages/{message_id}`.
 */
export function compareSpecificity(a: string, b: string): number {
  const sa = a.split('/');
  const sb = b.split('/');
  for (let i = 0; i < Math.min(sa.length, sb.length); i++) {
    const pa = sa[i]!.startsWith('{');
    const pb = sb[i]!.startsWith('{');
    if (pa !== pb) return pa ? 1 : -1;
  }
  return sb.length - sa.length;
}

/**
 * The decoded parameters when `rawPath` is exactly `template` filled in, segment for segment;
 * undefined when it is another path, such as the template with a trailing slash or an empty segment
 * (`//`). API Gateway routes only exact paths; serverless offline strips a trailing slash before it
 * matches, so a route's key alone does not prove the path is the route's own.
 *
 * A path handed over decoded (as API Gateway and the local layers do) turns a parameter holding an
 * encoded slash (`m%2Fn`) into two segments: it is exact too when the template filled with the
 * route's own path parameters spells it.
 */
export function exactMatch(
  template: string,
  rawPath: string,
  pathParameters: Readonly<Record<string, string | undefined>> = {},
): Record<string, string> | undefined {
  const matched = matchTemplate(template, rawPath);
  if (matched) return matched;
  const names = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  if (names.length === 0 || names.some((name) => !pathParameters[name])) return undefined;
  const raw = Object.fromEntries(names.map((name) => [name, pathParameters[name]!]));
  const decoded = Object.fromEntries(names.map((name) => [name, decodeParam(raw[name]!)]));
  const fill = (values: Record<string, string>) => template.replace(/\{(\w+)\}/g, (_, name: string) => values[name]!);
  return fill(raw) === rawPath || fill(decoded) === rawPath ? decoded : undefined;
}

/** Why a path names no endpoint, when its shape says so (a trailing slash or an empty segment). */
export function pathShapeHint(rawPath: string): string | undefined {
  if (rawPath.length > 1 && rawPath.endsWith('/'))
    return 'paths do not end with a slash: a trailing slash names another path';
  if (rawPath.includes('//')) return "paths have no empty segments: '//' names another path";
  return undefined;
}

/**
 * The message of the 404 for a path no route has (what the `$default` route answers). Also for a
 * layer in front of the functions that sees the path before it is normalized: serverless offline
 * strips a trailing slash before it builds the event, so only the local front door can tell.
 */
export function noEndpointMessage(method: string, rawPath: string): string {
  const hint = pathShapeHint(rawPath);
  return `No endpoint ${method} ${rawPath}; ${hint ? `${hint}; ` : ''}see the API reference for the available /v3 paths`;
}
