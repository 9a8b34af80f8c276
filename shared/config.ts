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

/** A whole number of at least 1 (a rate or a burst): anything else fails the cold start, not a request. */
function positive(name: string, fallback: string): number {
  const value = Number(optional(name, fallback));
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be a whole number of at least 1`);
  return value;
}

const messageIdDomain = () => optional('MESSAGE_ID_DOMAIN', 'switchboard.local');

export const env = {
  /** The single DynamoDB table. */
  tableName: () => required('TABLE_NAME'),
  /** SQS queue that receives every published notification (webhook fan-out input). */
  fanoutQueueUrl: () => required('FANOUT_QUEUE_URL'),
  /** SQS queue of background jobs (grant purges, ...). */
  jobsQueueUrl: () => required('JOBS_QUEUE_URL'),
  /** SQS queue of sync runs of grants whose mail lives on another server (shared/services/mail-sync.ts). */
  mailSyncQueueUrl: () => required('MAIL_SYNC_QUEUE_URL'),
  /** `source` attribute of published notifications. */
  notificationSource: () => optional('NOTIFICATION_SOURCE', '/switchboard'),
  logLevel: () => optional('LOG_LEVEL', 'info'),
  /**
   * Seconds that must pass between an administrator's consent and the first grant created with it
   * (provider B propagates consent slowly; the spec says 5 minutes). Tests shorten it.
   */
  adminConsentDelaySeconds: () => Number(optional('ADMIN_CONSENT_DELAY_SECONDS', '300')),
  /** Where the booking pages are served, for links in the scheduler's emails (default: the request's own host). */
  publicBaseUrl: () => optional('PUBLIC_BASE_URL', ''),
  /** S3 bucket for raw messages, large bodies and attachments. */
  mailBucket: () => required('MAIL_BUCKET'),
  /** Path-style bucket addressing, for S3-compatible endpoints (the local emulator, LocalStack). */
  s3ForcePathStyle: () => optional('S3_FORCE_PATH_STYLE', 'false') === 'true',
  /** Messages an Agent Account may send per UTC day. */
  dailySendQuota: () => Number(optional('DAILY_SEND_QUOTA', '500')),
  /** `smtp` (SMTP_RELAY_URL) or `ses` (Amazon SES v2) for mail to addresses outside this deployment. */
  mailTransport: () => optional('MAIL_TRANSPORT', 'smtp') as 'smtp' | 'ses',
  smtpRelayUrl: () => required('SMTP_RELAY_URL'),
  /**
   * The SES configuration set sends go through (MAIL_TRANSPORT=ses): it publishes their delivery,
   * bounce, complaint and reject events to the ses-events worker. Empty: sent without one, no such events.
   */
  sesConfigurationSet: () => optional('SES_CONFIGURATION_SET', ''),
  /** Domain of generated Message-ID headers. */
  messageIdDomain,
  /** Regional link and open tracking hostname, used when a draft or send gives none. */
  trackingHostname: () =>
    optional('TRACKING_HOSTNAME', `track.${optional('AWS_REGION', 'us-east-1')}.switchboard.local`),
  /**
   * DNS servers that domain verification reads records through (IP addresses with an optional port,
   * comma-separated; shared/domains/dns.ts checks them at cold start); empty: the system's resolvers.
   */
  dnsResolvers: () =>
    optional('DNS_RESOLVERS', '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  /** The host a domain's MX record must name for its mail to reach Agent Accounts (SES inbound by default). */
  inboundMxHost: () => optional('INBOUND_MX_HOST', `inbound-smtp.${optional('AWS_REGION', 'us-east-1')}.amazonaws.com`),
  /** What a domain's SPF record must include for mail this deployment sends (SES by default). */
  spfInclude: () => optional('SPF_INCLUDE', 'amazonses.com'),
  /** The host the MX record of a domain's bounce subdomain must name (SES's feedback endpoint by default). */
  feedbackMxHost: () =>
    optional('FEEDBACK_MX_HOST', `feedback-smtp.${optional('AWS_REGION', 'us-east-1')}.amazonses.com`),
  /** The DKIM selector of the keys this deployment signs a domain's mail with (`<selector>._domainkey`). */
  dkimSelector: () => optional('DKIM_SELECTOR', 'switchboard'),
  /** The contract's `region` of a domain: `eu` in an EU AWS region, `us` elsewhere. */
  domainRegion: (): 'us' | 'eu' => (optional('AWS_REGION', 'us-east-1').startsWith('eu-') ? 'eu' : 'us'),
  /** Webhook delivery jobs (one per destination and notification). */
  deliveryQueueUrl: () => required('DELIVERY_QUEUE_URL'),
  /** Where delivery jobs go after their last failed attempt. */
  deliveryDeadLetterQueueUrl: () => required('DELIVERY_DLQ_URL'),
  /**
   * ARN (or name) of the Secrets Manager secret holding the random material (≥ 32 characters) from
   * which the key that encrypts webhook secrets is derived. The material itself is never in the
   * environment: shared/webhooks/secrets.ts reads it once per container.
   */
  webhookSecretKeyArn: () => required('WEBHOOK_SECRET_KEY_ARN'),
  /** Local development: webhooks may use plain http to loopback. Never set when deployed. */
  webhookLocalMode: () => optional('WEBHOOK_LOCAL_MODE', 'false') === 'true',
  /** Timeout of verification and delivery requests, in milliseconds (the spec: 10 s). */
  webhookTimeoutMs: () => Number(optional('WEBHOOK_TIMEOUT_MS', '10000')),
  /** Seconds between delivery attempts 1→2 and 2→3 (before jitter). */
  webhookRetrySchedule: () => optional('WEBHOOK_RETRY_SCHEDULE', '180,600').split(',').map(Number),
  /** Addresses webhook requests leave from, as published by GET /v3/webhooks/ip-addresses. */
  webhookEgressIps: () =>
    optional('WEBHOOK_EGRESS_IPS', '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  /** When WEBHOOK_EGRESS_IPS last changed (Unix seconds); 0 when not configured. */
  webhookEgressIpsUpdatedAt: () => {
    const value = Number(optional('WEBHOOK_EGRESS_IPS_UPDATED_AT', '0'));
    if (!Number.isInteger(value) || value < 0) throw new Error('WEBHOOK_EGRESS_IPS_UPDATED_AT must be Unix seconds');
    return value;
  },
  /** Sender of webhook health notices. */
  noticeFrom: () => optional('NOTICE_FROM', `webhooks@${messageIdDomain()}`),
  /** EventBridge Scheduler group holding the one-shot schedules of scheduled sends. */
  scheduleGroup: () => required('SCHEDULE_GROUP'),
  /** The scheduled-send queue: the schedules' target (ARN) and where the worker holds early firings (URL). */
  scheduledSendQueueArn: () => required('SCHEDULED_SEND_QUEUE_ARN'),
  scheduledSendQueueUrl: () => required('SCHEDULED_SEND_QUEUE_URL'),
  /** Where EventBridge Scheduler puts a firing it could not deliver to the queue. */
  scheduledSendDlqArn: () => required('SCHEDULED_SEND_DLQ_ARN'),
  /** The role EventBridge Scheduler assumes to send to the queue. */
  schedulerRoleArn: () => required('SCHEDULER_ROLE_ARN'),
  /**
   * Shortest `send_at` lead accepted, in seconds (the spec: 60). Lowered only by explicit
   * configuration, e.g. for tests that should not wait a minute per scheduled send.
   */
  scheduledSendMinLeadSeconds: () => {
    const value = Number(optional('SCHEDULED_SEND_MIN_LEAD_SECONDS', '60'));
    if (!Number.isInteger(value) || value < 11)
      throw new Error('SCHEDULED_SEND_MIN_LEAD_SECONDS must be an integer of at least 11 (the cancel window is 10 s)');
    return value;
  },
  /** How long a resolved API key is trusted without a DynamoDB read, in seconds (0 disables the cache). */
  apiKeyCacheSeconds: () => Number(optional('API_KEY_CACHE_SECONDS', '30')),
  /**
   * Requests a second an application may make, and how many it may make at once (its burst), unless it
   * set its own with PATCH /v3/applications `rate_limit` (shared/http/middleware/rate-limit.ts).
   */
  rateLimitPerSecond: () => positive('RATE_LIMIT_PER_SECOND', '50'),
  rateLimitBurst: () => positive('RATE_LIMIT_BURST', '100'),
  /** The most requests a second an application may set for itself (its burst: at most twice that). */
  rateLimitMaxPerSecond: () => positive('RATE_LIMIT_MAX_PER_SECOND', '500'),
  /** Requests a second, and at once, on one grant's endpoints (`/v3/grants/{grant_id}/…`), whatever its application. */
  grantRateLimitPerSecond: () => positive('GRANT_RATE_LIMIT_PER_SECOND', '10'),
  grantRateLimitBurst: () => positive('GRANT_RATE_LIMIT_BURST', '20'),
  /**
   * Gmail quota units one account may spend per minute (Google's "per user per minute" quota of the
   * project: 15,000 by default); the client paces its calls by it (shared/google/limits.ts).
   */
  googleGmailUnitsPerMinute: () => {
    const value = Number(optional('GOOGLE_GMAIL_UNITS_PER_MINUTE', '15000'));
    if (!Number.isFinite(value) || value < 600)
      throw new Error('GOOGLE_GMAIL_UNITS_PER_MINUTE must be a number of at least 600 (one send a second)');
    return value;
  },
  /**
   * Graph requests one mailbox may take per 10 minutes from one instance (Outlook's limit per app and
   * mailbox: 10,000); the client paces its calls by it (shared/microsoft/limits.ts).
   */
  microsoftGraphRequestsPer10Minutes: () => {
    const value = Number(optional('MICROSOFT_GRAPH_REQUESTS_PER_10_MINUTES', '10000'));
    if (!Number.isFinite(value) || value < 60)
      throw new Error('MICROSOFT_GRAPH_REQUESTS_PER_10_MINUTES must be a number of at least 60');
    return value;
  },
} as const;
