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
