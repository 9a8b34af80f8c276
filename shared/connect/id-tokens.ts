import { createHmac, timingSafeEqual } from 'node:crypto';
import { derivedKey } from '#shared/crypto/sealed';
import { clock } from '#shared/time';

/**
 * The ID tokens of the token exchange: a JWT (HS256, under a key derived from the deployment's key
 * material) that says which grant and account an exchange was for; `GET /v3/connect/tokeninfo`
 * checks one. Kept apart from the access tokens, which every function checks without the key.
 */
const ID_TOKEN_SECONDS = 3600;

export interface IdTokenClaims {
  iss: string;
  aud: string;
  sub: string;
  email: string;
  provider: string;
  grant_id: string;
  iat: number;
  exp: number;
}

const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** An ID token for a grant, for the application `aud`. */
export async function signIdToken(claims: Omit<IdTokenClaims, 'iat' | 'exp'>): Promise<string> {
  const now = clock.nowSeconds();
  const body = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ ...claims, iat: now, exp: now + ID_TOKEN_SECONDS })}`;
  const signature = createHmac('sha256', await derivedKey('id-token'))
    .update(body)
    .digest('base64url');
  return `${body}.${signature}`;
}

/** The claims of an ID token Switchboard signed and that has not expired, or undefined. */
export async function verifyIdToken(token: string): Promise<IdTokenClaims | undefined> {
  const parts = token.split('.');
  if (parts.length !== 3 || token.length > 4096) return undefined;
  const [header, payload, signature] = parts as [string, string, string];
  const expected = createHmac('sha256', await derivedKey('id-token'))
    .update(`${header}.${payload}`)
    .digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  try {
    const head = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { alg?: string };
    if (head.alg !== 'HS256') return undefined;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as IdTokenClaims;
    return typeof claims.exp === 'number' && claims.exp > clock.nowSeconds() ? claims : undefined;
  } catch {
    return undefined;
  }
}
