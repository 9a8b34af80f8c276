import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { handler } from '#functions/grants/handler';
import { hashApiKey } from '#shared/applications/api-keys';
import { KeyTooLongError } from '#shared/aws/key-bounds';
import { buildEvent } from '../../scripts/local-stack/api-gateway-event';

const dynamoMock = mockClient(DynamoDBDocumentClient);
const context = { awsRequestId: 'aws-1', getRemainingTimeInMillis: () => 10_000 } as unknown as Context;

function event(path: string, headers: Record<string, string> = { authorization: 'Bearer unit-test-key' }) {
  return buildEvent(
    { routeKey: 'GET /v3/grants/{grant_id}', params: { grant_id: path.split('/').pop()! } },
    { method: 'GET', url: path, headers, body: Buffer.alloc(0), sourceIp: '127.0.0.1' },
  );
}

describe('Function: httpApi error handling', () => {
  beforeEach(() => {
    dynamoMock.reset();
    dynamoMock.on(GetCommand, { Key: { pk: `apikey#${hashApiKey('unit-test-key')}`, sk: 'apikey' } }).resolves({
      Item: { application_id: 'app_unit', key_prefix: 'unit', created_at: 1 },
    });
    // The rate limiter's calls: the application's own limits (none), then its bucket and the grant's.
    dynamoMock.on(GetCommand, { Key: { pk: 'app#app_unit', sk: 'app' } }).resolves({});
    dynamoMock.on(UpdateCommand).resolves({});
  });

  it('turns an unexpected failure into a generic 500 envelope without internals', async () => {
    // Prepare
    dynamoMock
      .on(GetCommand, { Key: { pk: 'app#app_unit', sk: 'grant#grant_01jd6abcdefghjkmnpqrstvwxy' } })
      .rejects(new Error('ProvisionedThroughputExceededException: table switchboard-prod secret detail'));

    // Act
    const result = (await handler(
      event('/v3/grants/grant_01jd6abcdefghjkmnpqrstvwxy'),
      context,
    )) as APIGatewayProxyStructuredResultV2;

    // Assess
    expect(result.statusCode).toBe(500);
    const body = JSON.parse(result.body!);
    expect(body.error.type).toBe('internal_error');
    expect(body.error.message).not.toMatch(/secret|Provisioned|switchboard-prod/);
    expect(body.error.message).toContain(body.request_id);
    expect(result.headers!['x-request-id']).toBe(body.request_id);
  });

  it('answers 404 for a grant of another application (the key lookup is scoped)', async () => {
    dynamoMock
      .on(GetCommand, { Key: { pk: 'app#app_unit', sk: 'grant#grant_01jd6abcdefghjkmnpqrstvwxy' } })
      .resolves({});
    const result = (await handler(
      event('/v3/grants/grant_01jd6abcdefghjkmnpqrstvwxy'),
      context,
    )) as APIGatewayProxyStructuredResultV2;
    expect(result.statusCode).toBe(404);
    // The only grant lookup was inside the caller's partition.
    const lookups = dynamoMock.commandCalls(GetCommand).map((c) => c.args[0].input.Key);
    expect(lookups).toContainEqual({ pk: 'app#app_unit', sk: 'grant#grant_01jd6abcdefghjkmnpqrstvwxy' });
    expect(lookups.every((key) => key!.pk === 'app#app_unit' || String(key!.pk).startsWith('apikey#'))).toBe(true);
  });

  it.each([
    [false, 404, 'not_found_error', 'longer than any stored name or ID can be'],
    [true, 400, 'invalid_request_error', 'too long to be stored'],
  ] as const)(
    'answers a key too long for storage (write: %s) with %i in the envelope, never a 500',
    async (write, status, type, message) => {
      // Prepare: the check in front of DynamoDB refused the lookup (shared/aws/key-bounds.ts).
      dynamoMock
        .on(GetCommand, { Key: { pk: 'app#app_unit', sk: 'grant#grant_01jd6abcdefghjkmnpqrstvwxy' } })
        .rejects(new KeyTooLongError('sk', 1500, write));

      // Act
      const result = (await handler(
        event('/v3/grants/grant_01jd6abcdefghjkmnpqrstvwxy'),
        context,
      )) as APIGatewayProxyStructuredResultV2;

      // Assess
      expect(result.statusCode).toBe(status);
      const body = JSON.parse(result.body!);
      expect(body.error).toEqual({ type, message: expect.stringContaining(message) });
      expect(body.error.message).toContain('1500 bytes');
      expect(result.headers!['x-request-id']).toBe(body.request_id);
    },
  );

  it('never looks up a malformed grant ID', async () => {
    const result = (await handler(event('/v3/grants/not-an-id'), context)) as APIGatewayProxyStructuredResultV2;
    expect(result.statusCode).toBe(404);
    expect(
      dynamoMock
        .commandCalls(GetCommand)
        .filter((c) => String(c.args[0].input.Key!.pk).startsWith('app#') && c.args[0].input.Key!.sk !== 'app'),
    ).toHaveLength(0);
  });
});
