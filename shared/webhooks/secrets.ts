import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { env } from '#shared/config';

/**
 * Webhook secrets must be usable (they key the HMAC of every delivery), so they are encrypted, not
 * hashed: AES-256-GCM under a key derived (SHA-256) from WEBHOOK_SECRET_KEY. When deployed, that is a
 * random value CloudFormation generates in Secrets Manager; locally, `npm start` makes one per run.
 * Stored as `v1:<iv>:<tag>:<ciphertext>`, base64url parts.
 */
const MATERIAL = env.webhookSecretKey();
if (MATERIAL.length < 32) throw new Error('WEBHOOK_SECRET_KEY must be at least 32 characters of random material');
const KEY = createHash('sha256').update(MATERIAL, 'utf8').digest();

export function generateWebhookSecret(): string {
  return randomBytes(32).toString('hex');
}

export function encryptSecret(secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', KEY, iv);
  const data = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join(':');
}

export function decryptSecret(stored: string): string {
  const [version, iv, tag, data] = stored.split(':');
  if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('Unknown webhook secret format');
  const decipher = createDecipheriv('aes-256-gcm', KEY, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
}

/** `x-service-signature`: hex HMAC-SHA256 of the exact raw request body, keyed with the secret. */
export function sign(body: Buffer, secret: string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}
