import {
  ApplicationObject,
  CreateRedirectUriBody,
  RedirectUriListQuery,
  RedirectUriObject,
  UpdateApplicationBody,
  UpdateRedirectUriBody,
} from '#schemas/applications';
import { ApiKeyListQuery, ApiKeyObject, CreateApiKeyBody, CreatedApiKeyObject } from '#schemas/api-keys';
import type { RouteTable } from '#shared/http/route';

/**
 * The calling application's settings, its redirect (callback) URIs and its API keys. The API keys
 * paths name the application; only the caller's own is found (404 for any other).
 */
export const routes = {
  getApplication: {
    method: 'GET',
    path: '/v3/applications',
    summary: "The calling application's settings: branding, hosted authentication page, callback URIs",
    response: ApplicationObject,
  },
  updateApplication: {
    method: 'PATCH',
    path: '/v3/applications',
    summary:
      "Change branding, the hosted authentication page or the application's request rate limit (each object sent replaces the stored one)",
    body: UpdateApplicationBody,
    response: ApplicationObject,
  },
  listRedirectUris: {
    method: 'GET',
    path: '/v3/applications/redirect-uris',
    summary: 'Redirect (callback) URIs of the application, newest first',
    query: RedirectUriListQuery,
    response: RedirectUriObject,
    responseKind: 'list',
  },
  createRedirectUri: {
    method: 'POST',
    path: '/v3/applications/redirect-uris',
    summary: 'Register a redirect URI (platform web unless given; a URL once per application)',
    body: CreateRedirectUriBody,
    response: RedirectUriObject,
  },
  getRedirectUri: {
    method: 'GET',
    path: '/v3/applications/redirect-uris/{id}',
    summary: 'Get a redirect URI',
    response: RedirectUriObject,
  },
  updateRedirectUri: {
    method: 'PATCH',
    path: '/v3/applications/redirect-uris/{id}',
    summary: 'Change a redirect URI (fields left out keep their values)',
    body: UpdateRedirectUriBody,
    response: RedirectUriObject,
  },
  replaceRedirectUri: {
    method: 'PUT',
    path: '/v3/applications/redirect-uris/{id}',
    summary: 'Change a redirect URI, as PATCH does',
    body: UpdateRedirectUriBody,
    response: RedirectUriObject,
  },
  deleteRedirectUri: {
    method: 'DELETE',
    path: '/v3/applications/redirect-uris/{id}',
    summary: 'Delete a redirect URI',
    responseKind: 'empty',
  },
  createApiKey: {
    method: 'POST',
    path: '/v3/admin/applications/{application_id}/api-keys',
    summary:
      'Create an API key of the calling application (optional name, optional expires_in seconds); the secret is answered this once',
    body: CreateApiKeyBody,
    bodyOptional: true,
    response: CreatedApiKeyObject,
  },
  listApiKeys: {
    method: 'GET',
    path: '/v3/admin/applications/{application_id}/api-keys',
    summary: "The calling application's API keys, newest first, expired ones included (never their secrets)",
    query: ApiKeyListQuery,
    response: ApiKeyObject,
    responseKind: 'list',
  },
  getApiKey: {
    method: 'GET',
    path: '/v3/admin/applications/{application_id}/api-keys/{api_key_id}',
    summary: 'Get an API key of the calling application (never its secret)',
    response: ApiKeyObject,
  },
  deleteApiKey: {
    method: 'DELETE',
    path: '/v3/admin/applications/{application_id}/api-keys/{api_key_id}',
    summary:
      "Delete (revoke) an API key, the calling one included; the application's last active key answers 409 (create another first)",
    responseKind: 'empty',
  },
} as const satisfies RouteTable;
