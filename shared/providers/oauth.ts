import { ProviderConfigurationError } from '#shared/oauth/errors';
import { CONNECTED_PROVIDERS } from '#shared/providers/names';
import { discoveredServer, type AuthorizationServer, type OAuthConventions } from '#shared/oauth/server';

/**
 * The OAuth providers of connected accounts: their built-in authorization servers, the scopes asked
 * when an application configures none, and how each departs from plain OAuth 2 / OpenID Connect
 * (OAuthConventions). The client (shared/oauth/) knows none of their names.
 */
export const OAUTH_PROVIDERS = CONNECTED_PROVIDERS;
export type OAuthProvider = (typeof OAUTH_PROVIDERS)[number];
export const isOAuthProvider = (provider: string): provider is OAuthProvider =>
  (OAUTH_PROVIDERS as readonly string[]).includes(provider);

const GOOGLE_SCOPE_PREFIX = 'https://www.googleapis.com/auth/';
const GRAPH_SCOPE_PREFIX = 'https://graph.microsoft.com/';

/**
 * Scopes requested when the application names none: sign-in, the email address, and what the
 * mail, drafts, send and calendar endpoints need (the spec's scope table: provider A's
 * mail.modify covers reading, changing and deleting messages, compose the drafts, calendar the
 * bookings and configurations; provider B's Mail.ReadWrite, Mail.Send, Calendars.ReadWrite).
 */
export const DEFAULT_SCOPES = {
  google: [
    'openid',
    'email',
    'profile',
    ...['gmail.modify', 'gmail.compose', 'gmail.send', 'calendar'].map((s) => GOOGLE_SCOPE_PREFIX + s),
  ],
  microsoft: [
    'openid',
    'email',
    'profile',
    'offline_access',
    ...['Mail.ReadWrite', 'Mail.Send', 'Calendars.ReadWrite'].map((s) => GRAPH_SCOPE_PREFIX + s),
  ],
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

const CONVENTIONS: Record<OAuthProvider, OAuthConventions> = {
  google: Object.freeze({ offline: 'access_type', bareIssuer: 'https://accounts.google.com' }),
  microsoft: Object.freeze({
    offline: 'offline_access_scope',
    appScope: MICROSOFT_APP_SCOPE,
    tenantIssuer: {
      multiTenantIssuer: '^https://login\\.microsoftonline\\.com/(common|organizations|consumers)/v2\\.0$',
      issuerTemplate: 'https://login.microsoftonline.com/{tid}/v2.0',
    },
    emailFromUsername: true,
    adminConsentBesideIssuer: true,
  }),
  yahoo: Object.freeze({}),
  zoom: Object.freeze({}),
};

/** Tenant: a GUID, a verified domain, or common / organizations / consumers. Nothing that could change the path. */
const TENANT = /^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,253}[A-Za-z0-9])?$/;

function builtIn(provider: OAuthProvider, tenant: string): Omit<AuthorizationServer, 'conventions'> {
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
      if (!TENANT.test(tenant))
        throw new ProviderConfigurationError(
          `'${tenant}' is not a tenant: use common, organizations, consumers, a tenant ID or a domain`,
        );
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

/**
 * The authorization server of a provider. Built in (no network) unless `issuer` is configured:
 * then it is discovered (shared/oauth/server.ts). `tenant` (microsoft, default `common`) applies to
 * the built-in endpoints only.
 */
export async function authorizationServer(
  provider: OAuthProvider,
  settings: { issuer?: string; tenant?: string },
): Promise<AuthorizationServer> {
  if (!isOAuthProvider(provider)) throw new ProviderConfigurationError(`unknown provider '${String(provider)}'`);
  const conventions = CONVENTIONS[provider];
  if (!settings.issuer) return Object.freeze({ ...builtIn(provider, settings.tenant ?? 'common'), conventions });
  return discoveredServer(provider, settings.issuer, conventions);
}

/** What else differs between the OAuth providers of connected accounts (beyond their servers' conventions). */
interface ProviderTraits {
  /** Bulk authentication (grants without their users): a service account's JWT bearer grant, or client credentials after admin consent. */
  bulk?: 'serviceaccount' | 'adminconsent';
  /** Accepts `include_granted_scopes` (incremental authorization). */
  incrementalScopes?: boolean;
  /** Scopes are configured on the provider's app, never by a connector or a request. */
  scopesOnApp?: boolean;
  /** A `connector` credential may name its tenant. */
  tenants?: boolean;
}

const TRAITS: Record<OAuthProvider, ProviderTraits> = {
  google: { bulk: 'serviceaccount', incrementalScopes: true },
  microsoft: { bulk: 'adminconsent', tenants: true },
  yahoo: {},
  zoom: { scopesOnApp: true },
};

const traitsOf = (provider: string): ProviderTraits => (isOAuthProvider(provider) ? TRAITS[provider] : {});
export const bulkAuthenticationOf = (provider: string) => traitsOf(provider).bulk;
export const acceptsIncrementalScopes = (provider: string) => traitsOf(provider).incrementalScopes === true;
export const scopesOnApp = (provider: string) => traitsOf(provider).scopesOnApp === true;
export const hasTenants = (provider: string) => traitsOf(provider).tenants === true;
/** The providers whose hosted flow offers bulk authentication of a kind (for messages and checks). */
export const providersWithBulk = (kind: 'serviceaccount' | 'adminconsent'): OAuthProvider[] =>
  OAUTH_PROVIDERS.filter((p) => TRAITS[p].bulk === kind);
