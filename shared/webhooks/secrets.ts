import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  createSecretKey,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import { keyMaterial } from '#shared/crypto/key-material';

/**
 * Webhook secrets must be usable (they key the HMAC of every delivery), so they are encrypted, not
 * hashed: AES-256-GCM under a key derived (SHA-256) from random material kept in Secrets Manager.
 * When deployed, CloudFormation generates that secret (serverless.yml, WebhookSecretKey); locally,
 * `npm start` and the tests create one with fresh material in the local stack's Secrets Manager.
 * Functions only see the secret's ARN (WEBHOOK_SECRET_KEY_ARN), never the material.
 * Stored as `v1:<iv>:<tag>:<ciphertext>`, base64url parts.
 */
/** The AES-256 key that encrypts webhook secrets: SHA-256 of the deployment's key material (shared/crypto/key-material.ts). */
let key: Promise<Buffer> | undefined;
export function webhookKey(): Promise<Buffer> {
  if (!key) {
    const deriving = keyMaterial().then((material) => createHash('sha256').update(material, 'utf8').digest());
    key = deriving;
    deriving.catch(() => {
      if (key === deriving) key = undefined;
    });
  }
  return key;
}

export function generateWebhookSecret(): string {
  return randomBytes(32).toString('hex');
}

export async function encryptSecret(secret: string): Promise<string> {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', await webhookKey(), iv);
  const data = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join(
    ':',
  );
}

export async function decryptSecret(stored: string): Promise<string> {
  const [version, iv, tag, data] = stored.split(':');
  if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('Unknown webhook secret format');
  const decipher = createDecipheriv('aes-256-gcm', await webhookKey(), Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
}

/**
 * The HMAC key of a destination's stored secret, decrypted once per container rather than once per
 * delivery (an AES-GCM decryption and two key imports each time: about a sixth of the delivery
 * worker's own CPU, measured with the AWS calls mocked). Keyed by the ciphertext: rotating a secret stores a new one, so a cached key is never stale.
 * Concurrent first calls share one decryption; one that fails is forgotten, so the next call tries
 * again. At most SIGNING_KEYS are kept, oldest out first.
 */
const SIGNING_KEYS = 1000;
const signingKeys = new Map<string, Promise<KeyObject>>();

export function signingKey(stored: string): Promise<KeyObject> {
  let key = signingKeys.get(stored);
  if (!key) {
    // The secret string's UTF-8 bytes, as HMAC keyed with the string uses.
    const decrypting = decryptSecret(stored).then((secret) => createSecretKey(Buffer.from(secret, 'utf8')));
    key = decrypting;
    if (signingKeys.size >= SIGNING_KEYS) signingKeys.delete(signingKeys.keys().next().value!);
    signingKeys.set(stored, decrypting);
    decrypting.catch(() => {
      if (signingKeys.get(stored) === decrypting) signingKeys.delete(stored);
    });
  }
  return key;
}

/** `x-service-signature`: hex HMAC-SHA256 of the exact raw request body, keyed with the secret. */
export function sign(body: Buffer, secret: string | KeyObject): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}
