import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { requestHandler } from '#shared/aws/http';
import { env } from '#shared/config';
import { checkKeyBounds } from '#shared/aws/key-bounds';
import { traced } from '#shared/aws/tracing';

/**
 * One document client per container, built at cold start. The endpoint comes from the standard
 * SDK environment (`AWS_ENDPOINT_URL_DYNAMODB` / `AWS_ENDPOINT_URL`), so the same code talks to
 * DynamoDB Local, LocalStack or AWS.
 */
export const dynamo = DynamoDBDocumentClient.from(traced(new DynamoDBClient({ requestHandler })), {
  marshallOptions: { removeUndefinedValues: true },
});
// Every command's keys are measured before it is sent: a value DynamoDB would refuse is a typed error, never a ValidationException.
dynamo.middlewareStack.add(
  (next) => async (args) => {
    checkKeyBounds(args.input as Record<string, unknown>);
    return next(args);
  },
  { step: 'initialize', name: 'keyBounds' },
);

export const TABLE_NAME = env.tableName();

/** One item of a TransactWriteItems request. */
export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];
