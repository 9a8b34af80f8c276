import * as oauth from '#shared/lazy/oauth';
import { ProviderConfigurationError, ProviderOAuthError } from '#shared/oauth/errors';
import { requestOptions, translate } from '#shared/oauth/http';
import { clock } from '#shared/time';

/**
 * How one provider's authorization server departs from plain OAuth 2 / OpenID Connect. Set by the
 * provider (shared/providers/oauth.ts); the client (shared/oauth/client.ts) reads only these, never
 * a provider's name.
 */
export interface OAuthConventions {
  /** How a refresh token is asked for: an `access_type=offline` parameter (with consent), or an `offline_access` scope. */
  offline?: 'access_type' | 'offline_access_scope';
  /** The scope of an admin consent that names none (the app's configured application permissions). */
  appScope?: string;
  /**
   * Multi-tenant endpoints (issuers matching the `multiTenantIssuer` pattern) issue ID tokens under the
   * user's own tenant: `issuerTemplate` with `{tid}` replaced by the token's `tid` claim.
   */
  tenantIssuer?: { multiTenantIssuer: string; issuerTemplate: string };
  /** An issuer that ID tokens may also write without its scheme. */
  bareIssuer?: string;
  /** Accounts without an email claim sign in with their mailbox address as `preferred_username`. */
  emailFromUsername?: boolean;
  /** A discovered (self-hosted) server serves admin consent at `${issuer}/adminconsent`, as the real one does. */
  adminConsentBesideIssuer?: boolean;
}

/**
 * The endpoints of one authorization server: built in for the real providers, or discovered from a
 * configured issuer (self-hosting, and the local OpenID Connect server). A plain, frozen object:
 * it may be cached, logged and compared.
 */
export interface AuthorizationServer {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri?: string;
  userinfo_endpoint?: string;
  revocation_endpoint?: string;
  admin_consent_endpoint?: string;
  /** The provider whose server this is (for messages and cache keys). */
  provider?: string;
  /** Whose conventions apply: offline access, admin consent, ID token issuer variants. */
  conventions?: OAuthConventions;
  /** From the metadata; decides between client_secret_post and client_secret_basic. */
  token_endpoint_auth_methods_supported?: readonly string[];
  id_token_signing_alg_values_supported?: readonly string[];
}

/** How long a discovered configuration is trusted in one container. */
const DISCOVERY_TTL_SECONDS = 3600;
const discovered = new Map<string, { expires: number; server: Promise<AuthorizationServer> }>();

/**
 * The authorization server at a configured issuer: `${issuer}/.well-known/openid-configuration` is
 * read, its `issuer` must equal the configured one exactly, and the result is cached per container
 * for an hour (a failure is not cached: the next call tries again).
 */
export async function discoveredServer(
  provider: string,
  issuer: string,
  conventions: OAuthConventions = {},
): Promise<AuthorizationServer> {
  const key = `${provider} ${issuer}`;
  const now = clock.nowSeconds();
  const cached = discovered.get(key);
  if (cached && cached.expires > now) return cached.server;
  const server = discover(provider, issuer, conventions);
  discovered.set(key, { expires: now + DISCOVERY_TTL_SECONDS, server });
  server.catch(() => {
    if (discovered.get(key)?.server === server) discovered.delete(key);
  });
  return server;
}

async function discover(provider: string, issuer: string, conventions: OAuthConventions): Promise<AuthorizationServer> {
  let issuerUrl: URL;
  try {
    issuerUrl = new URL(issuer);
  } catch {
    throw new ProviderConfigurationError(`the issuer '${issuer}' is not an absolute URL`);
  }
  if (issuerUrl.search || issuerUrl.hash)
    throw new ProviderConfigurationError(`the issuer '${issuer}' must not have a query or fragment`);
  let metadata: oauth.AuthorizationServer;
  try {
    const response = await oauth.discoveryRequest(issuerUrl, requestOptions());
    metadata = await oauth.processDiscoveryResponse(issuerUrl, response);
  } catch (error) {
    if (error instanceof oauth.OperationProcessingError && error.code === oauth.JSON_ATTRIBUTE_COMPARISON) {
      throw new ProviderConfigurationError(
        `the discovery document at ${issuer} names another issuer; refusing it (configured: ${issuer})`,
      );
    }
    const translated = translate(error);
    if (translated instanceof ProviderOAuthError) {
      throw new ProviderConfigurationError(
        `no usable OpenID Connect discovery document at ${issuer}: ${translated.message}`,
      );
    }
    throw translated;
  }
  const url = (name: keyof oauth.AuthorizationServer, required: boolean): string | undefined => {
    const value = metadata[name];
    if (value === undefined && !required) return undefined;
    if (typeof value !== 'string' || !URL.canParse(value))
      throw new ProviderConfigurationError(`the discovery document at ${issuer} has no valid ${String(name)}`);
    return value;
  };
  const list = (name: keyof oauth.AuthorizationServer): readonly string[] | undefined => {
    const value = metadata[name];
    return Array.isArray(value) && value.every((v) => typeof v === 'string') ? Object.freeze([...value]) : undefined;
  };
  const server: AuthorizationServer = {
    provider,
    conventions,
    issuer: metadata.issuer,
    authorization_endpoint: url('authorization_endpoint', true)!,
    token_endpoint: url('token_endpoint', true)!,
  };
  const optional = {
    jwks_uri: url('jwks_uri', false),
    userinfo_endpoint: url('userinfo_endpoint', false),
    revocation_endpoint: url('revocation_endpoint', false),
    // Our extension: a self-hosted provider B serves admin consent where the real one does, beside its issuer.
    admin_consent_endpoint: conventions.adminConsentBesideIssuer
      ? `${metadata.issuer.replace(/\/$/, '')}/adminconsent`
      : undefined,
    token_endpoint_auth_methods_supported: list('token_endpoint_auth_methods_supported'),
    id_token_signing_alg_values_supported: list('id_token_signing_alg_values_supported'),
  };
  for (const [name, value] of Object.entries(optional))
    if (value !== undefined) Object.assign(server, { [name]: value });
  return Object.freeze(server);
}

/** Tests: forget discovered configurations. */
export function clearDiscoveryCache(): void {
  discovered.clear();
}
