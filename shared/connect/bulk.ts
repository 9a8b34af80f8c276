import type { ApplicationContext } from '#shared/caller';
import type { CreateCustomGrantBody } from '#schemas/grants';
import { env } from '#shared/config';
import type { GrantRecord } from '#shared/db/grants';
import { getAdminConsent } from '#shared/db/oauth';
import { ApiError, InvalidRequestError } from '#shared/errors';
import {
  clientCredentialsToken,
  ProviderOAuthError,
  ProviderUnavailableError,
  serviceAccountToken,
  type ProviderTokens,
} from '#shared/oauth/client';
import { connectGrant } from '#shared/accounts/connected';
import { connectorOf, credentialOf, providerClient } from '#shared/accounts/provider-client';
import { ProviderRefreshUnavailableError } from '#shared/accounts/provider-tokens';
import {
  authorizationServer,
  bulkAuthenticationOf,
  isOAuthProvider,
  MICROSOFT_APP_SCOPE,
  providersWithBulk,
} from '#shared/providers/oauth';
import { clock } from '#shared/time';

/**
 * Bulk authentication (`POST /v3/connect/custom` for provider A or B): grants for an organization's
 * accounts without their users, with a credential registered on the connector first.
 *
 * - google + a `serviceaccount` credential: a JWT bearer grant (RS256, signed with the service
 *   account's key, the account as subject) at the provider's token endpoint; domain-wide delegation
 *   must be set up there.
 * - microsoft + an `adminconsent` credential: client credentials, once the organization's
 *   administrator has consented (GET /v3/connect/auth?response_type=adminconsent), and at least
 *   ADMIN_CONSENT_DELAY_SECONDS (5 minutes) after that consent.
 *
 * The grant keeps which credential made it (`settings.credential_id`, `credential_type`, and the
 * scopes granted); its tokens are refreshed the same way (shared/accounts/provider-tokens.ts).
 */

const noBulk = (provider: string) =>
  `Bulk authentication is available for ${providersWithBulk('serviceaccount').join(', ')} (service account) and ${providersWithBulk('adminconsent').join(', ')} (admin consent), not '${provider}'`;

export async function customConnectedGrant(
  app: ApplicationContext,
  body: CreateCustomGrantBody,
  meta: { ip: string; userAgent: string },
): Promise<GrantRecord> {
  const provider = body.provider;
  if (!isOAuthProvider(provider)) throw new InvalidRequestError(noBulk(provider));
  const settings = body.settings;
  for (const field of ['email', 'app_password', 'policy_id'] as const) {
    if (settings[field] !== undefined)
      throw new InvalidRequestError(
        `'settings.${field}' does not apply to ${provider} bulk authentication: send settings.credential_id and settings.email_address`,
      );
  }
  if (body.workspace_id !== undefined) throw new InvalidRequestError("'workspace_id' applies to Agent Accounts only");
  const email = settings.email_address?.toLowerCase();
  if (!email)
    throw new InvalidRequestError(`'settings.email_address' is required: the ${provider} account the grant is for`);
  const connector = await connectorOf(app.applicationId, provider);
  const credentialId = settings.credential_id ?? connector.active_credential_id;
  if (!credentialId)
    throw new InvalidRequestError(
      `'settings.credential_id' is required: a credential of the ${provider} connector (POST /v3/connectors/${provider}/creds)`,
    );
  const credential = await credentialOf(app.applicationId, provider, credentialId);
  const { server } = await providerClient(app.applicationId, provider);

  let tokens: ProviderTokens;
  let scope: string[];
  let grantSettings: Record<string, unknown>;
  const bulk = bulkAuthenticationOf(provider);
  try {
    if (bulk === 'serviceaccount') {
      if (credential.credential_type !== 'serviceaccount')
        throw new InvalidRequestError(
          `Credential '${credential.id}' is of type '${credential.credential_type}': ${provider} bulk authentication takes a 'serviceaccount' credential`,
        );
      scope = settings.scopes?.length ? settings.scopes : connector.scope;
      if (!scope.length)
        throw new InvalidRequestError(
          "'settings.scopes' is required (or set the connector's scope): the scopes the service account is delegated",
        );
      const data = credential.data;
      tokens = await serviceAccountToken(
        server,
        { client_email: data.client_email!, private_key: data.private_key!, private_key_id: data.private_key_id! },
        { subject: email, scope },
      );
      grantSettings = { credential_id: credential.id, credential_type: 'serviceaccount', scopes: scope };
    } else if (bulk === 'adminconsent') {
      if (credential.credential_type !== 'adminconsent')
        throw new InvalidRequestError(
          `Credential '${credential.id}' is of type '${credential.credential_type}': ${provider} bulk authentication takes an 'adminconsent' credential`,
        );
      if (settings.scopes !== undefined)
        throw new InvalidRequestError(
          `'settings.scopes' does not apply to ${provider}: the permissions are those the administrator consented to`,
        );
      await checkConsent(app, provider, credential.id);
      scope = [server.conventions?.appScope ?? MICROSOFT_APP_SCOPE];
      const tenantServer = connector.issuer
        ? server
        : await authorizationServer(provider, { tenant: credential.data.tenant ?? 'common' });
      tokens = await clientCredentialsToken(
        tenantServer,
        { client_id: credential.data.client_id!, client_secret: credential.data.client_secret! },
        { scope },
      );
      grantSettings = {
        credential_id: credential.id,
        credential_type: 'adminconsent',
        app_permission: true,
        app_permission_scopes: tokens.scope?.split(' ').filter(Boolean) ?? scope,
      };
    } else {
      throw new InvalidRequestError(noBulk(provider));
    }
  } catch (error) {
    if (error instanceof ProviderOAuthError) {
      throw new InvalidRequestError(
        `${provider} refused the credential '${credential.id}' for ${email}: ${error.error}${error.error_description ? ` (${error.error_description})` : ''}`,
      );
    }
    if (error instanceof ProviderUnavailableError) throw new ProviderRefreshUnavailableError(provider);
    throw error;
  }
  const { grant } = await connectGrant({
    applicationId: app.applicationId,
    provider,
    email,
    providerUserId: email,
    scope,
    settings: grantSettings,
    tokens: {
      source: credential.credential_type === 'serviceaccount' ? 'serviceaccount' : 'adminconsent',
      credential_id: credential.id,
      access_token: tokens.access_token,
      ...(tokens.expires_in ? { expires_in: tokens.expires_in } : {}),
    },
    ip: meta.ip,
    userAgent: meta.userAgent,
  });
  return grant;
}

/** Admin consent rule 6: at least ADMIN_CONSENT_DELAY_SECONDS between consent and the first grant. */
async function checkConsent(app: ApplicationContext, provider: string, credentialId: string): Promise<void> {
  const consent = await getAdminConsent(app.applicationId, provider, credentialId);
  if (!consent) {
    throw new InvalidRequestError(
      `No administrator has consented for credential '${credentialId}' yet: send one to GET /v3/connect/auth?provider=${provider}&response_type=adminconsent&credential_id=${credentialId}&client_id=…&redirect_uri=…`,
    );
  }
  const wait = consent.consented_at + env.adminConsentDelaySeconds() - clock.nowSeconds();
  if (wait > 0) {
    throw new ApiError(
      400,
      `The administrator consented ${clock.nowSeconds() - consent.consented_at} s ago; grants can be created ${env.adminConsentDelaySeconds()} s after consent: ${wait} s left`,
      {
        headers: { 'retry-after': String(wait) },
      },
    );
  }
}
