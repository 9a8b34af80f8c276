import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { getSecretString } from '#shared/aws/secrets';
import { env } from '#shared/config';

/**
 * Webhook secrets must be usable (they key the HMAC of every delivery), so they are encrypted, not
 * hashed: AES-256-GCM under a key derived (SHA-256) from random material kept in Secrets Manager.
 * When deployed, CloudFormation generates that secret (serverless.yml, WebhookSecretKey); locally,
 * `npm start` and the tests create one with fresh material in the local stack's Secrets Manager.
 * Functions only see the secret's ARN (WEBHOOK_SECRET_KEY_ARN), never the material.
 * Stored as `v1:<iv>:<tag>:<ciphertext>`, base64url parts.
 */
const KEY_ARN = env.webhookSecretKeyArn();
const MIN_MATERIAL = 32;

/**
 * The derived key, read once per container and shared: concurrent first calls wait for the same
 * GetSecretValue. A failed read is forgotten, so the next call (the next invocation) tries again.
 */
let key: Promise<Buffer> | undefined;

async function loadKey(): Promise<Buffer> {
  let material: string;
  try {
    material = await getSecretString(KEY_ARN);
  } catch (error) {
    throw new Error(`Cannot read the webhook secret key ${KEY_ARN} from Secrets Manager: ${(error as Error).message}`, { cause: error });
  }
  // Never put the material (or its length) in a message: errors are logged.
  if (material.length < MIN_MATERIAL) throw new Error(`The webhook secret key ${KEY_ARN} must be at least ${MIN_MATERIAL} characters of random material`);
  return createHash('sha256').update(material, 'utf8').digest();
}

/** The AES-256 key that encrypts webhook secrets (fetched on first use, then cached for the container). */
export function webhookKey(): Promise<Buffer> {
  if (!key) {
    const loading = loadKey();
    key = loading;
    loading.catch(() => {
      if (key === loading) key = undefined;
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
