import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { BatchGetCommand, BatchWriteCommand, DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { handler } from '#functions/webhook-delivery/handler';

/**
 * The delivery worker's own failures: they are not attempts against the receiver. No receiver is
 * involved in these cases, so the AWS calls are mocked.
 */
const sqsMock = mockClient(SQSClient);
const dynamoMock = mockClient(DynamoDBDocumentClient);

const job = (webhookId: string) => ({
  application_id: 'app_1',
  webhook_id: webhookId,
  attempt: 1,
  notification: {
    specversion: '1.0',
    type: 'grant.created',
    source: '/switchboard',
    id: 'ntf_1',
    time: 0,
    data: { application_id: 'app_1', grant_id: null, object: {} },
  },
});
const event = (...records: { messageId: string; body: string }[]) => ({ Records: records }) as unknown as SQSEvent;

describe('Handler: webhook delivery, failures on our side', () => {
  beforeEach(() => {
    sqsMock.reset();
    dynamoMock.reset();
    sqsMock.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
  });

  it('fails an unreadable job alone, and records nothing for it', async () => {
    dynamoMock.on(BatchGetCommand).resolves({ Responses: {} });
    const result = await handler(
      event(
        { messageId: 'bad', body: '{not json' },
        { messageId: 'gone', body: JSON.stringify(job('webhook_deleted')) },
      ),
    );
    // The second job's destination no longer exists: skipped, not failed.
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'bad' }]);
    expect(dynamoMock.commandCalls(BatchWriteCommand)).toHaveLength(0);
  });

  it('does not count a secret it cannot decrypt against the receiver: the job is received again', async () => {
    const destination = {
      pk: 'app#app_1',
      sk: 'webhook#webhook_1',
      id: 'webhook_1',
      application_id: 'app_1',
      status: 'active',
      trigger_types: ['grant.created'],
      webhook_url: 'http://127.0.0.1:9/hook',
      compressed_delivery: false,
      secret: 'v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA:AAAA',
    };
    dynamoMock.on(BatchGetCommand).resolves({ Responses: { [process.env.TABLE_NAME!]: [destination] } });
    const result = await handler(event({ messageId: 'm1', body: JSON.stringify(job('webhook_1')) }));
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: 'm1' }]);
    expect(dynamoMock.commandCalls(BatchWriteCommand)).toHaveLength(0);
    expect(dynamoMock.commandCalls(UpdateCommand)).toHaveLength(0);
    expect(sqsMock.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });
});
