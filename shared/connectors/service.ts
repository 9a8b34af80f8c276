import { randomUUID } from 'node:crypto';
import type { ApplicationContext } from '#shared/caller';
import { checkConnectorSettings, checkScope, parseProvider, PROVIDER_RULES } from '#shared/connectors/rules';
import { seal, unseal, unsealJson } from '#shared/crypto/sealed';
import { decodeOffsetCursor, encodeOffsetCursor } from '#shared/cursor';
import * as repo from '#shared/db/connectors';
import type { ConnectorRecord } from '#shared/db/connectors';
import { connectorKey, credentialKey, sealContext } from '#shared/db/keys';
import { RecordExistsError, VersionConflictError } from '#shared/db/records';
import { TransactionConditionError } from '#shared/db/transact';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { parseId, type ApplicationId } from '#shared/ids';
import { logger } from '#shared/logger';
import { clock } from '#shared/time';
import {
  CONNECTOR_PROVIDERS,
  type ConnectorProvider,
  type ConnectorSettings,
  type CreateConnectorBody,
  type CredentialType,
  type UpdateConnectorBody,
} from '#schemas/connectors';

/**
 * Connectors of the calling application: one per provider, holding the provider auth app (client ID,
 * sealed client secret, tenant, issuer), default scopes and the default credential. The client
 * secret is write-only: sealed before it is stored, never answered, never logged. The OAuth flow
 * reads connectors and credentials decrypted through connectorForAuth and credentialForAuth.
 */

/** Where a connector's client secret is sealed: bound to the connector's item. */
export const connectorSecretContext = (appId: ApplicationId, provider: string) =>
  sealContext(connectorKey(appId, provider));

function connectorView(record: ConnectorRecord) {
  const rule = PROVIDER_RULES[record.provider as ConnectorProvider];
  return {
    name: record.name,
    provider: record.provider as ConnectorProvider,
    settings: record.settings,
    ...(rule?.oauth ? { client_secret_set: record.client_secret_sealed !== undefined } : {}),
    scope: record.scope,
    ...(record.active_credential_id ? { active_credential_id: record.active_credential_id } : {}),
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}

/** The settings as stored: everything but the secret, in plaintext. */
function publicSettings(settings: ConnectorSettings): Record<string, string> {
  const { client_secret: _secret, ...rest } = settings;
  return rest as Record<string, string>;
}

/** The connector of `provider` (a path parameter), or 404 (400 for a name that is not a provider). */
export async function requireConnector(app: ApplicationContext, providerParam: string): Promise<ConnectorRecord> {
  const provider = parseProvider(providerParam);
  const record = await repo.getConnector(app.applicationId, provider);
  if (!record)
    throw new NotFoundError(`This application has no ${provider} connector; create it with POST /v3/connectors`);
  return record;
}

export async function listConnectors(app: ApplicationContext, limit: number, pageToken?: string) {
  const all = (await repo.listConnectors(app.applicationId)).map(connectorView);
  const offset = pageToken ? decodeOffsetCursor(pageToken, 'connectors') : 0;
  return {
    items: all.slice(offset, offset + limit),
    nextCursor: offset + limit < all.length ? encodeOffsetCursor('connectors', offset + limit) : undefined,
  };
}

export async function createConnector(app: ApplicationContext, body: CreateConnectorBody) {
  const provider = body.provider;
  const settings = checkConnectorSettings(provider, body.settings ?? {});
  const scope = checkScope(provider, body.scope ?? []);
  const now = clock.nowSeconds();
  const record: ConnectorRecord = {
    application_id: app.applicationId,
    provider,
    name: body.name ?? `${PROVIDER_RULES[provider].label} connector`,
    generation: randomUUID(),
    settings: publicSettings(settings),
    ...(settings.client_secret !== undefined
      ? {
          client_secret_sealed: await seal(
            settings.client_secret,
            'connector-secret',
            connectorSecretContext(app.applicationId, provider),
          ),
        }
      : {}),
    scope,
    credential_count: 0,
    created_at: now,
    updated_at: now,
    version: 1,
  };
  try {
    await repo.insertConnector(record);
  } catch (error) {
    if (error instanceof RecordExistsError) {
      throw new ConflictError(
        `This application already has a ${provider} connector (one per provider); change it with PATCH /v3/connectors/${provider}`,
      );
    }
    throw error;
  }
  return connectorView(record);
}

export async function getConnector(app: ApplicationContext, provider: string) {
  return connectorView(await requireConnector(app, provider));
}

/**
 * Changes a connector. `settings` replaces the stored settings as a whole, except that the client
 * secret, which cannot be read back, may be left out while client_id stays the same. An
 * `active_credential_id` must name a credential of this connector; null clears it.
 */
export async function updateConnector(app: ApplicationContext, providerParam: string, body: UpdateConnectorBody) {
  const current = await requireConnector(app, providerParam);
  const provider = current.provider as ConnectorProvider;
  let settings = current.settings;
  let sealedSecret = current.client_secret_sealed;
  if (body.settings) {
    const keepSecret =
      body.settings.client_secret === undefined &&
      current.client_secret_sealed !== undefined &&
      body.settings.client_id === current.settings.client_id;
    if (
      PROVIDER_RULES[provider].oauth &&
      body.settings.client_secret === undefined &&
      body.settings.client_id !== undefined &&
      !keepSecret
    ) {
      throw new InvalidRequestError(
        "'settings.client_secret' is required when 'settings.client_id' changes: the stored secret belongs to the previous client ID",
      );
    }
    const checked = checkConnectorSettings(provider, body.settings, keepSecret);
    settings = publicSettings(checked);
    sealedSecret =
      checked.client_secret !== undefined
        ? await seal(checked.client_secret, 'connector-secret', connectorSecretContext(app.applicationId, provider))
        : keepSecret
          ? current.client_secret_sealed
          : undefined;
  }
  let active = current.active_credential_id;
  if (body.active_credential_id === null) active = undefined;
  else if (body.active_credential_id !== undefined) {
    const id = parseId('credential', body.active_credential_id);
    if (!id)
      throw new InvalidRequestError(
        `'active_credential_id' must name a credential of this ${provider} connector (an ID such as cred_…)`,
      );
    active = id;
  }
  const next: ConnectorRecord = {
    ...current,
    name: body.name ?? current.name,
    settings,
    client_secret_sealed: sealedSecret,
    scope: body.scope ? checkScope(provider, body.scope) : current.scope,
    active_credential_id: active,
    updated_at: clock.nowSeconds(),
    version: current.version + 1,
  };
  if (next.client_secret_sealed === undefined) delete next.client_secret_sealed;
  if (next.active_credential_id === undefined) delete next.active_credential_id;
  try {
    await repo.updateConnector(current, next);
  } catch (error) {
    if (error instanceof TransactionConditionError && error.has('credential')) {
      throw new InvalidRequestError(
        `'active_credential_id' must name a credential of this ${provider} connector: '${body.active_credential_id}' is not one`,
      );
    }
    if (
      error instanceof VersionConflictError ||
      (error instanceof TransactionConditionError && error.has('connector'))
    ) {
      throw new ConflictError('The connector was changed or deleted by another request; fetch it again and retry');
    }
    throw error;
  }
  return connectorView(next);
}

/** Deletes a connector and its credentials (unreachable at once; their items are removed right after). */
export async function deleteConnector(app: ApplicationContext, providerParam: string): Promise<void> {
  const current = await requireConnector(app, providerParam);
  if (!(await repo.deleteConnector(current)))
    throw new NotFoundError(`This application has no ${current.provider} connector`);
  try {
    await repo.purgeCredentials(app.applicationId, current.provider, current.generation);
  } catch (error) {
    // The deletion is committed and the credentials can no longer be reached (their generation is
    // gone): what is left only takes space, so the request still succeeds.
    logger.warn('credentials of a deleted connector not removed', {
      application_id: app.applicationId,
      provider: current.provider,
      error,
    });
  }
}

/** The providers the application has a connector for (the hosted login page offers them). */
export async function listConnectorProviders(appId: ApplicationId): Promise<ConnectorProvider[]> {
  return (await repo.listConnectors(appId)).map((c) => c.provider as ConnectorProvider);
}

/** A connector as the OAuth flow needs it: decrypted, server-side only. */
export interface ConnectorForAuth {
  provider: string;
  client_id?: string;
  client_secret?: string;
  tenant?: string;
  issuer?: string;
  /** Mail servers replacing the provider's own (its grants' IMAP and SMTP). */
  mail?: {
    imap_host?: string;
    imap_port?: number;
    smtp_host?: string;
    smtp_port?: number;
    caldav_url?: string;
    carddav_url?: string;
  };
  scope: string[];
  active_credential_id?: string;
}

/** The application's connector of `provider` with its client secret opened, or undefined. Never answer or log what it returns. */
export async function connectorForAuth(appId: ApplicationId, provider: string): Promise<ConnectorForAuth | undefined> {
  if (!(CONNECTOR_PROVIDERS as readonly string[]).includes(provider)) return undefined;
  const record = await repo.getConnector(appId, provider);
  if (!record) return undefined;
  const { client_id, tenant, issuer, imap_host, imap_port, smtp_host, smtp_port, caldav_url, carddav_url } =
    record.settings;
  const mail = Object.fromEntries(
    Object.entries({ imap_host, imap_port, smtp_host, smtp_port, caldav_url, carddav_url }).filter(
      ([, v]) => v !== undefined,
    ),
  );
  return {
    provider: record.provider,
    ...(Object.keys(mail).length ? { mail } : {}),
    ...(client_id !== undefined ? { client_id } : {}),
    ...(record.client_secret_sealed !== undefined
      ? {
          client_secret: await unseal(
            record.client_secret_sealed,
            'connector-secret',
            connectorSecretContext(appId, provider),
          ),
        }
      : {}),
    ...(tenant !== undefined ? { tenant } : {}),
    ...(issuer !== undefined ? { issuer } : {}),
    scope: record.scope,
    ...(record.active_credential_id !== undefined ? { active_credential_id: record.active_credential_id } : {}),
  };
}

/** A credential as the OAuth flow needs it: its data decrypted, server-side only. */
export interface CredentialForAuth {
  id: string;
  provider: string;
  name: string;
  credential_type: CredentialType;
  data: Record<string, string>;
}

/** Where a credential's data is sealed: bound to the credential's item. */
export const credentialDataContext = (
  appId: ApplicationId,
  provider: string,
  id: Parameters<typeof credentialKey>[2],
) => sealContext(credentialKey(appId, provider, id));

/**
 * A credential of the application's connector of `provider`, with its data opened, or undefined
 * (also when it belongs to a deleted connector). Never answer or log what it returns.
 */
export async function credentialForAuth(
  appId: ApplicationId,
  provider: string,
  credentialId: string,
): Promise<CredentialForAuth | undefined> {
  const id = parseId('credential', credentialId);
  if (!id || !(CONNECTOR_PROVIDERS as readonly string[]).includes(provider)) return undefined;
  const [connector, record] = await Promise.all([
    repo.getConnector(appId, provider),
    repo.getCredential(appId, provider, id),
  ]);
  if (!connector || !record || record.connector_generation !== connector.generation) return undefined;
  return {
    id: record.id,
    provider: record.provider,
    name: record.name,
    credential_type: record.credential_type as CredentialType,
    data: await unsealJson<Record<string, string>>(
      record.data_sealed,
      'credential-data',
      credentialDataContext(appId, provider, id),
    ),
  };
}
