import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { batchWrite, deleteRequests } from '#shared/db/batch';
import {
  connectorKey,
  connectorsOfApplication,
  credentialKey,
  credentialNameKey,
  credentialNamesOfConnector,
  credentialsOfProvider,
  itemAttributes,
  type Key,
} from '#shared/db/keys';
import { RecordExistsError, VersionConflictError, getRecord, queryAll } from '#shared/db/records';
import { transactWrite } from '#shared/db/transact';
import type { ApplicationId, CredentialId } from '#shared/ids';

/**
 * Connectors (one item per application and provider) and their credentials. Secrets arrive sealed
 * (shared/crypto/sealed.ts): this module stores strings and never sees a plaintext secret.
 *
 * Each connector has a `generation`, new every time it is created; its credentials carry it. Deleting
 * a connector is one conditional delete, which makes its credentials unreachable at once (every
 * read checks the generation); removing their items follows, and anything it leaves behind stays
 * unreachable, also by a connector created later for the same provider.
 */
export interface ConnectorRecord {
  application_id: ApplicationId;
  provider: string;
  name: string;
  generation: string;
  /** Settings without the client secret: client_id, tenant, issuer, topic_name. */
  settings: Record<string, string>;
  /** The client secret, sealed (purpose connector-secret, context: the item's key). */
  client_secret_sealed?: string;
  scope: string[];
  active_credential_id?: CredentialId;
  /** How many credentials the connector has (kept by the credential transactions; bounds them). */
  credential_count?: number;
  created_at: number;
  updated_at: number;
  version: number;
}

export interface CredentialRecord {
  id: CredentialId;
  application_id: ApplicationId;
  provider: string;
  connector_generation: string;
  name: string;
  credential_type: string;
  /** credential_data as JSON, sealed (purpose credential-data, context: the item's key). */
  data_sealed: string;
  created_at: number;
  updated_at: number;
  version: number;
}

const BOOKKEEPING = ['entity'];

export const getConnector = (appId: ApplicationId, provider: string) =>
  getRecord<ConnectorRecord>(connectorKey(appId, provider), ...BOOKKEEPING);

/** The connectors of an application (one per provider: a handful), by provider name. */
export async function listConnectors(appId: ApplicationId): Promise<ConnectorRecord[]> {
  const { pk, skPrefix } = connectorsOfApplication(appId);
  const { items } = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': pk, ':prefix': skPrefix },
  });
  return items.map((i) => itemAttributes<ConnectorRecord>(i, ...BOOKKEEPING));
}

/** Creates a connector; RecordExistsError when the application has one for the provider. */
export async function insertConnector(record: ConnectorRecord): Promise<void> {
  try {
    await dynamo.send(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: { ...connectorKey(record.application_id, record.provider), entity: 'connector', ...record },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) throw new RecordExistsError();
    throw error;
  }
}

/**
 * Writes a connector's changeable fields if it still has the version read (the credential count is
 * left to the credential transactions). With `activeCredential`, in one transaction with a check that
 * the credential exists in this connector's generation. Failed conditions by name: `connector`,
 * `credential`.
 */
export async function updateConnector(before: ConnectorRecord, after: ConnectorRecord): Promise<void> {
  const key = connectorKey(after.application_id, after.provider);
  const set: [string, unknown][] = [
    ['name', after.name],
    ['settings', after.settings],
    ['scope', after.scope],
    ['updated_at', after.updated_at],
    ['version', after.version],
    ...(after.client_secret_sealed !== undefined
      ? [['client_secret_sealed', after.client_secret_sealed] as [string, unknown]]
      : []),
    ...(after.active_credential_id !== undefined
      ? [['active_credential_id', after.active_credential_id] as [string, unknown]]
      : []),
  ];
  const remove = [
    ...(after.client_secret_sealed === undefined ? ['client_secret_sealed'] : []),
    ...(after.active_credential_id === undefined ? ['active_credential_id'] : []),
  ];
  const update = {
    TableName: TABLE_NAME,
    Key: key,
    UpdateExpression: `SET ${set.map((_, i) => `#s${i} = :s${i}`).join(', ')}${remove.length ? ` REMOVE ${remove.map((_, i) => `#r${i}`).join(', ')}` : ''}`,
    ConditionExpression: 'version = :expected AND generation = :generation',
    ExpressionAttributeNames: {
      ...Object.fromEntries(set.map(([name], i) => [`#s${i}`, name])),
      ...Object.fromEntries(remove.map((name, i) => [`#r${i}`, name])),
    },
    ExpressionAttributeValues: {
      ...Object.fromEntries(set.map(([, value], i) => [`:s${i}`, value])),
      ':expected': before.version,
      ':generation': before.generation,
    },
  };
  const activeChanged =
    after.active_credential_id !== undefined && after.active_credential_id !== before.active_credential_id;
  if (!activeChanged) {
    try {
      await dynamo.send(new UpdateCommand(update));
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw new VersionConflictError();
      throw error;
    }
    return;
  }
  await transactWrite([
    ['connector', { Update: update }],
    [
      'credential',
      {
        ConditionCheck: {
          TableName: TABLE_NAME,
          Key: credentialKey(after.application_id, after.provider, after.active_credential_id!),
          ConditionExpression: 'attribute_exists(pk) AND connector_generation = :generation',
          ExpressionAttributeValues: { ':generation': after.generation },
        },
      },
    ],
  ]);
}

/** Deletes a connector of the generation read; false when it was already gone (or replaced). */
export async function deleteConnector(record: ConnectorRecord): Promise<boolean> {
  try {
    await dynamo.send(
      new DeleteCommand({
        TableName: TABLE_NAME,
        Key: connectorKey(record.application_id, record.provider),
        ConditionExpression: 'generation = :generation',
        ExpressionAttributeValues: { ':generation': record.generation },
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

/** Removes the credential items and name guards of one (deleted) connector generation. Idempotent. */
export async function purgeCredentials(appId: ApplicationId, provider: string, generation: string): Promise<void> {
  const credentials = credentialsOfProvider(appId, provider);
  const names = credentialNamesOfConnector(appId, provider, generation);
  const [stale, guards] = await Promise.all([
    queryAll({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      FilterExpression: 'connector_generation = :generation',
      ExpressionAttributeValues: { ':pk': credentials.pk, ':prefix': credentials.skPrefix, ':generation': generation },
      ProjectionExpression: 'pk, sk',
    }),
    queryAll({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': names.pk, ':prefix': names.skPrefix },
      ProjectionExpression: 'pk, sk',
    }),
  ]);
  await batchWrite(deleteRequests([...stale.items, ...guards.items] as unknown as Key[]));
}

export async function getCredential(
  appId: ApplicationId,
  provider: string,
  id: CredentialId,
): Promise<CredentialRecord | undefined> {
  return getRecord<CredentialRecord>(credentialKey(appId, provider, id), ...BOOKKEEPING);
}

/** The credentials of one connector generation, newest first, without their sealed data. */
export async function listCredentials(
  appId: ApplicationId,
  provider: string,
  generation: string,
): Promise<Omit<CredentialRecord, 'data_sealed'>[]> {
  const { pk, skPrefix } = credentialsOfProvider(appId, provider);
  const { items } = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    FilterExpression: 'connector_generation = :generation',
    ExpressionAttributeValues: { ':pk': pk, ':prefix': skPrefix, ':generation': generation },
    ProjectionExpression:
      'id, application_id, provider, connector_generation, #name, credential_type, created_at, updated_at, version',
    ExpressionAttributeNames: { '#name': 'name' },
    ScanIndexForward: false,
  });
  return items.map((i) => i as unknown as Omit<CredentialRecord, 'data_sealed'>);
}

const nameGuard = (record: CredentialRecord, normalizedName: string) =>
  credentialNameKey(record.application_id, record.provider, record.connector_generation, normalizedName);

/**
 * Stores a credential with its name guard, counting it on its connector (which must exist in the
 * credential's generation, with fewer than `max` credentials). Failed conditions by name:
 * `connector` (missing, replaced or full), `name` (taken).
 */
export async function insertCredential(record: CredentialRecord, normalizedName: string, max: number): Promise<void> {
  await transactWrite([
    [
      'connector',
      {
        Update: {
          TableName: TABLE_NAME,
          Key: connectorKey(record.application_id, record.provider),
          UpdateExpression: 'ADD credential_count :one',
          ConditionExpression:
            'generation = :generation AND (attribute_not_exists(credential_count) OR credential_count < :max)',
          ExpressionAttributeValues: { ':one': 1, ':generation': record.connector_generation, ':max': max },
        },
      },
    ],
    [
      'credential',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: {
            ...credentialKey(record.application_id, record.provider, record.id),
            entity: 'credential',
            ...record,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    ],
    [
      'name',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: { ...nameGuard(record, normalizedName), entity: 'credential_name', credential_id: record.id },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    ],
  ]);
}

/**
 * Replaces a credential if it still has the version read, moving its name guard when the name
 * changed. Failed conditions by name: `credential` (changed or deleted meanwhile), `name` (taken).
 */
export async function replaceCredential(
  before: CredentialRecord,
  after: CredentialRecord,
  names: { before: string; after: string },
): Promise<void> {
  await transactWrite([
    [
      'credential',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: { ...credentialKey(after.application_id, after.provider, after.id), entity: 'credential', ...after },
          ConditionExpression: 'version = :v',
          ExpressionAttributeValues: { ':v': before.version },
        },
      },
    ],
    ...(names.before === names.after
      ? []
      : ([
          ['old_name', { Delete: { TableName: TABLE_NAME, Key: nameGuard(before, names.before) } }],
          [
            'name',
            {
              Put: {
                TableName: TABLE_NAME,
                Item: { ...nameGuard(after, names.after), entity: 'credential_name', credential_id: after.id },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
          ],
        ] as const)),
  ]);
}

/**
 * Deletes a credential, its name guard and its count, unless it is its connector's active credential.
 * Failed conditions by name: `connector` (it is the active credential, or the connector is gone),
 * `credential` (already deleted).
 */
export async function deleteCredential(record: CredentialRecord, normalizedName: string): Promise<void> {
  await transactWrite([
    [
      'connector',
      {
        Update: {
          TableName: TABLE_NAME,
          Key: connectorKey(record.application_id, record.provider),
          UpdateExpression: 'ADD credential_count :minus',
          ConditionExpression:
            'generation = :generation AND (attribute_not_exists(active_credential_id) OR active_credential_id <> :id)',
          ExpressionAttributeValues: { ':minus': -1, ':generation': record.connector_generation, ':id': record.id },
        },
      },
    ],
    [
      'credential',
      {
        Delete: {
          TableName: TABLE_NAME,
          Key: credentialKey(record.application_id, record.provider, record.id),
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
    ],
    ['name', { Delete: { TableName: TABLE_NAME, Key: nameGuard(record, normalizedName) } }],
  ]);
}
