import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import { Readable } from 'node:stream';

/**
 * The DKIM key of a domain: ours, one per domain (not the transport's), so that the record a client
 * publishes is the same whatever carries the mail (SES or an SMTP relay), and every message of a
 * transactional send is signed by it before it leaves.
 */
const generate = promisify(generateKeyPair);

/** RSA-2048: the size RFC 8301 asks signers to use, and whose `p=` fits one DNS TXT string list. */
export async function newDkimKey(): Promise<{ publicKey: string; privateKeyPem: string }> {
  const { publicKey, privateKey } = await generate('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { publicKey: publicKey.toString('base64'), privateKeyPem: privateKey };
}

/** `raw` with a DKIM-Signature header of `domainName` (relaxed/relaxed, SHA-256) prepended. */
export async function dkimSign(
  raw: Buffer,
  key: { domainName: string; keySelector: string; privateKey: string },
): Promise<Buffer> {
  // nodemailer's signer (its composer is already in the send bundle) loads with the first signed message.
  const { default: DKIM } = await import('nodemailer/lib/dkim');
  const signed = new DKIM(key).sign(Readable.from([raw]));
  const chunks: Buffer[] = [];
  for await (const chunk of signed) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(chunks);
}
