import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo, type TransactItem } from '#shared/aws/dynamodb';
import { deleteRequests, batchWrite } from '#shared/db/batch';
import {
  adminConsentKey,
  apiTokenKey,
  authorizationCodeKey,
  grantTokenKey,
  itemAttributes,
  oauthFlowKey,
  providerTokensKey,
  tokensOfGrant,
} from '#shared/db/keys';
import type { ApplicationId, GrantId } from '#shared/ids';

/**
 * The records of connected accounts: hosted OAuth flows in progress (by the hash of the `state` we
 * sent the provider), authorization codes handed to applications (by hash, single use), the access
 * and refresh tokens Switchboard issues (by hash, with a copy under their grant), each connected
 * grant's tokens at its provider (sealed, with the refresh lease), and admin consents. No secret is
 * stored in plaintext here: codes and tokens as SHA-256, provider tokens and PKCE verifiers sealed.
 */

export interface OAuthFlowRecord {
  application_id: ApplicationId;
  provider: string;
  response_type: 'code' | 'adminconsent';
  redirect_uri: string;
  /** The application's `state`, handed back unmodified. */
  app_state?: string;
  scope: string[];
  access_type: 'online' | 'offline';
  login_hint?: string;
  /** The application's PKCE challenge (public clients), checked at the token exchange. */
  code_challenge?: string;
  code_challenge_method?: 'plain' | 'S256';
  credential_id?: string;
  /** Sealed `{code_verifier, nonce}` of our request to the provider. */
  sealed: string;
  ip?: string;
  user_agent?: string;
  created_at: number;
  /** TTL. */
  expires_at: number;
}

export interface AuthorizationCodeRecord {
  application_id: ApplicationId;
  grant_id: GrantId;
  provider: string;
  email: string;
  redirect_uri: string;
  scope: string[];
  access_type: 'online' | 'offline';
  code_challenge?: string;
  code_challenge_method?: 'plain' | 'S256';
  created_at: number;
  /** TTL, and the code's expiry (checked: TTL deletion is lazy). */
  expires_at: number;
  used_at?: number;
}

export type ApiTokenKind = 'access' | 'refresh';

export interface ApiTokenRecord {
  kind: ApiTokenKind;
  application_id: ApplicationId;
  grant_id: GrantId;
  scope: string[];
  /** Every token descended from one authorization code shares it: a replayed code revokes them all. */
  family: string;
  created_at: number;
  /** Access tokens: their expiry (and TTL). Refresh tokens do not expire by time. */
  expires_at?: number;
}

export interface ProviderTokensRecord {
  grant_id: GrantId;
  application_id: ApplicationId;
  provider: string;
  /**
   * How new provider tokens are obtained: a refresh token (hosted OAuth), a service account, or client
   * credentials; `password`: an IMAP account's passwords, nothing to refresh.
   */
  source: 'oauth' | 'serviceaccount' | 'adminconsent' | 'password';
  credential_id?: string;
  /** Sealed `{access_token, refresh_token?}`, or (`password`) `{imap_password, smtp_password}`. */
  sealed: string;
  /** When the provider's access token expires (Unix seconds), if it said. */
  access_expires_at?: number;
  scope: string[];
  version: number;
  /** The refresh lease: who refreshes now, and until when. */
  lease_id?: string;
  lease_until?: number;
  /** Transient failures in a row, and when the next attempt may run (backoff). */
  failures?: number;
  retry_at?: number;
  updated_at: number;
}

export interface AdminConsentRecord {
  application_id: ApplicationId;
  provider: string;
  credential_id: string;
  tenant?: string;
  consented_at: number;
}

const isConditionFailure = (error: unknown) => error instanceof ConditionalCheckFailedException;

// ---- flows -----------------------------------------------------------------------------------

export async function putFlow(stateHash: string, record: OAuthFlowRecord): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: TABLE_NAME,
      Item: { ...oauthFlowKey(stateHash), entity: 'oauth_flow', ...record },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
}

/** Takes a flow (deleting it: a `state` is used once); undefined when unknown, used or expired. */
export async function takeFlow(stateHash: string, now: number): Promise<OAuthFlowRecord | undefined> {
  try {
    const { Attributes } = await dynamo.send(
      new DeleteCommand({
        TableName: TABLE_NAME,
        Key: oauthFlowKey(stateHash),
        ConditionExpression: 'attribute_exists(pk)',
        ReturnValues: 'ALL_OLD',
      }),
    );
    const record = Attributes ? itemAttributes<OAuthFlowRecord>(Attributes, 'entity') : undefined;
    return record && record.expires_at > now ? record : undefined;
  } catch (error) {
    if (isConditionFailure(error)) return undefined;
    throw error;
  }
}

// ---- authorization codes -----------------------------------------------------------------------

export const codePut = (codeHash: string, record: AuthorizationCodeRecord): TransactItem => ({
  Put: {
    TableName: TABLE_NAME,
    Item: { ...authorizationCodeKey(codeHash), entity: 'authorization_code', ...record },
    ConditionExpression: 'attribute_not_exists(pk)',
  },
});

export async function putCode(codeHash: string, record: AuthorizationCodeRecord): Promise<void> {
  await dynamo.send(new PutCommand(codePut(codeHash, record).Put!));
}

/**
 * Uses a code once: marks it used and answers it; `replayed` when it had been used before (the
 * tokens issued from it must then be revoked), undefined when unknown.
 */
export async function useCode(
  codeHash: string,
  now: number,
): Promise<{ record: AuthorizationCodeRecord; replayed: boolean } | undefined> {
  try {
    const { Attributes } = await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: authorizationCodeKey(codeHash),
        UpdateExpression: 'SET used_at = :now',
        ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(used_at)',
        ExpressionAttributeValues: { ':now': now },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return { record: itemAttributes<AuthorizationCodeRecord>(Attributes!, 'entity'), replayed: false };
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
    const { Item } = await dynamo.send(
      new GetCommand({ TableName: TABLE_NAME, Key: authorizationCodeKey(codeHash), ConsistentRead: true }),
    );
    return Item ? { record: itemAttributes<AuthorizationCodeRecord>(Item, 'entity'), replayed: true } : undefined;
  }
}

// ---- issued tokens ---------------------------------------------------------------------------

/** The items that issue a token: by hash, and its copy under the grant. */
export function tokenPuts(tokenHash: string, record: ApiTokenRecord): TransactItem[] {
  // `expires_at` is the table's TTL attribute: expired access tokens go by themselves.
  const ttl = record.expires_at !== undefined ? { expires_at: record.expires_at } : {};
  return [
    {
      Put: {
        TableName: TABLE_NAME,
        Item: { ...apiTokenKey(tokenHash), entity: 'api_token', ...record },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    {
      Put: {
        TableName: TABLE_NAME,
        Item: {
          ...grantTokenKey(record.grant_id, tokenHash),
          entity: 'grant_token',
          kind: record.kind,
          family: record.family,
          application_id: record.application_id,
          ...ttl,
        },
      },
    },
  ];
}

export async function getToken(tokenHash: string): Promise<ApiTokenRecord | undefined> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: apiTokenKey(tokenHash) }));
  return Item ? itemAttributes<ApiTokenRecord>(Item, 'entity') : undefined;
}

/** The delete of a token that must exist (a refresh token rotated once: a second use fails). */
export const tokenTake = (tokenHash: string): TransactItem => ({
  Delete: { TableName: TABLE_NAME, Key: apiTokenKey(tokenHash), ConditionExpression: 'attribute_exists(pk)' },
});

/** Hashes of the tokens issued for a grant (optionally of one family). */
export async function tokensOf(
  grantId: GrantId,
  family?: string,
): Promise<{ hash: string; kind: ApiTokenKind; family: string }[]> {
  const found: { hash: string; kind: ApiTokenKind; family: string }[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.send(
      new QueryCommand({
        TableName: TABLE_NAME,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': tokensOfGrant(grantId).pk, ...(family ? { ':family': family } : {}) },
        ...(family ? { FilterExpression: '#family = :family', ExpressionAttributeNames: { '#family': 'family' } } : {}),
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? [])
      found.push({ hash: String(item.sk), kind: item.kind as ApiTokenKind, family: String(item.family) });
    start = page.LastEvaluatedKey;
  } while (start);
  return found;
}

/** Revokes tokens by hash (both items each); idempotent. */
export async function deleteTokens(grantId: GrantId, hashes: readonly string[]): Promise<void> {
  if (!hashes.length) return;
  await batchWrite(deleteRequests(hashes.flatMap((hash) => [apiTokenKey(hash), grantTokenKey(grantId, hash)])));
}

// ---- provider tokens ---------------------------------------------------------------------------

const providerTokensItem = (record: ProviderTokensRecord) => ({
  ...providerTokensKey(record.grant_id),
  entity: 'provider_tokens',
  ...record,
});

/** The put of a grant's provider tokens, in the transaction that creates or re-authenticates it. */
export const providerTokensPut = (record: ProviderTokensRecord): TransactItem => ({
  Put: { TableName: TABLE_NAME, Item: providerTokensItem(record) },
});
export async function deleteProviderTokens(grantId: GrantId): Promise<void> {
  await dynamo.send(new DeleteCommand({ TableName: TABLE_NAME, Key: providerTokensKey(grantId) }));
}

export async function getProviderTokens(
  grantId: GrantId,
  consistent = false,
): Promise<ProviderTokensRecord | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: providerTokensKey(grantId), ConsistentRead: consistent }),
  );
  return Item ? itemAttributes<ProviderTokensRecord>(Item, 'entity') : undefined;
}

/**
 * Takes the refresh lease of a grant's provider tokens: a conditional write that succeeds for one
 * caller while the lease is free or lapsed. Answers the record as it is once taken (re-read:
 * another worker may have refreshed just before), or undefined when someone else holds it.
 */
export async function takeRefreshLease(
  grantId: GrantId,
  leaseId: string,
  now: number,
  seconds: number,
): Promise<ProviderTokensRecord | undefined> {
  try {
    const { Attributes } = await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: providerTokensKey(grantId),
        UpdateExpression: 'SET lease_id = :id, lease_until = :until',
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(lease_until) OR lease_until < :now)',
        ExpressionAttributeValues: { ':id': leaseId, ':until': now + seconds, ':now': now },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return itemAttributes<ProviderTokensRecord>(Attributes!, 'entity');
  } catch (error) {
    if (isConditionFailure(error)) return undefined;
    throw error;
  }
}

/** Stores refreshed tokens under the lease and a version check, releasing the lease; false when the lease was lost. */
export async function storeRefreshed(
  current: ProviderTokensRecord,
  next: Pick<ProviderTokensRecord, 'sealed' | 'access_expires_at' | 'scope' | 'updated_at'>,
  leaseId: string,
): Promise<boolean> {
  const sets = ['sealed = :sealed', '#scope = :scope', 'updated_at = :now', 'version = :next'];
  const removes = ['lease_id', 'lease_until', 'failures', 'retry_at'];
  if (next.access_expires_at !== undefined) sets.push('access_expires_at = :expires');
  else removes.push('access_expires_at');
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: providerTokensKey(current.grant_id),
        UpdateExpression: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`,
        ConditionExpression: 'lease_id = :lease AND version = :version',
        ExpressionAttributeNames: { '#scope': 'scope' },
        ExpressionAttributeValues: {
          ':sealed': next.sealed,
          ':scope': next.scope,
          ':now': next.updated_at,
          ':next': current.version + 1,
          ':lease': leaseId,
          ':version': current.version,
          ...(next.access_expires_at !== undefined ? { ':expires': next.access_expires_at } : {}),
        },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** Gives the lease back without a change (someone else refreshed meanwhile). */
export async function releaseLease(grantId: GrantId, leaseId: string): Promise<void> {
  try {
    await dynamo.send(new UpdateCommand(leaseHeld(grantId, leaseId).Update!));
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
  }
}

/** Records a transient failure under the lease (backoff until `retryAt`) and releases the lease. */
export async function recordRefreshFailure(
  grantId: GrantId,
  leaseId: string,
  failures: number,
  retryAt: number,
): Promise<void> {
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: providerTokensKey(grantId),
        UpdateExpression: 'SET failures = :failures, retry_at = :retry REMOVE lease_id, lease_until',
        ConditionExpression: 'lease_id = :lease',
        ExpressionAttributeValues: { ':failures': failures, ':retry': retryAt, ':lease': leaseId },
      }),
    );
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
  }
}

/** The condition that the lease is still ours, for the transaction that marks a grant invalid. */
export const leaseHeld = (grantId: GrantId, leaseId: string): TransactItem => ({
  Update: {
    TableName: TABLE_NAME,
    Key: providerTokensKey(grantId),
    UpdateExpression: 'REMOVE lease_id, lease_until',
    ConditionExpression: 'lease_id = :lease',
    ExpressionAttributeValues: { ':lease': leaseId },
  },
});

// ---- admin consent -------------------------------------------------------------------------------

export async function putAdminConsent(record: AdminConsentRecord): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: TABLE_NAME,
      Item: {
        ...adminConsentKey(record.application_id, record.provider, record.credential_id),
        entity: 'admin_consent',
        ...record,
      },
    }),
  );
}

export async function getAdminConsent(
  appId: ApplicationId,
  provider: string,
  credentialId: string,
): Promise<AdminConsentRecord | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({
      TableName: TABLE_NAME,
      Key: adminConsentKey(appId, provider, credentialId),
      ConsistentRead: true,
    }),
  );
  return Item ? itemAttributes<AdminConsentRecord>(Item, 'entity') : undefined;
}
