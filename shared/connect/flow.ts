import { createHash, randomBytes } from 'node:crypto';
import type { AuthorizeQuery, CallbackQuery } from '#schemas/connect';
import { redirectUriRegistered } from '#shared/applications/redirect-uris';
import { sealJson, unsealJson } from '#shared/crypto/sealed';
import { getApplication } from '#shared/db/applications';
import * as db from '#shared/db/oauth';
import type { OAuthFlowRecord } from '#shared/db/oauth';
import { InvalidRequestError } from '#shared/errors';
import { parseId, type ApplicationId } from '#shared/ids';
import {
  adminConsentUrl,
  authorizationUrl,
  exchangeCode,
  IdTokenError,
  ProviderOAuthError,
  ProviderUnavailableError,
} from '#shared/oauth/client';
import { connectGrant } from '#shared/accounts/connected';
import type { GrantRecord } from '#shared/db/grants';
import { imapLoginPage } from '#shared/connect/imap-page';
import {
  credentialOf,
  isOAuthProvider,
  OAUTH_PROVIDERS,
  providerClient,
  connectorOf,
} from '#shared/accounts/provider-client';
import {
  acceptsIncrementalScopes,
  authorizationServer,
  bulkAuthenticationOf,
  providersWithBulk,
  type OAuthProvider,
} from '#shared/providers/oauth';
import { detectProvider, hostedLoginPage, type LoginChoice } from '#shared/connect/login-page';
import { tokenHash } from '#shared/accounts/issued-tokens';
import { connectorForAuth, listConnectorProviders } from '#shared/connectors/service';
import { IMAP_PROVIDER } from '#shared/providers/names';
import { clock } from '#shared/time';

/**
 * Hosted OAuth, the part the user's browser walks through:
 *
 *   GET /v3/connect/auth       checks the application and its redirect URI (400 before any redirect),
 *                              then either serves the hosted login page (no provider chosen yet) or
 *                              stores the flow (our own `state`, PKCE S256 verifier and nonce, sealed;
 *                              15 minutes) and redirects to the provider;
 *   GET /v3/connect/callback   takes the flow once by its `state`, exchanges the provider's code,
 *                              verifies its ID token, creates or re-authenticates the grant with its
 *                              tokens, and redirects to the application's redirect URI with a
 *                              single-use code (10 minutes) and the application's `state`, unmodified.
 *
 * IMAP accounts have no provider to send the user to: `provider=imap` stores the flow the same way and
 * answers our own credential page, whose form (shared/connect/imap-login.ts) ends like the callback.
 *
 * Once the application and its redirect URI are known to be genuine, what goes wrong at the provider
 * goes back to that redirect URI as `error`, `error_description` (and `state`), as OAuth says.
 */
const FLOW_SECONDS = 15 * 60;
export const CODE_SECONDS = 10 * 60;
const CODE_PREFIX = 'sbac_';

const random = () => randomBytes(32).toString('base64url');
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

export type AuthorizeResult =
  | { kind: 'redirect'; location: string }
  | { kind: 'page'; html: string; nonce: string; formActions: string[]; status?: number };

/** Providers `GET /v3/connect/auth` can sign in with: the OAuth ones, and IMAP by our credential page. */
const HOSTED_PROVIDERS = [...OAUTH_PROVIDERS, IMAP_PROVIDER] as const;
const isHostedProvider = (provider: string) => isOAuthProvider(provider) || provider === IMAP_PROVIDER;

/** Where the provider sends the browser back: this API's callback. */
export const callbackUrl = (origin: string) => `${origin}/v3/connect/callback`;

/** `url` with `params` added to its query (a redirect URI may carry a query of its own). */
export function withParams(url: string, params: Record<string, string | undefined>): string {
  const target = new URL(url);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) target.searchParams.set(name, value);
  return target.toString();
}

/** The application a `client_id` names and its redirect URI, or a 400 (never a redirect to an unchecked URI). */
async function checkClient(query: Pick<AuthorizeQuery, 'client_id' | 'redirect_uri'>): Promise<ApplicationId> {
  const appId = parseId('application', query.client_id);
  const app = appId ? await getApplication(appId) : undefined;
  if (!app)
    throw new InvalidRequestError(
      `Unknown client_id '${query.client_id.slice(0, 64)}': it is the application ID (app_…)`,
    );
  if (!(await redirectUriRegistered(app.id, query.redirect_uri))) {
    throw new InvalidRequestError(
      `redirect_uri '${query.redirect_uri.slice(0, 200)}' is not registered for this application: add it with POST /v3/applications/redirect-uris (it must match exactly)`,
    );
  }
  return app.id;
}

export async function authorize(
  query: AuthorizeQuery,
  meta: { origin: string; ip: string; userAgent: string; selfUrl: string },
): Promise<AuthorizeResult> {
  const appId = await checkClient(query);
  if (query.code_challenge_method !== undefined && query.code_challenge === undefined)
    throw new InvalidRequestError("'code_challenge_method' needs a 'code_challenge'");
  if (
    query.code_challenge_method?.toUpperCase() === 'S256' &&
    !/^([A-Za-z0-9_-]{43}|[A-Za-z0-9+/]{86})$/.test(query.code_challenge!)
  ) {
    throw new InvalidRequestError(
      "'code_challenge' with S256 is the base64url SHA-256 of the code_verifier (43 characters), or the base64 of its hex digest (86)",
    );
  }
  const offered =
    query.provider
      ?.split(',')
      .map((p) => p.trim())
      .filter(Boolean) ?? [];
  const unknown = offered.filter((p) => !isHostedProvider(p));
  if (unknown.length)
    throw new InvalidRequestError(
      `Hosted OAuth is not available for provider ${unknown.map((p) => `'${p}'`).join(', ')} (available: ${HOSTED_PROVIDERS.join(', ')})`,
    );

  if (query.response_type === 'adminconsent') return startAdminConsent(appId, query, offered, meta);
  if (offered.length === 1)
    return offered[0] === IMAP_PROVIDER
      ? startImap(appId, query, meta)
      : startProvider(appId, offered[0]!, query, meta);

  // No single provider: the hosted login page, among the application's connectors (those asked for).
  const connectors = (await listConnectorProviders(appId)).filter(
    (p) => isHostedProvider(p) && (offered.length === 0 || offered.includes(p)),
  );
  if (!connectors.length)
    throw new InvalidRequestError(
      'This application has no connector for hosted OAuth: create one with POST /v3/connectors',
    );
  const prompts = (query.prompt ?? 'select_provider').split(',');
  if (prompts.includes('detect') && query.login_hint) {
    const detected = detectProvider(query.login_hint);
    if (detected && connectors.includes(detected)) return startProvider(appId, detected, query, meta);
  }
  const choices: LoginChoice[] = connectors.map((provider) => ({
    provider,
    href: withParams(meta.selfUrl, { provider }),
  }));
  const page = hostedLoginPage({
    choices,
    prompts,
    loginHint: query.login_hint,
    detectAction: meta.selfUrl,
    detectFailed: prompts.includes('detect') && Boolean(query.login_hint),
  });
  // The address form is answered by a redirect to the provider, which browsers check against the page's
  // form-action: the providers' sign-in origins are named there.
  const formActions = prompts.includes('detect') ? await signInOrigins(appId, connectors) : [];
  return { kind: 'page', ...page, formActions };
}

/** The origins of the providers' authorization endpoints (a connector that cannot be used is left out: its link answers why). */
async function signInOrigins(appId: ApplicationId, providers: readonly string[]): Promise<string[]> {
  const origins = await Promise.all(
    providers.map((provider) =>
      providerClient(appId, provider)
        .then((client) => new URL(client.server.authorization_endpoint).origin)
        .catch(() => undefined),
    ),
  );
  return [...new Set(origins.filter((origin): origin is string => origin !== undefined))];
}

async function storeFlow(
  appId: ApplicationId,
  provider: string,
  query: AuthorizeQuery,
  meta: { ip: string; userAgent: string },
  extra: Partial<OAuthFlowRecord> = {},
) {
  const state = random();
  const secrets = { code_verifier: random(), nonce: random() };
  const now = clock.nowSeconds();
  const hash = tokenHash(state);
  await db.putFlow(hash, {
    application_id: appId,
    provider,
    response_type: query.response_type,
    redirect_uri: query.redirect_uri,
    ...(query.state !== undefined ? { app_state: query.state } : {}),
    scope: query.scope?.split(' ').filter(Boolean) ?? [],
    access_type: query.access_type ?? 'online',
    ...(query.login_hint ? { login_hint: query.login_hint } : {}),
    ...(query.code_challenge
      ? {
          code_challenge: query.code_challenge,
          code_challenge_method: query.code_challenge_method?.toUpperCase() === 'S256' ? 'S256' : 'plain',
        }
      : {}),
    ...(query.credential_id ? { credential_id: query.credential_id } : {}),
    sealed: await sealJson(secrets, 'oauth-flow', `oauthflow#${hash}`),
    ...(meta.ip ? { ip: meta.ip } : {}),
    ...(meta.userAgent ? { user_agent: meta.userAgent } : {}),
    created_at: now,
    expires_at: now + FLOW_SECONDS,
    ...extra,
  });
  return { state, ...secrets };
}

async function startProvider(
  appId: ApplicationId,
  provider: string,
  query: AuthorizeQuery,
  meta: { origin: string; ip: string; userAgent: string },
): Promise<AuthorizeResult> {
  const client = await providerClient(appId, provider, query.credential_id);
  if (client.credential && client.credential.credential_type !== 'connector') {
    throw new InvalidRequestError(
      `Credential '${client.credential.id}' is of type '${client.credential.credential_type}': hosted OAuth (response_type=code) takes a credential of type 'connector'`,
    );
  }
  const scope = query.scope?.split(' ').filter(Boolean) ?? client.scope;
  const flow = await storeFlow(appId, provider, { ...query, scope: scope.join(' ') }, meta);
  const url = authorizationUrl(client.server, {
    client_id: client.client.client_id,
    redirect_uri: callbackUrl(meta.origin),
    scope,
    state: flow.state,
    nonce: flow.nonce,
    code_challenge: s256(flow.code_verifier),
    ...(query.login_hint ? { login_hint: query.login_hint } : {}),
    access_type: query.access_type ?? 'online',
    ...(query.include_grant_scopes === 'true' && acceptsIncrementalScopes(provider)
      ? { extra: { include_granted_scopes: 'true' } }
      : {}),
  });
  return { kind: 'redirect', location: url.toString() };
}

/**
 * `provider=imap`: the flow is kept as an OAuth flow is (15 minutes, once), and its `state` is the
 * credential form's hidden token instead of going to a provider; the page itself asks for the
 * address and password (shared/connect/imap-page.ts). Nothing about the account is stored yet.
 */
async function startImap(
  appId: ApplicationId,
  query: AuthorizeQuery,
  meta: { ip: string; userAgent: string },
): Promise<AuthorizeResult> {
  if (query.credential_id !== undefined)
    throw new InvalidRequestError(
      `'credential_id' does not apply to provider '${IMAP_PROVIDER}': its accounts sign in with their own password`,
    );
  if (!(await connectorForAuth(appId, IMAP_PROVIDER))) {
    throw new InvalidRequestError(
      `This application has no '${IMAP_PROVIDER}' connector: create one with POST /v3/connectors ({"provider": "${IMAP_PROVIDER}"}) to offer the IMAP credential page`,
    );
  }
  // IMAP grants have one scope (`email`), whatever the request asks for.
  const { scope: _ignored, ...rest } = query;
  const flow = await storeFlow(appId, IMAP_PROVIDER, rest, meta);
  return {
    kind: 'page',
    ...imapLoginPage({ flowToken: flow.state, fields: { email: query.login_hint } }),
    formActions: formActionsFor(query.redirect_uri),
  };
}

/**
 * What a page's form-action must name for its form to end at `redirectUri`: browsers check a form's
 * redirects against it. Its origin (http, https), or its scheme (an app's custom scheme).
 */
export function formActionsFor(redirectUri: string): string[] {
  const url = new URL(redirectUri);
  return [url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol];
}

/**
 * A flow again under a new `state`, until the same expiry (the IMAP form shown again after a refusal:
 * each token is used once, and retries do not lengthen the 15 minutes).
 */
export async function renewFlow(flow: OAuthFlowRecord): Promise<string> {
  const state = random();
  const hash = tokenHash(state);
  await db.putFlow(hash, {
    ...flow,
    sealed: await sealJson({ code_verifier: random(), nonce: random() }, 'oauth-flow', `oauthflow#${hash}`),
  });
  return state;
}

/** The single-use code (10 minutes) a flow ends with at the application's redirect URI, for its grant. */
export async function issueCode(flow: OAuthFlowRecord, grant: GrantRecord, scope: string[]): Promise<string> {
  const code = `${CODE_PREFIX}${random()}`;
  const now = clock.nowSeconds();
  await db.putCode(tokenHash(code), {
    application_id: flow.application_id,
    grant_id: grant.id,
    provider: flow.provider,
    email: grant.email,
    redirect_uri: flow.redirect_uri,
    scope,
    access_type: flow.access_type,
    ...(flow.code_challenge
      ? { code_challenge: flow.code_challenge, code_challenge_method: flow.code_challenge_method ?? 'plain' }
      : {}),
    created_at: now,
    expires_at: now + CODE_SECONDS,
  });
  return code;
}

/** Provider B's admin consent: the organization's administrator approves the application's permissions once. */
async function startAdminConsent(
  appId: ApplicationId,
  query: AuthorizeQuery,
  offered: string[],
  meta: { origin: string; ip: string; userAgent: string },
): Promise<AuthorizeResult> {
  const provider = offered.length === 1 ? offered[0]! : undefined;
  if (!provider || bulkAuthenticationOf(provider) !== 'adminconsent') {
    const which = providersWithBulk('adminconsent');
    throw new InvalidRequestError(
      `response_type=adminconsent is the admin consent flow of provider ${which.map((p) => `'${p}'`).join(', ')}: send ${which.map((p) => `provider=${p}`).join(' or ')}`,
    );
  }
  const connector = await connectorOf(appId, provider);
  const credentialId = query.credential_id ?? connector.active_credential_id;
  if (!credentialId)
    throw new InvalidRequestError(
      "response_type=adminconsent needs 'credential_id': a credential of type 'adminconsent' of the microsoft connector",
    );
  const credential = await credentialOf(appId, provider, credentialId);
  if (credential.credential_type !== 'adminconsent')
    throw new InvalidRequestError(
      `Credential '${credential.id}' is of type '${credential.credential_type}': admin consent takes a credential of type 'adminconsent'`,
    );
  const client = await providerClient(appId, provider);
  // A specific tenant lets the request override the scopes; `common` takes the app's configured permissions.
  const tenant = credential.data.tenant ?? 'common';
  if (query.scope && tenant === 'common')
    throw new InvalidRequestError(
      "'scope' can be set for admin consent only with a credential of a specific tenant (not 'common')",
    );
  const flow = await storeFlow(appId, provider, { ...query, credential_id: credential.id }, meta);
  const url = adminConsentUrl(await serverForTenant(appId, provider, tenant, client.server), {
    client_id: credential.data.client_id ?? client.client.client_id,
    redirect_uri: callbackUrl(meta.origin),
    state: flow.state,
    ...(query.scope ? { scope: query.scope.split(' ').filter(Boolean) } : {}),
  });
  return { kind: 'redirect', location: url.toString() };
}

/** The authorization server of a credential's tenant (the connector's issuer, when it names one, stays). */
async function serverForTenant(
  appId: ApplicationId,
  provider: string,
  tenant: string,
  server: Awaited<ReturnType<typeof providerClient>>['server'],
) {
  const connector = await connectorOf(appId, provider);
  if (connector.issuer || connector.tenant === tenant) return server;
  return authorizationServer(provider as OAuthProvider, { tenant });
}

// ---- the callback --------------------------------------------------------------------------------

export async function callback(query: CallbackQuery, meta: { origin: string }): Promise<{ location: string }> {
  if (!query.state)
    throw new InvalidRequestError("The provider's answer has no 'state': start again from GET /v3/connect/auth");
  const hash = tokenHash(query.state);
  const flow = await db.takeFlow(hash, clock.nowSeconds());
  if (!flow)
    throw new InvalidRequestError(
      "Unknown, used or expired 'state' (a sign-in is valid for 15 minutes, once): start again from GET /v3/connect/auth",
    );
  // An IMAP flow's state is its form's token: it ends at POST /v3/connect/credentials, never here.
  if (flow.provider === IMAP_PROVIDER)
    throw new InvalidRequestError(
      "This 'state' is not one of a provider's sign-in: start again from GET /v3/connect/auth",
    );
  const back = (params: Record<string, string | undefined>) => ({
    location: withParams(flow.redirect_uri, { ...params, state: flow.app_state }),
  });
  if (query.error) {
    return back({
      error: query.error,
      error_description: query.error_description ?? `${flow.provider} refused the authorization`,
      ...(query.error_uri ? { error_uri: query.error_uri } : {}),
    });
  }
  if (flow.response_type === 'adminconsent') {
    if (query.admin_consent?.toLowerCase() !== 'true')
      return back({ error: 'access_denied', error_description: 'The administrator did not consent' });
    await db.putAdminConsent({
      application_id: flow.application_id,
      provider: flow.provider,
      credential_id: flow.credential_id!,
      ...(query.tenant ? { tenant: query.tenant } : {}),
      consented_at: clock.nowSeconds(),
    });
    return back({ admin_consent: 'true', ...(query.tenant ? { tenant: query.tenant } : {}) });
  }
  if (!query.code)
    return back({ error: 'invalid_request', error_description: `${flow.provider} answered without a code` });
  const secrets = await unsealJson<{ code_verifier: string; nonce: string }>(
    flow.sealed,
    'oauth-flow',
    `oauthflow#${hash}`,
  );
  try {
    const client = await providerClient(flow.application_id, flow.provider, flow.credential_id);
    const { tokens, identity } = await exchangeCode(client.server, client.client, {
      code: query.code,
      redirect_uri: callbackUrl(meta.origin),
      code_verifier: secrets.code_verifier,
      nonce: secrets.nonce,
    });
    if (!identity.email)
      return back({
        error: 'access_denied',
        error_description: `${flow.provider} did not tell the account's email address (ask for the 'email' scope)`,
      });
    const scope = tokens.scope?.split(' ').filter(Boolean) ?? flow.scope;
    const { grant } = await connectGrant({
      applicationId: flow.application_id,
      provider: flow.provider as Parameters<typeof connectGrant>[0]['provider'],
      email: identity.email.toLowerCase(),
      ...(identity.name ? { name: identity.name } : {}),
      providerUserId: identity.sub,
      scope,
      settings: {},
      tokens: {
        source: 'oauth',
        access_token: tokens.access_token,
        ...(tokens.refresh_token ? { refresh_token: tokens.refresh_token } : {}),
        ...(tokens.expires_in ? { expires_in: tokens.expires_in } : {}),
      },
      ...(flow.ip ? { ip: flow.ip } : {}),
      ...(flow.user_agent ? { userAgent: flow.user_agent } : {}),
    });
    return back({ code: await issueCode(flow, grant, scope) });
  } catch (error) {
    if (error instanceof IdTokenError)
      return back({
        error: 'access_denied',
        error_description: `${flow.provider}'s ID token could not be verified: ${error.message}`,
      });
    if (error instanceof ProviderOAuthError)
      return back({
        error: error.error === 'invalid_grant' ? 'access_denied' : error.error,
        error_description: error.error_description ?? `${flow.provider} refused the code`,
      });
    if (error instanceof ProviderUnavailableError)
      return back({
        error: 'temporarily_unavailable',
        error_description: `${flow.provider} could not be reached; try again`,
      });
    if (error instanceof InvalidRequestError)
      return back({ error: 'invalid_request', error_description: error.message });
    if (error instanceof Error && 'status' in error && (error as { status: number }).status === 409)
      return back({ error: 'access_denied', error_description: error.message });
    throw error;
  }
}
