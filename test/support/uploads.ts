import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { uploadsOfGrant } from '#shared/db/keys';
import type { GrantId } from '#shared/ids';
import { jobsDone } from './outbox-relay';

/**
 * What DynamoDB's TTL does to upload records (shared/db/uploads.ts) when they expire, which DynamoDB
 * Local does not: removes them and puts the removal on the stream as the service's own (userIdentity
 * dynamodb.amazonaws.com). Here: the upload records of `grantIds` still in the table are deleted, the
 * real outbox consumer gets the same stream record, and the jobs it sends run to their end. Returns
 * how many of them belonged to changes that never committed: records the commit did not delete and
 * whose `committed_by` item (a stored message's) does not exist.
 */
export async function expireUploads(grantIds: readonly string[]): Promise<number> {
  const items: Record<string, unknown>[] = [];
  for (const grantId of grantIds) {
    let start: Record<string, unknown> | undefined;
    do {
      const page = await dynamo.send(
        new QueryCommand({
          TableName: TABLE_NAME,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': uploadsOfGrant(grantId as GrantId) },
          ExclusiveStartKey: start,
        }),
      );
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
  }
  const { handler } = await import('#functions/outbox/handler');
  let uncommitted = 0;
  for (const [i, item] of items.entries()) {
    const by = item.committed_by as { pk: string; sk: string } | undefined;
    if (!by || !(await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: by }))).Item) uncommitted++;
    await dynamo.send(new DeleteCommand({ TableName: TABLE_NAME, Key: { pk: item.pk, sk: item.sk } }));
    const record = {
      eventID: `ttl-${i}`,
      eventName: 'REMOVE',
      userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
      dynamodb: { SequenceNumber: String(i), OldImage: marshall(item) as Record<string, AttributeValue> },
    } as unknown as DynamoDBRecord;
    const result = await handler({ Records: [record] });
    if (result.batchItemFailures.length)
      throw new Error(`the outbox consumer refused the expiry of ${String(item.pk)}`);
  }
  await jobsDone();
  return uncommitted;
}
