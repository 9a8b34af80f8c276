import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { keyMaterial } from '#shared/crypto/key-material';

/**
 * Secrets that must be usable again (a connector's client secret, a credential's private key, a
 * grant's provider tokens, an OAuth flow's PKCE verifier) are sealed, never stored in plaintext:
 * AES-256-GCM under a key derived (HKDF-SHA256) from the deployment's key material for one purpose,
 * with the record the value belongs to as additional authenticated data. A value sealed for one
 * purpose or one record does not open as another: copying a sealed token onto another grant's item
 * gives an error, not another user's mailbox.
 *
 * Stored as `s1:<iv>:<tag>:<ciphertext>`, base64url parts.
 */
export type SealPurpose = 'connector-secret' | 'credential-data' | 'provider-tokens' | 'oauth-flow' | 'dkim-key';

/** Keys derived for other uses than sealing (the HMAC keys of the ID tokens and the tracking URLs Switchboard signs). */
export type KeyPurpose = SealPurpose | 'id-token' | 'tracking';

const keys = new Map<KeyPurpose, Promise<Buffer>>();

/** A 256-bit key derived from the deployment's key material for one purpose (cached per container). */
export function derivedKey(purpose: KeyPurpose): Promise<Buffer> {
  return keyFor(purpose);
}

function keyFor(purpose: KeyPurpose): Promise<Buffer> {
  let key = keys.get(purpose);
  if (!key) {
    key = keyMaterial().then((material) =>
      Buffer.from(hkdfSync('sha256', Buffer.from(material, 'utf8'), Buffer.alloc(0), `switchboard/${purpose}`, 32)),
    );
    keys.set(purpose, key);
    key.catch(() => keys.delete(purpose));
  }
  return key;
}

/** Seals `plaintext` for `purpose`, bound to `context` (the record's key, e.g. `app#…/connector#google`). */
export async function seal(plaintext: string, purpose: SealPurpose, context: string): Promise<string> {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', await keyFor(purpose), iv);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['s1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join(
    ':',
  );
}

/** Opens what `seal` sealed with the same purpose and context; throws on anything else. */
export async function unseal(sealed: string, purpose: SealPurpose, context: string): Promise<string> {
  const [version, iv, tag, data] = sealed.split(':');
  if (version !== 's1' || !iv || !tag || data === undefined) throw new Error('Unknown sealed value format');
  const decipher = createDecipheriv('aes-256-gcm', await keyFor(purpose), Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
}

/** JSON convenience: seals an object, opens it back. */
export const sealJson = (value: unknown, purpose: SealPurpose, context: string) =>
  seal(JSON.stringify(value), purpose, context);
export const unsealJson = async <T>(sealed: string, purpose: SealPurpose, context: string): Promise<T> =>
  JSON.parse(await unseal(sealed, purpose, context)) as T;
