import { InvalidRequestError } from '#shared/errors';
import type { RedirectPlatform, RedirectUriSettingsValue } from '#schemas/applications';

/**
 * The rules a redirect (callback) URI follows, by platform, as the major providers apply them:
 *
 * | platform       | https | http                                   | custom scheme (com.example.app:/cb) |
 * |----------------|-------|----------------------------------------|-------------------------------------|
 * | web, js        | yes   | to localhost, 127.0.0.1, [::1] only    | no                                  |
 * | desktop        | yes   | to loopback only; any port matches     | yes                                 |
 * | ios, android   | yes   | to loopback only                       | yes                                 |
 *
 * Never a fragment (the authorization code travels in the query), never user information, printable
 * ASCII only, and nothing a browser rewrites before following it: no dot segments in the path
 * (`/./`, `/../`, also percent-encoded as `%2e`) and no backslash (read as `/`).
 *
 * The OAuth flow compares the `redirect_uri` it is sent with the registered URI as strings, character
 * for character (RFC 6749 §3.1.2.3): nothing is normalized, not the case of the scheme or host, not
 * a default port, not a trailing slash. The one exception is RFC 8252 §7.3: a desktop URI on loopback
 * http matches the same string with any port (the app listens on whatever port the system gave it);
 * the port is cut out of the string as written (withoutLoopbackPort), so nothing else is normalized.
 */
export const MAX_URL_LENGTH = 2048;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
/** Schemes that are not an app's callback: they run code, read files or leave the browser for something else. */
const BLOCKED_SCHEMES = new Set([
  'javascript',
  'data',
  'vbscript',
  'file',
  'blob',
  'about',
  'filesystem',
  'ftp',
  'ws',
  'wss',
  'mailto',
  'tel',
  'sms',
  'urn',
  'view-source',
  'chrome',
  'resource',
]);
const SCHEME = /^[a-z][a-z0-9+.-]*$/;
/** `http://` + a loopback host as written (any case) + an optional port, then the path and query or nothing. */
const LOOPBACK_HTTP = /^(http:\/\/(?:localhost|127\.0\.0\.1|\[::1\]))(?::[0-9]*)?([/?].*)?$/is;
/** A path segment a browser resolves: `.` or `..`, each dot possibly percent-encoded (`%2e`, `.%2E`…). */
const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;

/** A redirect URI as registered: the string itself is what the OAuth flow compares. */
export interface RegisteredRedirectUrl {
  url: string;
  /** Desktop URIs on loopback http: the URI without its port (withoutLoopbackPort), which any port matches. */
  loopback?: string;
}

const isLoopback = (url: URL) => LOOPBACK_HOSTS.has(url.hostname);

/**
 * `raw` without its port when it is an http URI to a loopback host, cut out of the string as written
 * (`http://127.0.0.1:5000/cb` → `http://127.0.0.1/cb`; `HTTP://LocalHost:1/cb` → `HTTP://LocalHost/cb`);
 * undefined for anything else.
 */
export function withoutLoopbackPort(raw: string): string | undefined {
  const match = LOOPBACK_HTTP.exec(raw);
  return match ? `${match[1]}${match[2] ?? ''}` : undefined;
}

/** The path of a URI as written: after the scheme and the authority (`//host:port`, if any), up to the query. */
function pathOf(raw: string): string {
  let rest = raw.slice(raw.indexOf(':') + 1);
  if (rest.startsWith('//')) rest = rest.slice(2).replace(/^[^/?]*/, '');
  const query = rest.indexOf('?');
  return query === -1 ? rest : rest.slice(0, query);
}

/** Whether the path of `raw`, as written, has a segment browsers resolve. */
const hasDotSegment = (raw: string) =>
  pathOf(raw)
    .split('/')
    .some((segment) => DOT_SEGMENT.test(segment));

/** Parses `raw` as a redirect URI of `platform`, or throws a 400 naming the rule it breaks. */
export function parseRedirectUrl(raw: string, platform: RedirectPlatform, field = 'url'): RegisteredRedirectUrl {
  const fail = (why: string) => new InvalidRequestError(`'${field}' ${why}`);
  if (raw.length > MAX_URL_LENGTH) throw fail(`must be at most ${MAX_URL_LENGTH} characters`);
  if (!/^[\x21-\x7e]+$/.test(raw))
    throw fail('must be printable ASCII without spaces (percent-encode other characters)');
  if (raw.includes('#'))
    throw fail('must not contain a fragment (#…): the authorization code is returned in the query');
  // Browsers read a backslash as '/': the URI they would follow is not the one registered, which the OAuth flow compares.
  if (raw.includes('\\'))
    throw fail(
      "must not contain a backslash (\\): browsers read it as '/', so they would follow another URL than the one registered; write '/'",
    );
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw fail('must be an absolute URL, e.g. https://app.example.com/callback');
  }
  if (url.username || url.password) throw fail('must not contain user information (user:password@)');
  if (hasDotSegment(raw)) {
    // The parser resolves them in hierarchical paths (also encoded): its href is then the URL to register.
    const resolved = hasDotSegment(url.href) ? '' : ` (${url.href})`;
    throw fail(
      `must not contain dot segments in its path ('/./' or '/../', also percent-encoded as %2e): browsers resolve them, so they would follow another URL than the one registered; register the URL they lead to${resolved}`,
    );
  }
  const scheme = url.protocol.slice(0, -1);
  const httpRule = 'must use https; http is allowed only to localhost, 127.0.0.1 or [::1]';
  if (scheme === 'https') {
    if (!url.hostname) throw fail('must name a host');
    return { url: raw };
  }
  if (scheme === 'http') {
    // The host as written: `http://127.1/` reaches 127.0.0.1 too, but is not one of the names the rule allows.
    const loopback = withoutLoopbackPort(raw);
    if (loopback === undefined) throw fail(httpRule);
    return platform === 'desktop' ? { url: raw, loopback } : { url: raw };
  }
  if (platform === 'web' || platform === 'js')
    throw fail(`${httpRule} (custom schemes are for platforms desktop, ios and android)`);
  if (!SCHEME.test(scheme)) throw fail('must have a valid scheme');
  if (BLOCKED_SCHEMES.has(scheme))
    throw fail(
      `must not use the scheme '${scheme}': use https or your app's own scheme (e.g. com.example.app:/callback)`,
    );
  if (url.href.length <= url.protocol.length)
    throw fail(`must have a path after '${url.protocol}' (e.g. ${url.protocol}/callback)`);
  return { url: raw };
}

/** An origin (`https://app.example.com`, or http to loopback), as js redirect URIs name it; the normalized origin. */
export function parseOrigin(raw: string, field = 'settings.origin'): string {
  const fail = () =>
    new InvalidRequestError(
      `'${field}' must be an origin such as https://app.example.com: https (or http to localhost, 127.0.0.1 or [::1]), a host and an optional port, nothing else`,
    );
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw fail();
  }
  const allowed = url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url));
  // Scheme and authority only (a trailing slash at most): the parsed path of `https://a.example/.` is '/' too.
  if (!allowed || url.username || url.password || !/^[a-z][a-z0-9+.-]*:\/\/[^/?#\\]+\/?$/i.test(raw)) throw fail();
  return url.origin;
}

type SettingName = keyof RedirectUriSettingsValue;
/** Which settings each platform takes, and which of them it requires. */
const PLATFORM_SETTINGS: Record<
  RedirectPlatform,
  { required: readonly SettingName[]; optional: readonly SettingName[] }
> = {
  web: { required: [], optional: [] },
  desktop: { required: [], optional: [] },
  js: { required: ['origin'], optional: [] },
  ios: { required: ['bundle_id'], optional: ['app_store_id', 'team_id'] },
  android: { required: ['package_name', 'sha1_certificate_fingerprint'], optional: [] },
};

/** The settings of a redirect URI of `platform`, checked (each field must belong to the platform) and normalized. */
export function checkPlatformSettings(
  platform: RedirectPlatform,
  settings: RedirectUriSettingsValue,
): RedirectUriSettingsValue {
  const rule = PLATFORM_SETTINGS[platform];
  const allowed = new Set<string>([...rule.required, ...rule.optional]);
  const foreign = Object.keys(settings).filter((name) => !allowed.has(name));
  if (foreign.length) {
    const takes = allowed.size
      ? `; it takes ${[...allowed].map((n) => `settings.${n}`).join(', ')}`
      : '; it takes no settings';
    throw new InvalidRequestError(
      `${foreign.map((n) => `'settings.${n}'`).join(', ')} ${foreign.length > 1 ? 'do' : 'does'} not apply to platform ${platform}${takes}`,
    );
  }
  const missing = rule.required.filter((name) => settings[name] === undefined);
  if (missing.length)
    throw new InvalidRequestError(
      `${missing.map((n) => `'settings.${n}'`).join(', ')} ${missing.length > 1 ? 'are' : 'is'} required for platform ${platform}`,
    );
  return settings.origin === undefined ? settings : { ...settings, origin: parseOrigin(settings.origin) };
}

/**
 * The guard values an OAuth request's `redirect_uri` is looked up by (shared/db/applications.ts):
 * `urls` for a registration of that very string, `loopbacks` for a desktop registration on loopback
 * http (any port). Each also holds the value a registration made before exact matching is keyed by,
 * when it differs: `new URL(raw).href` and that href without its port. A guard found is a candidate
 * only: redirectUriMatches decides against the registered URI. Undefined: it cannot be a registered URI.
 */
export function lookupKeys(raw: string): { urls: string[]; loopbacks: string[] } | undefined {
  if (raw.length > MAX_URL_LENGTH || !/^[\x21-\x7e]+$/.test(raw) || raw.includes('#')) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (url.username || url.password) return undefined;
  const loopback = withoutLoopbackPort(raw);
  const loopbacks = loopback === undefined ? [] : [loopback];
  if (url.protocol === 'http:' && isLoopback(url)) {
    const portless = new URL(url.href);
    portless.port = '';
    loopbacks.push(portless.href);
  }
  return { urls: [...new Set([raw, url.href])], loopbacks: [...new Set(loopbacks)] };
}

/**
 * Whether `sent` (an OAuth request's `redirect_uri`) is the registered URI: the same string, or for a
 * desktop URI on loopback http the same string but for the port (RFC 8252 §7.3).
 */
export function redirectUriMatches(registered: { url: string; platform: string }, sent: string): boolean {
  if (registered.url === sent) return true;
  if (registered.platform !== 'desktop') return false;
  const loopback = withoutLoopbackPort(registered.url);
  return loopback !== undefined && loopback === withoutLoopbackPort(sent);
}
