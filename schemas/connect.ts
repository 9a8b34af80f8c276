import type { FromSchema } from 'json-schema-to-ts';
import { CONNECTED_PROVIDERS } from '#schemas/grants';

/**
 * Hosted OAuth (`/v3/connect/*`): the authorization request an application sends its user to, the
 * provider's redirect back, the token exchange, revocation and token info. Names and shapes follow
 * the published contract; errors of the token endpoints use the OAuth shape
 * `{error, error_description, error_code, error_uri}` (RFC 6749 §5.2).
 */
const Text = (maxLength: number) => ({ type: 'string', minLength: 1, maxLength }) as const;

export const AuthorizeQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['client_id', 'redirect_uri', 'response_type'],
  properties: {
    client_id: { ...Text(64), description: 'The application ID.' },
    provider: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      description: `One provider (${CONNECTED_PROVIDERS.join(', ')}), or several separated by commas for the hosted login page to offer; without it the page offers every connector of the application.`,
    },
    redirect_uri: {
      ...Text(2048),
      description: "One of the application's registered redirect URIs (GET /v3/applications/redirect-uris), exactly.",
    },
    response_type: { type: 'string', enum: ['code', 'adminconsent'] },
    scope: { ...Text(4096), description: "Space-separated provider scopes; default: the connector's." },
    prompt: {
      type: 'string',
      enum: ['select_provider', 'detect', 'select_provider,detect', 'detect,select_provider'],
      description: 'What the hosted login page offers first.',
    },
    state: { type: 'string', maxLength: 256, description: 'Handed back unmodified to the redirect URI.' },
    login_hint: {
      ...Text(320),
      description: 'The address to sign in with (prefilled; with prompt `detect`, it chooses the provider).',
    },
    access_type: {
      type: 'string',
      enum: ['online', 'offline'],
      description: '`offline`: the token exchange also answers a refresh token.',
    },
    code_challenge: {
      type: 'string',
      minLength: 43,
      maxLength: 128,
      pattern: '^[A-Za-z0-9._~+/-]+$',
      description:
        "PKCE (RFC 7636) for public clients: the token exchange then needs the matching code_verifier. With S256: base64url of the verifier's SHA-256 (or, as the official SDKs send it, base64 of its hex digest, unpadded).",
    },
    code_challenge_method: { type: 'string', enum: ['plain', 'S256', 's256'] },
    include_grant_scopes: {
      type: 'string',
      enum: ['true', 'false'],
      description:
        'google: also keep the scopes the account granted the application before (incremental authorization).',
    },
    credential_id: {
      ...Text(256),
      description:
        "A credential of the provider's connector: type `connector` overrides its client; with response_type=adminconsent, the admin consent credential.",
    },
  },
} as const;
export type AuthorizeQuery = FromSchema<typeof AuthorizeQuery>;

/** What providers send back to the callback (OAuth 2.0, OpenID Connect, RFC 9207, Microsoft admin consent); extra parameters of theirs are ignored. */
export const CallbackQuery = {
  type: 'object',
  additionalProperties: { type: 'string', maxLength: 4096 },
  properties: {
    code: Text(4096),
    state: Text(512),
    error: Text(256),
    error_description: { type: 'string', maxLength: 2048 },
    error_uri: { type: 'string', maxLength: 2048 },
    admin_consent: { type: 'string', maxLength: 16 },
    tenant: { type: 'string', maxLength: 256 },
    scope: { type: 'string', maxLength: 4096 },
    iss: { type: 'string', maxLength: 2048 },
  },
} as const;
export type CallbackQuery = FromSchema<typeof CallbackQuery>;

export const TokenBody = {
  type: 'object',
  additionalProperties: false,
  required: ['grant_type', 'client_id'],
  properties: {
    grant_type: { type: 'string', enum: ['authorization_code', 'refresh_token', 'client_credentials'] },
    client_id: Text(64),
    client_secret: { ...Text(512), description: "The application's API key (confidential clients)." },
    code: Text(512),
    redirect_uri: Text(2048),
    code_verifier: {
      type: 'string',
      minLength: 32,
      maxLength: 128,
      pattern: '^[A-Za-z0-9._~-]+$',
      description:
        "PKCE: the verifier of the authorization request's code_challenge. RFC 7636 asks for 43 to 128 characters; the official SDKs send a UUID (36), so 32 (128 bits in hex) is the least accepted.",
    },
    refresh_token: Text(512),
    grant_id: { ...Text(256), description: 'client_credentials: the grant an access token is asked for.' },
  },
} as const;
export type TokenBody = FromSchema<typeof TokenBody>;

export const TokenResponse = {
  type: 'object',
  additionalProperties: false,
  required: ['access_token', 'token_type', 'expires_in', 'grant_id'],
  properties: {
    access_token: { type: 'string' },
    token_type: { type: 'string', enum: ['Bearer'] },
    expires_in: { type: 'integer' },
    id_token: { type: 'string' },
    refresh_token: { type: 'string' },
    scope: { type: 'string' },
    grant_id: { type: 'string' },
    email: { type: 'string' },
    provider: { type: 'string' },
  },
} as const;

export const RevokeQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['token'],
  properties: { token: Text(4096) },
} as const;

export const TokenInfoQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { id_token: Text(4096), access_token: Text(4096) },
} as const;
export type TokenInfoQuery = FromSchema<typeof TokenInfoQuery>;

export const TokenInfo = {
  type: 'object',
  properties: {
    iss: { type: 'string' },
    aud: { type: 'string' },
    sub: { type: 'string' },
    email: { type: 'string' },
    iat: { type: 'integer' },
    exp: { type: 'integer' },
    grant_id: { type: 'string' },
    provider: { type: 'string' },
    scope: { type: 'string' },
  },
} as const;

/**
 * The hosted IMAP credential page's form (`POST /v3/connect/credentials`, form-encoded as browsers send it,
 * or JSON). Fields a browser sends empty are optional: empty means "not given" (hosts detected for
 * well-known domains, ports 993 and 587, usernames the address, the SMTP password the IMAP one).
 */
const Field = (maxLength: number, description: string) => ({ type: 'string', maxLength, description }) as const;
export const ImapLoginBody = {
  type: 'object',
  additionalProperties: false,
  required: ['flow_token', 'email', 'password'],
  properties: {
    flow_token: {
      ...Text(128),
      description:
        'The single-use token of the page the form came from (it names the sign-in begun by GET /v3/connect/auth).',
    },
    email: Field(320, "The account's email address."),
    password: Field(1024, 'The password or app password (checked, stored sealed with the grant, never shown again).'),
    imap_host: Field(253, 'The IMAP server; detected for well-known domains when empty.'),
    imap_port: Field(5, 'The IMAP port; 993 (TLS) when empty, other ports use STARTTLS.'),
    imap_username: Field(320, 'The IMAP username, when it is not the address.'),
    smtp_host: Field(253, 'The SMTP server; detected for well-known domains when empty.'),
    smtp_port: Field(5, 'The SMTP port; 587 (STARTTLS) when empty, 465 is TLS.'),
    smtp_username: Field(320, 'The SMTP username, when it is not the IMAP one.'),
    smtp_password: Field(1024, 'The SMTP password, when it is not the IMAP one.'),
  },
} as const;
export type ImapLoginBody = FromSchema<typeof ImapLoginBody>;
