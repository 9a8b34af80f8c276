import type { RouteTable } from '#shared/http/route';

/**
 * The tracking hostname's two URLs (auth: none; the token in the path is signed, see
 * shared/tracking/token.ts): the open pixel and the link redirect of tracked messages. A function
 * of their own, outside /v3: recipients' mail clients and browsers call them, never an application,
 * and they must stay small and fast (no mail, template or provider code in their bundle).
 */
export const routes = {
  openPixel: {
    method: 'GET',
    path: '/t/o/{token}',
    summary: 'The open pixel of a tracked message (a 1x1 GIF); counts the open',
    auth: 'none',
    responseKind: 'binary',
    tag: 'messages',
  },
  linkRedirect: {
    method: 'GET',
    path: '/t/l/{token}',
    summary: 'A tracked link: counts the click and redirects (302) to its target',
    auth: 'none',
    tag: 'messages',
  },
} as const satisfies RouteTable;
