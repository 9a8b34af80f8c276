import { createPublicKey, verify, type JsonWebKey } from 'node:crypto';
import { env } from '#shared/config';
import { AuthenticationError } from '#shared/errors';
import { guardedFetch, type FetchLike } from '#shared/net/fetch';
import { clock } from '#shared/time';

/**
 * The token a Pub/Sub push carries (`Authorization: Bearer <JWT>`), checked before a push changes
 * anything: an RS256 signature by a key of the authorization server's JWKS (fetched through the
 * guarded client, kept 5 minutes, fetched again once for a key ID it does not hold), an issuer it
 * names, the audience the subscription was created with, a lifetime that has not ended, and the
 * service account the subscription pushes as (`email`, verified). Anything else is a 401 naming
 * what failed, never which key or value would have passed.
 */

export interface PushTokenRules {
  /** Issuers accepted (Google's: `https://accounts.google.com` and `accounts.google.com`). */
  issuers: readonly string[];
  jwksUri: string;
  audience: string;
  /** The service account the push subscription authenticates as. */
  email: string;
}

export interface PushTokenOptions {
  fetch?: FetchLike;
}

interface Jwk extends JsonWebKey {
  kid?: string;
  alg?: string;
  use?: string;
}

const JWKS_TTL_MS = 5 * 60_000;
const LEEWAY_SECONDS = 60;
const jwksCache = new Map<string, { keys: Jwk[]; at: number }>();

const defaultFetch = /* @__PURE__ */ guardedFetch({
  policy: { local: env.webhookLocalMode() },
  timeoutMs: 5_000,
  maxResponseBytes: 256 * 1024,
  userAgent: 'Switchboard/1.0',
});

const refused = (why: string) => new AuthenticationError(`The push's token was refused: ${why}`);

function decodePart<T>(part: string | undefined, what: string): T {
  try {
    return JSON.parse(Buffer.from(part ?? '', 'base64url').toString('utf8')) as T;
  } catch {
    throw refused(`its ${what} is not JSON`);
  }
}

async function keysOf(uri: string, fetch: FetchLike, fresh: boolean): Promise<Jwk[]> {
  const cached = jwksCache.get(uri);
  if (cached && !fresh && clock.nowMs() - cached.at < JWKS_TTL_MS) return cached.keys;
  const response = await fetch(uri, { headers: { accept: 'application/json' } });
  if (!response.ok) throw refused(`the signing keys could not be read (HTTP ${response.status})`);
  const keys = ((await response.json()) as { keys?: Jwk[] }).keys ?? [];
  jwksCache.set(uri, { keys, at: clock.nowMs() });
  return keys;
}

/** The token's claims, once every rule holds. */
export async function verifyPushToken(
  token: string,
  rules: PushTokenRules,
  options: PushTokenOptions = {},
): Promise<Record<string, unknown>> {
  const parts = token.split('.');
  if (parts.length !== 3) throw refused('it is not a JWT');
  const header = decodePart<{ alg?: string; kid?: string }>(parts[0], 'header');
  if (header.alg !== 'RS256') throw refused(`its algorithm is ${String(header.alg)}, not RS256`);
  const fetch = options.fetch ?? defaultFetch;
  let key = (await keysOf(rules.jwksUri, fetch, false)).find((k) => k.kid === header.kid);
  // Keys rotate: a key ID not held yet is looked for once more in a fresh copy.
  key ??= (await keysOf(rules.jwksUri, fetch, true)).find((k) => k.kid === header.kid);
  if (!key || key.kty !== 'RSA') throw refused('it is not signed by a key of the authorization server');
  const signed = verify(
    'RSA-SHA256',
    Buffer.from(`${parts[0]}.${parts[1]}`),
    createPublicKey({ key, format: 'jwk' }),
    Buffer.from(parts[2]!, 'base64url'),
  );
  if (!signed) throw refused('its signature does not verify');
  const claims = decodePart<Record<string, unknown>>(parts[1], 'payload');
  const now = clock.nowSeconds();
  if (typeof claims.iss !== 'string' || !rules.issuers.includes(claims.iss))
    throw refused('its issuer is not expected');
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!audiences.includes(rules.audience)) throw refused('its audience is not this push endpoint');
  if (typeof claims.exp !== 'number' || claims.exp < now - LEEWAY_SECONDS) throw refused('it has expired');
  if (typeof claims.iat === 'number' && claims.iat > now + LEEWAY_SECONDS) throw refused('it was issued in the future');
  if (claims.email !== rules.email || claims.email_verified !== true)
    throw refused('it is not from the service account the subscription pushes as');
  return claims;
}

/** Tests: forget the fetched keys. */
export const clearPushKeys = () => jwksCache.clear();
