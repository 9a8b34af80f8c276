import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { TransactionConditionError, transactWrite } from '#shared/db/transact';

const dynamoMock = mockClient(DynamoDBDocumentClient);
const put = (pk: string) => ({
  Put: { TableName: 't', Item: { pk, sk: pk }, ConditionExpression: 'attribute_not_exists(pk)' },
});
const cancelled = (...codes: string[]) =>
  new TransactionCanceledException({
    message: 'cancelled',
    $metadata: {},
    CancellationReasons: codes.map((Code) => ({ Code })),
  });

describe('Function: transactWrite', () => {
  beforeEach(() => dynamoMock.reset());

  it('sends the items in order, without their names', async () => {
    // Prepare
    dynamoMock.on(TransactWriteCommand).resolves({});

    // Act
    await transactWrite([
      ['a', put('a')],
      ['b', put('b')],
    ]);

    // Assess
    expect(dynamoMock.commandCalls(TransactWriteCommand).map((c) => c.args[0].input)).toEqual([
      { TransactItems: [put('a'), put('b')] },
    ]);
  });

  it('reports the names whose conditions failed, not their positions', async () => {
    dynamoMock
      .on(TransactWriteCommand)
      .rejects(cancelled('None', 'ConditionalCheckFailed', 'None', 'ConditionalCheckFailed'));
    const error = await transactWrite([
      ['grant', put('g')],
      ['email', put('e')],
      ['folder', put('f')],
      ['external_id', put('x')],
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransactionConditionError);
    expect((error as TransactionConditionError).failed).toEqual(['email', 'external_id']);
    expect((error as TransactionConditionError).has('grant')).toBe(false);
    expect((error as TransactionConditionError).has('folder', 'email')).toBe(true);
  });

  it('tries again a transaction cancelled only by a conflicting one, then succeeds', async () => {
    dynamoMock
      .on(TransactWriteCommand)
      .rejectsOnce(cancelled('TransactionConflict', 'None'))
      .rejectsOnce(cancelled('None', 'TransactionConflict'))
      .resolves({});
    await transactWrite([
      ['a', put('a')],
      ['b', put('b')],
    ]);
    expect(dynamoMock.commandCalls(TransactWriteCommand)).toHaveLength(3);
  });

  it('gives up on conflicts after a few tries and lets the cancellation through', async () => {
    dynamoMock.on(TransactWriteCommand).rejects(cancelled('TransactionConflict'));
    await expect(transactWrite([['a', put('a')]])).rejects.toBeInstanceOf(TransactionCanceledException);
    expect(dynamoMock.commandCalls(TransactWriteCommand)).toHaveLength(5);
  });

  it('does not retry a failed condition, and lets other errors through as they are', async () => {
    dynamoMock.on(TransactWriteCommand).rejectsOnce(cancelled('ConditionalCheckFailed', 'TransactionConflict'));
    await expect(
      transactWrite([
        ['a', put('a')],
        ['b', put('b')],
      ]),
    ).rejects.toBeInstanceOf(TransactionConditionError);
    expect(dynamoMock.commandCalls(TransactWriteCommand)).toHaveLength(1);
    dynamoMock.reset();
    dynamoMock.on(TransactWriteCommand).rejects(new Error('network'));
    await expect(transactWrite([['a', put('a')]])).rejects.toThrow('network');
  });

  it('refuses two items with one name', async () => {
    await expect(
      transactWrite([
        ['a', put('a')],
        ['a', put('b')],
      ]),
    ).rejects.toThrow('unique');
  });
});
