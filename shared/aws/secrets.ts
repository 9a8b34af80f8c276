import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { requestHandler } from '#shared/aws/http';
import { lazyClient } from '#shared/aws/lazy-client';
import { traced } from '#shared/aws/tracing';

/**
 * One Secrets Manager client per container, made on first use (shared/aws/lazy-client.ts). The
 * endpoint comes from the standard SDK environment (`AWS_ENDPOINT_URL_SECRETS_MANAGER` /
 * `AWS_ENDPOINT_URL`), so the same code reads the secret from AWS, LocalStack or the local stack's
 * Secrets Manager (scripts/local-stack/secrets-local.ts).
 */
export const secretsManager = lazyClient(() => traced(new SecretsManagerClient({ requestHandler })));

/** The current string value of a secret, by ARN or name. Callers cache it: this is one request. */
export async function getSecretString(secretId: string): Promise<string> {
  const result = await secretsManager.send(new GetSecretValueCommand({ SecretId: secretId }));
  if (typeof result.SecretString !== 'string') throw new Error(`Secret ${secretId} has no string value`);
  return result.SecretString;
}
