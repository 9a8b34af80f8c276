import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo, type TransactItem } from '#shared/aws/dynamodb';
import { batchGet } from '#shared/db/batch';
import type { StartKey } from '#shared/db/records';
import { agentAddressKey, grantEmailKey, grantExternalIdKey, grantKey, grantsOfApplication } from '#shared/db/keys';
import { outboxItems, type OutboxEntry } from '#shared/db/outbox';
import { TransactionConditionError, transactWrite, type NamedItems, type NamedTransactItem } from '#shared/db/transact';
import type { ApplicationId, GrantId, WorkspaceId } from '#shared/ids';
import type { Provider } from '#shared/providers/names';

/** The providers a grant can belong to (shared/providers/names.ts, a leaf module of names only). */
export type { Provider };

/** `invalid`: the provider refused the grant's refresh token (`grant.expired`); re-authentication makes it valid again. */
export type GrantStatus = 'valid' | 'invalid';

export interface GrantRecord {
  id: GrantId;
  application_id: ApplicationId;
  provider: Provider;
  grant_status: GrantStatus;
  email: string;
  /** Agent Accounts: the default From display name. */
  name?: string;
  scope: string[];
  settings: Record<string, unknown>;
  ip?: string;
  user_agent?: string;
  created_at: number;
  updated_at: number;
  provider_user_id?: string;
  blocked: boolean;
  external_id?: string;
  /** Agent Accounts: the workspace whose rules and policy apply (shared/governance/workspaces.ts). */
  workspace_id?: WorkspaceId;
}

/** A uniqueness guard failed: the value is already taken. */
export class UniquenessConflictError extends Error {
  constructor(readonly constraint: 'email' | 'external_id' | 'agent_address') {
    super(`Uniqueness conflict on ${constraint}`);
    this.name = 'UniquenessConflictError';
  }
}

/** The item a conditional write expected is gone or changed (a concurrent update or delete). */
export class StaleWriteError extends Error {
  constructor() {
    super('The item changed or disappeared during the write');
    this.name = 'StaleWriteError';
  }
}

const GRANT_FIELDS = [
  'id',
  'application_id',
  'provider',
  'grant_status',
  'email',
  'name',
  'scope',
  'settings',
  'ip',
  'user_agent',
  'created_at',
  'updated_at',
  'provider_user_id',
  'blocked',
  'external_id',
  'workspace_id',
] as const;

function toRecord(item: Record<string, unknown>): GrantRecord {
  const record: Record<string, unknown> = {};
  for (const field of GRANT_FIELDS) if (item[field] !== undefined) record[field] = item[field];
  return record as unknown as GrantRecord;
}

const CONSTRAINTS = ['email', 'external_id', 'agent_address'] as const;

/** The uniqueness guard a failed transaction ran into, if that is why it failed. */
function uniquenessConflict(error: unknown): UniquenessConflictError | undefined {
  if (!(error instanceof TransactionConditionError)) return undefined;
  const constraint = CONSTRAINTS.find((name) => error.has(name));
  return constraint ? new UniquenessConflictError(constraint) : undefined;
}

const uniquePut = (key: { pk: string; sk: string }, entity: string, grant: GrantRecord): TransactItem => ({
  Put: {
    TableName: TABLE_NAME,
    Item: { ...key, entity, application_id: grant.application_id, grant_id: grant.id },
    ConditionExpression: 'attribute_not_exists(pk)',
  },
});

const uniqueDelete = (key: { pk: string; sk: string }, grantId: GrantId): TransactItem => ({
  Delete: {
    TableName: TABLE_NAME,
    Key: key,
    ConditionExpression: 'grant_id = :gid',
    ExpressionAttributeValues: { ':gid': grantId },
  },
});

/** Reserves a hosted mailbox's address across the deployment (committed with its grant). */
export const agentAddressReservation = (grant: GrantRecord): NamedTransactItem => [
  'agent_address',
  uniquePut(agentAddressKey(grant.email), 'agent_address', grant),
];
/** Releases that reservation (committed with the grant's deletion). */
export const agentAddressRelease = (grant: GrantRecord): NamedTransactItem => [
  'agent_address',
  uniqueDelete(agentAddressKey(grant.email), grant.id),
];

/**
 * Inserts a grant with its uniqueness items (email within the app, external ID) and the items its
 * provider commits with it (`extra`: an address reservation, initial folders), all or nothing.
 */
export async function insertGrant(
  grant: GrantRecord,
  extra: NamedItems = [],
  outbox: readonly OutboxEntry[] = [],
): Promise<void> {
  const items: [string, TransactItem][] = [
    [
      'grant',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: { ...grantKey(grant.application_id, grant.id), entity: 'grant', ...grant },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    ],
    ['email', uniquePut(grantEmailKey(grant.application_id, grant.email), 'grant_email', grant)],
  ];
  if (grant.external_id !== undefined)
    items.push([
      'external_id',
      uniquePut(grantExternalIdKey(grant.application_id, grant.external_id), 'grant_external_id', grant),
    ]);
  try {
    await transactWrite([...items, ...extra, ...outboxItems(outbox)]);
  } catch (error) {
    throw uniquenessConflict(error) ?? error;
  }
}

export async function getGrant(appId: ApplicationId, grantId: GrantId): Promise<GrantRecord | undefined> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: grantKey(appId, grantId) }));
  return Item ? toRecord(Item) : undefined;
}

/** Grants by key, in one batch read (those that do not exist are left out). */
export async function getGrants(
  keys: readonly { applicationId: ApplicationId; grantId: GrantId }[],
): Promise<GrantRecord[]> {
  return (await batchGet(keys.map((k) => grantKey(k.applicationId, k.grantId)))).map(toRecord);
}

async function getByUniqueItem(
  appId: ApplicationId,
  key: { pk: string; sk: string },
): Promise<GrantRecord | undefined> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: key }));
  if (!Item) return undefined;
  return getGrant(appId, Item.grant_id as GrantId);
}

export const getGrantByEmail = (appId: ApplicationId, email: string) =>
  getByUniqueItem(appId, grantEmailKey(appId, email));

export const getGrantByExternalId = (appId: ApplicationId, externalId: string) =>
  getByUniqueItem(appId, grantExternalIdKey(appId, externalId));

/** Which application and grant own an Agent Account address (deployment-wide). */
export async function getAgentAddressOwner(
  email: string,
): Promise<{ application_id: ApplicationId; grant_id: GrantId } | undefined> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: agentAddressKey(email) }));
  return Item
    ? { application_id: Item.application_id as ApplicationId, grant_id: Item.grant_id as GrantId }
    : undefined;
}

/**
 * The Agent Account grants that own these addresses (one grant once, however many of its addresses
 * are listed) and the addresses no Agent Account of this deployment has: two BatchGetItems.
 */
export async function resolveAgentAddresses(emails: string[]): Promise<{ grants: GrantRecord[]; unknown: string[] }> {
  const addresses = [...new Set(emails)];
  const owners = await batchGet<{ pk: string; application_id: ApplicationId; grant_id: GrantId }>(
    addresses.map((email) => agentAddressKey(email)),
  );
  const owned = new Set(owners.map((o) => o.pk));
  const unknown = addresses.filter((email) => !owned.has(agentAddressKey(email).pk));
  const byGrant = new Map(owners.map((o) => [o.grant_id, o]));
  const grants = (await batchGet([...byGrant.values()].map((o) => grantKey(o.application_id, o.grant_id)))).map(
    toRecord,
  );
  return { grants, unknown };
}

export interface GrantListOptions {
  limit: number;
  offset: number;
  startKey?: StartKey;
  provider?: string;
  grantStatus?: string;
  /** created_at at or after / at or before (Unix seconds). */
  since?: number;
  before?: number;
  ip?: string;
  /** Oldest first (default: newest first). */
  ascending?: boolean;
}

/**
 * Grants of an application, newest first (or oldest first), optionally filtered by provider, status,
 * creation time and IP. Reads pages
 * until `offset + limit` matches plus one look-ahead are found, so `nextKey` is set only when more exist.
 */
export async function listGrants(
  appId: ApplicationId,
  options: GrantListOptions,
): Promise<{ items: GrantRecord[]; nextKey?: StartKey }> {
  const { pk, skPrefix } = grantsOfApplication(appId);
  const filters: string[] = [];
  const values: Record<string, unknown> = { ':pk': pk, ':prefix': skPrefix };
  const conditions: [expression: string, name: string, value: unknown][] = [
    ['provider = :provider', ':provider', options.provider],
    ['grant_status = :status', ':status', options.grantStatus],
    ['created_at >= :since', ':since', options.since],
    ['created_at <= :before', ':before', options.before],
    ['ip = :ip', ':ip', options.ip],
  ];
  for (const [expression, name, value] of conditions) {
    if (value === undefined) continue;
    filters.push(expression);
    values[name] = value;
  }
  const matches: Record<string, unknown>[] = [];
  let skipped = 0;
  let startKey: Record<string, unknown> | undefined = options.startKey;
  do {
    const page = await dynamo.send(
      new QueryCommand({
        TableName: TABLE_NAME,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        FilterExpression: filters.length ? filters.join(' AND ') : undefined,
        ExpressionAttributeValues: values,
        ScanIndexForward: options.ascending === true,
        ExclusiveStartKey: startKey,
        Limit: filters.length ? 500 : Math.min(500, options.offset - skipped + options.limit + 1 - matches.length),
      }),
    );
    for (const item of page.Items ?? []) {
      if (skipped < options.offset) skipped++;
      else matches.push(item);
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey && matches.length <= options.limit);

  const items = matches.slice(0, options.limit);
  const last = items.at(-1);
  const more = matches.length > options.limit;
  return {
    items: items.map(toRecord),
    nextKey: more && last ? { pk: last.pk as string, sk: last.sk as string } : undefined,
  };
}

export interface GrantChanges {
  blocked?: boolean;
  /** A string sets the external ID, null removes it. */
  external_id?: string | null;
  updated_at: number;
}

/**
 * Applies changes to a grant. Changing the external ID swaps its uniqueness item in the same
 * transaction, guarded on the grant still having the external ID we read.
 */
/** Updates a grant; `outbox` gives what to commit with it, from the updated grant (its grant.updated). */
export async function updateGrant(
  grant: GrantRecord,
  changes: GrantChanges,
  outbox: (next: GrantRecord) => readonly OutboxEntry[] = () => [],
): Promise<GrantRecord> {
  const key = grantKey(grant.application_id, grant.id);
  const sets = ['updated_at = :now'];
  const removes: string[] = [];
  const values: Record<string, unknown> = { ':now': changes.updated_at };
  const names: Record<string, string> = {};
  if (changes.blocked !== undefined) {
    sets.push('blocked = :blocked');
    values[':blocked'] = changes.blocked;
  }
  const externalChanges = changes.external_id !== undefined && changes.external_id !== (grant.external_id ?? null);
  const conditions = ['attribute_exists(pk)'];
  const items: [string, TransactItem][] = [];
  if (externalChanges) {
    if (grant.external_id === undefined) conditions.push('attribute_not_exists(external_id)');
    else {
      conditions.push('external_id = :old_external');
      values[':old_external'] = grant.external_id;
      items.push([
        'old_external_id',
        uniqueDelete(grantExternalIdKey(grant.application_id, grant.external_id), grant.id),
      ]);
    }
    if (changes.external_id === null) removes.push('external_id');
    else {
      sets.push('external_id = :external');
      values[':external'] = changes.external_id;
      items.push([
        'external_id',
        uniquePut(grantExternalIdKey(grant.application_id, changes.external_id!), 'grant_external_id', grant),
      ]);
    }
  }
  const update: TransactItem = {
    Update: {
      TableName: TABLE_NAME,
      Key: key,
      UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
      ConditionExpression: conditions.join(' AND '),
      ExpressionAttributeValues: values,
      ExpressionAttributeNames: Object.keys(names).length ? names : undefined,
    },
  };
  const next: GrantRecord = { ...grant, updated_at: changes.updated_at };
  if (changes.blocked !== undefined) next.blocked = changes.blocked;
  if (changes.external_id === null) delete next.external_id;
  else if (changes.external_id !== undefined) next.external_id = changes.external_id;
  try {
    await transactWrite([['grant', update], ...items, ...outboxItems(outbox(next))]);
  } catch (error) {
    const conflict = uniquenessConflict(error);
    if (conflict) throw conflict;
    if (error instanceof TransactionConditionError) throw new StaleWriteError();
    throw error;
  }
  return next;
}

/** What re-authenticating a connected grant changes (the same grant ID, valid again, new scopes and settings). */
export interface Reconnection {
  grant_status: 'valid';
  scope: string[];
  settings: Record<string, unknown>;
  provider_user_id?: string;
  name?: string;
  updated_at: number;
}

/**
 * Sets attributes of a grant that still exists, with the items its provider commits alongside
 * (`extra`) and the notifications of the result; StaleWriteError when the grant or a condition of
 * `extra` failed.
 */
async function setGrantFields(
  grant: GrantRecord,
  fields: Partial<GrantRecord>,
  extra: NamedItems,
  outbox: (next: GrantRecord) => readonly OutboxEntry[],
): Promise<GrantRecord> {
  const next: GrantRecord = { ...grant, ...fields };
  const entries = Object.entries(fields).filter(([, value]) => value !== undefined);
  try {
    await transactWrite([
      [
        'grant',
        {
          Update: {
            TableName: TABLE_NAME,
            Key: grantKey(grant.application_id, grant.id),
            // Names and values by position: `name` and `scope` are reserved words.
            UpdateExpression: `SET ${entries.map((_, i) => `#f${i} = :v${i}`).join(', ')}`,
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeNames: Object.fromEntries(entries.map(([name], i) => [`#f${i}`, name])),
            ExpressionAttributeValues: Object.fromEntries(entries.map(([, value], i) => [`:v${i}`, value])),
          },
        },
      ],
      ...extra,
      ...outboxItems(outbox(next)),
    ]);
  } catch (error) {
    if (error instanceof TransactionConditionError) throw new StaleWriteError();
    throw error;
  }
  return next;
}

/**
 * Re-authenticates a grant (hosted OAuth or bulk authentication of the same account again), with
 * the items its provider commits (new provider tokens); StaleWriteError if the grant is gone.
 */
export const reconnectGrant = (
  grant: GrantRecord,
  changes: Reconnection,
  extra: NamedItems,
  outbox: (next: GrantRecord) => readonly OutboxEntry[],
) => setGrantFields(grant, changes, extra, outbox);

/**
 * Sets a grant's status with what its provider commits alongside (`extra`, e.g. the condition that
 * the refresh lease is still held); StaleWriteError when the grant or a condition of `extra` failed.
 */
export const setGrantStatus = (
  grant: GrantRecord,
  status: GrantStatus,
  updatedAt: number,
  extra: NamedItems,
  outbox: (next: GrantRecord) => readonly OutboxEntry[],
) => setGrantFields(grant, { grant_status: status, updated_at: updatedAt }, extra, outbox);

/**
 * Deletes a grant and its uniqueness items together, with the items its provider releases
 * (`extra`); StaleWriteError if it was already gone.
 */
export async function deleteGrant(
  grant: GrantRecord,
  extra: NamedItems = [],
  outbox: readonly OutboxEntry[] = [],
): Promise<void> {
  const items: [string, TransactItem][] = [
    [
      'grant',
      {
        Delete: {
          TableName: TABLE_NAME,
          Key: grantKey(grant.application_id, grant.id),
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
    ],
    ['email', uniqueDelete(grantEmailKey(grant.application_id, grant.email), grant.id)],
  ];
  if (grant.external_id !== undefined)
    items.push(['external_id', uniqueDelete(grantExternalIdKey(grant.application_id, grant.external_id), grant.id)]);
  try {
    await transactWrite([...items, ...extra, ...outboxItems(outbox)]);
  } catch (error) {
    if (error instanceof TransactionConditionError) throw new StaleWriteError();
    throw error;
  }
}
