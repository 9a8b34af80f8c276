import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo, type TransactItem } from '#shared/aws/dynamodb';
import { ApiKeyExistsError, type ApplicationRecord } from '#shared/db/applications';
import { apiKeyKey, apiKeysOfApplication, applicationApiKeyKey, applicationKey, itemAttributes } from '#shared/db/keys';
import { getRecord, queryAll } from '#shared/db/records';
import { TransactionConditionError, transactWrite } from '#shared/db/transact';
import type { ApiKeyId, ApplicationId } from '#shared/ids';

/**
 * API keys are two items: the one authentication reads by the key's SHA-256 (`apikey#<sha256>`,
 * nothing else may find a key), and the key's description in its application's partition (`app#<app_id>`
 * / `apikey#<key_id>`), which lists and revokes keys without knowing them and holds the hash that
 * leads to the first. Both are written and deleted together.
 *
 * Every change to an application's keys is committed under `api_keys_version` of the application
 * item, as it was when the keys were read: a revocation decides "is another key still active?" on
 * the keys it read, and two revocations at once must not each leave the other as the last one.
 *
 * The expiry is `key_expires_at`, not `expires_at` (the table's TTL attribute): an expired key is
 * kept, so it answers "expired at …" rather than "invalid", and stays listed until it is deleted.
 */

/** The item authentication reads (`apikey#<sha256>` / `apikey`). */
export interface ApiKeyByHash {
  application_id: ApplicationId;
  /** First characters of the key, to recognise it in listings without storing it. */
  key_prefix: string;
  created_at: number;
  /**
   * Absent on keys made before keys had IDs (the admin CLI's, one per application): such a key is
   * given its ID and description when it next calls the API keys endpoints (indexLegacyApiKey).
   */
  key_id?: ApiKeyId;
  /** Unix seconds from which the key is refused; absent: never. */
  key_expires_at?: number;
}

/** An API key as its application sees it (`app#<app_id>` / `apikey#<key_id>`). */
export interface ApplicationApiKey {
  id: ApiKeyId;
  application_id: ApplicationId;
  name?: string;
  key_prefix: string;
  /** SHA-256 of the key: the key of its ApiKeyByHash item, never answered. */
  key_hash: string;
  created_at: number;
  updated_at: number;
  key_expires_at?: number;
}

const BOOKKEEPING = ['entity'];

/** The item an API key authenticates with, by the key's SHA-256. */
export async function getApiKeyByHash(hash: string): Promise<ApiKeyByHash | undefined> {
  return getRecord<ApiKeyByHash>(apiKeyKey(hash), ...BOOKKEEPING);
}

const byHashItem = (key: ApplicationApiKey) => ({
  ...apiKeyKey(key.key_hash),
  entity: 'api_key',
  application_id: key.application_id,
  key_prefix: key.key_prefix,
  created_at: key.created_at,
  key_id: key.id,
  key_expires_at: key.key_expires_at,
});

const descriptionItem = (key: ApplicationApiKey) => ({
  ...applicationApiKeyKey(key.application_id, key.id),
  entity: 'application_api_key',
  ...key,
});

/** The application item's update that commits a change to its keys under the version they were read at. */
function versioned(appId: ApplicationId, version: number): TransactItem {
  return {
    Update: {
      TableName: TABLE_NAME,
      Key: applicationKey(appId),
      UpdateExpression: 'SET api_keys_version = :next',
      // Applications made before keys had versions have none: their version is 0.
      ConditionExpression:
        version === 0
          ? 'attribute_exists(pk) AND attribute_not_exists(api_keys_version)'
          : 'attribute_exists(pk) AND api_keys_version = :read',
      ExpressionAttributeValues: { ':next': version + 1, ...(version === 0 ? {} : { ':read': version }) },
    },
  };
}

/** An API key of an application by ID. */
export const getApplicationApiKey = (appId: ApplicationId, id: ApiKeyId) =>
  getRecord<ApplicationApiKey>(applicationApiKeyKey(appId, id), ...BOOKKEEPING);

/**
 * Every API key of an application, newest first (strongly consistent: a key just created is listed).
 * An application has a few keys (shared/applications/api-key-management.ts bounds them): one page.
 */
export async function listApplicationApiKeys(appId: ApplicationId): Promise<ApplicationApiKey[]> {
  const { pk, skPrefix } = apiKeysOfApplication(appId);
  const { items } = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': pk, ':prefix': skPrefix },
    ScanIndexForward: false,
    ConsistentRead: true,
  });
  return items.map((i) => itemAttributes<ApplicationApiKey>(i, ...BOOKKEEPING));
}

/**
 * The version of an application's keys, then the keys (strongly consistent, both, in that order): a
 * change committed under that version is made on exactly these keys.
 */
export async function readApiKeys(appId: ApplicationId): Promise<{ version: number; keys: ApplicationApiKey[] }> {
  const { Item } = await dynamo.send(
    new GetCommand({
      TableName: TABLE_NAME,
      Key: applicationKey(appId),
      ProjectionExpression: 'api_keys_version',
      ConsistentRead: true,
    }),
  );
  return {
    version: (Item?.api_keys_version as number | undefined) ?? 0,
    keys: await listApplicationApiKeys(appId),
  };
}

/**
 * Stores a new key (both items) if the application's keys are still at `version`. Failed conditions
 * by name: `application` (the keys changed since they were read).
 */
export async function insertApiKey(key: ApplicationApiKey, version: number): Promise<void> {
  await transactWrite([
    ['application', versioned(key.application_id, version)],
    [
      'api_key',
      { Put: { TableName: TABLE_NAME, Item: byHashItem(key), ConditionExpression: 'attribute_not_exists(pk)' } },
    ],
    [
      'api_key_ref',
      { Put: { TableName: TABLE_NAME, Item: descriptionItem(key), ConditionExpression: 'attribute_not_exists(pk)' } },
    ],
  ]);
}

/**
 * Deletes a key (both items) if the application's keys are still at `version`. Failed conditions by
 * name: `application` (the keys changed since they were read), `api_key_ref` (already deleted).
 */
export async function removeApiKey(key: ApplicationApiKey, version: number): Promise<void> {
  await transactWrite([
    ['application', versioned(key.application_id, version)],
    [
      'api_key_ref',
      {
        Delete: {
          TableName: TABLE_NAME,
          Key: applicationApiKeyKey(key.application_id, key.id),
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
    ],
    ['api_key', { Delete: { TableName: TABLE_NAME, Key: apiKeyKey(key.key_hash) } }],
  ]);
}

/**
 * Gives a key made before keys had IDs its ID and description (`key` built from its ApiKeyByHash
 * item). Nothing is replaced: false when another request did it first, or the key is gone.
 */
export async function indexLegacyApiKey(key: ApplicationApiKey): Promise<boolean> {
  try {
    await transactWrite([
      [
        'api_key',
        {
          Update: {
            TableName: TABLE_NAME,
            Key: apiKeyKey(key.key_hash),
            UpdateExpression: 'SET key_id = :id',
            ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(key_id) AND application_id = :app',
            ExpressionAttributeValues: { ':id': key.id, ':app': key.application_id },
          },
        },
      ],
      [
        'api_key_ref',
        {
          Put: { TableName: TABLE_NAME, Item: descriptionItem(key), ConditionExpression: 'attribute_not_exists(pk)' },
        },
      ],
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError) return false;
    throw error;
  }
}

/**
 * Creates an application with its first API key (all three items or none); ApiKeyExistsError when
 * that key is already stored (local seeding with a fixed key).
 */
export async function putApplicationWithApiKey(app: ApplicationRecord, key: ApplicationApiKey): Promise<void> {
  try {
    await transactWrite([
      [
        'application',
        {
          Put: {
            TableName: TABLE_NAME,
            Item: { ...applicationKey(app.id), entity: 'application', ...app, api_keys_version: 1 },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
      ],
      [
        'api_key',
        { Put: { TableName: TABLE_NAME, Item: byHashItem(key), ConditionExpression: 'attribute_not_exists(pk)' } },
      ],
      [
        'api_key_ref',
        {
          Put: { TableName: TABLE_NAME, Item: descriptionItem(key), ConditionExpression: 'attribute_not_exists(pk)' },
        },
      ],
    ]);
  } catch (error) {
    if (error instanceof TransactionConditionError && error.has('api_key')) throw new ApiKeyExistsError();
    throw error;
  }
}
