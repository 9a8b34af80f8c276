import { FIRST_KEY_NAME, generateApiKey, hashApiKey, keyPrefixOf } from '#shared/applications/api-keys';
import { bearerToken, forgetApiKey } from '#shared/applications/authenticate';
import type { ApplicationContext } from '#shared/caller';
import { decodeBeforeCursor, encodeBeforeCursor } from '#shared/cursor';
import * as repo from '#shared/db/api-keys';
import type { ApiKeyByHash, ApplicationApiKey } from '#shared/db/api-keys';
import { TransactionConditionError } from '#shared/db/transact';
import { ConflictError, NotFoundError } from '#shared/errors';
import { derivedId, newId, parseId, type ApiKeyId, type ApplicationId } from '#shared/ids';
import { clock } from '#shared/time';
import type { CreateApiKeyBody } from '#schemas/api-keys';

/**
 * The calling application's API keys (/v3/admin/applications/{application_id}/api-keys): it creates,
 * lists, reads and deletes its own keys, with the API key it calls with, and never another
 * application's (any other application ID is a 404, whether it exists or not). The secret is answered
 * once, by the create; only its SHA-256 is stored. A deleted key is refused at once by the function
 * instance that deleted it, and by every other within the key cache's lifetime (API_KEY_CACHE_SECONDS,
 * shared/applications/authenticate.ts); an expired key is refused from its expires_at on, everywhere.
 *
 * An application keeps at least one active (unexpired) key: deleting the last one is a 409, since no
 * request could then create another (the admin CLI makes an application's first key). Deleting the
 * key the request is made with is allowed while another is active: it is how a rotation ends.
 */

/** Keys an application may hold at once, expired ones included: rotation needs two; a few more let each deployment of a client have its own. */
export const MAX_API_KEYS = 20;
/** Every key can do whatever its application can: there are no narrower keys. */
const PERMISSIONS: ['all'] = ['all'];

const isExpired = (key: Pick<ApplicationApiKey, 'key_expires_at'>, now: number) =>
  key.key_expires_at !== undefined && key.key_expires_at <= now;

function view(key: ApplicationApiKey, now: number) {
  return {
    id: key.id,
    application_id: key.application_id,
    ...(key.name !== undefined ? { name: key.name } : {}),
    status: isExpired(key, now) ? ('expired' as const) : ('active' as const),
    permissions: PERMISSIONS,
    key_prefix: key.key_prefix,
    created_at: key.created_at,
    updated_at: key.updated_at,
    ...(key.key_expires_at !== undefined
      ? { expires_at: key.key_expires_at, expires_in: key.key_expires_at - key.created_at }
      : {}),
  };
}

/** The 404 for an application that is not the caller's: the same words whether it exists or not. */
function requireOwnApplication(app: ApplicationContext, applicationId: string): ApplicationId {
  if (applicationId !== app.applicationId)
    throw new NotFoundError(
      `Application '${applicationId.slice(0, 64)}' not found: an API key manages the API keys of its own application only`,
    );
  return app.applicationId;
}

const keyNotFound = (id: string) => new NotFoundError(`API key '${id.slice(0, 64)}' not found`);

/**
 * A key the admin CLI made before keys had IDs, as its application sees it: its ID is derived from its
 * hash (every instance that indexes it derives the same one) and its creation time.
 */
function legacyKey(hash: string, record: ApiKeyByHash): ApplicationApiKey {
  return {
    id: derivedId('apiKey', record.created_at * 1000, hash),
    application_id: record.application_id,
    name: FIRST_KEY_NAME,
    key_prefix: record.key_prefix,
    key_hash: hash,
    created_at: record.created_at,
    updated_at: record.created_at,
  };
}

/**
 * Keys the admin CLI made before keys had IDs are stored by hash only, where no list finds them; the
 * key a request is made with is given its description first. That indexes every such key before it
 * matters: the CLI made one per application, and an application has no other key until that one
 * creates it here.
 */
async function indexCallingKey(appId: ApplicationId, authorization: string | undefined): Promise<void> {
  const hash = hashApiKey(bearerToken(authorization));
  const record = await repo.getApiKeyByHash(hash);
  if (!record || record.key_id !== undefined || record.application_id !== appId) return;
  await repo.indexLegacyApiKey(legacyKey(hash, record));
}

const VERSION_ATTEMPTS = 3;

/**
 * Runs `change` on the application's keys as read now, committed under their version: when another
 * change to them commits first, they are read again and `change` decides again.
 */
async function underVersion<T>(
  appId: ApplicationId,
  change: (read: { version: number; keys: ApplicationApiKey[] }) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await change(await repo.readApiKeys(appId));
    } catch (error) {
      if (!(error instanceof TransactionConditionError && error.has('application'))) throw error;
      if (attempt >= VERSION_ATTEMPTS)
        throw new ConflictError("The application's API keys kept changing while this request was served; try again");
    }
  }
}

export async function createApiKey(
  app: ApplicationContext,
  applicationId: string,
  authorization: string | undefined,
  body: CreateApiKeyBody,
) {
  const appId = requireOwnApplication(app, applicationId);
  await indexCallingKey(appId, authorization);
  const secret = generateApiKey();
  const now = clock.nowSeconds();
  const key: ApplicationApiKey = {
    id: newId('apiKey'),
    application_id: appId,
    ...(body.name !== undefined ? { name: body.name } : {}),
    key_prefix: keyPrefixOf(secret),
    key_hash: hashApiKey(secret),
    created_at: now,
    updated_at: now,
    ...(body.expires_in !== undefined ? { key_expires_at: now + body.expires_in } : {}),
  };
  await underVersion(appId, async ({ version, keys }) => {
    if (keys.length >= MAX_API_KEYS)
      throw new ConflictError(
        `An application can have at most ${MAX_API_KEYS} API keys, expired ones included; delete one first`,
      );
    await repo.insertApiKey(key, version);
  });
  return { ...view(key, now), api_key: secret };
}

export async function listApiKeys(
  app: ApplicationContext,
  applicationId: string,
  authorization: string | undefined,
  limit: number,
  pageToken?: string,
) {
  const appId = requireOwnApplication(app, applicationId);
  const before = pageToken ? decodeBeforeCursor(pageToken, 'api-keys', 'apiKey') : undefined;
  await indexCallingKey(appId, authorization);
  const now = clock.nowSeconds();
  // Newest first, by ID; a page token continues below the last ID answered, whatever was deleted meanwhile.
  const keys = (await repo.listApplicationApiKeys(appId)).filter((key) => before === undefined || key.id < before);
  const page = keys.slice(0, limit);
  return {
    items: page.map((key) => view(key, now)),
    nextCursor: keys.length > limit ? encodeBeforeCursor('api-keys', page.at(-1)!.id) : undefined,
  };
}

export async function getApiKey(app: ApplicationContext, applicationId: string, apiKeyId: string) {
  const appId = requireOwnApplication(app, applicationId);
  const id = parseId('apiKey', apiKeyId);
  const key = id ? await repo.getApplicationApiKey(appId, id) : undefined;
  if (!key) throw keyNotFound(apiKeyId);
  return view(key, clock.nowSeconds());
}

/**
 * Deletes (revokes) a key: 409 when it is the application's last active key. The key this instance
 * trusts from its cache is forgotten at once; other instances trust it for at most the cache's lifetime.
 */
export async function deleteApiKey(
  app: ApplicationContext,
  applicationId: string,
  apiKeyId: string,
  authorization: string | undefined,
): Promise<void> {
  const appId = requireOwnApplication(app, applicationId);
  const id: ApiKeyId | undefined = parseId('apiKey', apiKeyId);
  if (!id) throw keyNotFound(apiKeyId);
  await indexCallingKey(appId, authorization);
  const deleted = await underVersion(appId, async ({ version, keys }) => {
    const key = keys.find((k) => k.id === id);
    if (!key) throw keyNotFound(apiKeyId);
    const now = clock.nowSeconds();
    if (!isExpired(key, now) && !keys.some((k) => k.id !== id && !isExpired(k, now)))
      throw new ConflictError(
        `API key '${id}' is the application's last active API key: deleting it would leave no key to call the API with. Create another first (POST /v3/admin/applications/${appId}/api-keys), switch to it, then delete this one`,
      );
    try {
      await repo.removeApiKey(key, version);
    } catch (error) {
      // Deleted by another request since it was read (the version moved too, so this is the rarer report).
      if (error instanceof TransactionConditionError && !error.has('application') && error.has('api_key_ref'))
        throw keyNotFound(apiKeyId);
      throw error;
    }
    return key;
  });
  forgetApiKey(deleted.key_hash);
}
