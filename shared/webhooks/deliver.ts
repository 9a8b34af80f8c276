import { gzipSync } from 'node:zlib';
import { env } from '#shared/config';
import { getWebhook, recordAttempt, type AttemptRecord, type WebhookRecord } from '#shared/db/webhooks';
import { newId, type ApplicationId, type WebhookId } from '#shared/ids';
import type { Notification } from '#shared/notifications/publisher';
import { clock } from '#shared/time';
import { webhookRequest, WebhookRequestError, type WebhookResponse } from '#shared/webhooks/http';
import { deliveredBody } from '#shared/webhooks/payloads';
import { decryptSecret, sign } from '#shared/webhooks/secrets';
import { checkWebhookUrl, type UrlPolicy } from '#shared/webhooks/urls';

/**
 * One delivery attempt of one notification to one destination, and what should happen next.
 * Success is a 200. 408, 429, 502, 503, 504, 507, timeouts and network errors are retried (3
 * attempts in all, the schedule below as data, with jitter); any other answer is final.
 */
export const RETRYABLE_STATUSES = new Set([408, 429, 502, 503, 504, 507]);
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

export const POLICY: UrlPolicy = { local: env.webhookLocalMode() };
const TIMEOUT_MS = env.webhookTimeoutMs();

export interface DeliveryJob {
  application_id: ApplicationId;
  webhook_id: WebhookId;
  notification: Notification;
  /** 1 for the first attempt; a retry is a new job with the next number. */
  attempt: number;
}

export type DeliveryOutcome =
  | { outcome: 'delivered' | 'failed' | 'given_up' | 'skipped' }
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

/** Signs and sends one payload to a destination (also used by send-test-event). */
export async function postPayload(destination: WebhookRecord, body: Buffer): Promise<WebhookResponse> {
  const url = checkWebhookUrl(destination.webhook_url, POLICY);
  const payload = destination.compressed_delivery ? gzipSync(body) : body;
  const secret = decryptSecret(destination.secret);
  return webhookRequest({
    method: 'POST',
    url,
    headers: {
      'content-type': 'application/json',
      'x-service-signature': sign(payload, secret),
      ...(destination.compressed_delivery ? { 'content-encoding': 'gzip' } : {}),
    },
    body: payload,
    timeoutMs: TIMEOUT_MS,
    maxResponseBytes: MAX_RESPONSE_BYTES,
    policy: POLICY,
  });
}

export async function attemptDelivery(job: DeliveryJob, attempt: number): Promise<DeliveryOutcome> {
  const destination = await getWebhook(job.application_id, job.webhook_id);
  // Deleted, switched off, or given up on since the fan-out: nothing is sent (and nothing replayed later).
  if (!destination || destination.status === 'inactive' || destination.status === 'failed') return { outcome: 'skipped' };

  const record = (fields: Pick<AttemptRecord, 'outcome' | 'status_code' | 'duration_ms'> & { error?: string }) =>
    recordAttempt({
      id: newId('delivery'),
      webhook_id: destination.id,
      notification_id: job.notification.id,
      trigger_type: job.notification.type,
      attempt,
      time: clock.nowSeconds(),
      ...fields,
    });

  let response: WebhookResponse;
  try {
    response = await postPayload(destination, deliveredBody(job.notification, attempt));
  } catch (error) {
    const failure = error instanceof WebhookRequestError ? error : new WebhookRequestError('network', (error as Error).message, 0);
    // An address the policy refuses now (DNS changed) is not retried: it would be refused again.
    const final = failure.kind === 'blocked' || attempt >= MAX_ATTEMPTS;
    await record({ outcome: final ? (failure.kind === 'blocked' ? 'failed' : 'given_up') : 'retrying', status_code: null, duration_ms: failure.durationMs, error: failure.message });
    if (failure.kind === 'blocked') return { outcome: 'failed' };
    return final ? { outcome: 'given_up' } : { outcome: 'retry', delaySeconds: retryDelay(attempt) };
  }

  if (response.status === 200) {
    await record({ outcome: 'delivered', status_code: 200, duration_ms: response.durationMs });
    return { outcome: 'delivered' };
  }
  if (!RETRYABLE_STATUSES.has(response.status)) {
    await record({ outcome: 'failed', status_code: response.status, duration_ms: response.durationMs, error: `HTTP ${response.status} is not retried` });
    return { outcome: 'failed' };
  }
  if (attempt >= MAX_ATTEMPTS) {
    await record({ outcome: 'given_up', status_code: response.status, duration_ms: response.durationMs, error: `HTTP ${response.status} after ${attempt} attempts` });
    return { outcome: 'given_up' };
  }
  await record({ outcome: 'retrying', status_code: response.status, duration_ms: response.durationMs, error: `HTTP ${response.status}` });
  return { outcome: 'retry', delaySeconds: retryDelay(attempt, parseRetryAfter(response.headers['retry-after'])) };
}
