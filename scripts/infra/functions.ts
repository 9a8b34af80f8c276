import { getAtt } from './cfn';

/**
 * What the code cannot tell about a function: its size, its non-HTTP events, the settings it reads,
 * and where in the bucket and to which queues its S3 and SQS calls go. Everything else is derived
 * (scripts/infra/generate.ts): an HTTP function's events from its route table (functions/routes.ts),
 * every role's actions from the SDK commands its bundle constructs, and the resource of each action
 * whose service has a single one (the table, the key material, the schedule group, SES identities).
 * A function of functions/routes.ts without an entry here gets the provider's defaults.
 */
export interface FunctionSpec {
  /** Written above the function in serverless.yml. */
  about?: string;
  memorySize?: number;
  timeout?: number;
  maximumRetryAttempts?: number;
  /** Settings beyond the provider's environment (WEBHOOK_SECRET_KEY_ARN is added to every function whose code reads the key). */
  environment?: Record<string, string>;
  /** Events other than the route table's httpApi routes. */
  events?: Record<string, unknown>[];
  destinations?: Record<string, unknown>;
  /**
   * The mail bucket's prefixes its S3 calls use. A list: each prefix gets every S3 action its code
   * needs (s3:ListBucket as a listing of those prefixes). A map: only the actions listed per prefix
   * (each one must be an action its code needs, and each action it needs must be listed somewhere).
   */
  mail?: string[] | Record<string, string[]>;
  /** The queues (logical ids) its SendMessage calls go to; event sources and failure destinations add theirs. */
  sendsTo?: string[];
}

// Booking reminders and scheduled sends are EventBridge Scheduler one-shot schedules firing into the scheduled-send queue.
const scheduledSendEnvironment = {
  SCHEDULE_GROUP: '${param:scheduleGroup}',
  SCHEDULED_SEND_QUEUE_URL: '${param:scheduledSendQueueUrl}',
  SCHEDULED_SEND_QUEUE_ARN: '${param:scheduledSendQueueArn}',
  SCHEDULED_SEND_DLQ_ARN: '${param:scheduledSendDlqArn}',
  SCHEDULER_ROLE_ARN: '${param:schedulerRoleArn}',
  SCHEDULED_SEND_MIN_LEAD_SECONDS: "${env:SCHEDULED_SEND_MIN_LEAD_SECONDS, ''}",
};

/** An SQS event source reporting partial batch failures. */
const sqs = (queue: string, batchSize: number | string) => ({
  sqs: { arn: getAtt(`${queue}.Arn`), batchSize, functionResponseType: 'ReportBatchItemFailures' },
});

export const FUNCTIONS: Record<string, FunctionSpec> = {
  // HTTP functions (routes: functions/<name>/routes.ts).
  connect: {
    about:
      'Custom authentication and hosted OAuth. Provider tokens, connector secrets and OAuth flows are sealed under the deployment key.',
    environment: {
      ADMIN_CONSENT_DELAY_SECONDS: "${env:ADMIN_CONSENT_DELAY_SECONDS, '300'}",
      PUBLIC_BASE_URL: "${env:PUBLIC_BASE_URL, ''}",
    },
  },
  messages: { mail: ['grants/', 'search/'] },
  push: {
    about:
      "Provider pushes (provider A's Gmail through Pub/Sub): verified by their token, each brings its grant's next sync run forward.",
    sendsTo: ['MailSyncQueue'],
  },
  'messages-clean': {
    about: 'Cleaning bodies into markdown: its own function, the only one that bundles the HTML parsers.',
    mail: ['grants/'],
  },
  send: {
    memorySize: 1024,
    environment: scheduledSendEnvironment,
    mail: ['grants/', 'outgoing/', 'uploads/'],
    // A message due within about a minute is also queued at once (shared/scheduled-send/firing.ts).
    sendsTo: ['ScheduledSendQueue'],
  },
  schedules: {
    about: 'Scheduled sends, once scheduled: list, read, cancel (none of the MIME, transport and template code).',
    environment: scheduledSendEnvironment,
    mail: ['grants/', 'outgoing/'],
  },
  threads: { mail: ['grants/', 'search/'] },
  drafts: { memorySize: 1024, mail: ['grants/', 'outgoing/', 'uploads/'] },
  'drafts-send': {
    about: 'Sending a draft: its own function, the only drafts route that needs MIME composition and the transports.',
    memorySize: 1024,
    mail: ['grants/', 'outgoing/'],
  },
  attachments: { mail: ['grants/', 'uploads/'] },
  'scheduling-pages': {
    about: 'The booking pages (HTML, no API key): a configuration and a booking read, none of the booking code.',
  },

  // Scheduled sends (shared/scheduled-send/): EventBridge Scheduler fires each schedule into the
  // scheduled-send queue; this worker holds a firing until its send_at (a delayed queue message) and then sends it once.
  'scheduled-send': {
    about:
      'Scheduled sends: holds each firing of the scheduled-send queue until its send_at, then sends the message once.',
    memorySize: 1024,
    timeout: 60,
    environment: scheduledSendEnvironment,
    events: [sqs('ScheduledSendQueue', 1)],
    mail: ['grants/', 'outgoing/'],
    // Holds and retries go back to its own queue as delayed messages.
    sendsTo: ['ScheduledSendQueue'],
  },
  'webhook-fanout': {
    about: 'Every published notification → one delivery job per subscribed destination.',
    events: [sqs('FanoutQueue', '${param:sqsBatchSize}')],
    sendsTo: ['DeliveryQueue'],
  },
  outbox: {
    about:
      'The transactional outbox (shared/db/outbox.ts): notifications and jobs committed with their change reach the fan-out and jobs queues through the table stream. ' +
      'A failed record is retried from where it failed (bisecting on function errors) for up to a day, the stream retention, then described in the outbox-failures queue.',
    timeout: 60,
    events: [
      {
        stream: {
          type: 'dynamodb',
          arn: getAtt('Table.StreamArn'),
          startingPosition: 'TRIM_HORIZON',
          batchSize: 100,
          batchWindow: 0,
          functionResponseType: 'ReportBatchItemFailures',
          bisectBatchOnFunctionError: true,
          maximumRetryAttempts: -1,
          maximumRecordAgeInSeconds: 86400,
          destinations: { onFailure: { arn: getAtt('OutboxFailureDeadLetterQueue.Arn'), type: 'sqs' } },
          filterPatterns: [
            // Outbox entries, and messages: a message item is its own outbox entry (shared/db/messages.ts).
            { eventName: ['INSERT'], dynamodb: { NewImage: { entity: { S: ['outbox', 'message'] } } } },
            // Uploads whose change never committed, removed by TTL (shared/db/uploads.ts).
            {
              eventName: ['REMOVE'],
              userIdentity: { type: ['Service'], principalId: ['dynamodb.amazonaws.com'] },
              dynamodb: { OldImage: { entity: { S: ['upload'] } } },
            },
          ],
        },
      },
    ],
    mail: ['grants/'],
    sendsTo: ['FanoutQueue', 'JobsQueue'],
  },
  'webhook-delivery': {
    about: 'Signed POSTs to destinations; retries are delayed messages, the third failure goes to the DLQ.',
    events: [sqs('DeliveryQueue', '${param:sqsBatchSize}')],
    sendsTo: ['DeliveryQueue', 'DeliveryDeadLetterQueue'],
  },
  'webhook-health': {
    about: 'failing / failed transitions and their email notices.',
    timeout: 120,
    events: [{ schedule: 'rate(5 minutes)' }],
  },
  jobs: {
    about:
      'Background jobs (grant purges, booking reminders, local delivery, iMIP, ...), one message at a time, partial batch failures reported.',
    timeout: 300,
    environment: scheduledSendEnvironment,
    events: [sqs('JobsQueue', 1)],
    // Search segments are listed to be merged or removed; outgoing/ objects are known by name.
    mail: {
      'grants/': ['s3:PutObject', 's3:GetObject', 's3:DeleteObject', 's3:ListBucket'],
      'outgoing/': ['s3:PutObject', 's3:GetObject', 's3:DeleteObject'],
      // An expired attachment upload's file (remove-contents).
      'uploads/': ['s3:DeleteObject'],
      'search/': ['s3:PutObject', 's3:GetObject', 's3:DeleteObject', 's3:ListBucket'],
    },
    sendsTo: ['JobsQueue', 'MailSyncQueue'],
  },
  'mail-sync': {
    about:
      'Sync runs of IMAP grants and provider A changes (shared/services/mail-sync.ts): one bounded run per message, serialized per grant by a lease; the next run is a delayed message on its own queue.',
    memorySize: 1024,
    timeout: 300,
    // Provider A's Calendar channels push to this deployment's public URL (none: the runs poll).
    environment: { PUBLIC_BASE_URL: "${env:PUBLIC_BASE_URL, ''}" },
    events: [sqs('MailSyncQueue', 1)],
    mail: ['grants/'],
    sendsTo: ['MailSyncQueue'],
  },
  'ses-events': {
    about:
      'Deliverability events of SES sends (configuration set → SNS → queue): message.delivered, bounced, complaint, rejected and their transactional forms, once each.',
    events: [sqs('SesEventsQueue', '${param:sqsBatchSize}')],
  },
  inbound: {
    about: 'Inbound mail on AWS: invoked by an SES receipt rule after its S3 action (see README).',
    memorySize: 1024,
    timeout: 120,
    maximumRetryAttempts: 2,
    destinations: { onFailure: { type: 'sqs', arn: getAtt('InboundDeadLetterQueue.Arn') } },
    // Messages are stored under grants/ (and removed again when not stored); SES writes inbound/.
    mail: { 'grants/': ['s3:PutObject', 's3:DeleteObject'], 'inbound/': ['s3:GetObject', 's3:DeleteObject'] },
  },
  fallback: {
    about: "API Gateway's $default route: unknown paths (404) and wrong methods (405) in the error envelope.",
    memorySize: 256,
    events: [{ httpApi: '*' }],
  },
};
