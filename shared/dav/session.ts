import { env } from '#shared/config';
import type { GrantRecord } from '#shared/db/grants';
import { checkServerUrl } from '#shared/net/server-url';
import { InvalidRequestError } from '#shared/errors';
import { passwordLoginOf } from '#shared/accounts/passwords';
import type { UrlPolicy } from '#shared/net/addresses';
import { guardedFetch } from '#shared/net/fetch';
import { GuardedRequestError } from '#shared/net/request';
import { DavClient, DavError, type DavAuth, type DavProtocol } from '#shared/dav/client';

/**
 * A grant's CalDAV and CardDAV servers: the URLs its settings name (`caldav_url`, `carddav_url`; the
 * icloud preset fills them), the homes discovered from them when the grant was connected
 * (`calendar_home`, `addressbook_home`), and a client that logs in as its mail does (the IMAP
 * username and password, or the OAuth access token). Requests go through the guarded fetch under the
 * webhooks' address policy: https to public addresses deployed, loopback too in local mode.
 */
export interface DavSettings {
  caldav_url?: string;
  carddav_url?: string;
  calendar_home?: string;
  addressbook_home?: string;
}

const POLICY: UrlPolicy = { local: env.webhookLocalMode() };
/** Per request: a PROPFIND or REPORT of a few hundred objects answers in well under this. */
const TIMEOUT_MS = 20_000;
/** A multiget of 100 objects, or a collection listing: a few megabytes at most. */
const MAX_RESPONSE_BYTES = 20 * 1024 * 1024;
const davFetch = /* @__PURE__ */ guardedFetch({
  policy: POLICY,
  timeoutMs: TIMEOUT_MS,
  maxResponseBytes: MAX_RESPONSE_BYTES,
  userAgent: 'Switchboard-DAV/1.0',
});

/** The fetch DAV clients use: a refused or failed connection is a DavError (`unreachable`) naming the host. */
const fetchForDav: typeof davFetch = async (input, init) => {
  try {
    return await davFetch(input, init);
  } catch (error) {
    if (!(error instanceof GuardedRequestError)) throw error;
    const host = new URL(input).host;
    throw new DavError('unreachable', `${host} could not be reached (${error.kind}): ${error.message}`, String(input));
  }
};

export const davSettingsOf = (grant: Pick<GrantRecord, 'settings'>): DavSettings =>
  (grant.settings ?? {}) as DavSettings;

export const newDavClient = (auth: DavAuth) => new DavClient({ fetch: fetchForDav, auth });

/** The client of a grant's DAV servers, logged in as its mail is (its IMAP username and password: only password grants name DAV servers). */
export async function davClientOf(grant: GrantRecord): Promise<DavClient> {
  const login = await passwordLoginOf(grant);
  if (!login)
    throw new InvalidRequestError(
      `Grant ${grant.id} signs in with an access token; its CalDAV and CardDAV servers take the account's password`,
    );
  return newDavClient({
    type: 'basic',
    username: login.account.imap.username,
    password: login.passwords.imap_password,
  });
}

/** A CalDAV or CardDAV URL a grant may name (the connectors' rule for server URLs), in its canonical spelling. */
export const checkDavUrl = (field: string, value: string): string =>
  new URL(checkServerUrl(value, `settings.${field}`)).href;

/** A DAV failure as the caller of a request sees it: a 400 naming the server and what it said. */
export function davRequestError(error: unknown, what: string): unknown {
  if (!(error instanceof DavError)) return error;
  const reasons: Record<DavError['kind'], string> = {
    unauthorized: 'refused the credentials',
    not_found: 'has no such collection',
    precondition_failed: 'refused the change (it was changed meanwhile)',
    not_dav: 'is not a CalDAV/CardDAV server',
    unreachable: 'could not be reached',
    bad_response: 'answered something that is not valid DAV',
    conflict: 'refused the request',
    sync_token_invalid: 'no longer knows the sync state',
  };
  return new InvalidRequestError(`${what}: the server ${reasons[error.kind]} (${error.message})`);
}

/**
 * The homes of the servers a new grant names, found with its credentials before the grant exists (a
 * wrong URL or password is a 400 naming which server said what; nothing is stored).
 */
export async function discoverHomes(
  auth: DavAuth,
  urls: { caldav_url?: string; carddav_url?: string },
): Promise<DavSettings> {
  const client = newDavClient(auth);
  const find = async (protocol: DavProtocol, url: string | undefined, field: string) => {
    if (!url) return undefined;
    try {
      const found = await client.discover(url, protocol);
      return found.homes[0];
    } catch (error) {
      throw davRequestError(error, `settings.${field} (${new URL(url).host})`);
    }
  };
  const [calendar_home, addressbook_home] = await Promise.all([
    find('caldav', urls.caldav_url, 'caldav_url'),
    find('carddav', urls.carddav_url, 'carddav_url'),
  ]);
  return {
    ...(urls.caldav_url ? { caldav_url: urls.caldav_url, calendar_home: calendar_home! } : {}),
    ...(urls.carddav_url ? { carddav_url: urls.carddav_url, addressbook_home: addressbook_home! } : {}),
  };
}
