import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { batchGet, batchWrite, putRequests } from '#shared/db/batch';
import type { StartKey } from '#shared/db/records';
import { attemptKey, attemptsOfWebhook, itemAttributes, statsBucket, statsFrom, statsHourStart, statsKey, statsMinute, statsOfWebhook, webhookKey, webhookRegistry, webhookRegistryKey, webhooksOfApplication } from '#shared/db/keys';
import { VersionConflictError, deletePartition, getRecord, listRecords, queryAll, replaceRecord } from '#shared/db/records';
import { outboxItems, type OutboxEntry } from '#shared/db/outbox';
import { TransactionConditionError, transactWrite } from '#shared/db/transact';
import type { ApplicationId, WebhookId } from '#shared/ids';

/** Webhook destinations, their delivery attempts and the counters the health check reads. */
export type WebhookStatus = 'active' | 'inactive' | 'failing' | 'failed';

export interface WebhookRecord {
  id: WebhookId;
  application_id: ApplicationId;
  description: string;
  trigger_types: string[];
  webhook_url: string;
  status: WebhookStatus;
  notification_email_addresses: string[];
  compressed_delivery: boolean;
  /** AES-GCM ciphertext of the signing secret (shared/webhooks/secrets.ts). */
  secret: string;
  status_updated_at: number;
  created_at: number;
  updated_at: number;
  version: number;
}

export interface AttemptRecord {
  id: string;
  webhook_id: WebhookId;
  notification_id: string;
  trigger_type: string;
  attempt: number;
  outcome: 'delivered' | 'retrying' | 'failed' | 'given_up';
  status_code: number | null;
  duration_ms: number;
  error?: string;
  time: number;
}

const BOOKKEEPING = ['entity', 'expires_at'];
const strip = <T>(item: Record<string, unknown>) => itemAttributes<T>(item, ...BOOKKEEPING);

export async function insertWebhook(record: WebhookRecord): Promise<void> {
  await transactWrite([
    ['webhook', { Put: { TableName: TABLE_NAME, Item: { ...webhookKey(record.application_id, record.id), entity: 'webhook', ...record }, ConditionExpression: 'attribute_not_exists(pk)' } }],
    ['registry', { Put: { TableName: TABLE_NAME, Item: { ...webhookRegistryKey(record.id), application_id: record.application_id } } }],
  ]);
}

export const getWebhook = (appId: ApplicationId, webhookId: WebhookId) => getRecord<WebhookRecord>(webhookKey(appId, webhookId), ...BOOKKEEPING);

/** Every page of an application's destinations: their items, or only their count. */
async function applicationWebhooks(appId: ApplicationId, select: 'ALL_ATTRIBUTES' | 'COUNT'): Promise<{ items: WebhookRecord[]; count: number }> {
  const { pk, skPrefix } = webhooksOfApplication(appId);
  const { items, count } = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': pk, ':prefix': skPrefix },
    ScanIndexForward: false,
    Select: select,
  });
  return { items: items.map((i) => strip<WebhookRecord>(i)), count };
}

/** All destinations of an application (tens at most, in the application's partition), newest first. */
export const listWebhooks = async (appId: ApplicationId) => (await applicationWebhooks(appId, 'ALL_ATTRIBUTES')).items;

/** How many destinations an application has (a count, not the items). */
export const countWebhooks = async (appId: ApplicationId) => (await applicationWebhooks(appId, 'COUNT')).count;

/** Replaces a destination if it still has the version read (VersionConflictError otherwise). */
export const replaceWebhook = (before: WebhookRecord, after: WebhookRecord) =>
  replaceRecord(webhookKey(after.application_id, after.id), { entity: 'webhook', ...after }, before.version);

/** Deletes a destination and its registry entry; VersionConflictError if it was already gone. */
export async function deleteWebhook(record: WebhookRecord, outbox: readonly OutboxEntry[] = []): Promise<void> {
  try {
    await transactWrite([
      ['webhook', { Delete: { TableName: TABLE_NAME, Key: webhookKey(record.application_id, record.id), ConditionExpression: 'attribute_exists(pk)' } }],
      ['registry', { Delete: { TableName: TABLE_NAME, Key: webhookRegistryKey(record.id) } }],
      ...outboxItems(outbox),
    ]);
  } catch (error) {
    if (error instanceof TransactionConditionError) throw new VersionConflictError();
    throw error;
  }
}

/** A page of the registry: (webhook, application) pairs for the health sweep. */
export async function registryPage(start?: StartKey): Promise<{ entries: { webhook_id: WebhookId; application_id: ApplicationId }[]; next?: StartKey }> {
  const page = await dynamo.send(
    new QueryCommand({ TableName: TABLE_NAME, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': webhookRegistry().pk }, ExclusiveStartKey: start, Limit: 200 }),
  );
  return {
    entries: (page.Items ?? []).map((i) => ({ webhook_id: i.sk as WebhookId, application_id: i.application_id as ApplicationId })),
    next: page.LastEvaluatedKey as StartKey | undefined,
  };
}

const ATTEMPT_TTL = 30 * 86400;
const STATS_TTL = 4 * 86400;

/**
 * Records attempts (one BatchWriteItem per 25) and counts them: one UpdateItem per destination and
 * hour, adding to the hour's totals and to each minute's counts inside the same item.
 */
export async function recordAttempts(attempts: AttemptRecord[]): Promise<void> {
  if (!attempts.length) return;
  const counters = new Map<string, { key: ReturnType<typeof statsKey>; add: Map<string, number>; expires: number }>();
  for (const a of attempts) {
    const key = statsKey(a.webhook_id, a.time);
    const id = `${key.pk} ${key.sk}`;
    const c = counters.get(id) ?? { key, add: new Map<string, number>(), expires: a.time + STATS_TTL };
    const failure = a.outcome === 'delivered' ? 0 : 1;
    const minute = statsMinute(a.time);
    for (const [name, n] of [['attempts', 1], ['failures', failure], [minute.attempts, 1], [minute.failures, failure]] as const) c.add.set(name, (c.add.get(name) ?? 0) + n);
    counters.set(id, c);
  }
  await Promise.all([
    batchWrite(putRequests(attempts.map((a) => ({ ...attemptKey(a.webhook_id, a.id), ...a, expires_at: a.time + ATTEMPT_TTL })))),
    ...[...counters.values()].map((c) => {
      const names = [...c.add.keys()];
      return dynamo.send(
        new UpdateCommand({
          TableName: TABLE_NAME,
          Key: c.key,
          UpdateExpression: `ADD ${names.map((_, i) => `#n${i} :v${i}`).join(', ')} SET expires_at = if_not_exists(expires_at, :exp)`,
          ExpressionAttributeNames: Object.fromEntries(names.map((name, i) => [`#n${i}`, name])),
          ExpressionAttributeValues: { ...Object.fromEntries(names.map((name, i) => [`:v${i}`, c.add.get(name)!])), ':exp': c.expires },
        }),
      );
    }),
  ]);
}

/** Destinations by ID, in one request (the delivery worker reads its batch's destinations together). */
export async function getWebhooks(keys: { application_id: ApplicationId; webhook_id: WebhookId }[]): Promise<Map<string, WebhookRecord>> {
  const unique = [...new Map(keys.map((k) => [k.webhook_id, k])).values()];
  const items = await batchGet<Record<string, unknown>>(unique.map((k) => webhookKey(k.application_id, k.webhook_id)));
  return new Map(items.map((i) => strip<WebhookRecord>(i)).map((w) => [w.id, w]));
}

export async function listAttempts(webhookId: WebhookId, limit: number, before?: string): Promise<{ items: AttemptRecord[]; last?: string }> {
  return listRecords<AttemptRecord>(attemptsOfWebhook(webhookId).pk, { limit, before }, ...BOOKKEEPING);
}

/** Deletes a destination's attempt log and counters (the jobs worker, after the destination is deleted). */
export async function purgeWebhookLog(webhookId: WebhookId): Promise<void> {
  await Promise.all([deletePartition(attemptsOfWebhook(webhookId).pk), deletePartition(statsOfWebhook(webhookId).pk)]);
}

export interface AttemptCounts {
  attempts: number;
  failures: number;
}

/**
 * A destination's attempt counts, from one query of its counters: by the minute from the minute
 * holding `minutesFrom`, and by the hour from the hour holding `hoursFrom` (default: the same time).
 */
export async function countAttempts(webhookId: WebhookId, minutesFrom: number, hoursFrom = minutesFrom): Promise<{ byMinute: AttemptCounts; byHour: AttemptCounts }> {
  const range = statsFrom(Math.min(minutesFrom, hoursFrom));
  const { Items = [] } = await dynamo.send(
    new QueryCommand({
      TableName: TABLE_NAME,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': statsOfWebhook(webhookId).pk, ':from': range.from, ':to': range.to },
    }),
  );
  const byMinute = { attempts: 0, failures: 0 };
  const byHour = { attempts: 0, failures: 0 };
  const firstMinute = Math.floor(minutesFrom / 60);
  const firstHour = statsBucket(hoursFrom);
  for (const item of Items) {
    if (String(item.sk) >= firstHour) {
      byHour.attempts += Number(item.attempts ?? 0);
      byHour.failures += Number(item.failures ?? 0);
    }
    const hourStart = statsHourStart(String(item.sk));
    for (let m = Math.max(0, firstMinute - hourStart / 60); m < 60; m++) {
      const names = statsMinute(hourStart + m * 60);
      byMinute.attempts += Number(item[names.attempts] ?? 0);
      byMinute.failures += Number(item[names.failures] ?? 0);
    }
  }
  return { byMinute, byHour };
}
