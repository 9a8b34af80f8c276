import type { ApplicationContext } from '#shared/caller';
import { checkCredential } from '#shared/connectors/rules';
import { credentialDataContext, requireConnector } from '#shared/connectors/service';
import { sealJson } from '#shared/crypto/sealed';
import { decodeOffsetCursor, encodeOffsetCursor } from '#shared/cursor';
import * as repo from '#shared/db/connectors';
import type { ConnectorRecord, CredentialRecord } from '#shared/db/connectors';
import { TransactionConditionError } from '#shared/db/transact';
import { ConflictError, NotFoundError } from '#shared/errors';
import { newId, parseId } from '#shared/ids';
import { clock } from '#shared/time';
import type {
  ConnectorProvider,
  CreateCredentialBody,
  CredentialType,
  UpdateCredentialBody,
} from '#schemas/connectors';

/**
 * Credentials of a connector: Google service accounts (`serviceaccount`), Microsoft admin consent
 * (`adminconsent`) and other provider auth apps (`connector`). Their data is write-only: sealed
 * before it is stored, never answered, never logged. A credential needs its connector; the
 * connector's active credential cannot be deleted (409: clear or change active_credential_id first),
 * as the published contract refuses it.
 */
export const MAX_CREDENTIALS = 500;

function credentialView(
  record: Pick<CredentialRecord, 'id' | 'name' | 'credential_type' | 'created_at' | 'updated_at'>,
) {
  return {
    id: record.id,
    name: record.name,
    credential_type: record.credential_type as CredentialType,
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}

/** Names compare case-insensitively, in one Unicode form. */
const normalizedName = (name: string) => name.normalize('NFC').toLowerCase();

async function requireCredential(
  app: ApplicationContext,
  provider: string,
  credentialId: string,
): Promise<{ connector: ConnectorRecord; record: CredentialRecord }> {
  const connector = await requireConnector(app, provider);
  const id = parseId('credential', credentialId);
  const record = id ? await repo.getCredential(app.applicationId, connector.provider, id) : undefined;
  // A credential of a deleted connector (another generation) is gone, whatever items remain.
  if (!record || record.connector_generation !== connector.generation)
    throw new NotFoundError(`Credential '${credentialId}' not found for the ${connector.provider} connector`);
  return { connector, record };
}

export async function listCredentials(app: ApplicationContext, provider: string, limit: number, pageToken?: string) {
  const connector = await requireConnector(app, provider);
  const all = (await repo.listCredentials(app.applicationId, connector.provider, connector.generation)).map(
    credentialView,
  );
  const offset = pageToken ? decodeOffsetCursor(pageToken, `creds-${connector.provider}`) : 0;
  return {
    items: all.slice(offset, offset + limit),
    nextCursor:
      offset + limit < all.length ? encodeOffsetCursor(`creds-${connector.provider}`, offset + limit) : undefined,
  };
}

export async function createCredential(app: ApplicationContext, provider: string, body: CreateCredentialBody) {
  const connector = await requireConnector(app, provider);
  const data = checkCredential(
    connector.provider as ConnectorProvider,
    body.credential_type,
    body.credential_data as Record<string, string>,
  );
  const id = newId('credential');
  const now = clock.nowSeconds();
  const record: CredentialRecord = {
    id,
    application_id: app.applicationId,
    provider: connector.provider,
    connector_generation: connector.generation,
    name: body.name,
    credential_type: body.credential_type,
    data_sealed: await sealJson(
      data,
      'credential-data',
      credentialDataContext(app.applicationId, connector.provider, id),
    ),
    created_at: now,
    updated_at: now,
    version: 1,
  };
  try {
    await repo.insertCredential(record, normalizedName(record.name), MAX_CREDENTIALS);
  } catch (error) {
    if (!(error instanceof TransactionConditionError)) throw error;
    if (error.has('name'))
      throw new ConflictError(
        `The ${connector.provider} connector already has a credential named '${body.name}'; names are unique (case-insensitive)`,
      );
    if (error.has('connector')) {
      const now = await repo.getConnector(app.applicationId, connector.provider);
      if (!now || now.generation !== connector.generation)
        throw new NotFoundError(
          `This application has no ${connector.provider} connector; create it with POST /v3/connectors`,
        );
      throw new ConflictError(`A connector can have at most ${MAX_CREDENTIALS} credentials; delete one first`);
    }
    throw error;
  }
  return credentialView(record);
}

export async function getCredential(app: ApplicationContext, provider: string, credentialId: string) {
  return credentialView((await requireCredential(app, provider, credentialId)).record);
}

/** Renames a credential or replaces its data as a whole (checked as on create); its type stays. */
export async function updateCredential(
  app: ApplicationContext,
  provider: string,
  credentialId: string,
  body: UpdateCredentialBody,
) {
  const { connector, record: current } = await requireCredential(app, provider, credentialId);
  const data = body.credential_data
    ? checkCredential(
        connector.provider as ConnectorProvider,
        current.credential_type as CredentialType,
        body.credential_data as Record<string, string>,
      )
    : undefined;
  const next: CredentialRecord = {
    ...current,
    name: body.name ?? current.name,
    ...(data
      ? {
          data_sealed: await sealJson(
            data,
            'credential-data',
            credentialDataContext(app.applicationId, current.provider, current.id),
          ),
        }
      : {}),
    updated_at: clock.nowSeconds(),
    version: current.version + 1,
  };
  try {
    await repo.replaceCredential(current, next, {
      before: normalizedName(current.name),
      after: normalizedName(next.name),
    });
  } catch (error) {
    if (!(error instanceof TransactionConditionError)) throw error;
    if (error.has('name'))
      throw new ConflictError(
        `The ${connector.provider} connector already has a credential named '${next.name}'; names are unique (case-insensitive)`,
      );
    if (error.has('credential'))
      throw new ConflictError('The credential was changed or deleted by another request; fetch it again and retry');
    throw error;
  }
  return credentialView(next);
}

export async function deleteCredential(app: ApplicationContext, provider: string, credentialId: string): Promise<void> {
  const { connector, record } = await requireCredential(app, provider, credentialId);
  if (connector.active_credential_id === record.id) throw activeConflict(record.id, connector.provider);
  try {
    await repo.deleteCredential(record, normalizedName(record.name));
  } catch (error) {
    if (!(error instanceof TransactionConditionError)) throw error;
    if (error.has('credential'))
      throw new NotFoundError(`Credential '${credentialId}' not found for the ${connector.provider} connector`);
    if (error.has('connector')) {
      // Made active, or the connector deleted, since it was read.
      const now = await repo.getConnector(app.applicationId, connector.provider);
      if (now && now.generation === connector.generation) throw activeConflict(record.id, connector.provider);
      throw new NotFoundError(`Credential '${credentialId}' not found for the ${connector.provider} connector`);
    }
    throw error;
  }
}

const activeConflict = (id: string, provider: string) =>
  new ConflictError(
    `Credential '${id}' is the ${provider} connector's active_credential_id; set another one (or null) with PATCH /v3/connectors/${provider} first`,
  );
