import { env } from '#shared/config';
import type { StartKey } from '#shared/cursor';
import * as repo from '#shared/db/webhooks';
import { VersionConflictError } from '#shared/db/records';
import type { AttemptCounts, WebhookRecord, WebhookStatus } from '#shared/db/webhooks';
import { logger } from '#shared/logger';
import { clock } from '#shared/time';

/**
 * The health of webhook destinations, computed by a scheduled function from the per-minute and
 * per-hour attempt counters:
 *   active  → failing  when ≥ 95 % of attempts over the last 15 minutes failed (deliveries go on)
 *   failing → failed   when it has been failing for 72 hours and ≥ 95 % of attempts over 72 hours
 *                      failed (no more deliveries, nothing replayed)
 *   failing → active   when the last 15 minutes (since the last status change at most) have attempts
 *                      and fewer than 95 % of them failed
 * Each change into failing or failed sends an email notice to notification_email_addresses.
 * A window needs MIN_ATTEMPTS attempts before it judges (one lost request is not an outage).
 */
const FAILURE_RATIO = 0.95;
const MIN_ATTEMPTS = 3;
const SHORT_WINDOW = 15 * 60;
const LONG_WINDOW = 72 * 3600;
const NOTICE_FROM = env.noticeFrom();

export interface HealthChange {
  webhook_id: string;
  from: WebhookStatus;
  to: WebhookStatus;
}

const failing = (c: AttemptCounts) => c.attempts >= MIN_ATTEMPTS && c.failures / c.attempts >= FAILURE_RATIO;
/** Below the failure ratio, on at least one attempt: what brings a failing destination back. */
const recovered = (c: AttemptCounts) => c.attempts > 0 && c.failures / c.attempts < FAILURE_RATIO;

async function nextStatus(webhook: WebhookRecord, now: number): Promise<WebhookStatus> {
  if (webhook.status !== 'active' && webhook.status !== 'failing') return webhook.status;
  // The short window never reaches back before the last status change: a destination set active
  // again by a PUT is not judged on the failures that made it failing.
  const recentFrom = Math.max(now - SHORT_WINDOW, webhook.status_updated_at);
  const judgeLong = webhook.status === 'failing' && now - webhook.status_updated_at >= LONG_WINDOW;
  const counts = await repo.countAttempts(webhook.id, recentFrom, judgeLong ? now - LONG_WINDOW : recentFrom);
  if (webhook.status === 'active') return failing(counts.byMinute) ? 'failing' : 'active';
  if (judgeLong && failing(counts.byHour)) return 'failed';
  return recovered(counts.byMinute) ? 'active' : 'failing';
}

async function notify(webhook: WebhookRecord, status: 'failing' | 'failed') {
  if (!webhook.notification_email_addresses.length) return;
  // MIME composition and the mail transport (nodemailer, SES) load only when a notice is due.
  const [{ composeMime }, { mailTransport }] = await Promise.all([
    import('#shared/mail/compose'),
    import('#shared/mail/transport'),
  ]);
  const text =
    status === 'failing'
      ? `At least ${Math.round(FAILURE_RATIO * 100)}% of the deliveries to ${webhook.webhook_url} failed over the last ${SHORT_WINDOW / 60} minutes. Deliveries continue with retries; after ${LONG_WINDOW / 3600} hours of failures the destination is marked failed and receives nothing more.`
      : `Deliveries to ${webhook.webhook_url} kept failing for ${LONG_WINDOW / 3600} hours. The destination is now failed: it receives no notifications and none will be replayed. Set its status back to active (PUT /v3/webhooks/${webhook.id}) once the endpoint works again.`;
  const raw = await composeMime({
    from: { email: NOTICE_FROM, name: 'Switchboard webhooks' },
    to: webhook.notification_email_addresses.map((email) => ({ email })),
    cc: [],
    bcc: [],
    replyTo: [],
    subject: `Webhook ${webhook.id} is ${status}`,
    text,
    attachments: [],
    messageId: `<${webhook.id}.${status}.${clock.nowMs()}@${NOTICE_FROM.split('@')[1]}>`,
    references: [],
    headers: [],
    date: new Date(clock.nowMs()),
  });
  await mailTransport().send(raw, { from: NOTICE_FROM, to: webhook.notification_email_addresses });
}

/** Destinations judged at once: one BatchGetItem, then their counter queries side by side. */
const CONCURRENCY = 10;

async function evaluateOne(webhook: WebhookRecord, now: number): Promise<HealthChange | undefined> {
  const status = await nextStatus(webhook, now);
  if (status === webhook.status) return undefined;
  try {
    await repo.replaceWebhook(webhook, {
      ...webhook,
      status,
      status_updated_at: now,
      updated_at: now,
      version: webhook.version + 1,
    });
  } catch (error) {
    // Changed by a request meanwhile (deactivated, moved): the next sweep judges it again.
    if (error instanceof VersionConflictError) return undefined;
    throw error;
  }
  if (status === 'failing' || status === 'failed') {
    await notify(webhook, status).catch((error) =>
      logger.error('webhook health notice failed', { webhook_id: webhook.id, error }),
    );
  }
  return { webhook_id: webhook.id, from: webhook.status, to: status };
}

/** Evaluates every destination once; returns the status changes made. */
export async function evaluateHealth(now = clock.nowSeconds()): Promise<HealthChange[]> {
  const changes: HealthChange[] = [];
  let start: StartKey | undefined;
  do {
    const page = await repo.registryPage(start);
    const judged = [...(await repo.getWebhooks(page.entries)).values()].filter(
      (w) => w.status === 'active' || w.status === 'failing',
    );
    for (let i = 0; i < judged.length; i += CONCURRENCY) {
      for (const change of await Promise.all(judged.slice(i, i + CONCURRENCY).map((w) => evaluateOne(w, now))))
        if (change) changes.push(change);
    }
    start = page.next;
  } while (start);
  return changes;
}
