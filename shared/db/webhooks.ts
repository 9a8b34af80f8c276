import { randomBytes } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { batchGet, batchWrite, putRequests } from '#shared/db/batch';
import type { StartKey } from '#shared/db/records';
import {
  attemptKey,
  attemptsOfWebhook,
  itemAttributes,
  statsBucket,
  statsFrom,
  statsHourStart,
  statsKey,
  statsMinute,
  statsOfWebhook,
  webhookKey,
  webhookRegistry,
  webhookRegistryKey,
  webhooksOfApplication,
} from '#shared/db/keys';
import {
  VersionConflictError,
  deletePartition,
  getRecord,
  listRecords,
  queryAll,
  replaceRecord,
} from '#shared/db/records';
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
    [
      'webhook',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: { ...webhookKey(record.application_id, record.id), entity: 'webhook', ...record },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    ],
    [
      'registry',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: { ...webhookRegistryKey(record.id), application_id: record.application_id },
        },
      },
    ],
  ]);
}

export const getWebhook = (appId: ApplicationId, webhookId: WebhookId) =>
  getRecord<WebhookRecord>(webhookKey(appId, webhookId), ...BOOKKEEPING);

/** Every page of an application's destinations: their items, or only their count. */
async function applicationWebhooks(
  appId: ApplicationId,
  select: 'ALL_ATTRIBUTES' | 'COUNT',
): Promise<{ items: WebhookRecord[]; count: number }> {
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

/** What the fan-out reads of a destination: which it is, its status and its subscriptions. */
export type WebhookTarget = Pick<WebhookRecord, 'id' | 'application_id' | 'status' | 'trigger_types'>;

/**
 * An application's destinations as the fan-out reads them, newest first: projected, so that the
 * URLs, secrets and the rest are neither sent nor parsed for every batch of notifications.
 */
export async function listWebhookTargets(appId: ApplicationId): Promise<WebhookTarget[]> {
  const { pk, skPrefix } = webhooksOfApplication(appId);
  const { items } = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': pk, ':prefix': skPrefix },
    ProjectionExpression: '#id, #app, #status, #triggers',
    ExpressionAttributeNames: {
      '#id': 'id',
      '#app': 'application_id',
      '#status': 'status',
      '#triggers': 'trigger_types',
    },
    ScanIndexForward: false,
  });
  return items as WebhookTarget[];
}

/** How many destinations an application has (a count, not the items). */
export const countWebhooks = async (appId: ApplicationId) => (await applicationWebhooks(appId, 'COUNT')).count;

/** Replaces a destination if it still has the version read (VersionConflictError otherwise). */
export const replaceWebhook = (before: WebhookRecord, after: WebhookRecord) =>
  replaceRecord(webhookKey(after.application_id, after.id), { entity: 'webhook', ...after }, before.version);

/** Deletes a destination and its registry entry; VersionConflictError if it was already gone. */
export async function deleteWebhook(record: WebhookRecord, outbox: readonly OutboxEntry[] = []): Promise<void> {
  try {
    await transactWrite([
      [
        'webhook',
        {
          Delete: {
            TableName: TABLE_NAME,
            Key: webhookKey(record.application_id, record.id),
            ConditionExpression: 'attribute_exists(pk)',
          },
        },
      ],
      ['registry', { Delete: { TableName: TABLE_NAME, Key: webhookRegistryKey(record.id) } }],
      ...outboxItems(outbox),
    ]);
  } catch (error) {
    if (error instanceof TransactionConditionError) throw new VersionConflictError();
    throw error;
  }
}

/** A page of the registry: (webhook, application) pairs for the health sweep. */
export async function registryPage(
  start?: StartKey,
): Promise<{ entries: { webhook_id: WebhookId; application_id: ApplicationId }[]; next?: StartKey }> {
  const page = await dynamo.send(
    new QueryCommand({
      TableName: TABLE_NAME,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': webhookRegistry().pk },
      ExclusiveStartKey: start,
      Limit: 200,
    }),
  );
  return {
    entries: (page.Items ?? []).map((i) => ({
      webhook_id: i.sk as WebhookId,
      application_id: i.application_id as ApplicationId,
    })),
    next: page.LastEvaluatedKey as StartKey | undefined,
  };
}

const ATTEMPT_TTL = 30 * 86400;
const STATS_TTL = 4 * 86400;

/** BatchWriteItem takes at most 25 items. */
const WRITE_BATCH = 25;

/**
 * Writers of attempt counters (shared/db/keys.ts, statsKey): a writer keeps, in memory, the counts it
 * has stored per destination and hour, and puts its item whole with each batch's new counts added.
 * Only it writes its item, so the last put holds everything it counted, whatever becomes of the
 * container afterwards, and no update expression or second request is needed. A container's writer
 * is held by one recordAttempts call at a time (Lambda runs one batch at a time; in-process pollers
 * run several, each with a writer of its own). After WRITER_ITEMS items a writer starts over under a
 * new name rather than forget counts it would then overwrite.
 */
const CONTAINER = randomBytes(6).toString('hex');
const WRITER_ITEMS = 1000;
let writerCount = 0;
interface CounterWriter {
  name: string;
  /** Counts stored so far, by item (`pk sk`). */
  stored: Map<string, Record<string, number>>;
}
const idleWriters: CounterWriter[] = [];
const newWriterName = () => `${CONTAINER}.${writerCount++}`;

/**
 * Records attempts and counts them in the same BatchWriteItem requests (25 items each): one record per
 * attempt, and per destination and hour this writer's counters item, holding the hour's totals and
 * each minute's counts. Returns why each attempt whose record or counts could not be stored failed, by
 * its index in `attempts` (empty when all were), so that a failure costs only its own attempts.
 */
export async function recordAttempts(attempts: AttemptRecord[]): Promise<Map<number, unknown>> {
  const unrecorded = new Map<number, unknown>();
  if (!attempts.length) return unrecorded;
  const writer = idleWriters.pop() ?? { name: newWriterName(), stored: new Map() };
  try {
    if (writer.stored.size >= WRITER_ITEMS) Object.assign(writer, { name: newWriterName(), stored: new Map() });
    const counters = new Map<
      string,
      { item: Record<string, unknown>; counts: Record<string, number>; indexes: number[] }
    >();
    attempts.forEach((a, index) => {
      const key = statsKey(a.webhook_id, a.time, writer.name);
      const id = `${key.pk} ${key.sk}`;
      let c = counters.get(id);
      if (!c) {
        const counts = { ...writer.stored.get(id) };
        // Kept 4 days after its hour: the long health window (72 hours) reads back that far.
        c = { item: { ...key, expires_at: statsHourStart(key.sk) + 3600 + STATS_TTL }, counts, indexes: [] };
        counters.set(id, c);
      }
      const failure = a.outcome === 'delivered' ? 0 : 1;
      const minute = statsMinute(a.time);
      for (const [name, n] of [
        ['attempts', 1],
        ['failures', failure],
        [minute.attempts, 1],
        [minute.failures, failure],
      ] as const)
        c.counts[name] = (c.counts[name] ?? 0) + n;
      c.indexes.push(index);
    });
    const items: { item: Record<string, unknown>; indexes: number[]; counter?: string }[] = [
      ...attempts.map((a, index) => ({
        item: { ...attemptKey(a.webhook_id, a.id), ...a, expires_at: a.time + ATTEMPT_TTL },
        indexes: [index],
      })),
      ...[...counters].map(([id, c]) => ({ item: { ...c.item, ...c.counts }, indexes: c.indexes, counter: id })),
    ];
    const requests: (typeof items)[] = [];
    for (let start = 0; start < items.length; start += WRITE_BATCH)
      requests.push(items.slice(start, start + WRITE_BATCH));
    const settled = await Promise.allSettled(
      requests.map((request) => batchWrite(putRequests(request.map((r) => r.item)))),
    );
    settled.forEach((result, i) => {
      for (const { indexes, counter } of requests[i]!) {
        if (result.status === 'rejected') for (const index of indexes) unrecorded.set(index, result.reason);
        // Stored: what the next batch adds to. (Not stored: the item keeps its last counts, and the
        // attempts it missed are tried again, counted then.)
        else if (counter) writer.stored.set(counter, counters.get(counter)!.counts);
      }
    });
    return unrecorded;
  } finally {
    idleWriters.push(writer);
  }
}

/** Destinations by ID, in one request (the delivery worker reads its batch's destinations together). */
export async function getWebhooks(
  keys: { application_id: ApplicationId; webhook_id: WebhookId }[],
): Promise<Map<string, WebhookRecord>> {
  const unique = [...new Map(keys.map((k) => [k.webhook_id, k])).values()];
  const items = await batchGet<Record<string, unknown>>(unique.map((k) => webhookKey(k.application_id, k.webhook_id)));
  return new Map(items.map((i) => strip<WebhookRecord>(i)).map((w) => [w.id, w]));
}

export async function listAttempts(
  webhookId: WebhookId,
  limit: number,
  before?: string,
): Promise<{ items: AttemptRecord[]; last?: string }> {
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
 * A destination's attempt counts, from one query of its counters (every writer's items, summed): by
 * the minute from the minute holding `minutesFrom`, and by the hour from the hour holding `hoursFrom`
 * (default: the same time).
 */
export async function countAttempts(
  webhookId: WebhookId,
  minutesFrom: number,
  hoursFrom = minutesFrom,
): Promise<{ byMinute: AttemptCounts; byHour: AttemptCounts }> {
  const range = statsFrom(Math.min(minutesFrom, hoursFrom));
  // Every writer's items of those hours (one per delivery container and hour): all pages.
  const { items } = await queryAll({
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
    ExpressionAttributeValues: { ':pk': statsOfWebhook(webhookId).pk, ':from': range.from, ':to': range.to },
  });
  const byMinute = { attempts: 0, failures: 0 };
  const byHour = { attempts: 0, failures: 0 };
  const firstMinute = Math.floor(minutesFrom / 60);
  const firstHour = statsBucket(hoursFrom);
  for (const item of items) {
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
