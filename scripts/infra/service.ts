import { getAtt, ref, sub } from './cfn';

/**
 * What every function shares, written once: the plugins, the stage parameters, the provider (runtime,
 * common environment), the esbuild options, and the resources the functions use (table, queues,
 * bucket, key material, scheduler). The functions and their roles are generated (scripts/infra/generate.ts).
 */

// Plugin order matters: serverless-offline-sqs must come before serverless-offline. The first one acts
// only under `npm start`, which builds the bundles itself (scripts/local-stack/serverless-prebuilt.cjs).
export const plugins = [
  './scripts/local-stack/serverless-prebuilt.cjs',
  'serverless-esbuild',
  'serverless-offline-sqs',
  'serverless-offline',
];

// `local` is the stage `npm start` runs offline: resource addresses come from the environment the
// start script sets up (emulators). Every other stage uses the CloudFormation resources below.
export const params = {
  local: {
    fanoutQueueUrl: "${env:FANOUT_QUEUE_URL, ''}",
    jobsQueueUrl: "${env:JOBS_QUEUE_URL, ''}",
    mailSyncQueueUrl: "${env:MAIL_SYNC_QUEUE_URL, ''}",
    mailBucket: "${env:MAIL_BUCKET, ''}",
    mailTransport: 'smtp',
    smtpRelayUrl: "${env:SMTP_RELAY_URL, ''}",
    s3ForcePathStyle: 'true',
    deliveryQueueUrl: "${env:DELIVERY_QUEUE_URL, ''}",
    deliveryDlqUrl: "${env:DELIVERY_DLQ_URL, ''}",
    // The local stack's Secrets Manager stand-in holds the material (scripts/local-stack/secrets-local.ts).
    webhookSecretKeyArn: "${env:WEBHOOK_SECRET_KEY_ARN, ''}",
    webhookLocalMode: 'true',
    // serverless-offline-sqs long-polls: batches larger than 1 would wait for the poll to end.
    sqsBatchSize: 1,
    // The local EventBridge Scheduler stand-in and its queue (scripts/local-stack/scheduler-local.ts).
    scheduleGroup: "${env:SCHEDULE_GROUP, ''}",
    scheduledSendQueueUrl: "${env:SCHEDULED_SEND_QUEUE_URL, ''}",
    scheduledSendQueueArn: "${env:SCHEDULED_SEND_QUEUE_ARN, ''}",
    scheduledSendDlqArn: "${env:SCHEDULED_SEND_DLQ_ARN, ''}",
    schedulerRoleArn: "${env:SCHEDULER_ROLE_ARN, ''}",
    // No SES locally: the relay's answers are the deliverability events (shared/deliverability/relay.ts).
    sesConfigurationSet: '',
  },
  default: {
    fanoutQueueUrl: ref('FanoutQueue'),
    jobsQueueUrl: ref('JobsQueue'),
    mailSyncQueueUrl: ref('MailSyncQueue'),
    mailBucket: ref('MailBucket'),
    // Amazon SES by default; set MAIL_TRANSPORT=smtp and SMTP_RELAY_URL to relay elsewhere.
    mailTransport: "${env:MAIL_TRANSPORT, 'ses'}",
    smtpRelayUrl: "${env:SMTP_RELAY_URL, ''}",
    s3ForcePathStyle: 'false',
    deliveryQueueUrl: ref('DeliveryQueue'),
    deliveryDlqUrl: ref('DeliveryDeadLetterQueue'),
    // The secret's ARN only: the functions read the material from Secrets Manager at run time.
    webhookSecretKeyArn: ref('WebhookSecretKey'),
    webhookLocalMode: 'false',
    sqsBatchSize: 10,
    scheduleGroup: ref('ScheduleGroup'),
    scheduledSendQueueUrl: ref('ScheduledSendQueue'),
    scheduledSendQueueArn: getAtt('ScheduledSendQueue.Arn'),
    scheduledSendDlqArn: getAtt('ScheduledSendDeadLetterQueue.Arn'),
    schedulerRoleArn: getAtt('SchedulerRole.Arn'),
    sesConfigurationSet: ref('SesConfigurationSet'),
  },
};

export const provider = {
  name: 'aws',
  runtime: 'nodejs24.x',
  architecture: 'arm64',
  stage: "${opt:stage, 'local'}",
  region: "${opt:region, env:AWS_REGION, 'us-east-1'}",
  memorySize: 512,
  timeout: 29,
  logRetentionInDays: 30,
  // No AWS::Lambda::Version per function: nothing here uses versions or aliases (no provisioned
  // concurrency, no SnapStart), and each would be one more of the stack's 500 resources.
  versionFunctions: false,
  httpApi: { payload: '2.0', disableDefaultEndpoint: false },
  // X-Ray, off unless the deployment sets TRACING=true: then Lambda traces every invocation and the
  // functions load Powertools' Tracer (shared/aws/tracing.ts), which costs a cold start.
  tracing: { lambda: "${strToBool(${env:TRACING, 'false'})}" },
  environment: {
    TABLE_NAME: '${self:custom.tableName}',
    FANOUT_QUEUE_URL: '${param:fanoutQueueUrl}',
    JOBS_QUEUE_URL: '${param:jobsQueueUrl}',
    MAIL_SYNC_QUEUE_URL: '${param:mailSyncQueueUrl}',
    MAIL_BUCKET: '${param:mailBucket}',
    MAIL_TRANSPORT: '${param:mailTransport}',
    SMTP_RELAY_URL: '${param:smtpRelayUrl}',
    SES_CONFIGURATION_SET: '${param:sesConfigurationSet}',
    S3_FORCE_PATH_STYLE: '${param:s3ForcePathStyle}',
    DELIVERY_QUEUE_URL: '${param:deliveryQueueUrl}',
    DELIVERY_DLQ_URL: '${param:deliveryDlqUrl}',
    WEBHOOK_LOCAL_MODE: '${param:webhookLocalMode}',
    WEBHOOK_EGRESS_IPS: "${env:WEBHOOK_EGRESS_IPS, ''}",
    WEBHOOK_EGRESS_IPS_UPDATED_AT: "${env:WEBHOOK_EGRESS_IPS_UPDATED_AT, '0'}",
    DAILY_SEND_QUOTA: "${env:DAILY_SEND_QUOTA, '500'}",
    // Optional settings (README, Configuration): empty means the default in shared/config.ts.
    TRACKING_HOSTNAME: "${env:TRACKING_HOSTNAME, ''}",
    WEBHOOK_TIMEOUT_MS: "${env:WEBHOOK_TIMEOUT_MS, ''}",
    WEBHOOK_RETRY_SCHEDULE: "${env:WEBHOOK_RETRY_SCHEDULE, ''}",
    NOTICE_FROM: "${env:NOTICE_FROM, ''}",
    API_KEY_CACHE_SECONDS: "${env:API_KEY_CACHE_SECONDS, ''}",
    DNS_RESOLVERS: "${env:DNS_RESOLVERS, ''}",
    INBOUND_MX_HOST: "${env:INBOUND_MX_HOST, ''}",
    SPF_INCLUDE: "${env:SPF_INCLUDE, ''}",
    FEEDBACK_MX_HOST: "${env:FEEDBACK_MX_HOST, ''}",
    DKIM_SELECTOR: "${env:DKIM_SELECTOR, ''}",
    GOOGLE_GMAIL_UNITS_PER_MINUTE: "${env:GOOGLE_GMAIL_UNITS_PER_MINUTE, ''}",
    MICROSOFT_GRAPH_REQUESTS_PER_10_MINUTES: "${env:MICROSOFT_GRAPH_REQUESTS_PER_10_MINUTES, ''}",
    MESSAGE_ID_DOMAIN: "${env:MESSAGE_ID_DOMAIN, 'switchboard.local'}",
    // Requests a second per application (and the most one may set itself) and per grant: shared/http/middleware/rate-limit.ts.
    RATE_LIMIT_PER_SECOND: "${env:RATE_LIMIT_PER_SECOND, ''}",
    RATE_LIMIT_BURST: "${env:RATE_LIMIT_BURST, ''}",
    RATE_LIMIT_MAX_PER_SECOND: "${env:RATE_LIMIT_MAX_PER_SECOND, ''}",
    GRANT_RATE_LIMIT_PER_SECOND: "${env:GRANT_RATE_LIMIT_PER_SECOND, ''}",
    GRANT_RATE_LIMIT_BURST: "${env:GRANT_RATE_LIMIT_BURST, ''}",
    LOG_LEVEL: "${env:LOG_LEVEL, 'info'}",
    NOTIFICATION_SOURCE: '/switchboard/${sls:stage}',
    // Powertools: the `service` of every log line and metric, and the metrics' namespace, which the
    // template's alarms and dashboard read (scripts/infra/monitoring.ts).
    POWERTOOLS_SERVICE_NAME: 'switchboard',
    POWERTOOLS_METRICS_NAMESPACE: 'Switchboard',
    POWERTOOLS_TRACE_ENABLED: "${env:TRACING, 'false'}",
  },
};

export const custom = {
  tableName: '${self:service}-${sls:stage}',
  esbuild: {
    bundle: true,
    minify: true,
    sourcemap: false,
    // Lambda's nodejs24.x; `npm start` runs the same bundles on the Node 24 that npm installs (scripts/node24.sh).
    target: 'node24',
    platform: 'node',
    // CommonJS: Lambda loads a .cjs handler with require(), which skips the ES module loader's
    // per-module work (measured: 9 ms less module init for the same SDK code, see bench/foundation.ts).
    format: 'cjs',
    outputFileExtension: '.cjs',
    mainFields: ['module', 'main'],
    // Bundle the AWS SDK too: pinned versions, and no dependency on what the runtime ships.
    exclude: [],
    // Lambda always provides credentials in the environment (see shared/aws/lambda-credentials.ts).
    alias: { '@aws-sdk/credential-provider-node': './shared/aws/lambda-credentials.ts' },
    concurrency: 2,
    plugins: 'scripts/esbuild-plugins.cjs',
  },
  'serverless-offline': {
    host: '127.0.0.1',
    httpPort: '${env:PORT, 3000}',
    lambdaPort: '${env:LAMBDA_PORT, 3002}',
    noPrependStageInUrl: true,
    noTimeout: false,
    // API Gateway hands the Cookie header to the function as it came; hapi would refuse a malformed one.
    disableCookieValidation: true,
  },
  'serverless-offline-sqs': {
    autoCreate: false,
    apiVersion: '2012-11-05',
    endpoint: "${env:AWS_ENDPOINT_URL_SQS, 'http://127.0.0.1:9324'}",
    region: '${self:provider.region}',
    accessKeyId: 'local',
    secretAccessKey: 'local',
    skipCacheInvalidation: false,
  },
};

/** A work queue: its dead-letter queue takes a message received 3 times without being deleted. */
function workQueue(suffix: string, deadLetterQueue: string, properties: Record<string, unknown>) {
  return {
    Type: 'AWS::SQS::Queue',
    Properties: {
      QueueName: `\${self:service}-\${sls:stage}-${suffix}`,
      ...properties,
      SqsManagedSseEnabled: true,
      RedrivePolicy: { deadLetterTargetArn: getAtt(`${deadLetterQueue}.Arn`), maxReceiveCount: 3 },
    },
  };
}

/** A dead-letter queue keeps its messages two weeks. */
function deadLetterQueue(suffix: string) {
  return {
    Type: 'AWS::SQS::Queue',
    Properties: {
      QueueName: `\${self:service}-\${sls:stage}-${suffix}`,
      MessageRetentionPeriod: 1209600,
      SqsManagedSseEnabled: true,
    },
  };
}

/** The resources besides the functions' roles. Visibility timeouts are 6x the consuming function's timeout, as AWS recommends. */
export const resources: Record<string, unknown> = {
  // Data: the single table (key design: shared/db/keys.ts).
  Table: {
    Type: 'AWS::DynamoDB::Table',
    DeletionPolicy: 'Retain',
    UpdateReplacePolicy: 'Retain',
    Properties: {
      TableName: '${self:custom.tableName}',
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      TimeToLiveSpecification: { AttributeName: 'expires_at', Enabled: true },
      // The outbox consumer reads inserted outbox items from it (functions/outbox).
      StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
    },
  },
  FanoutQueue: workQueue('fanout', 'FanoutDeadLetterQueue', {
    VisibilityTimeout: 180,
    MaximumMessageSize: 1048576,
    MessageRetentionPeriod: 345600,
  }),
  FanoutDeadLetterQueue: deadLetterQueue('fanout-dlq'),
  // Where the outbox's event source mapping describes stream records it gave up on (a day old).
  OutboxFailureDeadLetterQueue: deadLetterQueue('outbox-failures'),
  DeliveryQueue: workQueue('delivery', 'DeliveryDeadLetterQueue', {
    VisibilityTimeout: 180,
    MaximumMessageSize: 1048576,
    MessageRetentionPeriod: 345600,
  }),
  DeliveryDeadLetterQueue: deadLetterQueue('delivery-dlq'),
  JobsQueue: workQueue('jobs', 'JobsDeadLetterQueue', { VisibilityTimeout: 1800, MessageRetentionPeriod: 1209600 }),
  JobsDeadLetterQueue: deadLetterQueue('jobs-dlq'),
  // Sync runs of grants whose mail lives on another server (functions/mail-sync): one delayed message
  // per grant schedules its next run; a run received 3 times (failing each time) moves to the DLQ.
  MailSyncQueue: workQueue('mail-sync', 'MailSyncDeadLetterQueue', {
    VisibilityTimeout: 1800,
    MessageRetentionPeriod: 1209600,
  }),
  MailSyncDeadLetterQueue: deadLetterQueue('mail-sync-dlq'),
  // Firings of scheduled sends, their holds until send_at and their retries (functions/scheduled-send);
  // a firing received 3 times moves to the DLQ (the worker ends the schedule as failed on that last receive).
  ScheduledSendQueue: workQueue('scheduled-send', 'ScheduledSendDeadLetterQueue', {
    VisibilityTimeout: 360,
    MessageRetentionPeriod: 1209600,
  }),
  // Also where EventBridge Scheduler puts a firing it could not deliver to the queue (same body: redriving it to the queue fires it).
  ScheduledSendDeadLetterQueue: deadLetterQueue('scheduled-send-dlq'),
  // Failed inbound invocations (after Lambda's retries) wait here: inbound mail is never dropped.
  InboundDeadLetterQueue: deadLetterQueue('inbound-dlq'),
  // Deliverability events of SES sends (functions/ses-events): the configuration set every send names
  // (SES_CONFIGURATION_SET) publishes deliveries, bounces, complaints and rejections to a topic, the
  // topic to the ses-events queue; an event received 3 times without being handled moves to the DLQ.
  SesConfigurationSet: {
    Type: 'AWS::SES::ConfigurationSet',
    Properties: { Name: '${self:service}-${sls:stage}' },
  },
  SesEventsTopic: {
    Type: 'AWS::SNS::Topic',
    Properties: { TopicName: '${self:service}-${sls:stage}-ses-events' },
  },
  SesEventsTopicPolicy: {
    Type: 'AWS::SNS::TopicPolicy',
    Properties: {
      Topics: [ref('SesEventsTopic')],
      PolicyDocument: {
        Version: '2012-10-17',
        Statement: [
          {
            Effect: 'Allow',
            Principal: { Service: 'ses.amazonaws.com' },
            Action: 'sns:Publish',
            Resource: ref('SesEventsTopic'),
            Condition: { StringEquals: { 'aws:SourceAccount': ref('AWS::AccountId') } },
          },
        ],
      },
    },
  },
  SesConfigurationSetEventDestination: {
    Type: 'AWS::SES::ConfigurationSetEventDestination',
    Properties: {
      ConfigurationSetName: ref('SesConfigurationSet'),
      EventDestination: {
        Name: 'deliverability',
        Enabled: true,
        MatchingEventTypes: ['delivery', 'bounce', 'complaint', 'reject'],
        SnsDestination: { TopicARN: ref('SesEventsTopic') },
      },
    },
  },
  SesEventsQueue: workQueue('ses-events', 'SesEventsDeadLetterQueue', {
    VisibilityTimeout: 180,
    MessageRetentionPeriod: 345600,
  }),
  SesEventsDeadLetterQueue: deadLetterQueue('ses-events-dlq'),
  SesEventsQueuePolicy: {
    Type: 'AWS::SQS::QueuePolicy',
    Properties: {
      Queues: [ref('SesEventsQueue')],
      PolicyDocument: {
        Version: '2012-10-17',
        Statement: [
          {
            Effect: 'Allow',
            Principal: { Service: 'sns.amazonaws.com' },
            Action: 'sqs:SendMessage',
            Resource: getAtt('SesEventsQueue.Arn'),
            Condition: { ArnEquals: { 'aws:SourceArn': ref('SesEventsTopic') } },
          },
        ],
      },
    },
  },
  SesEventsSubscription: {
    Type: 'AWS::SNS::Subscription',
    Properties: { TopicArn: ref('SesEventsTopic'), Protocol: 'sqs', Endpoint: getAtt('SesEventsQueue.Arn') },
  },
  // Key material that encrypts secrets at rest (shared/crypto/): webhook secrets, connector client
  // secrets and credential data, connected grants' provider tokens, OAuth flows. Never in an
  // environment variable: only the functions whose code reads it get its ARN and may read it.
  // Retained like the table: without it, the secrets stored there could not be decrypted.
  WebhookSecretKey: {
    Type: 'AWS::SecretsManager::Secret',
    DeletionPolicy: 'Retain',
    UpdateReplacePolicy: 'Retain',
    Properties: {
      Name: '${self:service}-${sls:stage}-webhook-key',
      GenerateSecretString: { PasswordLength: 64, ExcludePunctuation: true },
    },
  },
  // Scheduled sends: one one-shot schedule per scheduled message, in a group of their own, and the
  // role EventBridge Scheduler assumes to send each firing to the queue (or, failing, to its DLQ).
  ScheduleGroup: {
    Type: 'AWS::Scheduler::ScheduleGroup',
    Properties: { Name: '${self:service}-${sls:stage}-scheduled-send' },
  },
  SchedulerRole: {
    Type: 'AWS::IAM::Role',
    Properties: {
      AssumeRolePolicyDocument: {
        Version: '2012-10-17',
        Statement: [
          {
            Effect: 'Allow',
            Principal: { Service: 'scheduler.amazonaws.com' },
            Action: 'sts:AssumeRole',
            Condition: { StringEquals: { 'aws:SourceAccount': ref('AWS::AccountId') } },
          },
        ],
      },
      Policies: [
        {
          PolicyName: 'scheduled-send-target',
          PolicyDocument: {
            Version: '2012-10-17',
            Statement: [
              {
                Effect: 'Allow',
                Action: ['sqs:SendMessage'],
                Resource: [getAtt('ScheduledSendQueue.Arn'), getAtt('ScheduledSendDeadLetterQueue.Arn')],
              },
            ],
          },
        },
      ],
    },
  },
  // Mail contents: raw MIME, large bodies, attachments (grants/<grant_id>/...) and SES inbound drops
  // (inbound/...). Private, encrypted, TLS only.
  MailBucket: {
    Type: 'AWS::S3::Bucket',
    DeletionPolicy: 'Retain',
    UpdateReplacePolicy: 'Retain',
    Properties: {
      // No BucketName: CloudFormation generates a globally unique one (see the MailBucketName output).
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      LifecycleConfiguration: {
        Rules: [
          { Id: 'expire-unprocessed-inbound', Status: 'Enabled', Prefix: 'inbound/', ExpirationInDays: 14 },
          // Sent messages waiting for their local delivery job (shared/services/local-delivery.ts): the job
          // deletes them when done; those of a send that never committed expire here.
          { Id: 'expire-outgoing', Status: 'Enabled', Prefix: 'outgoing/', ExpirationInDays: 7 },
          // Large attachments PUT through attachment-uploads: each upload's TTL removes its file after its
          // hour (shared/uploads/store.ts); this catches any the table's TTL and the jobs left behind.
          { Id: 'expire-attachment-uploads', Status: 'Enabled', Prefix: 'uploads/', ExpirationInDays: 1 },
        ],
      },
    },
  },
  MailBucketPolicy: {
    Type: 'AWS::S3::BucketPolicy',
    Properties: {
      Bucket: ref('MailBucket'),
      PolicyDocument: {
        Version: '2012-10-17',
        Statement: [
          {
            Sid: 'TlsOnly',
            Effect: 'Deny',
            Principal: '*',
            Action: 's3:*',
            Resource: [getAtt('MailBucket.Arn'), sub('${MailBucket.Arn}/*')],
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          },
          {
            Sid: 'SesInboundDrops',
            Effect: 'Allow',
            Principal: { Service: 'ses.amazonaws.com' },
            Action: 's3:PutObject',
            Resource: sub('${MailBucket.Arn}/inbound/*'),
            Condition: { StringEquals: { 'aws:SourceAccount': ref('AWS::AccountId') } },
          },
        ],
      },
    },
  },
  // Inbound mail on AWS: SES's receipt rule invokes the inbound function after its S3 action.
  InboundSesPermission: {
    Type: 'AWS::Lambda::Permission',
    Properties: {
      FunctionName: getAtt('InboundLambdaFunction.Arn'),
      Action: 'lambda:InvokeFunction',
      Principal: 'ses.amazonaws.com',
      SourceAccount: ref('AWS::AccountId'),
    },
  },
};

export const outputs = {
  TableName: { Value: ref('Table') },
  FanoutQueueUrl: { Value: ref('FanoutQueue') },
  DeliveryQueueUrl: { Value: ref('DeliveryQueue') },
  MailBucketName: { Value: ref('MailBucket') },
};

/** Where each service's actions apply when the function's table entry does not say (the only such resource of the service). */
export const MAIL_OBJECT = (prefix: string) => sub(`\${MailBucket.Arn}/${prefix}*`);
export const TABLE_ARN = getAtt('Table.Arn');
export const TABLE_STREAM_ARN = getAtt('Table.StreamArn');
export const SES_IDENTITIES = sub('arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}:identity/*');
export const SES_CONFIGURATION_SET = sub(
  'arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}:configuration-set/${SesConfigurationSet}',
);
export const SCHEDULES = sub(
  'arn:${AWS::Partition}:scheduler:${AWS::Region}:${AWS::AccountId}:schedule/${ScheduleGroup}/*',
);
export const logGroupOf = (fn: string) =>
  sub(
    `arn:\${AWS::Partition}:logs:\${AWS::Region}:\${AWS::AccountId}:log-group:/aws/lambda/\${self:service}-\${sls:stage}-${fn}:*`,
  );
