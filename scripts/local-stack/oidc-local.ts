import { createHash, createPublicKey, generateKeyPair, randomBytes, type KeyObject } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { decodeJwt, decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';
import Provider from 'oidc-provider';

/**
 * A local OpenID Connect server that plays provider A and provider B for `npm start` and the tests:
 * one process on 127.0.0.1, two issuers, `${origin}/google` and `${origin}/microsoft`, each an
 * oidc-provider 9 instance (certified) with its own keys, sessions and tokens.
 *
 * Both: authorization code with PKCE (S256, always required), refresh tokens rotated on every use,
 * introspection, userinfo, client credentials, discovery and JWKS. Accounts: any email address
 * typed on the login page (password ignored) is an account, `sub` derived from it.
 * - google: `access_type=offline` stands for the `offline_access` scope (a refresh token), the ID
 *   token carries email and name, revocation, and the JWT bearer grant (RFC 7523) for registered
 *   service accounts (provider A bulk).
 * - microsoft: the `offline_access` scope gives a refresh token without asking for consent again,
 *   the ID token carries no email (it comes from userinfo), no revocation endpoint (like the real
 *   one), and `${issuer}/adminconsent` (provider B admin consent).
 *
 * Tests force errors with `failNext` (a 503 or an OAuth error from an endpoint, once) and
 * `tamperNextIdToken` (rewrite and re-sign the next ID token). Nothing here leaves 127.0.0.1; the
 * login and consent pages load nothing from elsewhere.
 */

export type LocalIssuerName = 'google' | 'microsoft';
const ISSUER_NAMES: readonly LocalIssuerName[] = ['google', 'microsoft'];

export interface LocalOidcClient {
  client_id: string;
  /** Absent: a public client (`none`). */
  client_secret?: string;
  redirect_uris: string[];
  /** Default: client_secret_post with a secret (what shared/oauth picks from the metadata), `none` without. */
  token_endpoint_auth_method?: 'client_secret_post' | 'client_secret_basic' | 'none';
}

export interface LocalServiceAccount {
  client_email: string;
  /** PEM (SPKI) public key of the account's key pair. */
  public_key: string;
  private_key_id: string;
}

export type LocalEndpoint =
  'token' | 'userinfo' | 'revocation' | 'introspection' | 'discovery' | 'jwks' | 'adminconsent';

export interface LocalFault {
  /** Which issuer (default: whichever is asked first). */
  issuer?: LocalIssuerName;
  endpoint: LocalEndpoint;
  /** Token endpoint only: fail only a request of this grant type (e.g. `refresh_token`). */
  grantType?: string;
  /** An OAuth error (`{"error": ...}`, status default 400; admin consent: a redirect carrying it) … */
  error?: string;
  error_description?: string;
  /** … or a bare HTTP status (e.g. 503). */
  status?: number;
}

export interface IdTokenTamper {
  issuer?: LocalIssuerName;
  /** Claims to set (`undefined` removes one) in the next ID token the token endpoint issues. */
  claims?: Record<string, unknown>;
  /** `foreign`: signed by a key that is not in the JWKS, under the real key's `kid` (a bad signature). */
  signWith?: 'server' | 'foreign';
}

/** A token or authorization code as it leaves the server. */
export interface IssuedSecret {
  issuer: LocalIssuerName;
  kind: 'code' | 'access_token' | 'refresh_token' | 'id_token';
  value: string;
}

export interface OidcServerOptions {
  /** 0 or absent: any free port. */
  port?: number;
  /** Told of every authorization code and token issued (the tests' secrets scan remembers them). */
  onIssue?: (issued: IssuedSecret) => void;
  clients?: LocalOidcClient[];
  serviceAccounts?: LocalServiceAccount[];
  /** The tenant provider B's admin consent reports (default LOCAL_TENANT_ID). */
  tenant?: string;
}

export interface LocalOidcServer {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** Provider A's issuer, `${origin}/google` (the brief's single `issuer`). */
  issuer: string;
  issuers: Record<LocalIssuerName, string>;
  tenant: string;
  /** Registers a client with both issuers (replacing one with the same client_id). */
  addClient(client: LocalOidcClient): void;
  /** Registers a service account with provider A's JWT bearer grant. */
  addServiceAccount(account: LocalServiceAccount): void;
  /** Arms a fault for the next matching request (faults queue up; each fires once). */
  failNext(fault: LocalFault): void;
  tamperNextIdToken(tamper: IdTokenTamper): void;
  /** Faults and tampers armed but not fired yet. */
  pending(): number;
  stop(): Promise<void>;
}

export const LOCAL_TENANT_ID = '6c1a3d3e-0f5b-4c1e-9a7d-10ca1d000b0b';

const GOOGLE_SCOPES = [
  'https://mail.google.com/',
  ...[
    'gmail.readonly',
    'gmail.modify',
    'gmail.compose',
    'gmail.send',
    'gmail.metadata',
    'gmail.labels',
    'gmail.insert',
    'gmail.settings.basic',
    'calendar',
    'calendar.readonly',
    'calendar.events',
    'calendar.events.readonly',
    'contacts',
    'contacts.readonly',
  ].map((s) => `https://www.googleapis.com/auth/${s}`),
];
const GRAPH_SCOPES = [
  'Mail.Read',
  'Mail.ReadWrite',
  'Mail.Send',
  'Mail.Read.Shared',
  'Mail.ReadWrite.Shared',
  'Mail.Send.Shared',
  'Calendars.Read',
  'Calendars.ReadWrite',
  'Calendars.Read.Shared',
  'Calendars.ReadWrite.Shared',
  'Contacts.Read',
  'Contacts.ReadWrite',
  'User.Read',
  '.default',
].map((s) => `https://graph.microsoft.com/${s}`);

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const ENDPOINT_PATHS: Record<LocalEndpoint, string> = {
  token: '/token',
  userinfo: '/me',
  revocation: '/token/revocation',
  introspection: '/token/introspection',
  discovery: '/.well-known/openid-configuration',
  jwks: '/jwks',
  adminconsent: '/adminconsent',
};
const EMAIL = /^[^\s@<>"]+@[^\s@<>"]+\.[^\s@<>"]+$/;

/** A stable, Google-like numeric subject for an email address. */
export function subjectFor(email: string): string {
  return BigInt(`0x${createHash('sha256').update(email.trim().toLowerCase()).digest('hex').slice(0, 16)}`)
    .toString()
    .padStart(20, '1');
}

/** `alice.smith@example.com` → `Alice Smith`. */
function nameFor(email: string): string {
  return email
    .split('@')[0]!
    .split(/[._+-]+/)
    .filter(Boolean)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join(' ');
}

const html = (value: string) => value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${html(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:26rem;margin:3rem auto;padding:0 1rem}input,button{font:inherit;padding:.4rem;margin:.2rem 0;width:100%;box-sizing:border-box}.error{color:#b00}</style>
</head><body><h1>${html(title)}</h1>${body}</body></html>`;
}

async function readBody(req: IncomingMessage, limit = 64 * 1024): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new Error('request body too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The request again, its body already read: oidc-provider reads the body itself. */
function replay(req: IncomingMessage, body: Buffer): IncomingMessage {
  return Object.assign(Readable.from([body]), {
    method: req.method,
    url: req.url,
    headers: req.headers,
    rawHeaders: req.rawHeaders,
    httpVersion: req.httpVersion,
    httpVersionMajor: req.httpVersionMajor,
    httpVersionMinor: req.httpVersionMinor,
    socket: req.socket,
    connection: req.socket,
    complete: true,
  }) as unknown as IncomingMessage;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

function sendHtml(res: ServerResponse, status: number, body: string) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(body);
}

/** A Map-backed oidc-provider adapter per issuer; the `Client` model reads the registered clients. */
function adapterFactory(clients: Map<string, Record<string, unknown>>) {
  const store = new Map<string, { payload: Record<string, unknown>; expiresAt: number }>();
  const live = (key: string) => {
    const entry = store.get(key);
    if (entry && entry.expiresAt <= Date.now()) store.delete(key);
    return store.get(key);
  };
  return (model: string) => {
    const key = (id: string) => `${model}:${id}`;
    return {
      async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number) {
        if (model === 'Client') return;
        store.set(key(id), { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
        if (model === 'Session' && typeof payload.uid === 'string')
          store.set(`SessionUid:${payload.uid}`, {
            payload: { id },
            expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Infinity,
          });
      },
      async find(id: string) {
        if (model === 'Client') return clients.get(id);
        return live(key(id))?.payload;
      },
      async findByUid(uid: string) {
        const id = live(`SessionUid:${uid}`)?.payload.id;
        return typeof id === 'string' ? live(key(id))?.payload : undefined;
      },
      async findByUserCode() {
        return undefined;
      },
      async consume(id: string) {
        const entry = live(key(id));
        if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
      },
      async destroy(id: string) {
        store.delete(key(id));
      },
      async revokeByGrantId(grantId: string) {
        for (const [k, entry] of store) if (entry.payload.grantId === grantId) store.delete(k);
      },
    };
  };
}

interface PolicyClient {
  clientId: string;
  clientAuthMethod: string;
}

interface Issuer {
  name: LocalIssuerName;
  prefix: string;
  url: string;
  provider: Provider;
  callback: (req: IncomingMessage, res: ServerResponse) => void;
  accounts: Map<string, string>;
}

/** A new RSA private key (2048 bits). */
const rsaKey = () =>
  new Promise<KeyObject>((resolve, reject) =>
    generateKeyPair('rsa', { modulusLength: 2048 }, (error, _publicKey, privateKey) =>
      error ? reject(error) : resolve(privateKey),
    ),
  );

export async function startOidcServer(options: OidcServerOptions = {}): Promise<LocalOidcServer> {
  const server = createServer();
  server.listen(options.port ?? 0, '127.0.0.1');
  await once(server, 'listening');
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const tenant = options.tenant ?? LOCAL_TENANT_ID;
  const clients = new Map<string, Record<string, unknown>>();
  const serviceAccounts = new Map<string, { client_email: string; key: KeyObject; kid: string }>();
  const faults: LocalFault[] = [];
  const tampers: IdTokenTamper[] = [];
  // RSA keys take ~100 ms of CPU each: made in libuv's threads, side by side, not on the event loop
  // (npm start runs much else on it meanwhile).
  const [foreignKey, ...issuerKeys] = await Promise.all([rsaKey(), ...ISSUER_NAMES.map(() => rsaKey())]);

  const issuers = ISSUER_NAMES.map((name, index) => makeIssuer(name, issuerKeys[index]!));

  function makeIssuer(name: LocalIssuerName, privateKey: KeyObject): Issuer {
    const prefix = `/${name}`;
    const url = `${origin}${prefix}`;
    const kid = `${name}-${randomBytes(6).toString('hex')}`;
    const accounts = new Map<string, string>();
    const google = name === 'google';
    const provider = new Provider(url, {
      adapter: adapterFactory(clients),
      jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' }] },
      cookies: {
        keys: [randomBytes(32).toString('hex')],
        // Both issuers share the host: their cookies must not collide.
        names: {
          session: `_${name}_session`,
          interaction: `_${name}_interaction`,
          resume: `_${name}_interaction_resume`,
        },
      },
      scopes: ['openid', 'offline_access', 'email', 'profile', ...(google ? GOOGLE_SCOPES : GRAPH_SCOPES)],
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'given_name', 'family_name'] },
      // Provider A puts email and name in the ID token; provider B's come from userinfo.
      conformIdTokenClaims: !google,
      async findAccount(_ctx: unknown, sub: string) {
        const email = accounts.get(sub);
        if (!email) return undefined;
        const name = nameFor(email);
        return {
          accountId: sub,
          async claims() {
            return {
              sub,
              email,
              email_verified: true,
              name,
              given_name: name.split(' ')[0],
              family_name: name.split(' ').slice(1).join(' ') || undefined,
            };
          },
        };
      },
      interactions: {
        url: (_ctx: unknown, interaction: { uid: string }) => `${prefix}/interaction/${interaction.uid}`,
      },
      features: {
        devInteractions: { enabled: false },
        // Any confidential client may introspect (Dovecot's oauth2 passdb has its own client); a public one only its own tokens.
        introspection: {
          enabled: true,
          allowedPolicy: async (_ctx: unknown, client: PolicyClient, token: { clientId: string }) =>
            client.clientAuthMethod !== 'none' || token.clientId === client.clientId,
        },
        // Only the client a token was issued to revokes it (another's: answered 200, nothing revoked, as RFC 7009 allows).
        revocation: {
          enabled: google,
          allowedPolicy: async (_ctx: unknown, client: PolicyClient, token: { clientId: string }) =>
            token.clientId === client.clientId,
        },
        clientCredentials: { enabled: true },
        userinfo: { enabled: true },
        rpInitiatedLogout: { enabled: false },
      },
      pkce: { required: () => true },
      issueRefreshToken: async (
        _ctx: unknown,
        client: { grantTypeAllowed(type: string): boolean },
        code: { scopes: Set<string> },
      ) => client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access'),
      rotateRefreshToken: () => true,
      ttl: {
        AccessToken: 3600,
        ClientCredentials: 3600,
        IdToken: 3600,
        AuthorizationCode: 600,
        RefreshToken: 14 * 86400,
        Interaction: 3600,
        Session: 86400,
        Grant: 14 * 86400,
      },
      renderError: async (ctx: { type: string; body: string }, out: Record<string, string>) => {
        ctx.type = 'html';
        ctx.body = page(
          'Error',
          `<p class="error" id="error">${html(out.error ?? 'error')}: ${html(out.error_description ?? '')}</p>`,
        );
      },
    });
    if (google) {
      // Registered so that discovery lists it; requests of this grant are answered before oidc-provider sees them.
      provider.registerGrantType(JWT_BEARER, () => {
        throw new Error('handled by oidc-local');
      }, ['assertion']);
    }
    // Before the ID token tamper below, so that it sees the tokens as they leave.
    provider.use(async (ctx, next) => {
      await next();
      if (!options.onIssue) return;
      const location = ctx.response.get('location');
      const code = location ? new URL(location, origin).searchParams.get('code') : null;
      if (code) options.onIssue({ issuer: name, kind: 'code', value: code });
      if (ctx.path !== '/token' || ctx.status !== 200) return;
      const body = ctx.body as Partial<Record<IssuedSecret['kind'], unknown>> | undefined;
      for (const kind of ['access_token', 'refresh_token', 'id_token'] as const) {
        const value = body?.[kind];
        if (typeof value === 'string') options.onIssue({ issuer: name, kind, value });
      }
    });
    provider.use(async (ctx, next) => {
      await next();
      if (ctx.path !== '/token' || ctx.status !== 200) return;
      const body = ctx.body as { id_token?: string } | undefined;
      const at = tampers.findIndex((t) => !t.issuer || t.issuer === name);
      if (!body?.id_token || at < 0) return;
      const [tamper] = tampers.splice(at, 1);
      const claims: Record<string, unknown> = { ...decodeJwt(body.id_token) };
      for (const [claim, value] of Object.entries(tamper!.claims ?? {})) {
        if (value === undefined) delete claims[claim];
        else claims[claim] = value;
      }
      const key = tamper!.signWith === 'foreign' ? foreignKey : privateKey;
      body.id_token = await new SignJWT(claims as never)
        .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
        .sign(key);
    });
    provider.on('server_error', (_ctx: unknown, error: unknown) =>
      console.error(`oidc-local ${name}: server error`, error),
    );
    return { name, prefix, url, provider, callback: provider.callback(), accounts };
  }

  function takeFault(issuer: LocalIssuerName, endpoint: LocalEndpoint, grantType?: string): LocalFault | undefined {
    const at = faults.findIndex(
      (f) =>
        f.endpoint === endpoint && (!f.issuer || f.issuer === issuer) && (!f.grantType || f.grantType === grantType),
    );
    return at < 0 ? undefined : faults.splice(at, 1)[0];
  }

  function answerFault(res: ServerResponse, fault: LocalFault) {
    if (fault.error)
      sendJson(res, fault.status ?? 400, {
        error: fault.error,
        ...(fault.error_description ? { error_description: fault.error_description } : {}),
      });
    else {
      res.writeHead(fault.status ?? 503, { 'content-type': 'text/plain' });
      res.end('Service Unavailable (oidc-local fault)');
    }
  }

  function register(client: LocalOidcClient) {
    const method = client.token_endpoint_auth_method ?? (client.client_secret ? 'client_secret_post' : 'none');
    clients.set(client.client_id, {
      client_id: client.client_id,
      ...(client.client_secret ? { client_secret: client.client_secret } : {}),
      redirect_uris: client.redirect_uris,
      token_endpoint_auth_method: method,
      response_types: ['code'],
      grant_types:
        method === 'none'
          ? ['authorization_code', 'refresh_token']
          : ['authorization_code', 'refresh_token', 'client_credentials'],
    });
  }

  function registerServiceAccount(account: LocalServiceAccount) {
    serviceAccounts.set(account.client_email, {
      client_email: account.client_email,
      key: createPublicKey(account.public_key),
      kid: account.private_key_id,
    });
    // The client its tokens belong to: it can do nothing by itself.
    clients.set(account.client_email, {
      client_id: account.client_email,
      token_endpoint_auth_method: 'none',
      response_types: [],
      grant_types: [],
      redirect_uris: [],
    });
  }

  for (const client of options.clients ?? []) register(client);
  for (const account of options.serviceAccounts ?? []) registerServiceAccount(account);

  /** Provider A's JWT bearer grant: verify the assertion against the service account's key, issue a token for `sub`. */
  async function jwtBearer(issuer: Issuer, params: URLSearchParams, res: ServerResponse) {
    const refuse = (description: string) =>
      sendJson(res, 400, { error: 'invalid_grant', error_description: description });
    const assertion = params.get('assertion');
    if (!assertion) return sendJson(res, 400, { error: 'invalid_request', error_description: 'assertion is required' });
    let header: ReturnType<typeof decodeProtectedHeader>;
    let unverified: ReturnType<typeof decodeJwt>;
    try {
      header = decodeProtectedHeader(assertion);
      unverified = decodeJwt(assertion);
    } catch {
      return refuse('the assertion is not a JWT');
    }
    const account = typeof unverified.iss === 'string' ? serviceAccounts.get(unverified.iss) : undefined;
    if (!account) return refuse('unknown service account (iss)');
    if (header.alg !== 'RS256') return refuse('the assertion must be signed with RS256');
    if (header.kid !== account.kid) return refuse("the assertion's kid is not the service account's key id");
    let claims: ReturnType<typeof decodeJwt>;
    try {
      ({ payload: claims } = await jwtVerify(assertion, account.key, {
        algorithms: ['RS256'],
        issuer: account.client_email,
        audience: `${issuer.url}/token`,
        requiredClaims: ['iat', 'exp'],
        clockTolerance: 60,
      }));
    } catch (error) {
      return refuse(`invalid assertion: ${(error as Error).message}`);
    }
    if (claims.exp! - claims.iat! > 3600) return refuse('the assertion may be valid for at most one hour');
    const scope = typeof claims.scope === 'string' ? claims.scope.trim() : '';
    if (!scope)
      return sendJson(res, 400, { error: 'invalid_scope', error_description: 'Empty or missing scope not allowed.' });
    const subject = typeof claims.sub === 'string' ? claims.sub : account.client_email;
    if (!EMAIL.test(subject)) return refuse('sub must be an email address');
    const accountId = subjectFor(subject);
    issuer.accounts.set(accountId, subject);
    const client = await issuer.provider.Client.find(account.client_email);
    const grant = new issuer.provider.Grant({ accountId, clientId: account.client_email });
    grant.addOIDCScope(scope);
    const grantId = await grant.save();
    const token = new issuer.provider.AccessToken({ accountId, client: client!, grantId, scope, gty: 'jwt_bearer' });
    const value = await token.save();
    options.onIssue?.({ issuer: issuer.name, kind: 'access_token', value });
    sendJson(res, 200, { access_token: value, token_type: 'Bearer', expires_in: token.expiration, scope });
  }

  /** Provider B's admin consent: no sign-in here; an unknown client or redirect URI gets an error page, never a redirect. */
  function adminConsent(issuerName: LocalIssuerName, url: URL, res: ServerResponse) {
    const clientId = url.searchParams.get('client_id') ?? '';
    const redirectUri = url.searchParams.get('redirect_uri') ?? '';
    const client = clients.get(clientId);
    if (!client || !Array.isArray(client.redirect_uris) || client.redirect_uris.length === 0) {
      return sendHtml(
        res,
        400,
        page(
          'Admin consent',
          `<p class="error" id="error">unauthorized_client: no application with client_id ${html(clientId)}</p>`,
        ),
      );
    }
    if (!(client.redirect_uris as string[]).includes(redirectUri)) {
      return sendHtml(
        res,
        400,
        page(
          'Admin consent',
          `<p class="error" id="error">invalid_request: redirect_uri is not registered for ${html(clientId)}</p>`,
        ),
      );
    }
    const target = new URL(redirectUri);
    const state = url.searchParams.get('state');
    const fault = takeFault(issuerName, 'adminconsent');
    if (fault) {
      target.searchParams.set('error', fault.error ?? 'access_denied');
      target.searchParams.set(
        'error_description',
        fault.error_description ?? 'The administrator declined the permissions.',
      );
    } else {
      target.searchParams.set('admin_consent', 'True');
      target.searchParams.set('tenant', tenant);
      const scope = url.searchParams.get('scope');
      if (scope) target.searchParams.set('scope', scope);
    }
    if (state !== null) target.searchParams.set('state', state);
    res.writeHead(302, { location: target.href, 'cache-control': 'no-store' });
    res.end();
  }

  /** The login and consent pages: plain forms, posted back here. */
  async function interaction(issuer: Issuer, path: string, req: IncomingMessage, res: ServerResponse) {
    const [, , uid, action] = path.split('/');
    const details = await issuer.provider.interactionDetails(req, res);
    if (details.uid !== uid)
      return sendHtml(res, 400, page('Sign-in', '<p class="error">This sign-in session has expired; start again.</p>'));
    const base = `${issuer.prefix}/interaction/${uid}`;
    if (req.method === 'GET' && action === undefined) {
      if (details.prompt.name === 'login')
        return sendHtml(res, 200, loginPage(base, details.params.login_hint ?? '', ''));
      return sendHtml(
        res,
        200,
        consentPage(base, details.params.client_id ?? '', details.prompt.details.missingOIDCScope ?? []),
      );
    }
    if (action === 'abort') {
      return issuer.provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'The user declined.' },
        { mergeWithLastSubmission: false },
      );
    }
    if (req.method !== 'POST') return sendHtml(res, 405, page('Sign-in', '<p class="error">Method not allowed.</p>'));
    const form = new URLSearchParams((await readBody(req)).toString());
    if (action === 'login') {
      const email = (form.get('login') ?? '').trim().toLowerCase();
      if (!EMAIL.test(email)) return sendHtml(res, 400, loginPage(base, email, 'Sign in with an email address.'));
      const accountId = subjectFor(email);
      issuer.accounts.set(accountId, email);
      return issuer.provider.interactionFinished(
        req,
        res,
        { login: { accountId } },
        { mergeWithLastSubmission: false },
      );
    }
    if (action === 'confirm') {
      if (details.prompt.name !== 'consent' || !details.session?.accountId)
        return sendHtml(res, 400, page('Sign-in', '<p class="error">Nothing to consent to.</p>'));
      const grant = details.grantId
        ? (await issuer.provider.Grant.find(details.grantId))!
        : new issuer.provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id! });
      if (details.prompt.details.missingOIDCScope)
        grant.addOIDCScope(details.prompt.details.missingOIDCScope.join(' '));
      if (details.prompt.details.missingOIDCClaims) grant.addOIDCClaims(details.prompt.details.missingOIDCClaims);
      return issuer.provider.interactionFinished(
        req,
        res,
        { consent: { grantId: await grant.save() } },
        { mergeWithLastSubmission: true },
      );
    }
    return sendHtml(res, 404, page('Sign-in', '<p class="error">Not found.</p>'));
  }

  function loginPage(base: string, login: string, error: string): string {
    return page(
      'Sign in',
      `${error ? `<p class="error">${html(error)}</p>` : ''}<form method="post" action="${html(`${base}/login`)}" id="login">
<input type="email" name="login" placeholder="Email address" value="${html(login)}" required autofocus>
<input type="password" name="password" placeholder="Password (any)">
<button type="submit">Sign in</button></form>
<form method="post" action="${html(`${base}/abort`)}" id="abort"><button type="submit">Cancel</button></form>`,
    );
  }

  function consentPage(base: string, clientId: string, scopes: string[]): string {
    const list = scopes
      .filter((s) => s !== 'openid')
      .map((s) => `<li>${html(s)}</li>`)
      .join('');
    return page(
      'Allow access?',
      `<p>${html(clientId)} asks for:</p><ul>${list || '<li>access it was given before</li>'}</ul>
<form method="post" action="${html(`${base}/confirm`)}" id="confirm"><button type="submit">Allow</button></form>
<form method="post" action="${html(`${base}/abort`)}" id="abort"><button type="submit">Deny</button></form>`,
    );
  }

  /**
   * Offline access as each provider spells it, in terms oidc-provider understands: it grants the
   * `offline_access` scope only with `prompt=consent`. Provider A: `access_type=offline` (our client
   * sends consent with it); provider B: the scope itself (the consent page then shows every time).
   */
  function offlineAccess(issuer: LocalIssuerName, query: URLSearchParams) {
    const scope = new Set((query.get('scope') ?? '').split(' ').filter(Boolean));
    if (issuer === 'google') {
      if (query.get('access_type') !== 'offline') return;
      scope.add('offline_access');
      query.set('scope', [...scope].join(' '));
      query.delete('access_type');
    } else if (!scope.has('offline_access')) {
      return;
    }
    const prompt = new Set((query.get('prompt') ?? '').split(' ').filter(Boolean));
    if (!prompt.has('none') && !prompt.has('consent')) query.set('prompt', [...prompt, 'consent'].join(' '));
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', origin);
    const issuer = issuers.find((i) => url.pathname === i.prefix || url.pathname.startsWith(`${i.prefix}/`));
    if (!issuer) return sendJson(res, 404, { error: 'not_found', issuers: issuers.map((i) => i.url) });
    const path = url.pathname.slice(issuer.prefix.length) || '/';

    let forward: IncomingMessage = req;
    if (path === ENDPOINT_PATHS.token && req.method === 'POST') {
      const body = await readBody(req);
      const params = new URLSearchParams(body.toString());
      const fault = takeFault(issuer.name, 'token', params.get('grant_type') ?? undefined);
      if (fault) return answerFault(res, fault);
      if (issuer.name === 'google' && params.get('grant_type') === JWT_BEARER) return jwtBearer(issuer, params, res);
      forward = replay(req, body);
    } else {
      const endpoint = (Object.keys(ENDPOINT_PATHS) as LocalEndpoint[]).find(
        (e) => e !== 'token' && ENDPOINT_PATHS[e] === path,
      );
      const fault = endpoint && endpoint !== 'adminconsent' ? takeFault(issuer.name, endpoint) : undefined;
      if (fault) return answerFault(res, fault);
    }
    if (path.startsWith('/interaction/')) return interaction(issuer, path, req, res);
    if (path === ENDPOINT_PATHS.adminconsent && issuer.name === 'microsoft' && req.method === 'GET')
      return adminConsent(issuer.name, url, res);
    if (path === '/auth' && req.method === 'GET') offlineAccess(issuer.name, url.searchParams);
    // Mounted under the prefix: oidc-provider derives its mount path from originalUrl.
    Object.assign(forward, { originalUrl: `${url.pathname}${url.search}`, url: `${path}${url.search}` });
    issuer.callback(forward, res);
  }

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((error: unknown) => {
      console.error('oidc-local: request failed', error);
      if (!res.headersSent) sendJson(res, 500, { error: 'server_error' });
      else res.destroy();
    });
  });

  const byName = Object.fromEntries(issuers.map((i) => [i.name, i.url])) as Record<LocalIssuerName, string>;
  return {
    origin,
    issuer: byName.google,
    issuers: byName,
    tenant,
    addClient: register,
    addServiceAccount: registerServiceAccount,
    failNext: (fault) => void faults.push(fault),
    tamperNextIdToken: (tamper) => void tampers.push(tamper),
    pending: () => faults.length + tampers.length,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}
