import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { TABLE_NAME, dynamo, type TransactItem } from '#shared/aws/dynamodb';
import { batchGet, batchWrite, deleteRequests } from '#shared/db/batch';
import {
  applicationPartition,
  defaultWorkspaceGuardKey,
  evaluationKey,
  evaluationsOfGrant,
  governanceKey,
  itemAttributes,
  itemsOfList,
  listItemKey,
  listKey,
  listsOfApplication,
  policiesOfApplication,
  policyKey,
  ruleKey,
  rulesOfApplication,
  workspaceKey,
  workspacesOfApplication,
  type Key,
} from '#shared/db/keys';
import { outboxItems, type OutboxEntry } from '#shared/db/outbox';
import { listRecords, queryAll, type StartKey } from '#shared/db/records';
import { TransactionConditionError, transactWrite, type NamedTransactItem } from '#shared/db/transact';
import type { ApplicationId, EvaluationId, GrantId, ListId, PolicyId, RuleId, WorkspaceId } from '#shared/ids';
import type { PolicyLimits, RULE_ACTIONS, RULE_FIELDS } from '#schemas/governance';

/**
 * Repositories of an application's governance: lists and their items, rules, workspaces, the
 * governance version, and rule evaluations. Every change to a list, rule or workspace adds one to
 * the application's version in its own transaction (`bump`); list items do not, because a decision
 * looks each value up by key anyway.
 */
export type ListType = 'domain' | 'tld' | 'address';

export interface ListRecord {
  id: ListId;
  application_id: ApplicationId;
  name: string;
  description?: string;
  type: ListType;
  items_count: number;
  created_at: number;
  updated_at: number;
}

export interface ListItemRecord {
  id: string;
  list_id: ListId;
  value: string;
  created_at: number;
}

export interface RuleCondition {
  field: (typeof RULE_FIELDS)[number];
  operator: 'is' | 'is_not' | 'contains' | 'in_list';
  value: string | string[];
}

export interface RuleRecord {
  id: RuleId;
  application_id: ApplicationId;
  name: string;
  description?: string;
  priority: number;
  enabled: boolean;
  trigger: 'inbound' | 'outbound';
  match: { operator: 'any' | 'all'; conditions: RuleCondition[] };
  actions: { type: (typeof RULE_ACTIONS)[number]; value?: string }[];
  created_at: number;
  updated_at: number;
}

export interface WorkspaceRecord {
  id: WorkspaceId;
  application_id: ApplicationId;
  name: string;
  default: boolean;
  domain?: string;
  auto_group: boolean;
  policy_id: string | null;
  rule_ids: RuleId[];
  created_at: number;
  updated_at: number;
}

const ENTITY = ['entity'] as const;
const bump = (appId: ApplicationId): NamedTransactItem => [
  'governance_version',
  {
    Update: {
      TableName: TABLE_NAME,
      Key: governanceKey(appId),
      UpdateExpression: 'ADD version :one',
      ExpressionAttributeValues: { ':one': 1 },
    },
  },
];

/** The application's governance version (0 before any change). */
export async function governanceVersion(appId: ApplicationId): Promise<number> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: governanceKey(appId), ConsistentRead: true }),
  );
  return (Item?.version as number | undefined) ?? 0;
}

async function getItem<T>(key: Key): Promise<T | undefined> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: key, ConsistentRead: true }));
  return Item ? itemAttributes<T>(Item, ...ENTITY) : undefined;
}

async function allOf<T>(appId: ApplicationId, prefix: string): Promise<T[]> {
  const { items } = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': applicationPartition(appId), ':prefix': prefix },
  });
  return items.map((i) => itemAttributes<T>(i, ...ENTITY));
}

/** Whether a transaction failed on one of the named conditions. */
const failedOn = (error: unknown, ...names: string[]) =>
  error instanceof TransactionConditionError && error.has(...names);

/**
 * Stores a rule, workspace or policy with the version bump: new (its ID not taken), or replacing the
 * version read (`expected`). False when that condition failed (a lost race, or it is gone).
 */
async function putEntity(
  entity: string,
  key: Key,
  record: { application_id: ApplicationId; updated_at: number },
  expected?: { updated_at: number },
): Promise<boolean> {
  try {
    await transactWrite([
      [
        entity,
        {
          Put: {
            TableName: TABLE_NAME,
            Item: { ...key, entity, ...record },
            ConditionExpression: expected ? 'updated_at = :seen' : 'attribute_not_exists(pk)',
            ExpressionAttributeValues: expected ? { ':seen': expected.updated_at } : undefined,
          },
        },
      ],
      bump(record.application_id),
    ]);
    return true;
  } catch (error) {
    if (failedOn(error, entity)) return false;
    throw error;
  }
}

/** Deletes a rule, workspace or policy with the version bump; false when it does not exist (or `condition` fails). */
async function deleteEntity(
  entity: string,
  appId: ApplicationId,
  key: Key,
  condition?: { expression: string; names: Record<string, string>; values: Record<string, unknown> },
): Promise<boolean> {
  try {
    await transactWrite([
      [
        entity,
        {
          Delete: {
            TableName: TABLE_NAME,
            Key: key,
            ConditionExpression: `attribute_exists(pk)${condition ? ` AND ${condition.expression}` : ''}`,
            ...(condition
              ? { ExpressionAttributeNames: condition.names, ExpressionAttributeValues: condition.values }
              : {}),
          },
        },
      ],
      bump(appId),
    ]);
    return true;
  } catch (error) {
    if (failedOn(error, entity)) return false;
    throw error;
  }
}

// ------------------------------------------------------------------------------------------------
// Lists

export const getList = (appId: ApplicationId, id: ListId) => getItem<ListRecord>(listKey(appId, id));
export const allLists = (appId: ApplicationId) => allOf<ListRecord>(appId, listsOfApplication(appId).skPrefix);

/**
 * A page of up to `limit` items of one key condition and where the next page starts: set only when
 * another item follows (one more is read to know), so the last page carries no cursor.
 */
async function pageOf(
  query: { KeyConditionExpression: string; ExpressionAttributeValues: Record<string, unknown> },
  options: { limit: number; start?: StartKey },
) {
  const { Items = [], LastEvaluatedKey } = await dynamo.send(
    new QueryCommand({ TableName: TABLE_NAME, ...query, Limit: options.limit + 1, ExclusiveStartKey: options.start }),
  );
  const items = Items.slice(0, options.limit);
  const last = items.at(-1);
  const more = Items.length > options.limit || LastEvaluatedKey !== undefined;
  return {
    items,
    next: more ? ((last ? { pk: last.pk, sk: last.sk } : LastEvaluatedKey) as StartKey | undefined) : undefined,
  };
}

/** A page of lists, oldest first (IDs sort by creation). */
export async function listLists(appId: ApplicationId, options: { limit: number; start?: StartKey }) {
  const page = await pageOf(
    {
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': listsOfApplication(appId).pk, ':prefix': listsOfApplication(appId).skPrefix },
    },
    options,
  );
  return { items: page.items.map((i) => itemAttributes<ListRecord>(i, ...ENTITY)), next: page.next };
}

export async function insertList(record: ListRecord): Promise<void> {
  await transactWrite([
    [
      'list',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: { ...listKey(record.application_id, record.id), entity: 'list', ...record },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    ],
    bump(record.application_id),
  ]);
}

/** Changes a list's name and description (never its count); false when it does not exist. */
export async function updateList(
  appId: ApplicationId,
  id: ListId,
  changes: { name?: string; description?: string },
  now: number,
): Promise<boolean> {
  const sets = [
    'updated_at = :now',
    ...(changes.name !== undefined ? ['#n = :name'] : []),
    ...(changes.description !== undefined ? ['description = :d'] : []),
  ];
  try {
    await transactWrite([
      [
        'list',
        {
          Update: {
            TableName: TABLE_NAME,
            Key: listKey(appId, id),
            UpdateExpression: `SET ${sets.join(', ')}`,
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeNames: changes.name !== undefined ? { '#n': 'name' } : undefined,
            ExpressionAttributeValues: {
              ':now': now,
              ...(changes.name !== undefined ? { ':name': changes.name } : {}),
              ...(changes.description !== undefined ? { ':d': changes.description } : {}),
            },
          },
        },
      ],
      bump(appId),
    ]);
    return true;
  } catch (error) {
    if (failedOn(error, 'list')) return false;
    throw error;
  }
}

/** Deletes a list with the job that removes its items; false when it does not exist. */
export async function deleteList(appId: ApplicationId, id: ListId, outbox: readonly OutboxEntry[]): Promise<boolean> {
  try {
    await transactWrite([
      [
        'list',
        { Delete: { TableName: TABLE_NAME, Key: listKey(appId, id), ConditionExpression: 'attribute_exists(pk)' } },
      ],
      bump(appId),
      ...outboxItems(outbox),
    ]);
    return true;
  } catch (error) {
    if (failedOn(error, 'list')) return false;
    throw error;
  }
}

/** Which of `values` a list holds. */
export async function storedValues(listId: ListId, values: string[]): Promise<Set<string>> {
  const found = await batchGet<{ sk: string }>(values.map((v) => listItemKey(listId, v)));
  return new Set(found.map((f) => f.sk));
}

/** Membership of (list, value) pairs in one batch read. */
export async function membership(
  pairs: { listId: ListId; value: string }[],
): Promise<{ has(listId: ListId, value: string): boolean }> {
  const found = new Set<string>();
  if (pairs.length)
    for (const item of await batchGet<Key>(pairs.map((p) => listItemKey(p.listId, p.value))))
      found.add(`${item.pk}\u0000${item.sk}`);
  return {
    has: (listId, value) => {
      const key = listItemKey(listId, value);
      return found.has(`${key.pk}\u0000${key.sk}`);
    },
  };
}

export class ListGoneError extends Error {}

/**
 * Adds (sign 1) or removes (sign -1) values in transactions of at most 99 items plus the list's
 * count, so `items_count` moves exactly with the items committed. A value another request added or
 * removed meanwhile fails its condition: the chunk is retried without it. ListGoneError when the
 * list does not exist.
 */
export async function changeItems(
  appId: ApplicationId,
  listId: ListId,
  values: string[],
  sign: 1 | -1,
  now: number,
  newItem: (value: string) => ListItemRecord,
): Promise<void> {
  for (let i = 0; i < values.length; i += 99) {
    let chunk = values.slice(i, i + 99);
    while (chunk.length) {
      const items: NamedTransactItem[] = chunk.map((value, j): NamedTransactItem => [
        `item:${j}`,
        sign === 1
          ? {
              Put: {
                TableName: TABLE_NAME,
                Item: { ...listItemKey(listId, value), ...newItem(value) },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            }
          : {
              Delete: {
                TableName: TABLE_NAME,
                Key: listItemKey(listId, value),
                ConditionExpression: 'attribute_exists(pk)',
              },
            },
      ]);
      const counter: NamedTransactItem = [
        'list',
        {
          Update: {
            TableName: TABLE_NAME,
            Key: listKey(appId, listId),
            UpdateExpression: 'ADD items_count :n SET updated_at = :now',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeValues: { ':n': sign * chunk.length, ':now': now },
          },
        },
      ];
      try {
        await transactWrite([...items, counter]);
        break;
      } catch (error) {
        if (!(error instanceof TransactionConditionError)) throw error;
        if (error.has('list')) throw new ListGoneError();
        const taken = new Set(error.failed.filter((n) => n.startsWith('item:')).map((n) => Number(n.slice(5))));
        chunk = chunk.filter((_, j) => !taken.has(j));
      }
    }
  }
}

/** Deletes a deleted list's items a page at a time; 'more' when `outOfTime` stopped it first. */
export async function purgeListItems(listId: ListId, outOfTime: () => boolean): Promise<'done' | 'more'> {
  for (;;) {
    const page = await dynamo.send(
      new QueryCommand({
        TableName: TABLE_NAME,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': itemsOfList(listId) },
        ProjectionExpression: 'pk, sk',
        Limit: 1000,
      }),
    );
    const keys = (page.Items ?? []) as Key[];
    if (!keys.length) return 'done';
    await batchWrite(deleteRequests(keys));
    if (outOfTime()) return 'more';
  }
}

/** A page of a list's items in value order. */
export async function listItems(listId: ListId, options: { limit: number; start?: StartKey }) {
  const page = await pageOf(
    { KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': itemsOfList(listId) } },
    options,
  );
  return { items: page.items.map((i) => itemAttributes<ListItemRecord>(i)), next: page.next };
}

// ------------------------------------------------------------------------------------------------
// Rules

export const getRule = (appId: ApplicationId, id: RuleId) => getItem<RuleRecord>(ruleKey(appId, id));
export const allRules = (appId: ApplicationId) => allOf<RuleRecord>(appId, rulesOfApplication(appId).skPrefix);

/** Stores a rule (new, or replacing the version read); false on a lost race or a missing rule. */
export const putRule = (record: RuleRecord, expected?: { updated_at: number }) =>
  putEntity('rule', ruleKey(record.application_id, record.id), record, expected);

export const deleteRule = (appId: ApplicationId, id: RuleId) => deleteEntity('rule', appId, ruleKey(appId, id));

// ------------------------------------------------------------------------------------------------
// Workspaces

export const getWorkspace = (appId: ApplicationId, id: WorkspaceId) =>
  getItem<WorkspaceRecord>(workspaceKey(appId, id));
export const allWorkspaces = (appId: ApplicationId) =>
  allOf<WorkspaceRecord>(appId, workspacesOfApplication(appId).skPrefix);

/** The guard that makes an application's default workspace one. */

/** Creates the default workspace unless the application has one; returns the one it has. */
export async function ensureDefaultWorkspace(record: WorkspaceRecord): Promise<WorkspaceRecord> {
  try {
    await transactWrite([
      [
        'guard',
        {
          Put: {
            TableName: TABLE_NAME,
            Item: { ...defaultWorkspaceGuardKey(record.application_id), workspace_id: record.id },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
      ],
      [
        'workspace',
        {
          Put: {
            TableName: TABLE_NAME,
            Item: { ...workspaceKey(record.application_id, record.id), entity: 'workspace', ...record },
          },
        },
      ],
      bump(record.application_id),
    ]);
    return record;
  } catch (error) {
    if (!failedOn(error, 'guard')) throw error;
    const guard = await getItem<{ workspace_id: WorkspaceId }>(defaultWorkspaceGuardKey(record.application_id));
    const existing = guard && (await getWorkspace(record.application_id, guard.workspace_id));
    if (!existing) throw error;
    return existing;
  }
}

export const putWorkspace = (record: WorkspaceRecord, expected?: { updated_at: number }) =>
  putEntity('workspace', workspaceKey(record.application_id, record.id), record, expected);

/** Deletes a workspace other than the default one. */
export const deleteWorkspace = (appId: ApplicationId, id: WorkspaceId) =>
  deleteEntity('workspace', appId, workspaceKey(appId, id), {
    expression: '#d = :false',
    names: { '#d': 'default' },
    values: { ':false': false },
  });

/** Puts a grant in a workspace (its record names it); false when the grant does not exist. */
export async function assignGrantWorkspace(grantKeyOf: Key, workspaceId: WorkspaceId): Promise<boolean> {
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: grantKeyOf,
        UpdateExpression: 'SET workspace_id = :w',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':w': workspaceId },
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

// ------------------------------------------------------------------------------------------------
// Policies

export interface PolicyRecord {
  id: PolicyId;
  application_id: ApplicationId;
  name: string;
  limits: PolicyLimits;
  rules: RuleId[];
  spam_detection: { use_list_dnsbl?: boolean; use_header_anomaly_detection?: boolean; spam_sensitivity?: number };
  created_at: number;
  updated_at: number;
}

export const getPolicy = (appId: ApplicationId, id: PolicyId) => getItem<PolicyRecord>(policyKey(appId, id));
export const allPolicies = (appId: ApplicationId) => allOf<PolicyRecord>(appId, policiesOfApplication(appId).skPrefix);

export const putPolicy = (record: PolicyRecord, expected?: { updated_at: number }) =>
  putEntity('policy', policyKey(record.application_id, record.id), record, expected);

export const deletePolicy = (appId: ApplicationId, id: PolicyId) => deleteEntity('policy', appId, policyKey(appId, id));

// ------------------------------------------------------------------------------------------------
// Rule evaluations

export interface EvaluationRecord {
  id: EvaluationId;
  application_id: ApplicationId;
  grant_id: GrantId;
  message_id: string | null;
  evaluated_at: number;
  evaluation_stage: 'smtp_rcpt' | 'inbox_processing' | 'outbound_send';
  evaluation_input: Record<string, unknown>;
  matched_rule_ids: string[];
  applied_actions: Record<string, unknown>;
}

/** How long evaluations are kept (README). */
export const EVALUATION_RETENTION_SECONDS = 30 * 86400;

export async function putEvaluation(record: EvaluationRecord): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: TABLE_NAME,
      Item: {
        ...evaluationKey(record.grant_id, record.id),
        entity: 'evaluation',
        ...record,
        expires_at: record.evaluated_at + EVALUATION_RETENTION_SECONDS,
      },
    }),
  );
}

export const evaluationPut = (record: EvaluationRecord): TransactItem => ({
  Put: {
    TableName: TABLE_NAME,
    Item: {
      ...evaluationKey(record.grant_id, record.id),
      entity: 'evaluation',
      ...record,
      expires_at: record.evaluated_at + EVALUATION_RETENTION_SECONDS,
    },
  },
});

export const listEvaluations = (grantId: GrantId, options: { limit: number; before?: string }) =>
  listRecords<EvaluationRecord>(evaluationsOfGrant(grantId).pk, options, 'entity', 'expires_at');
