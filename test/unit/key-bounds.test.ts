import { BatchGetCommand, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { KEY_BYTES, KeyTooLongError, checkKeyBounds } from '#shared/aws/key-bounds';
import {
  agentAddressKey,
  folderNameKey,
  grantEmailKey,
  grantExternalIdKey,
  icalUidKey,
  messageIdHeaderKey,
  postingPartition,
  referenceKey,
} from '#shared/db/keys';
import type { GrantId } from '#shared/ids';

/**
 * DynamoDB refuses a partition key over 2,048 bytes and a sort key over 1,024 with a
 * ValidationException, which reached clients as a 500 (a booking-page slug of 2,100 characters). Every
 * command is measured before it is sent; values from outside that key items are stored under a digest
 * when they would not fit.
 */
const FOUR_BYTES = '𝒜'; // U+1D49C: two UTF-16 units, four bytes of UTF-8
const bytes = (s: string) => Buffer.byteLength(s, 'utf8');
const thrown = (f: () => void): unknown => {
  try {
    f();
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('Function: checkKeyBounds', () => {
  it('passes keys at the bounds, in every shape a command carries them', () => {
    const pk = 'p'.repeat(KEY_BYTES.pk);
    const sk = 's'.repeat(KEY_BYTES.sk);
    expect(() =>
      checkKeyBounds({
        Key: { pk, sk },
        Item: { pk, sk, gsi1pk: pk, gsi1sk: sk, other: 'x'.repeat(100_000) },
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :a AND :b',
        ExpressionAttributeValues: { ':pk': pk, ':a': sk, ':b': sk },
        TransactItems: [{ Put: { Item: { pk, sk } } }, { Update: { Key: { pk, sk } } }],
        RequestItems: { t: [{ PutRequest: { Item: { pk: { S: pk }, sk: { S: sk } } } }] },
      }),
    ).not.toThrow();
  });

  it.each([
    ['a Get key (a lookup)', { Key: { pk: 'a', sk: 's'.repeat(KEY_BYTES.sk + 1) } }, 'sk', false],
    ['a Put item (a write)', { Item: { pk: 'p'.repeat(KEY_BYTES.pk + 1), sk: 'a' } }, 'pk', true],
    ['four-byte characters within a character bound', { Key: { pk: 'a', sk: FOUR_BYTES.repeat(257) } }, 'sk', false],
    [
      'a key condition value',
      {
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
        ExpressionAttributeValues: { ':pk': 'a', ':p': 'p'.repeat(1025) },
      },
      'sk',
      false,
    ],
    [
      'a key condition through attribute names',
      {
        KeyConditionExpression: '#k = :v',
        ExpressionAttributeNames: { '#k': 'pk' },
        ExpressionAttributeValues: { ':v': 'v'.repeat(2049) },
      },
      'pk',
      false,
    ],
    ['a page start', { ExclusiveStartKey: { pk: 'a', sk: 's'.repeat(1025) } }, 'sk', false],
    [
      'a transaction put',
      {
        TransactItems: [
          { ConditionCheck: { Key: { pk: 'a', sk: 'b' } } },
          { Put: { Item: { pk: 'a', sk: 's'.repeat(1025) } } },
        ],
      },
      'sk',
      true,
    ],
    ['a transaction delete', { TransactItems: [{ Delete: { Key: { pk: 'p'.repeat(2049), sk: 'b' } } }] }, 'pk', false],
    [
      'a batch read',
      {
        RequestItems: {
          t: {
            Keys: [
              { pk: 'a', sk: 'b' },
              { pk: 'a', sk: 's'.repeat(1025) },
            ],
          },
        },
      },
      'sk',
      false,
    ],
    [
      'a batch write, marshalled',
      { RequestItems: { t: [{ PutRequest: { Item: { pk: { S: 'a' }, sk: { S: 's'.repeat(1025) } } } }] } },
      'sk',
      true,
    ],
  ])('refuses %s, saying which attribute, how long, and whether it writes', (_what, input, attribute, write) => {
    const error = thrown(() => checkKeyBounds(input as Record<string, unknown>));
    expect(error).toBeInstanceOf(KeyTooLongError);
    expect(error).toMatchObject({ attribute, write });
    expect((error as KeyTooLongError).bytes).toBeGreaterThan(KEY_BYTES[attribute as 'pk' | 'sk']);
  });

  it('runs inside the one DynamoDB client, before anything is sent', async () => {
    // No endpoint answers these: only the check can have refused them.
    await expect(
      dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: { pk: `slug#${'a'.repeat(2100)}`, sk: 'slug' } })),
    ).rejects.toBeInstanceOf(KeyTooLongError);
    await expect(
      dynamo.send(
        new QueryCommand({
          TableName: TABLE_NAME,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': FOUR_BYTES.repeat(600) },
        }),
      ),
    ).rejects.toMatchObject({
      attribute: 'pk',
      write: false,
    });
    await expect(
      dynamo.send(
        new BatchGetCommand({ RequestItems: { [TABLE_NAME]: { Keys: [{ pk: 'a', sk: 'x'.repeat(5012) }] } } }),
      ),
    ).rejects.toBeInstanceOf(KeyTooLongError);
  });
});

describe('Keys of values from outside', () => {
  const grant = 'grant_01jd6abcdefghjkmnpqrstvwxy' as GrantId;
  const app = 'app_01jd6abcdefghjkmnpqrstvwxy' as Parameters<typeof grantEmailKey>[0];

  it('keep a value that fits as it is (keys written before stay where they are)', () => {
    expect(messageIdHeaderKey(grant, '<a@b>').sk).toBe('<a@b>');
    expect(grantExternalIdKey(app, 'user-42').sk).toBe('external#user-42');
    expect(folderNameKey(grant, 'inbox', ' Reports ').sk).toBe('name#inbox#reports');
    expect(postingPartition(grant, 'meta:key1=x')).toBe(`grant#${grant}#ix#meta:key1=x`);
    const longest = `<${'m'.repeat(KEY_BYTES.sk - 2)}>`;
    expect(messageIdHeaderKey(grant, longest).sk).toBe(longest);
  });

  it.each([
    ['a Message-ID header', (v: string) => messageIdHeaderKey(grant, v).sk, 'sk'],
    ['a referenced Message-ID', (v: string) => referenceKey(grant, v).sk, 'sk'],
    ['an iCalendar UID', (v: string) => icalUidKey(grant, v).sk, 'sk'],
    ['an external ID', (v: string) => grantExternalIdKey(app, v).sk, 'sk'],
    ['an email address', (v: string) => grantEmailKey(app, v).sk, 'sk'],
    ['a folder name', (v: string) => folderNameKey(grant, 'fld_parent', v).sk, 'sk'],
    ['a filter value', (v: string) => postingPartition(grant, `meta:key1=${v}`), 'pk'],
    ['an Agent Account address', (v: string) => agentAddressKey(v).pk, 'pk'],
  ] as const)(
    'store %s too long for a key under its digest: one exact key, within the bound',
    (_what, key, attribute) => {
      const long = FOUR_BYTES.repeat(600);
      expect(bytes(key(long))).toBeLessThanOrEqual(KEY_BYTES[attribute]);
      expect(key(long)).toBe(key(long));
      expect(key(long)).not.toBe(key(`${long}x`));
      expect(key(long)).toContain('~sha256:');
    },
  );
});
