import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { requestHandler } from '#shared/aws/http';
import { env } from '#shared/config';

/**
 * One document client per container, built at cold start. The endpoint comes from the standard
 * SDK environment (`AWS_ENDPOINT_URL_DYNAMODB` / `AWS_ENDPOINT_URL`), so the same code talks to
 * DynamoDB Local, LocalStack or AWS.
 */
export const dynamo = DynamoDBDocumentClient.from(new DynamoDBClient({ requestHandler }), {
  marshallOptions: { removeUndefinedValues: true },
});

export const TABLE_NAME = env.tableName();

/** One item of a TransactWriteItems request. */
export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];
