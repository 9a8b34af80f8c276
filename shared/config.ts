/**
 * Environment configuration. Each getter is called at module scope by the module that needs it,
 * so a function with a missing variable fails at cold start, not on the first request that uses it.
 */
function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') {
    throw new Error(`Missing required environment variable ${name}`);
  }
  return value;
}

function optional(name: string, fallback: string): string {
  const value = process.env[name];
  return value === undefined || value === '' ? fallback : value;
}

export const env = {
  /** The single DynamoDB table. */
  tableName: () => required('TABLE_NAME'),
  /** SQS queue that receives every published notification (webhook fan-out input). */
  fanoutQueueUrl: () => required('FANOUT_QUEUE_URL'),
  /** `source` attribute of published notifications. */
  notificationSource: () => optional('NOTIFICATION_SOURCE', '/switchboard'),
  logLevel: () => optional('LOG_LEVEL', 'info'),
  /** How long a resolved API key is trusted without a DynamoDB read, in seconds (0 disables the cache). */
  apiKeyCacheSeconds: () => Number(optional('API_KEY_CACHE_SECONDS', '30')),
} as const;
