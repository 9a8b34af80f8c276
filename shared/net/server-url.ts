import { env } from '#shared/config';
import { InvalidRequestError } from '#shared/errors';

/**
 * The URL of a server Switchboard calls on a client's word (an OpenID Connect issuer, a CalDAV or
 * CardDAV server): https, or in local mode http to loopback; printable, with no user information,
 * query or fragment. Where it may then connect is the guarded client's affair (shared/net/fetch.ts).
 */
const LOCAL_MODE = env.webhookLocalMode();
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export const SERVER_URL_RULE = LOCAL_MODE ? 'an https URL (or http to localhost, 127.0.0.1 or [::1])' : 'an https URL';

export function usableServerUrl(value: string): boolean {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  const schemeOk =
    url.protocol === 'https:' || (LOCAL_MODE && url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname));
  return (
    schemeOk &&
    !!url.hostname &&
    !url.username &&
    !url.password &&
    !url.search &&
    !value.includes('#') &&
    !value.includes('?') &&
    /^[\x21-\x7e]+$/.test(value)
  );
}

/** A server's URL (CalDAV, CardDAV), or a 400 naming the field and the rule. */
export function checkServerUrl(value: string, field: string): string {
  if (!usableServerUrl(value))
    throw new InvalidRequestError(
      `'${field}' must be ${SERVER_URL_RULE} of the server (for example https://dav.example.com/), without query, fragment or user information; got '${value}'`,
    );
  return value;
}
