import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
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
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join(':');
}

export async function decryptSecret(stored: string): Promise<string> {
  const [version, iv, tag, data] = stored.split(':');
  if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('Unknown webhook secret format');
  const decipher = createDecipheriv('aes-256-gcm', await webhookKey(), Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
}

/** `x-service-signature`: hex HMAC-SHA256 of the exact raw request body, keyed with the secret. */
export function sign(body: Buffer, secret: string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}
