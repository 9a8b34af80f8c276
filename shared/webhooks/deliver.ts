import { env } from '#shared/config';
import { getWebhooks, recordAttempts, type AttemptRecord, type WebhookRecord } from '#shared/db/webhooks';
import { InvalidRequestError } from '#shared/errors';
import { newId, type ApplicationId, type WebhookId } from '#shared/ids';
import { logger } from '#shared/logger';
import type { Notification } from '#shared/notifications/notification';
import { clock } from '#shared/time';
import { POLICY, TIMEOUT_MS, webhookRequest, WebhookRequestError, type WebhookResponse } from '#shared/webhooks/http';
import { deliveredBody } from '#shared/webhooks/payloads';
import { sign, signingKey } from '#shared/webhooks/secrets';
import { checkWebhookUrl } from '#shared/webhooks/urls';

/**
 * One delivery attempt of one notification to one destination, and what should happen next.
 * Success is a 200. 408, 429, 502, 503, 504, 507, timeouts and network errors are retried (3
 * attempts in all, the schedule below as data, with jitter); any other answer is final.
 */
const RETRYABLE_STATUSES = new Set([408, 429, 502, 503, 504, 507]);
export const MAX_ATTEMPTS = 3;
/**
 * Delay after attempt n (1-based) before attempt n+1, ±20 % jitter: with the default 180 s and 600 s
 * the third attempt lands 10–20 minutes after the first. WEBHOOK_RETRY_SCHEDULE overrides it.
 */
export const RETRY_SCHEDULE_SECONDS = env.webhookRetrySchedule();
if (RETRY_SCHEDULE_SECONDS.length !== MAX_ATTEMPTS - 1 || RETRY_SCHEDULE_SECONDS.some((s) => !(s > 0))) {
  throw new Error(`WEBHOOK_RETRY_SCHEDULE must list ${MAX_ATTEMPTS - 1} positive delays in seconds`);
}
const JITTER = 0.2;
/** Retries are delayed SQS messages, and SQS delays a message at most 15 minutes. */
export const MAX_DELAY_SECONDS = 900;
const MAX_RESPONSE_BYTES = 64 * 1024;

export interface DeliveryJob {
  application_id: ApplicationId;
  webhook_id: WebhookId;
  notification: Notification;
  /** 1 for the first attempt; a retry is a new job with the next number. */
  attempt: number;
}

export type DeliveryOutcome =
  /** `internal`: our own failure (no receiver involved, nothing recorded); the job is received again. */
  | { outcome: 'delivered' | 'failed' | 'given_up' | 'skipped' | 'internal' }
  | { outcome: 'retry'; delaySeconds: number };

export function retryDelay(attempt: number, retryAfterSeconds?: number, random = Math.random): number {
  const base = RETRY_SCHEDULE_SECONDS[Math.min(attempt, RETRY_SCHEDULE_SECONDS.length) - 1]!;
  const jittered = Math.round(base * (1 - JITTER + 2 * JITTER * random()));
  return Math.min(MAX_DELAY_SECONDS, Math.max(jittered, retryAfterSeconds ?? 0));
}

/** Retry-After in seconds (delta or HTTP date), if present and sane. */
export function parseRetryAfter(value: string | string[] | undefined, nowMs = clock.nowMs()): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (!raw) return undefined;
  if (/^\d+$/.test(raw.trim())) return Number(raw.trim());
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - nowMs) / 1000));
}

/** zlib, loaded by the first destination that asked for compressed delivery (most do not: ~2 ms of cold start). */
let zlib: Promise<typeof import('node:zlib')> | undefined;

/** Signs and sends one payload to a destination (also used by send-test-event). */
export async function postPayload(destination: WebhookRecord, body: Buffer): Promise<WebhookResponse> {
  const url = checkWebhookUrl(destination.webhook_url, POLICY);
  const payload = destination.compressed_delivery ? (await (zlib ??= import('node:zlib'))).gzipSync(body) : body;
  const key = await signingKey(destination.secret);
  return webhookRequest({
    method: 'POST',
    url,
    headers: {
      'content-type': 'application/json',
      'x-service-signature': sign(payload, key),
      ...(destination.compressed_delivery ? { 'content-encoding': 'gzip' } : {}),
    },
    body: payload,
    timeoutMs: TIMEOUT_MS,
    maxResponseBytes: MAX_RESPONSE_BYTES,
    policy: POLICY,
  });
}

type Attempt = Omit<AttemptRecord, 'id' | 'webhook_id' | 'notification_id' | 'trigger_type' | 'attempt' | 'time'>;

/** Sends one job to its (already loaded) destination; what happened and what should happen next. */
async function attemptOne(
  destination: WebhookRecord,
  job: DeliveryJob,
): Promise<{ result: DeliveryOutcome; attempt: Attempt }> {
  const attempt = job.attempt;
  let response: WebhookResponse;
  try {
    response = await postPayload(destination, deliveredBody(job.notification, attempt));
  } catch (error) {
    // A stored URL the policy refuses now (e.g. a deployment no longer in local mode) is the
    // destination's fault; any other error not from the request (secret, compression) is ours and is
    // not counted against the receiver.
    if (error instanceof InvalidRequestError) error = new WebhookRequestError('blocked', error.message, 0);
    if (!(error instanceof WebhookRequestError)) throw error;
    const failure = error;
    // An address the policy refuses now (DNS changed) is not retried: it would be refused again.
    if (failure.kind === 'blocked')
      return {
        result: { outcome: 'failed' },
        attempt: { outcome: 'failed', status_code: null, duration_ms: failure.durationMs, error: failure.message },
      };
    const final = attempt >= MAX_ATTEMPTS;
    return {
      result: final ? { outcome: 'given_up' } : { outcome: 'retry', delaySeconds: retryDelay(attempt) },
      attempt: {
        outcome: final ? 'given_up' : 'retrying',
        status_code: null,
        duration_ms: failure.durationMs,
        error: failure.message,
      },
    };
  }
  const base = { status_code: response.status, duration_ms: response.durationMs };
  if (response.status === 200) return { result: { outcome: 'delivered' }, attempt: { outcome: 'delivered', ...base } };
  if (!RETRYABLE_STATUSES.has(response.status)) {
    return {
      result: { outcome: 'failed' },
      attempt: { outcome: 'failed', ...base, error: `HTTP ${response.status} is not retried` },
    };
  }
  if (attempt >= MAX_ATTEMPTS) {
    return {
      result: { outcome: 'given_up' },
      attempt: { outcome: 'given_up', ...base, error: `HTTP ${response.status} after ${attempt} attempts` },
    };
  }
  return {
    result: { outcome: 'retry', delaySeconds: retryDelay(attempt, parseRetryAfter(response.headers['retry-after'])) },
    attempt: { outcome: 'retrying', ...base, error: `HTTP ${response.status}` },
  };
}

/**
 * Delivers a batch of jobs: their destinations are read in one request, the POSTs run concurrently,
 * and the attempts are recorded together. A destination deleted, switched off or given up on since
 * the fan-out gets nothing (and nothing is replayed to it later). An attempt whose record or counts
 * could not be stored is `internal`: its job alone is received again and attempted anew, so every
 * attempt a receiver saw has its record, and the batch's other jobs are not sent twice.
 */
export async function deliverBatch(jobs: DeliveryJob[]): Promise<DeliveryOutcome[]> {
  const destinations = await getWebhooks(
    jobs.map((j) => ({ application_id: j.application_id, webhook_id: j.webhook_id })),
  );
  const outcomes = await Promise.all(
    jobs.map(async (job): Promise<{ result: DeliveryOutcome; record?: AttemptRecord }> => {
      const destination = destinations.get(job.webhook_id);
      if (
        !destination ||
        destination.application_id !== job.application_id ||
        destination.status === 'inactive' ||
        destination.status === 'failed'
      ) {
        return { result: { outcome: 'skipped' } };
      }
      let attemptResult: Awaited<ReturnType<typeof attemptOne>>;
      try {
        attemptResult = await attemptOne(destination, job);
      } catch (error) {
        logger.error('delivery attempt failed on our side', {
          webhook_id: job.webhook_id,
          notification_id: job.notification.id,
          error,
        });
        return { result: { outcome: 'internal' } };
      }
      const { result, attempt } = attemptResult;
      const record: AttemptRecord = {
        id: newId('delivery'),
        webhook_id: destination.id,
        notification_id: job.notification.id,
        trigger_type: job.notification.type,
        attempt: job.attempt,
        time: clock.nowSeconds(),
        ...attempt,
      };
      return { result, record };
    }),
  );
  const recorded = outcomes.flatMap((o) => (o.record ? [o] : []));
  for (const [index, error] of await recordAttempts(recorded.map((o) => o.record!))) {
    const outcome = recorded[index]!;
    logger.error('delivery attempt not recorded; its job is received again', {
      webhook_id: outcome.record!.webhook_id,
      notification_id: outcome.record!.notification_id,
      error,
    });
    outcome.result = { outcome: 'internal' };
  }
  return outcomes.map((o) => o.result);
}
