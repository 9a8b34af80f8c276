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
 * ASCII only. A URI is compared as `new URL(url).href`: exact string match after parsing, as OAuth
 * requires (RFC 6749 §3.1.2), except that a desktop URI on loopback http matches any port
 * (RFC 8252 §7.3: the app listens on whatever port the system gave it).
 */
export const MAX_URL_LENGTH = 2048;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
/** Schemes that are not an app's callback: they run code, read files or leave the browser for something else. */
const BLOCKED_SCHEMES = new Set(['javascript', 'data', 'vbscript', 'file', 'blob', 'about', 'filesystem', 'ftp', 'ws', 'wss', 'mailto', 'tel', 'sms', 'urn', 'view-source', 'chrome', 'resource']);
const SCHEME = /^[a-z][a-z0-9+.-]*$/;

export interface ParsedRedirectUrl {
  /** `new URL(url).href`: what the exact match compares. */
  href: string;
  /** Desktop URIs on loopback http: the href without its port (any port matches it). */
  loopback?: string;
}

const isLoopback = (url: URL) => LOOPBACK_HOSTS.has(url.hostname);

/** The href with the port removed. */
function withoutPort(url: URL): string {
  const copy = new URL(url.href);
  copy.port = '';
  return copy.href;
}

/** Parses `raw` as a redirect URI of `platform`, or throws a 400 naming the rule it breaks. */
export function parseRedirectUrl(raw: string, platform: RedirectPlatform, field = 'url'): ParsedRedirectUrl {
  const fail = (why: string) => new InvalidRequestError(`'${field}' ${why}`);
  if (raw.length > MAX_URL_LENGTH) throw fail(`must be at most ${MAX_URL_LENGTH} characters`);
  if (!/^[\x21-\x7e]+$/.test(raw)) throw fail('must be printable ASCII without spaces (percent-encode other characters)');
  if (raw.includes('#')) throw fail('must not contain a fragment (#…): the authorization code is returned in the query');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw fail('must be an absolute URL, e.g. https://app.example.com/callback');
  }
  if (url.username || url.password) throw fail('must not contain user information (user:password@)');
  const scheme = url.protocol.slice(0, -1);
  const httpRule = 'must use https; http is allowed only to localhost, 127.0.0.1 or [::1]';
  if (scheme === 'https') {
    if (!url.hostname) throw fail('must name a host');
    return { href: url.href };
  }
  if (scheme === 'http') {
    if (!isLoopback(url)) throw fail(httpRule);
    return platform === 'desktop' ? { href: url.href, loopback: withoutPort(url) } : { href: url.href };
  }
  if (platform === 'web' || platform === 'js') throw fail(`${httpRule} (custom schemes are for platforms desktop, ios and android)`);
  if (!SCHEME.test(scheme)) throw fail('must have a valid scheme');
  if (BLOCKED_SCHEMES.has(scheme)) throw fail(`must not use the scheme '${scheme}': use https or your app's own scheme (e.g. com.example.app:/callback)`);
  if (url.href.length <= url.protocol.length) throw fail(`must have a path after '${url.protocol}' (e.g. ${url.protocol}/callback)`);
  return { href: url.href };
}

/** An origin (`https://app.example.com`, or http to loopback), as js redirect URIs name it; the normalized origin. */
export function parseOrigin(raw: string, field = 'settings.origin'): string {
  const fail = () =>
    new InvalidRequestError(`'${field}' must be an origin such as https://app.example.com: https (or http to localhost, 127.0.0.1 or [::1]), a host and an optional port, nothing else`);
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
const PLATFORM_SETTINGS: Record<RedirectPlatform, { required: readonly SettingName[]; optional: readonly SettingName[] }> = {
  web: { required: [], optional: [] },
  desktop: { required: [], optional: [] },
  js: { required: ['origin'], optional: [] },
  ios: { required: ['bundle_id'], optional: ['app_store_id', 'team_id'] },
  android: { required: ['package_name', 'sha1_certificate_fingerprint'], optional: [] },
};

/** The settings of a redirect URI of `platform`, checked (each field must belong to the platform) and normalized. */
export function checkPlatformSettings(platform: RedirectPlatform, settings: RedirectUriSettingsValue): RedirectUriSettingsValue {
  const rule = PLATFORM_SETTINGS[platform];
  const allowed = new Set<string>([...rule.required, ...rule.optional]);
  const foreign = Object.keys(settings).filter((name) => !allowed.has(name));
  if (foreign.length) {
    const takes = allowed.size ? `; it takes ${[...allowed].map((n) => `settings.${n}`).join(', ')}` : '; it takes no settings';
    throw new InvalidRequestError(`${foreign.map((n) => `'settings.${n}'`).join(', ')} ${foreign.length > 1 ? 'do' : 'does'} not apply to platform ${platform}${takes}`);
  }
  const missing = rule.required.filter((name) => settings[name] === undefined);
  if (missing.length) throw new InvalidRequestError(`${missing.map((n) => `'settings.${n}'`).join(', ')} ${missing.length > 1 ? 'are' : 'is'} required for platform ${platform}`);
  return settings.origin === undefined ? settings : { ...settings, origin: parseOrigin(settings.origin) };
}

/**
 * How an OAuth request's `redirect_uri` is looked up: its href (exact match), and for loopback http
 * its href without the port (desktop registrations, any port). Undefined: it cannot be a registered URI.
 */
export function lookupForms(raw: string): ParsedRedirectUrl | undefined {
  if (raw.length > MAX_URL_LENGTH || !/^[\x21-\x7e]+$/.test(raw) || raw.includes('#')) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (url.username || url.password) return undefined;
  return url.protocol === 'http:' && isLoopback(url) ? { href: url.href, loopback: withoutPort(url) } : { href: url.href };
}
