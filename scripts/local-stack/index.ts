import { createServer } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { startDynamoDbLocal, type RunningService } from './dynamodb-local';
import { createQueues, createTable } from './provision';
import { loadServerlessConfig, resolveName } from './serverless-config';
import { startSqsLocal } from './sqs-local';

/**
 * The embedded local stack used by `npm start` and by the test suite: DynamoDB Local and the SQS
 * emulator on loopback, provisioned from serverless.yml. It returns the environment the functions
 * need; nothing in the functions knows it is talking to emulators.
 */
export const REGION = 'us-east-1';

/** Environment variable that carries each queue's URL to the functions (see serverless.yml). */
export const QUEUE_ENV = {
  FanoutQueue: 'FANOUT_QUEUE_URL',
  FanoutDeadLetterQueue: 'FANOUT_DLQ_URL',
  DeliveryQueue: 'DELIVERY_QUEUE_URL',
  DeliveryDeadLetterQueue: 'DELIVERY_DLQ_URL',
} as const;

export interface LocalStack {
  env: Record<string, string>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Provisions the table and queues on endpoints the environment already names (AWS_ENDPOINT_URL,
 * e.g. LocalStack) instead of starting emulators. Used by the tests when AWS_ENDPOINT_URL is set.
 */
export async function provisionExternalStack(options: { stage: string }): Promise<LocalStack> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const config = loadServerlessConfig();
  const tableName = resolveName(String((config.custom as { tableName: string }).tableName), config.service, options.stage);
  const dynamoClient = new DynamoDBClient({});
  const sqsClient = new SQSClient({});
  await createTable(dynamoClient, tableName, config);
  const queues = await createQueues(sqsClient, options.stage, config);
  dynamoClient.destroy();
  sqsClient.destroy();
  const env: Record<string, string> = { TABLE_NAME: tableName, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
  for (const [logicalId, queue] of Object.entries(queues)) {
    const name = QUEUE_ENV[logicalId as keyof typeof QUEUE_ENV];
    if (name) env[name] = queue.url;
  }
  return { env, stop: async () => undefined };
}

export async function startLocalStack(options: { stage: string; dynamodbPort?: number; sqsPort?: number }): Promise<LocalStack> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const config = loadServerlessConfig();
  const services: RunningService[] = [];
  const stopAll = async () => {
    await Promise.all(services.splice(0).map((s) => s.stop().catch(() => undefined)));
  };
  try {
    const [dynamodb, sqs] = await Promise.all([
      (async () => startDynamoDbLocal({ port: options.dynamodbPort || (await freePort()) }))(),
      startSqsLocal({ port: options.sqsPort ?? 0 }),
    ]);
    services.push(dynamodb, sqs);

    const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
    const tableName = resolveName(String((config.custom as { tableName: string }).tableName), config.service, options.stage);
    const dynamoClient = new DynamoDBClient({ endpoint: dynamodb.endpoint, region: REGION, credentials });
    const sqsClient = new SQSClient({ endpoint: sqs.endpoint, region: REGION, credentials });
    await createTable(dynamoClient, tableName, config);
    const queues = await createQueues(sqsClient, options.stage, config);
    dynamoClient.destroy();
    sqsClient.destroy();

    const env: Record<string, string> = {
      AWS_REGION: REGION,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: dynamodb.endpoint,
      AWS_ENDPOINT_URL_SQS: sqs.endpoint,
      TABLE_NAME: tableName,
      // Local Node may be older than the Lambda runtime; the SDK's notice about it is noise here.
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    };
    for (const [logicalId, queue] of Object.entries(queues)) {
      const name = QUEUE_ENV[logicalId as keyof typeof QUEUE_ENV];
      if (name) env[name] = queue.url;
    }
    return { env, stop: stopAll };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
