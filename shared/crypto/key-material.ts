import { getSecretString } from '#shared/aws/secrets';
import { env } from '#shared/config';

/**
 * The random material every stored secret is encrypted under (webhook secrets, connector client
 * secrets, credential data, provider tokens): one Secrets Manager secret per deployment. Deployed,
 * CloudFormation generates it (serverless.yml, WebhookSecretKey, 64 characters) and only the functions
 * that seal or open secrets may read it; locally, `npm start` and the tests create one with fresh
 * material in the local stack's Secrets Manager. Functions see only its ARN (WEBHOOK_SECRET_KEY_ARN,
 * named for its first use), never the material in their environment.
 */
const MIN_MATERIAL = 32;
/** Read when the module loads, like all configuration: a missing variable fails the cold start. */
const ARN = env.webhookSecretKeyArn();

/**
 * Read once per container and shared: concurrent first calls wait for the same GetSecretValue. A
 * failed read is forgotten, so the next call (the next invocation) tries again.
 */
let material: Promise<string> | undefined;

async function load(): Promise<string> {
  const arn = ARN;
  let value: string;
  try {
    value = await getSecretString(arn);
  } catch (error) {
    throw new Error(`Cannot read the secret key ${arn} from Secrets Manager: ${(error as Error).message}`, {
      cause: error,
    });
  }
  // Never put the material (or its length) in a message: errors are logged.
  if (value.length < MIN_MATERIAL)
    throw new Error(`The secret key ${arn} must be at least ${MIN_MATERIAL} characters of random material`);
  return value;
}

/** The key material (fetched on first use, then cached for the container). */
export function keyMaterial(): Promise<string> {
  if (!material) {
    const loading = load();
    material = loading;
    loading.catch(() => {
      if (material === loading) material = undefined;
    });
  }
  return material;
}
