import {
  AuthorizeQuery,
  CallbackQuery,
  ImapLoginBody,
  RevokeQuery,
  TokenBody,
  TokenInfo,
  TokenInfoQuery,
  TokenResponse,
} from '#schemas/connect';
import { CreateCustomGrantBody, Grant } from '#schemas/grants';
import type { RouteTable } from '#shared/http/route';

/**
 * Authentication: custom authentication (Agent Accounts, bulk authentication of provider A and B
 * accounts) and hosted OAuth (the browser's authorization request and the provider's callback, the
 * hosted IMAP credential page's form, the token exchange, revocation and token info).
 */
export const routes = {
  createCustomGrant: {
    method: 'POST',
    path: '/v3/connect/custom',
    summary:
      'Create a grant by custom authentication: an Agent Account (provider nylas, or its alias agent), or bulk authentication (google with a service account, microsoft with admin consent)',
    body: CreateCustomGrantBody,
    response: Grant,
    status: 201,
  },
  authorize: {
    method: 'GET',
    path: '/v3/connect/auth',
    summary:
      'Hosted OAuth: the authorization request (redirects to the provider, or serves the hosted login page when no provider is chosen)',
    auth: 'none',
    query: AuthorizeQuery,
    responseKind: 'page',
  },
  imapLogin: {
    method: 'POST',
    path: '/v3/connect/credentials',
    summary:
      "Hosted authentication of IMAP accounts: the credential page's form (served by GET /v3/connect/auth?provider=imap). Credentials checked as by POST /v3/connect/custom; redirects to the application's redirect URI with a code and its state, or shows the page again (400) saying what failed",
    auth: 'none',
    body: ImapLoginBody,
    formBody: true,
    maxBodyBytes: 16 * 1024,
    responseKind: 'page',
  },
  callback: {
    method: 'GET',
    path: '/v3/connect/callback',
    summary:
      "Hosted OAuth: the provider's redirect back (redirects to the application's redirect URI with a code and its state)",
    auth: 'none',
    query: CallbackQuery,
    responseKind: 'empty',
  },
  token: {
    method: 'POST',
    path: '/v3/connect/token',
    summary:
      'Hosted OAuth: exchange an authorization code or a refresh token for an access token (client_secret: the API key; or code_verifier for PKCE)',
    auth: 'none',
    body: TokenBody,
    formBody: true,
    errors: 'oauth',
    response: TokenResponse,
  },
  revoke: {
    method: 'POST',
    path: '/v3/connect/revoke',
    summary: 'Revoke an access or refresh token (and the tokens issued with it)',
    auth: 'none',
    query: RevokeQuery,
    errors: 'oauth',
    responseKind: 'empty',
  },
  tokenInfo: {
    method: 'GET',
    path: '/v3/connect/tokeninfo',
    summary:
      'What an ID token or access token Switchboard issued says, if it is valid (errors in the OAuth shape: invalid_request, invalid_token)',
    auth: 'none',
    query: TokenInfoQuery,
    errors: 'oauth',
    response: TokenInfo,
  },
} as const satisfies RouteTable;
