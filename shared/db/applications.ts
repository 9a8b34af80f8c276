import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo, type TransactItem } from '#shared/aws/dynamodb';
import {
  applicationKey,
  itemAttributes,
  redirectLoopbackKey,
  redirectUriKey,
  redirectUrisOfApplication,
  redirectUrlKey,
  type Key,
} from '#shared/db/keys';
import { getRecord, queryAll } from '#shared/db/records';
import { transactWrite } from '#shared/db/transact';
import type { ApplicationId, RedirectUriId } from '#shared/ids';

export interface ApplicationRecord {
  id: ApplicationId;
  name: string;
  created_at: number;
}

export class ApiKeyExistsError extends Error {
  constructor() {
    super('An API key with this hash already exists');
    this.name = 'ApiKeyExistsError';
  }
}

/** The application by ID, or undefined. */
export async function getApplication(appId: ApplicationId): Promise<ApplicationRecord | undefined> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: applicationKey(appId) }));
  if (!Item) return undefined;
  return { id: Item.id, name: Item.name, created_at: Item.created_at } as ApplicationRecord;
}

/** Requests a second and burst an application set for itself (PATCH /v3/applications `rate_limit`). */
export interface StoredRateLimit {
  requests_per_second: number;
  burst: number;
}

/** What a user may set on the application (PATCH /v3/applications): stored on the application item. */
export interface ApplicationSettings {
  branding?: Record<string, unknown>;
  hosted_authentication?: Record<string, unknown>;
  /** null removes the application's own limits (the deployment's apply again). */
  rate_limit?: StoredRateLimit | null;
}

/** The application's settings as stored (a removed rate limit is no attribute). */
export type StoredSettings = Omit<ApplicationSettings, 'rate_limit'> & { rate_limit?: StoredRateLimit };

export interface ApplicationWithSettings extends ApplicationRecord, StoredSettings {
  updated_at?: number;
}

const withSettings = (item: Record<string, unknown>): ApplicationWithSettings =>
  ({
    id: item.id,
    name: item.name,
    created_at: item.created_at,
    updated_at: item.updated_at,
    branding: item.branding,
    hosted_authentication: item.hosted_authentication,
    rate_limit: item.rate_limit,
  }) as ApplicationWithSettings;

/** The application item with its settings. */
export async function getApplicationWithSettings(appId: ApplicationId): Promise<ApplicationWithSettings | undefined> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: applicationKey(appId) }));
  return Item ? withSettings(Item) : undefined;
}

/**
 * The rate limit an application set for itself (undefined: none, or no such application): the one
 * attribute the rate limiter needs of the application item, read once per warm container and a while
 * (shared/applications/rate-limits.ts).
 */
export async function getApplicationRateLimit(appId: ApplicationId): Promise<StoredRateLimit | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: applicationKey(appId), ProjectionExpression: 'rate_limit' }),
  );
  return Item?.rate_limit as StoredRateLimit | undefined;
}

/**
 * Replaces the given settings objects on the application item, and removes those given as null (one
 * UpdateItem: no read before the write). Undefined when the application does not exist.
 */
export async function updateApplicationSettings(
  appId: ApplicationId,
  settings: ApplicationSettings,
  now: number,
): Promise<ApplicationWithSettings | undefined> {
  const fields = Object.entries(settings).filter(([, value]) => value !== undefined);
  const set = fields.filter(([, value]) => value !== null);
  const removed = fields.filter(([, value]) => value === null);
  try {
    const { Attributes } = await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: applicationKey(appId),
        UpdateExpression: [
          `SET ${[...set.map(([name]) => `#${name} = :${name}`), 'updated_at = :now'].join(', ')}`,
          ...(removed.length ? [`REMOVE ${removed.map(([name]) => `#${name}`).join(', ')}`] : []),
        ].join(' '),
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: Object.fromEntries(fields.map(([name]) => [`#${name}`, name])),
        ExpressionAttributeValues: {
          ...Object.fromEntries(set.map(([name, value]) => [`:${name}`, value])),
          ':now': now,
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return withSettings(Attributes!);
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return undefined;
    throw error;
  }
}

/** A redirect (callback) URI of an application. */
export interface RedirectUriRecord {
  id: RedirectUriId;
  application_id: ApplicationId;
  /** As registered: the string the OAuth flow compares, and the value its URL guard is keyed by. */
  url: string;
  /**
   * Only on records registered before exact matching, and kept until the record is rewritten: the
   * parsed URL (`new URL(url).href`), the value their URL guard is keyed by instead of `url`.
   */
  href?: string;
  /**
   * Desktop URIs on loopback http: the value their loopback guard is keyed by, the URL without its
   * port (cut out of `url` as written; on records with `href`, that href without its port).
   */
  loopback?: string;
  platform: string;
  settings: Record<string, string>;
  created_at: number;
  updated_at: number;
  version: number;
}

/** The guard items that make a redirect URI's URL unique within its application, by transaction item name. */
function urlGuards(record: RedirectUriRecord): [name: 'url' | 'loopback', key: Key][] {
  const guards: [name: 'url' | 'loopback', key: Key][] = [
    ['url', redirectUrlKey(record.application_id, record.href ?? record.url)],
  ];
  if (record.loopback) guards.push(['loopback', redirectLoopbackKey(record.application_id, record.loopback)]);
  return guards;
}

const guardPut = (record: RedirectUriRecord, key: Key): TransactItem => ({
  Put: {
    TableName: TABLE_NAME,
    Item: { ...key, entity: 'redirect_url', redirect_uri_id: record.id },
    ConditionExpression: 'attribute_not_exists(pk)',
  },
});

const REDIRECT_BOOKKEEPING = ['entity'];

export const getRedirectUri = (appId: ApplicationId, id: RedirectUriId) =>
  getRecord<RedirectUriRecord>(redirectUriKey(appId, id), ...REDIRECT_BOOKKEEPING);

/** Every redirect URI of an application (at most its limit, in its partition), newest first. */
export async function listRedirectUris(appId: ApplicationId): Promise<RedirectUriRecord[]> {
  const { pk, skPrefix } = redirectUrisOfApplication(appId);
  const { items } = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': pk, ':prefix': skPrefix },
    ScanIndexForward: false,
  });
  return items.map((i) => itemAttributes<RedirectUriRecord>(i, ...REDIRECT_BOOKKEEPING));
}

/** The redirect URI a guard item names, if the guard exists: `url` (the URL as registered) or `loopback` (that URL without its port). */
export async function redirectUriIdByGuard(
  appId: ApplicationId,
  kind: 'url' | 'loopback',
  value: string,
): Promise<RedirectUriId | undefined> {
  const key = kind === 'url' ? redirectUrlKey(appId, value) : redirectLoopbackKey(appId, value);
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: key }));
  return Item?.redirect_uri_id as RedirectUriId | undefined;
}

/**
 * Stores a new redirect URI with its URL guards, counting it on the application item while the count
 * stays below `max`. A failed condition is reported by name: `application` (the limit), `url` or
 * `loopback` (that URL is taken).
 */
export async function insertRedirectUri(record: RedirectUriRecord, max: number): Promise<void> {
  await transactWrite([
    [
      'application',
      {
        Update: {
          TableName: TABLE_NAME,
          Key: applicationKey(record.application_id),
          UpdateExpression: 'ADD redirect_uri_count :one',
          ConditionExpression:
            'attribute_exists(pk) AND (attribute_not_exists(redirect_uri_count) OR redirect_uri_count < :max)',
          ExpressionAttributeValues: { ':one': 1, ':max': max },
        },
      },
    ],
    [
      'redirect_uri',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: { ...redirectUriKey(record.application_id, record.id), entity: 'redirect_uri', ...record },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    ],
    ...urlGuards(record).map(([name, key]) => [name, guardPut(record, key)] as const),
  ]);
}

/**
 * Replaces a redirect URI if it still has the version read, moving its URL guards when its URL (or
 * platform) changed. Failed conditions by name: `redirect_uri` (changed or deleted meanwhile), `url`
 * or `loopback` (the new URL is taken).
 */
export async function replaceRedirectUri(before: RedirectUriRecord, after: RedirectUriRecord): Promise<void> {
  const same = (a: Key, b: Key) => a.pk === b.pk && a.sk === b.sk;
  const old = urlGuards(before);
  const next = urlGuards(after);
  await transactWrite([
    [
      'redirect_uri',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: { ...redirectUriKey(after.application_id, after.id), entity: 'redirect_uri', ...after },
          ConditionExpression: 'version = :v',
          ExpressionAttributeValues: { ':v': before.version },
        },
      },
    ],
    ...old
      .filter(([, key]) => !next.some(([, k]) => same(k, key)))
      .map(([name, key]) => [`old_${name}`, { Delete: { TableName: TABLE_NAME, Key: key } }] as const),
    ...next
      .filter(([, key]) => !old.some(([, k]) => same(k, key)))
      .map(([name, key]) => [name, guardPut(after, key)] as const),
  ]);
}

/** Deletes a redirect URI, its URL guards and its count; `redirect_uri` fails when it was already gone. */
export async function deleteRedirectUri(record: RedirectUriRecord): Promise<void> {
  await transactWrite([
    [
      'redirect_uri',
      {
        Delete: {
          TableName: TABLE_NAME,
          Key: redirectUriKey(record.application_id, record.id),
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
    ],
    ...urlGuards(record).map(([name, key]) => [name, { Delete: { TableName: TABLE_NAME, Key: key } }] as const),
    [
      'application',
      {
        Update: {
          TableName: TABLE_NAME,
          Key: applicationKey(record.application_id),
          UpdateExpression: 'ADD redirect_uri_count :minus',
          ExpressionAttributeValues: { ':minus': -1 },
        },
      },
    ],
  ]);
}
