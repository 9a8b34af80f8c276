import { callback, authorize } from '#shared/connect/flow';
import { exchangeToken, revoke, tokenInfo } from '#shared/connect/exchange';
import { submitImapLogin } from '#shared/connect/imap-login';
import { createCustomGrant } from '#shared/grants/create';
import { toGrantResource } from '#shared/accounts/grant-resource';
import { originOf } from '#shared/http/origin';
import { httpApi } from '#shared/http/stack';
import { empty, flat, ok, page, redirect } from '#shared/http/route';
import { InvalidRequestError } from '#shared/errors';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

/** This API's origin as the browser reached it (the callback URL the provider must know). */
function origin(headers: Record<string, string>): string {
  const found = originOf(headers);
  if (!found) throw new InvalidRequestError('The request has no Host header: set PUBLIC_BASE_URL');
  return found;
}

export const handler = httpApi<typeof routes>(generated, {
  createCustomGrant: async ({ app, body, sourceIp, userAgent }) => {
    const grant = await createCustomGrant(app, body, { ip: sourceIp, userAgent });
    return ok(toGrantResource(grant));
  },
  authorize: async ({ query, headers, event, sourceIp, userAgent }) => {
    const base = origin(headers);
    const result = await authorize(query, {
      origin: base,
      ip: sourceIp,
      userAgent,
      selfUrl: `${base}${event.rawPath}?${event.rawQueryString}`,
    });
    return result.kind === 'redirect'
      ? redirect(result.location)
      : page(result.html, result.nonce, undefined, result.formActions);
  },
  imapLogin: async ({ body, headers, sourceIp, userAgent }) => {
    const result = await submitImapLogin(body, { fetchSite: headers['sec-fetch-site'], ip: sourceIp, userAgent });
    return result.kind === 'redirect'
      ? redirect(result.location)
      : page(result.html, result.nonce, result.status, result.formActions);
  },
  callback: async ({ query, headers }) => redirect((await callback(query, { origin: origin(headers) })).location),
  token: async ({ body }) => flat(await exchangeToken(body)),
  revoke: async ({ query }) => {
    await revoke(query.token);
    return empty();
  },
  tokenInfo: async ({ query }) => ok(await tokenInfo(query)),
});
