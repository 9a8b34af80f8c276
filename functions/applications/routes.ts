import {
  ApplicationObject,
  CreateRedirectUriBody,
  RedirectUriListQuery,
  RedirectUriObject,
  UpdateApplicationBody,
  UpdateRedirectUriBody,
} from '#schemas/applications';
import type { RouteTable } from '#shared/http/route';

/** The calling application's settings and its redirect (callback) URIs. */
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
} as const satisfies RouteTable;
