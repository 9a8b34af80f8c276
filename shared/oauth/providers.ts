import * as oauth from 'oauth4webapi';
import { ProviderConfigurationError, ProviderOAuthError } from '#shared/oauth/errors';
import { requestOptions, translate } from '#shared/oauth/http';
import { clock } from '#shared/time';

export const OAUTH_PROVIDERS = ['google', 'microsoft', 'yahoo', 'zoom'] as const;
export type OAuthProvider = (typeof OAUTH_PROVIDERS)[number];

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
  /** Whose conventions apply: offline access (google: `access_type`, microsoft: `offline_access`), ID token issuer variants. */
  provider?: OAuthProvider;
  /** From the metadata; decides between client_secret_post and client_secret_basic. */
  token_endpoint_auth_methods_supported?: readonly string[];
  id_token_signing_alg_values_supported?: readonly string[];
}

const GOOGLE_SCOPE_PREFIX = 'https://www.googleapis.com/auth/';
const GRAPH_SCOPE_PREFIX = 'https://graph.microsoft.com/';

/**
 * Scopes requested when the application names none: sign-in, the email address, and what the
 * mail, drafts, send and calendar endpoints need (the spec's scope table: provider A's
 * mail.modify covers reading, changing and deleting messages, compose the drafts, calendar the
 * bookings and configurations; provider B's Mail.ReadWrite, Mail.Send, Calendars.ReadWrite).
 */
export const DEFAULT_SCOPES = {
  google: ['openid', 'email', 'profile', ...['gmail.modify', 'gmail.compose', 'gmail.send', 'calendar'].map((s) => GOOGLE_SCOPE_PREFIX + s)],
  microsoft: ['openid', 'email', 'profile', 'offline_access', ...['Mail.ReadWrite', 'Mail.Send', 'Calendars.ReadWrite'].map((s) => GRAPH_SCOPE_PREFIX + s)],
} as const satisfies Partial<Record<OAuthProvider, readonly string[]>>;

/** The scopes to request when the application configured none. */
export function defaultScopes(provider: OAuthProvider): string[] {
  switch (provider) {
    case 'google':
    case 'microsoft':
      return [...DEFAULT_SCOPES[provider]];
    case 'yahoo':
      return ['openid', 'email', 'profile', 'mail-w'];
    case 'zoom':
      // Zoom grants the scopes configured on the app; the request names none.
      return [];
  }
}

/** Provider B's application permissions as configured on the app (client credentials, admin consent). */
export const MICROSOFT_APP_SCOPE = `${GRAPH_SCOPE_PREFIX}.default`;

/** Tenant: a GUID, a verified domain, or common / organizations / consumers. Nothing that could change the path. */
const TENANT = /^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,253}[A-Za-z0-9])?$/;

function builtIn(provider: OAuthProvider, tenant: string): AuthorizationServer {
  switch (provider) {
    case 'google':
      return {
        provider,
        issuer: 'https://accounts.google.com',
        authorization_endpoint: 'https://accounts.google.com/o/oauth2/v2/auth',
        token_endpoint: 'https://oauth2.googleapis.com/token',
        jwks_uri: 'https://www.googleapis.com/oauth2/v3/certs',
        userinfo_endpoint: 'https://openidconnect.googleapis.com/v1/userinfo',
        revocation_endpoint: 'https://oauth2.googleapis.com/revoke',
        token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
        id_token_signing_alg_values_supported: ['RS256'],
      };
    case 'microsoft': {
      if (!TENANT.test(tenant)) throw new ProviderConfigurationError(`'${tenant}' is not a tenant: use common, organizations, consumers, a tenant ID or a domain`);
      const base = `https://login.microsoftonline.com/${tenant}`;
      // No revocation endpoint: the Microsoft identity platform has none (sign-in sessions are revoked through Graph).
      return {
        provider,
        issuer: `${base}/v2.0`,
        authorization_endpoint: `${base}/oauth2/v2.0/authorize`,
        token_endpoint: `${base}/oauth2/v2.0/token`,
        jwks_uri: `${base}/discovery/v2.0/keys`,
        userinfo_endpoint: 'https://graph.microsoft.com/oidc/userinfo',
        admin_consent_endpoint: `${base}/v2.0/adminconsent`,
        token_endpoint_auth_methods_supported: ['client_secret_post', 'private_key_jwt', 'client_secret_basic'],
        id_token_signing_alg_values_supported: ['RS256'],
      };
    }
    case 'yahoo':
      return {
        provider,
        issuer: 'https://api.login.yahoo.com',
        authorization_endpoint: 'https://api.login.yahoo.com/oauth2/request_auth',
        token_endpoint: 'https://api.login.yahoo.com/oauth2/get_token',
        jwks_uri: 'https://api.login.yahoo.com/openid/v1/certs',
        userinfo_endpoint: 'https://api.login.yahoo.com/openid/v1/userinfo',
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
        id_token_signing_alg_values_supported: ['ES256', 'RS256'],
      };
    case 'zoom':
      // OAuth 2 without OpenID Connect: no ID token; who the user is comes from /v2/users/me.
      return {
        provider,
        issuer: 'https://zoom.us',
        authorization_endpoint: 'https://zoom.us/oauth/authorize',
        token_endpoint: 'https://zoom.us/oauth/token',
        userinfo_endpoint: 'https://api.zoom.us/v2/users/me',
        revocation_endpoint: 'https://zoom.us/oauth/revoke',
        token_endpoint_auth_methods_supported: ['client_secret_basic'],
      };
  }
}

/** How long a discovered configuration is trusted in one container. */
const DISCOVERY_TTL_SECONDS = 3600;
const discovered = new Map<string, { expires: number; server: Promise<AuthorizationServer> }>();

/**
 * The authorization server of a provider. Built in (no network) unless `issuer` is configured:
 * then `${issuer}/.well-known/openid-configuration` is read, its `issuer` must equal the configured
 * one exactly, and the result is cached per container for an hour. `tenant` (microsoft, default
 * `common`) applies to the built-in endpoints only.
 */
export async function authorizationServer(provider: OAuthProvider, settings: { issuer?: string; tenant?: string }): Promise<AuthorizationServer> {
  if (!OAUTH_PROVIDERS.includes(provider)) throw new ProviderConfigurationError(`unknown provider '${String(provider)}'`);
  if (!settings.issuer) return Object.freeze(builtIn(provider, settings.tenant ?? 'common'));
  const key = `${provider} ${settings.issuer}`;
  const now = clock.nowSeconds();
  const cached = discovered.get(key);
  if (cached && cached.expires > now) return cached.server;
  const server = discover(provider, settings.issuer);
  discovered.set(key, { expires: now + DISCOVERY_TTL_SECONDS, server });
  // A failure is not cached: the next call tries again.
  server.catch(() => {
    if (discovered.get(key)?.server === server) discovered.delete(key);
  });
  return server;
}

async function discover(provider: OAuthProvider, issuer: string): Promise<AuthorizationServer> {
  let issuerUrl: URL;
  try {
    issuerUrl = new URL(issuer);
  } catch {
    throw new ProviderConfigurationError(`the issuer '${issuer}' is not an absolute URL`);
  }
  if (issuerUrl.search || issuerUrl.hash) throw new ProviderConfigurationError(`the issuer '${issuer}' must not have a query or fragment`);
  let metadata: oauth.AuthorizationServer;
  try {
    const response = await oauth.discoveryRequest(issuerUrl, requestOptions);
    metadata = await oauth.processDiscoveryResponse(issuerUrl, response);
  } catch (error) {
    if (error instanceof oauth.OperationProcessingError && error.code === oauth.JSON_ATTRIBUTE_COMPARISON) {
      throw new ProviderConfigurationError(`the discovery document at ${issuer} names another issuer; refusing it (configured: ${issuer})`);
    }
    const translated = translate(error);
    if (translated instanceof ProviderOAuthError) {
      throw new ProviderConfigurationError(`no usable OpenID Connect discovery document at ${issuer}: ${translated.message}`);
    }
    throw translated;
  }
  const url = (name: keyof oauth.AuthorizationServer, required: boolean): string | undefined => {
    const value = metadata[name];
    if (value === undefined && !required) return undefined;
    if (typeof value !== 'string' || !URL.canParse(value)) throw new ProviderConfigurationError(`the discovery document at ${issuer} has no valid ${String(name)}`);
    return value;
  };
  const list = (name: keyof oauth.AuthorizationServer): readonly string[] | undefined => {
    const value = metadata[name];
    return Array.isArray(value) && value.every((v) => typeof v === 'string') ? Object.freeze([...value]) : undefined;
  };
  const server: AuthorizationServer = {
    provider,
    issuer: metadata.issuer,
    authorization_endpoint: url('authorization_endpoint', true)!,
    token_endpoint: url('token_endpoint', true)!,
  };
  const optional = {
    jwks_uri: url('jwks_uri', false),
    userinfo_endpoint: url('userinfo_endpoint', false),
    revocation_endpoint: url('revocation_endpoint', false),
    // Our extension: a self-hosted provider B serves admin consent where the real one does, beside its issuer.
    admin_consent_endpoint: provider === 'microsoft' ? `${metadata.issuer.replace(/\/$/, '')}/adminconsent` : undefined,
    token_endpoint_auth_methods_supported: list('token_endpoint_auth_methods_supported'),
    id_token_signing_alg_values_supported: list('id_token_signing_alg_values_supported'),
  };
  for (const [name, value] of Object.entries(optional)) if (value !== undefined) Object.assign(server, { [name]: value });
  return Object.freeze(server);
}

/** Tests: forget discovered configurations. */
export function clearDiscoveryCache(): void {
  discovered.clear();
}
