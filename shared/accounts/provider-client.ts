import {
  connectorForAuth,
  credentialForAuth,
  type ConnectorForAuth,
  type CredentialForAuth,
} from '#shared/connectors/service';
import { InvalidRequestError } from '#shared/errors';
import type { ApplicationId } from '#shared/ids';
import type { AuthorizationServer } from '#shared/oauth/client';
import {
  authorizationServer,
  defaultScopes,
  isOAuthProvider,
  OAUTH_PROVIDERS,
  type OAuthProvider,
} from '#shared/providers/oauth';

/**
 * What talking to a provider for an application takes: its connector (client ID and secret, tenant,
 * issuer, default scopes), optionally overridden by a credential of type `connector`, and the
 * provider's authorization server (built in, or discovered from the connector's `settings.issuer`).
 */
export interface ProviderClient {
  provider: OAuthProvider;
  connector: ConnectorForAuth;
  credential?: CredentialForAuth;
  server: AuthorizationServer;
  client: { client_id: string; client_secret?: string };
  scope: string[];
}

export { isOAuthProvider, OAUTH_PROVIDERS };

/** The application's connector for `provider`; 400 saying how to create it when there is none. */
export async function connectorOf(appId: ApplicationId, provider: string): Promise<ConnectorForAuth> {
  const connector = await connectorForAuth(appId, provider);
  if (!connector)
    throw new InvalidRequestError(
      `This application has no '${provider}' connector: create one with POST /v3/connectors (its client_id and client_secret at ${provider})`,
    );
  return connector;
}

/** A credential of the connector; 400 when it does not exist (or is of another provider). */
export async function credentialOf(
  appId: ApplicationId,
  provider: string,
  credentialId: string,
): Promise<CredentialForAuth> {
  const credential = await credentialForAuth(appId, provider, credentialId);
  if (!credential)
    throw new InvalidRequestError(
      `Credential '${credentialId}' is not a credential of this application's '${provider}' connector`,
    );
  return credential;
}

/**
 * The client of `provider` for hosted OAuth: the connector's, or the one a `connector` credential
 * (`credential_id`, else the connector's `active_credential_id`) overrides it with.
 */
export async function providerClient(
  appId: ApplicationId,
  provider: string,
  credentialId?: string,
): Promise<ProviderClient> {
  if (!isOAuthProvider(provider))
    throw new InvalidRequestError(
      `Hosted OAuth is not available for provider '${provider}' (available: ${OAUTH_PROVIDERS.join(', ')})`,
    );
  const connector = await connectorOf(appId, provider);
  const chosen = credentialId ?? connector.active_credential_id;
  const credential = chosen ? await credentialOf(appId, provider, chosen) : undefined;
  let client: ProviderClient['client'];
  if (credential?.credential_type === 'connector') {
    client = { client_id: credential.data.client_id!, client_secret: credential.data.client_secret };
  } else {
    if (!connector.client_id)
      throw new InvalidRequestError(
        `The '${provider}' connector has no settings.client_id: set it with PATCH /v3/connectors/${provider}`,
      );
    client = {
      client_id: connector.client_id,
      ...(connector.client_secret ? { client_secret: connector.client_secret } : {}),
    };
  }
  const server = await authorizationServer(provider, {
    ...(connector.issuer ? { issuer: connector.issuer } : {}),
    ...(connector.tenant ? { tenant: connector.tenant } : {}),
  });
  return {
    provider,
    connector,
    ...(credential ? { credential } : {}),
    server,
    client,
    scope: connector.scope.length ? connector.scope : defaultScopes(provider),
  };
}
