import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { statsOfWebhook } from '#shared/db/keys';
import { countAttempts, recordAttempts } from '#shared/db/webhooks';
import { newId, type WebhookId } from '#shared/ids';
import { attemptRecord } from '../support/attempts';

/**
 * Attempt counters are written per writer (one per delivery container, or per batch in flight in
 * one), beside the attempt records; the health check reads their sum. Against DynamoDB Local.
 */
const dynamo = DynamoDBDocumentClient.from(new DynamoDBClient({}));
const HOUR = 3600;
const hour = 400_000 * HOUR;

const attempt = attemptRecord;
const statsItems = async (webhookId: WebhookId) =>
  (
    await dynamo.send(
      new QueryCommand({
        TableName: process.env.TABLE_NAME!,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': statsOfWebhook(webhookId).pk },
      }),
    )
  ).Items ?? [];

describe('Function: recordAttempts, counters', () => {
  it('sums the items of writers that counted side by side, and items written before writers', async () => {
    // Prepare: an hour's counters as stored before writers existed (one item per hour, updated in place)
    const webhookId = newId('webhook');
    await dynamo.send(
      new PutCommand({
        TableName: process.env.TABLE_NAME!,
        Item: {
          pk: `webhook#${webhookId}#stats`,
          sk: `h#${String(hour / HOUR).padStart(10, '0')}`,
          attempts: 2,
          failures: 2,
          a01: 2,
          f01: 2,
        },
      }),
    );

    // Act: two batches in flight at once (two writers), then one more (a writer taken again)
    const unrecorded = await Promise.all([
      recordAttempts([attempt(webhookId, hour + 120, 'delivered'), attempt(webhookId, hour + 130, 'retrying')]),
      recordAttempts([
        attempt(webhookId, hour + 140, 'retrying'),
        attempt(webhookId, hour + 150, 'retrying'),
        attempt(webhookId, hour + 160, 'delivered'),
      ]),
    ]);
    unrecorded.push(await recordAttempts([attempt(webhookId, hour + 180, 'retrying')]));

    // Assess: every attempt stored; one item per writer beside the old one; the counts summed
    expect(unrecorded.map((u) => u.size)).toEqual([0, 0, 0]);
    const items = await statsItems(webhookId);
    expect(items).toHaveLength(3);
    expect(items.reduce((n, i) => n + Number(i.attempts), 0)).toBe(2 + 6);
    expect(await countAttempts(webhookId, hour)).toEqual({
      byMinute: { attempts: 8, failures: 6 },
      byHour: { attempts: 8, failures: 6 },
    });
    // From 00:02: minute 01 of the old item no longer counts.
    expect((await countAttempts(webhookId, hour + 120)).byMinute).toEqual({ attempts: 6, failures: 4 });
  });

  it("keeps a writer's counts whole across its batches: each put holds everything it counted", async () => {
    const webhookId = newId('webhook');
    for (let i = 0; i < 5; i++)
      await recordAttempts([attempt(webhookId, hour + 600 + i, i % 2 ? 'delivered' : 'retrying')]);
    const items = await statsItems(webhookId);
    expect(items.map((i) => [i.attempts, i.failures, i.a10, i.f10])).toEqual([[5, 3, 5, 3]]);
    // Kept 4 days after its hour.
    expect(items[0]!.expires_at).toBe(hour + HOUR + 4 * 86400);
  });
});
