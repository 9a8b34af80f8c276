import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { cacheDir } from './cache';
import { startDynamoDbLocal } from './dynamodb-local';
import { httpEndpoint, type RunningService } from './service';
import { loadServerlessConfig, resolveName, type ServerlessConfig } from './serverless-config';
import { startSqsLocal } from './sqs-local';

/**
 * What provisioning and the in-process emulators need, loaded on first use: the AWS SDK's clients,
 * s3rver, smtp-server, the Scheduler stand-in. About 0.6 s of loading, which startLocalStack does
 * while DynamoDB Local's JVM and the SQS emulator's process start, not before; and the part the
 * environment does not wait for (S3, the SMTP sink, DynamoDB's client) after the rest.
 */
let provisioningLoaded: ReturnType<typeof loadProvisioning> | undefined;
const provisioningModules = () => (provisioningLoaded ??= loadProvisioning());
async function loadProvisioning() {
  const [sqs, secrets, scheduler, provision, schedulerLocal, secretsLocal] = await Promise.all([
    import('@aws-sdk/client-sqs'),
    import('@aws-sdk/client-secrets-manager'),
    import('@aws-sdk/client-scheduler'),
    import('./provision'),
    import('./scheduler-local'),
    import('./secrets-local'),
  ]);
  return { sqs, secrets, scheduler, provision, schedulerLocal, secretsLocal };
}
let servicesLoaded: ReturnType<typeof loadServices> | undefined;
const serviceModules = () => (servicesLoaded ??= loadServices());
async function loadServices() {
  const [dynamodb, s3, s3Local, smtpSink] = await Promise.all([
    import('@aws-sdk/client-dynamodb'),
    import('@aws-sdk/client-s3'),
    import('./s3-local'),
    import('./smtp-sink'),
  ]);
  return { dynamodb, s3, s3Local, smtpSink };
}
const stackModules = async () => ({ ...(await provisioningModules()), ...(await serviceModules()) });

/**
 * The embedded local stack used by `npm start` and by the test suite: DynamoDB Local, the SQS
 * emulator and a Secrets Manager stand-in on loopback, provisioned from serverless.yml. It returns
 * the environment the functions need; nothing in the functions knows it is talking to emulators.
 */
export const REGION = 'us-east-1';

/** Environment variable that carries each queue's URL to the functions (see serverless.yml). */
export const QUEUE_ENV = {
  FanoutQueue: 'FANOUT_QUEUE_URL',
  FanoutDeadLetterQueue: 'FANOUT_DLQ_URL',
  DeliveryQueue: 'DELIVERY_QUEUE_URL',
  DeliveryDeadLetterQueue: 'DELIVERY_DLQ_URL',
  JobsQueue: 'JOBS_QUEUE_URL',
  JobsDeadLetterQueue: 'JOBS_DLQ_URL',
  MailSyncQueue: 'MAIL_SYNC_QUEUE_URL',
  MailSyncDeadLetterQueue: 'MAIL_SYNC_DLQ_URL',
  InboundDeadLetterQueue: 'INBOUND_DLQ_URL',
  ScheduledSendQueue: 'SCHEDULED_SEND_QUEUE_URL',
  ScheduledSendDeadLetterQueue: 'SCHEDULED_SEND_DLQ_URL',
  SesEventsQueue: 'SES_EVENTS_QUEUE_URL',
  SesEventsDeadLetterQueue: 'SES_EVENTS_DLQ_URL',
} as const;

/**
 * Whether the local Scheduler fires at a random moment in the minute after a schedule's time, as
 * EventBridge Scheduler does (default), or exactly on time (`SCHEDULER_JITTER=off`).
 */
const schedulerJitter = () => process.env.SCHEDULER_JITTER !== 'off';

/** Local name of the mail bucket (CloudFormation names the deployed one). */
export const mailBucketName = (stage: string) => `switchboard-${stage}-mail`;

export interface LocalStack {
  env: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * The lowest port the kernel hands out for outgoing connections (Linux: ip_local_port_range), or
 * undefined where that is unknown.
 */
function ephemeralRangeStart(): number | undefined {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 10_000 ? low : undefined;
  } catch {
    return undefined;
  }
}

function canListen(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => resolve(bound));
    });
  });
}

/** Ports this process has handed out: never twice. */
const handedOut = new Set<number>();

/**
 * A loopback port nothing listens on, for a server that binds it a moment later (a JVM may take
 * seconds). Chosen below the kernel's range for outgoing connections: a port from that range (what
 * `listen(0)` gives) can be taken in the meantime by any client connection's local port, and was
 * (DynamoDB Local then failed with "Address already in use").
 */
export async function freePort(): Promise<number> {
  const low = ephemeralRangeStart();
  if (low !== undefined) {
    for (let attempt = 0; attempt < 100; attempt++) {
      const port = 10_000 + Math.floor(Math.random() * (low - 10_000));
      if (handedOut.has(port)) continue;
      if ((await canListen(port)) !== undefined) {
        handedOut.add(port);
        return port;
      }
    }
  }
  const port = await canListen(0);
  if (port === undefined) throw new Error('no free loopback port');
  handedOut.add(port);
  return port;
}

/**
 * Creates serverless.yml's webhook key secret (AWS::SecretsManager::Secret WebhookSecretKey) with
 * fresh random material, as CloudFormation's GenerateSecretString does when deployed: the key lives
 * as long as this stack. Returns its ARN, which is all the functions are given.
 */
export async function createWebhookKeySecret(
  client: SecretsManagerClient,
  stage: string,
  config: ServerlessConfig,
): Promise<string> {
  const { CreateSecretCommand } = (await provisioningModules()).secrets;
  const resource = config.resources.Resources.WebhookSecretKey!;
  const name = resolveName(String(resource.Properties!.Name), config.service, stage);
  const created = await client.send(
    new CreateSecretCommand({ Name: name, SecretString: randomBytes(48).toString('base64') }),
  );
  return created.ARN!;
}

/** The environment the functions need, beyond endpoints and credentials, for a provisioned stack. */
function functionEnv(
  tableName: string,
  bucket: string,
  queues: Record<string, { url: string; arn: string }>,
  sink: { smtpUrl: string; httpUrl: string },
  webhookKeyArn: string,
  scheduleGroup: string,
) {
  const env: Record<string, string> = {
    // Scheduled sends: the schedules' group, target and dead-letter queue, and the role the
    // Scheduler would assume (the local stand-in does not check it).
    SCHEDULE_GROUP: scheduleGroup,
    SCHEDULED_SEND_QUEUE_ARN: queues.ScheduledSendQueue!.arn,
    SCHEDULED_SEND_DLQ_ARN: queues.ScheduledSendDeadLetterQueue!.arn,
    SCHEDULER_ROLE_ARN: `arn:aws:iam::000000000000:role/${scheduleGroup}-scheduler`,
    TABLE_NAME: tableName,
    MAIL_BUCKET: bucket,
    S3_FORCE_PATH_STYLE: 'true',
    // Mail to outside addresses goes to our local SMTP sink, never anywhere real.
    MAIL_TRANSPORT: 'smtp',
    SMTP_RELAY_URL: sink.smtpUrl,
    /** Where tests and developers read what was relayed outside (GET /messages). */
    SMTP_SINK_URL: sink.httpUrl,
    // Local only: webhooks may use http to loopback.
    WEBHOOK_LOCAL_MODE: 'true',
    // The secret the webhook key is read from (the material stays in Secrets Manager).
    WEBHOOK_SECRET_KEY_ARN: webhookKeyArn,
    // Local Node may be older than the Lambda runtime; the SDK's notice about it is noise here.
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
  for (const [logicalId, queue] of Object.entries(queues)) {
    const name = QUEUE_ENV[logicalId as keyof typeof QUEUE_ENV];
    if (name) env[name] = queue.url;
  }
  return env;
}

/**
 * Provisions the table and queues on endpoints the environment already names (AWS_ENDPOINT_URL,
 * e.g. LocalStack) instead of starting emulators. Used by the tests when AWS_ENDPOINT_URL is set.
 */
export async function provisionExternalStack(options: { stage: string }): Promise<LocalStack> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const {
    dynamodb: { DeleteTableCommand, DynamoDBClient },
    sqs: { DeleteQueueCommand, SQSClient },
    secrets: { DeleteSecretCommand, SecretsManagerClient },
    scheduler: { SchedulerClient },
    s3: { CreateBucketCommand, DeleteBucketCommand, DeleteObjectsCommand, ListObjectsV2Command, S3Client },
    provision: { createQueues, createScheduleGroup, createTable },
    schedulerLocal: { startSchedulerLocal },
    smtpSink: { startSmtpSink },
    secretsLocal: { startSecretsLocal },
  } = await stackModules();
  const config = loadServerlessConfig();
  const tableName = resolveName(
    String((config.custom as { tableName: string }).tableName),
    config.service,
    options.stage,
  );
  const dynamoClient = new DynamoDBClient({});
  const sqsClient = new SQSClient({});
  await createTable(dynamoClient, tableName, config);
  const queues = await createQueues(sqsClient, options.stage, config);
  dynamoClient.destroy();
  sqsClient.destroy();
  // Secrets Manager there too when the environment names it (AWS_ENDPOINT_URL covers every service);
  // otherwise the local stand-in, never the real service.
  const secretsEnv: Record<string, string> = {};
  const localSecrets =
    process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER || process.env.AWS_ENDPOINT_URL
      ? undefined
      : await startSecretsLocal({ port: 0, region: process.env.AWS_REGION || REGION });
  if (localSecrets) secretsEnv.AWS_ENDPOINT_URL_SECRETS_MANAGER = localSecrets.endpoint;
  const secretsClient = () => new SecretsManagerClient(localSecrets ? { endpoint: localSecrets.endpoint } : {});
  const secrets = secretsClient();
  let webhookKeyArn: string;
  try {
    webhookKeyArn = await createWebhookKeySecret(secrets, options.stage, config);
  } catch (error) {
    await localSecrets?.stop();
    throw error;
  } finally {
    secrets.destroy();
  }
  const bucket = mailBucketName(options.stage);
  const s3 = new S3Client({ forcePathStyle: true });
  await s3.send(new CreateBucketCommand({ Bucket: bucket })).catch((error: Error) => {
    if (!['BucketAlreadyOwnedByYou', 'BucketAlreadyExists'].includes(error.name)) throw error;
  });
  s3.destroy();
  const sink = await startSmtpSink({ smtpPort: 0, httpPort: 0 });
  // EventBridge Scheduler there when the environment names its endpoint; otherwise the local
  // stand-in, firing into the environment's queues.
  const localScheduler = process.env.AWS_ENDPOINT_URL_SCHEDULER
    ? undefined
    : await startSchedulerLocal({
        port: 0,
        sqsEndpoint: process.env.AWS_ENDPOINT_URL_SQS || process.env.AWS_ENDPOINT_URL!,
        region: process.env.AWS_REGION || REGION,
        jitter: schedulerJitter(),
      });
  const schedulerEnv: Record<string, string> = localScheduler
    ? { AWS_ENDPOINT_URL_SCHEDULER: localScheduler.endpoint }
    : {};
  const schedulerClient = new SchedulerClient(localScheduler ? { endpoint: localScheduler.endpoint } : {});
  const scheduleGroup = await createScheduleGroup(schedulerClient, options.stage, config);
  schedulerClient.destroy();
  // The endpoints outlive this run: stopping removes what it created there.
  const removeResources = async () => {
    const dynamo = new DynamoDBClient({});
    const sqs = new SQSClient({});
    const storage = new S3Client({ forcePathStyle: true });
    const secrets = secretsClient();
    try {
      await Promise.all([
        dynamo.send(new DeleteTableCommand({ TableName: tableName })),
        secrets.send(new DeleteSecretCommand({ SecretId: webhookKeyArn, ForceDeleteWithoutRecovery: true })),
        ...Object.values(queues).map((q) => sqs.send(new DeleteQueueCommand({ QueueUrl: q.url }))),
        (async () => {
          for (let token: string | undefined, first = true; first || token; first = false) {
            const page = await storage.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
            if (page.Contents?.length)
              await storage.send(
                new DeleteObjectsCommand({
                  Bucket: bucket,
                  Delete: { Objects: page.Contents.map((o) => ({ Key: o.Key! })), Quiet: true },
                }),
              );
            token = page.NextContinuationToken;
          }
          await storage.send(new DeleteBucketCommand({ Bucket: bucket }));
        })(),
      ]);
    } finally {
      dynamo.destroy();
      sqs.destroy();
      storage.destroy();
      secrets.destroy();
    }
  };
  return {
    env: {
      ...secretsEnv,
      ...schedulerEnv,
      ...functionEnv(tableName, bucket, queues, sink, webhookKeyArn, scheduleGroup),
    },
    stop: async () =>
      void (await Promise.all([
        sink.stop(),
        localScheduler?.stop(),
        removeResources().finally(() => localSecrets?.stop()),
      ])),
  };
}

export async function startLocalStack(options: {
  stage: string;
  dynamodbPort?: number;
  sqsPort?: number;
  s3Port?: number;
  smtpSinkPort?: number;
  smtpSinkHttpPort?: number;
  secretsPort?: number;
  schedulerPort?: number;
  /** Where DynamoDB Local's class archive is kept (scripts/local-stack/cache.ts); none: the checkout's cache. */
  cacheDir?: string;
  /** serverless.yml as read already (it takes ~0.1 s to parse); none: read here. */
  config?: ServerlessConfig;
  /**
   * Called once the environment is final: every emulator but DynamoDB Local serving and provisioned,
   * DynamoDB Local's endpoint chosen; it may still be starting, and its table is made next. What
   * needs only the environment (a process to spawn with it) can start then.
   */
  onEnv?: (env: Record<string, string>) => void;
}): Promise<LocalStack> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const running: RunningService[] = [];
  const stopAll = async () => {
    await Promise.all(running.splice(0).map((s) => s.stop().catch(() => undefined)));
  };
  /** A service being started: running once it is (and stopped with the rest, even after a failure elsewhere). */
  const starting: Promise<RunningService>[] = [];
  const start = <T extends RunningService>(service: Promise<T>): Promise<T> => {
    const tracked = service.then((s) => (running.push(s), s));
    starting.push(tracked);
    // Awaited below, or on failure; until then its own failure must not count as unhandled.
    tracked.catch(() => undefined);
    return tracked;
  };
  // The JVM takes longest: it starts first, then the SQS emulator's process; the rest loads and is
  // provisioned meanwhile.
  const dynamodbPort = options.dynamodbPort || (await freePort());
  const dynamodbStarting = start(startDynamoDbLocal({ port: dynamodbPort, cacheDir: options.cacheDir ?? cacheDir() }));
  const sqsStarting = start(startSqsLocal({ port: options.sqsPort ?? 0 }));
  try {
    const {
      sqs: { SQSClient },
      secrets: { SecretsManagerClient },
      scheduler: { SchedulerClient },
      provision: { createQueues, createScheduleGroup, createTable },
      schedulerLocal: { startSchedulerLocal },
      secretsLocal: { startSecretsLocal },
    } = await provisioningModules();
    const config = options.config ?? loadServerlessConfig();
    const s3Directory = mkdtempSync(join(tmpdir(), 'switchboard-s3-'));
    running.push({ endpoint: s3Directory, stop: async () => rmSync(s3Directory, { recursive: true, force: true }) });
    const bucket = mailBucketName(options.stage);
    // S3 and the SMTP sink on ports chosen here: the environment names them, and they start (s3rver
    // and smtp-server take a while to load) while it is provisioned and put to use.
    const [s3Port, sinkSmtpPort, sinkHttpPort] = [
      options.s3Port || (await freePort()),
      options.smtpSinkPort || (await freePort()),
      options.smtpSinkHttpPort || (await freePort()),
    ];
    const s3Starting = start(
      serviceModules().then(({ s3Local }) =>
        s3Local.startS3Local({ port: s3Port, directory: s3Directory, buckets: [bucket] }),
      ),
    );
    const sinkStarting = start(
      serviceModules().then(({ smtpSink }) =>
        smtpSink.startSmtpSink({ smtpPort: sinkSmtpPort, httpPort: sinkHttpPort }),
      ),
    );

    const [sqs, secretsManager] = await Promise.all([
      sqsStarting,
      start(startSecretsLocal({ port: options.secretsPort ?? 0, region: REGION })),
    ]);
    // The S3 emulator only accepts these credentials; DynamoDB Local and the SQS emulator take any.
    const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
    const tableName = resolveName(
      String((config.custom as { tableName: string }).tableName),
      config.service,
      options.stage,
    );
    const sqsClient = new SQSClient({ endpoint: sqs.endpoint, region: REGION, credentials });
    const secretsClient = new SecretsManagerClient({ endpoint: secretsManager.endpoint, region: REGION, credentials });
    // EventBridge Scheduler has no emulator: the project's stand-in fires schedules into the SQS
    // emulator. It starts while the queues and the secret are made.
    const [queues, webhookKeyArn, scheduler] = await Promise.all([
      createQueues(sqsClient, options.stage, config),
      createWebhookKeySecret(secretsClient, options.stage, config),
      start(
        startSchedulerLocal({
          port: options.schedulerPort ?? 0,
          sqsEndpoint: sqs.endpoint,
          region: REGION,
          credentials,
          jitter: schedulerJitter(),
        }),
      ),
    ]);
    const schedulerClient = new SchedulerClient({ endpoint: scheduler.endpoint, region: REGION, credentials });
    const scheduleGroup = await createScheduleGroup(schedulerClient, options.stage, config);
    schedulerClient.destroy();
    sqsClient.destroy();
    secretsClient.destroy();

    const sink = { smtpUrl: `smtp://127.0.0.1:${sinkSmtpPort}`, httpUrl: httpEndpoint('127.0.0.1', sinkHttpPort) };
    const env: Record<string, string> = {
      AWS_REGION: REGION,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: httpEndpoint('127.0.0.1', dynamodbPort),
      AWS_ENDPOINT_URL_SQS: sqs.endpoint,
      AWS_ENDPOINT_URL_S3: httpEndpoint('127.0.0.1', s3Port),
      AWS_ENDPOINT_URL_SECRETS_MANAGER: secretsManager.endpoint,
      AWS_ENDPOINT_URL_SCHEDULER: scheduler.endpoint,
      ...functionEnv(tableName, bucket, queues, sink, webhookKeyArn, scheduleGroup),
    };
    options.onEnv?.(env);

    const [dynamodb, s3, smtpSink] = await Promise.all([dynamodbStarting, s3Starting, sinkStarting]);
    // The environment named them before they listened: it must be what they serve.
    if (
      env.AWS_ENDPOINT_URL_DYNAMODB !== dynamodb.endpoint ||
      env.AWS_ENDPOINT_URL_S3 !== s3.endpoint ||
      sink.smtpUrl !== smtpSink.smtpUrl ||
      sink.httpUrl !== smtpSink.httpUrl
    ) {
      throw new Error('the local stack serves on other endpoints than its environment names');
    }
    const { DynamoDBClient } = (await serviceModules()).dynamodb;
    const dynamoClient = new DynamoDBClient({ endpoint: dynamodb.endpoint, region: REGION, credentials });
    await createTable(dynamoClient, tableName, config);
    dynamoClient.destroy();
    return { env, stop: stopAll };
  } catch (error) {
    // Everything started, however far it got (a failed start stops its own process).
    await Promise.allSettled(starting);
    await stopAll();
    throw error;
  }
}

/**
 * The stack tests and benchmarks run against: the embedded emulators, or, when the environment
 * names endpoints (`AWS_ENDPOINT_URL`, e.g. LocalStack), a table and queues of their own there.
 */
export function startStack(stage: string): Promise<LocalStack> {
  return process.env.AWS_ENDPOINT_URL || process.env.AWS_ENDPOINT_URL_DYNAMODB
    ? provisionExternalStack({ stage })
    : startLocalStack({ stage });
}
