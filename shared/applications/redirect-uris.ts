import type { ApplicationContext } from '#shared/caller';
import {
  checkPlatformSettings,
  lookupKeys,
  parseRedirectUrl,
  redirectUriMatches,
} from '#shared/applications/redirect-urls';
import { decodeOffsetCursor, encodeOffsetCursor } from '#shared/cursor';
import * as repo from '#shared/db/applications';
import type { RedirectUriRecord } from '#shared/db/applications';
import { TransactionConditionError } from '#shared/db/transact';
import { ConflictError, NotFoundError } from '#shared/errors';
import { newId, parseId, type ApplicationId, type RedirectUriId } from '#shared/ids';
import { clock } from '#shared/time';
import type {
  CreateRedirectUriBody,
  RedirectPlatform,
  RedirectUriSettingsValue,
  UpdateRedirectUriBody,
} from '#schemas/applications';

/**
 * The redirect (callback) URIs of the calling application: where the hosted OAuth flow may send a
 * user back. URL rules by platform: shared/applications/redirect-urls.ts. A URL (the string as
 * registered) is registered once per application (409 otherwise); every lookup is scoped to the
 * calling application.
 */
export const MAX_REDIRECT_URIS = 100;

function view(record: RedirectUriRecord) {
  return {
    id: record.id,
    url: record.url,
    platform: record.platform as RedirectPlatform,
    settings: record.settings as RedirectUriSettingsValue,
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}

/** Every redirect URI of an application as answered (the application object lists them). */
export async function listRedirectUriViews(appId: ApplicationId) {
  return (await repo.listRedirectUris(appId)).map(view);
}

async function requireRedirectUri(app: ApplicationContext, id: string): Promise<RedirectUriRecord> {
  const parsed = parseId('redirectUri', id);
  const record = parsed ? await repo.getRedirectUri(app.applicationId, parsed) : undefined;
  if (!record) throw new NotFoundError(`Redirect URI '${id}' not found`);
  return record;
}

/** The URL, platform and settings of a redirect URI, checked together. */
function checked(url: string, platform: RedirectPlatform, settings: RedirectUriSettingsValue) {
  const { loopback } = parseRedirectUrl(url, platform);
  return { url, loopback, platform, settings: checkPlatformSettings(platform, settings) };
}

/** The 409 for a URL another of the application's redirect URIs holds, naming that one. */
async function taken(error: TransactionConditionError, record: RedirectUriRecord): Promise<ConflictError> {
  const loopback = !error.has('url') && error.has('loopback');
  const holder = await repo.redirectUriIdByGuard(
    record.application_id,
    loopback ? 'loopback' : 'url',
    loopback ? record.loopback! : record.url,
  );
  const which = holder ? ` (${holder})` : '';
  return new ConflictError(
    loopback
      ? `A desktop redirect URI on this loopback address and path is already registered${which}; loopback URIs of platform desktop match any port`
      : `This URL is already registered as a redirect URI of this application${which}`,
  );
}

export async function listRedirectUris(app: ApplicationContext, limit: number, pageToken?: string) {
  const all = await listRedirectUriViews(app.applicationId);
  const offset = pageToken ? decodeOffsetCursor(pageToken, 'redirect-uris') : 0;
  return {
    items: all.slice(offset, offset + limit),
    nextCursor: offset + limit < all.length ? encodeOffsetCursor('redirect-uris', offset + limit) : undefined,
  };
}

export async function createRedirectUri(app: ApplicationContext, body: CreateRedirectUriBody) {
  const now = clock.nowSeconds();
  const record: RedirectUriRecord = {
    id: newId('redirectUri'),
    application_id: app.applicationId,
    ...checked(body.url, body.platform ?? 'web', body.settings ?? {}),
    created_at: now,
    updated_at: now,
    version: 1,
  };
  try {
    await repo.insertRedirectUri(record, MAX_REDIRECT_URIS);
  } catch (error) {
    if (!(error instanceof TransactionConditionError)) throw error;
    if (error.has('url', 'loopback')) throw await taken(error, record);
    if (error.has('application'))
      throw new ConflictError(`An application can have at most ${MAX_REDIRECT_URIS} redirect URIs; delete one first`);
    throw error;
  }
  return view(record);
}

export async function getRedirectUri(app: ApplicationContext, id: string) {
  return view(await requireRedirectUri(app, id));
}

/**
 * Changes a redirect URI: fields left out keep their values; `settings` replaces the stored settings
 * as a whole, and a new platform takes only the settings the body gives it.
 */
export async function updateRedirectUri(app: ApplicationContext, id: string, body: UpdateRedirectUriBody) {
  const current = await requireRedirectUri(app, id);
  const platform = body.platform ?? (current.platform as RedirectPlatform);
  const settings = body.settings ?? (platform === current.platform ? current.settings : {});
  const next: RedirectUriRecord = {
    ...current,
    ...checked(body.url ?? current.url, platform, settings),
    updated_at: clock.nowSeconds(),
    version: current.version + 1,
  };
  if (!next.loopback) delete next.loopback;
  // A record registered before exact matching is keyed by its parsed URL (`href`): rewritten, it is keyed by its URL.
  delete next.href;
  try {
    await repo.replaceRedirectUri(current, next);
  } catch (error) {
    if (!(error instanceof TransactionConditionError)) throw error;
    if (error.has('redirect_uri'))
      throw new ConflictError('The redirect URI was changed or deleted by another request; fetch it again and retry');
    if (error.has('url', 'loopback')) throw await taken(error, next);
    throw error;
  }
  return view(next);
}

export async function deleteRedirectUri(app: ApplicationContext, id: string): Promise<void> {
  const current = await requireRedirectUri(app, id);
  try {
    await repo.deleteRedirectUri(current);
  } catch (error) {
    if (error instanceof TransactionConditionError && error.has('redirect_uri'))
      throw new NotFoundError(`Redirect URI '${id}' not found`);
    throw error;
  }
}

/**
 * Whether `url` is one of the application's registered redirect URIs, for the OAuth flow: the very
 * string registered (RFC 6749 §3.1.2.3: no normalization), or for a platform-desktop registration on
 * loopback http, that string with any port (RFC 8252 §7.3). The guards found are candidates; the
 * registered URI itself decides (redirectUriMatches).
 *
 * Registrations made before exact matching were keyed by their parsed URL (`new URL(url).href`): for
 * most the same string as their URL, so the same key. The others are still found by their old key
 * (lookupKeys adds it) and then, like every candidate, match only the string they were registered
 * as; rewriting one (PATCH or PUT) moves it to the new key.
 */
export async function redirectUriRegistered(appId: ApplicationId, url: string): Promise<boolean> {
  const keys = lookupKeys(url);
  if (!keys) return false;
  const ids = await Promise.all([
    ...keys.urls.map((value) => repo.redirectUriIdByGuard(appId, 'url', value)),
    ...keys.loopbacks.map((value) => repo.redirectUriIdByGuard(appId, 'loopback', value)),
  ]);
  const candidates = [...new Set(ids.filter((id): id is RedirectUriId => id !== undefined))];
  const records = await Promise.all(candidates.map((id) => repo.getRedirectUri(appId, id)));
  return records.some((record) => record !== undefined && redirectUriMatches(record, url));
}
