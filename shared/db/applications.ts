import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { apiKeyKey, applicationKey } from '#shared/db/keys';
import { TransactionConditionError, transactWrite } from '#shared/db/transact';
import type { ApplicationId } from '#shared/ids';

export interface ApplicationRecord {
  id: ApplicationId;
  name: string;
  created_at: number;
}

export interface ApiKeyRecord {
  application_id: ApplicationId;
  /** First characters of the key, to recognise it in listings without storing it. */
  key_prefix: string;
  created_at: number;
}

export class ApiKeyExistsError extends Error {
  constructor() {
    super('An API key with this hash already exists');
    this.name = 'ApiKeyExistsError';
  }
}

/** Creates an application together with its first API key (both or neither). */
export async function putApplicationWithKey(app: ApplicationRecord, key: { hash: string; prefix: string }): Promise<void> {
  try {
    await transactWrite([
      ['application', { Put: { TableName: TABLE_NAME, Item: { ...applicationKey(app.id), entity: 'application', ...app }, ConditionExpression: 'attribute_not_exists(pk)' } }],
      [
        'api_key',
        {
          Put: {
            TableName: TABLE_NAME,
            Item: {
              ...apiKeyKey(key.hash),
              entity: 'api_key',
              application_id: app.id,
              key_prefix: key.prefix,
              created_at: app.created_at,
            } satisfies ApiKeyRecord & Record<string, unknown>,
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
      ],
    ]);
  } catch (error) {
    if (error instanceof TransactionConditionError && error.has('api_key')) throw new ApiKeyExistsError();
    throw error;
  }
}

/** Application ID for an API key hash, or undefined. */
export async function getApiKey(hash: string): Promise<ApiKeyRecord | undefined> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: apiKeyKey(hash) }));
  return Item as ApiKeyRecord | undefined;
}

export async function getApplication(appId: ApplicationId): Promise<ApplicationRecord | undefined> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: applicationKey(appId) }));
  if (!Item) return undefined;
  return { id: Item.id, name: Item.name, created_at: Item.created_at } as ApplicationRecord;
}
