import { randomBytes } from 'node:crypto';
import type { ApplicationContext } from '#shared/caller';
import { env } from '#shared/config';
import { decodeBeforeCursor, decodeOffsetCursor, encodeBeforeCursor, encodeOffsetCursor } from '#shared/cursor';
import * as repo from '#shared/db/webhooks';
import { VersionConflictError } from '#shared/db/records';
import type { WebhookRecord } from '#shared/db/webhooks';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { newId, parseId } from '#shared/ids';
import { clock } from '#shared/time';
import { postPayload } from '#shared/webhooks/deliver';
import { POLICY, TIMEOUT_MS, webhookRequest, WebhookRequestError } from '#shared/webhooks/http';
import { deliveredBody, deliveredPayload, exampleNotification } from '#shared/webhooks/payloads';
import { encryptSecret, generateWebhookSecret } from '#shared/webhooks/secrets';
import { checkTriggerTypes } from '#shared/webhooks/triggers';
import { allowedAddresses, checkWebhookUrl } from '#shared/webhooks/urls';
import type { CreateWebhookBody, MockPayloadBody, SendTestEventBody, UpdateWebhookBody } from '#schemas/webhooks';

/**
 * Webhook destinations: create (verified), list, get, update (re-verified when set back to active or
 * moved to another URL), delete, rotate the secret, example payloads, test events, egress addresses
 * and the delivery log. Every lookup is scoped to the calling application.
 */
const EGRESS_IPS = env.webhookEgressIps();
const EGRESS_IPS_UPDATED_AT = env.webhookEgressIpsUpdatedAt();
const MAX_WEBHOOKS = 100;

/** Addresses compare case-insensitively: `Ops@x.com` and `ops@x.com` are one recipient. */
const uniqueAddresses = (list: readonly string[]) => [...new Set(list.map((e) => e.toLowerCase()))];

function webhookView(record: WebhookRecord, secret?: string) {
  return {
    id: record.id,
    object: 'webhook' as const,
    description: record.description,
    trigger_types: record.trigger_types,
    webhook_url: record.webhook_url,
    status: record.status,
    notification_email_addresses: record.notification_email_addresses,
    compressed_delivery: record.compressed_delivery,
    status_updated_at: record.status_updated_at,
    created_at: record.created_at,
    updated_at: record.updated_at,
    ...(secret ? { webhook_secret: secret } : {}),
  };
}

/** Form of the URL, then where it resolves (no private, loopback, link-local or metadata addresses). */
async function checkedUrl(raw: string): Promise<URL> {
  const url = checkWebhookUrl(raw, POLICY);
  try {
    await allowedAddresses(url.hostname, POLICY);
  } catch (error) {
    if ((error as Error).name === 'BlockedAddressError')
      throw new InvalidRequestError(`'webhook_url' is not reachable as a public address: ${(error as Error).message}`);
    throw new InvalidRequestError(`'webhook_url' host '${url.hostname}' could not be resolved`);
  }
  return url;
}

/**
 * The verification GET: `?challenge=<random>` must be answered 200 within the timeout with exactly
 * the challenge as the whole body (no quotes, no other data, no chunked encoding). Not retried.
 */
async function verifyEndpoint(url: URL): Promise<void> {
  const challenge = randomBytes(16).toString('hex');
  const target = new URL(url);
  target.searchParams.set('challenge', challenge);
  const fail = (why: string) =>
    new InvalidRequestError(
      `Verification of webhook_url failed: ${why}. The endpoint must answer GET ?challenge=<value> with 200 within ${TIMEOUT_MS / 1000} s and exactly the challenge value as the whole body`,
    );
  let response;
  try {
    response = await webhookRequest({
      method: 'GET',
      url: target,
      timeoutMs: TIMEOUT_MS,
      maxResponseBytes: 1024,
      policy: POLICY,
    });
  } catch (error) {
    if (error instanceof WebhookRequestError)
      throw fail(error.kind === 'timeout' ? `no answer within ${TIMEOUT_MS / 1000} s` : error.message);
    throw error;
  }
  if (response.status !== 200) throw fail(`it answered HTTP ${response.status}`);
  if (/chunked/i.test(String(response.headers['transfer-encoding'] ?? '')))
    throw fail('it answered with chunked encoding');
  if (response.body.toString('utf8') !== challenge) throw fail('the body was not exactly the challenge value');
}

async function requireWebhook(app: ApplicationContext, webhookId: string): Promise<WebhookRecord> {
  const id = parseId('webhook', webhookId);
  const record = id ? await repo.getWebhook(app.applicationId, id) : undefined;
  if (!record) throw new NotFoundError(`Webhook '${webhookId}' not found`);
  return record;
}

export async function createWebhook(app: ApplicationContext, body: CreateWebhookBody) {
  const triggers = checkTriggerTypes(body.trigger_types);
  const url = await checkedUrl(body.webhook_url);
  if ((await repo.countWebhooks(app.applicationId)) >= MAX_WEBHOOKS) {
    throw new ConflictError(`An application can have at most ${MAX_WEBHOOKS} webhook destinations`);
  }
  await verifyEndpoint(url);
  const secret = generateWebhookSecret();
  const now = clock.nowSeconds();
  const record: WebhookRecord = {
    id: newId('webhook'),
    application_id: app.applicationId,
    description: body.description ?? '',
    trigger_types: triggers,
    webhook_url: url.href,
    status: 'active',
    notification_email_addresses: uniqueAddresses(body.notification_email_addresses ?? []),
    compressed_delivery: body.compressed_delivery ?? false,
    secret: await encryptSecret(secret),
    status_updated_at: now,
    created_at: now,
    updated_at: now,
    version: 1,
  };
  await repo.insertWebhook(record);
  return webhookView(record, secret);
}

export async function listWebhooks(app: ApplicationContext, limit: number, pageToken?: string) {
  const all = await repo.listWebhooks(app.applicationId);
  const offset = pageToken ? decodeOffsetCursor(pageToken, 'webhooks') : 0;
  return {
    items: all.slice(offset, offset + limit).map((r) => webhookView(r)),
    nextCursor: offset + limit < all.length ? encodeOffsetCursor('webhooks', offset + limit) : undefined,
  };
}

export async function getWebhook(app: ApplicationContext, webhookId: string) {
  return webhookView(await requireWebhook(app, webhookId));
}

async function save(before: WebhookRecord, after: WebhookRecord) {
  try {
    await repo.replaceWebhook(before, after);
  } catch (error) {
    if (error instanceof VersionConflictError)
      throw new ConflictError('The webhook was changed by another request; fetch it again and retry');
    throw error;
  }
}

/**
 * Updates a destination. Setting it back to `active` (from inactive, failing or failed) and moving it
 * to another URL both verify the endpoint again; each verification issues a new secret, returned once
 * in this response. `failing` and `failed` are set by the service, never by a request.
 */
export async function updateWebhook(app: ApplicationContext, webhookId: string, body: UpdateWebhookBody) {
  const current = await requireWebhook(app, webhookId);
  const triggers = body.trigger_types ? checkTriggerTypes(body.trigger_types) : current.trigger_types;
  // The URL is resolved again only when it changes: a PUT of other fields must not fail on a DNS hiccup.
  const unchanged =
    body.webhook_url === undefined || checkWebhookUrl(body.webhook_url, POLICY).href === current.webhook_url;
  const url = unchanged ? new URL(current.webhook_url) : await checkedUrl(body.webhook_url!);
  // `pause` is the published contract's word for what our specification calls `inactive`.
  const status = body.status === 'pause' ? 'inactive' : (body.status ?? current.status);
  const reactivated = body.status === 'active' && current.status !== 'active';
  const moved = url.href !== current.webhook_url;
  let secret: string | undefined;
  if ((reactivated || moved) && status !== 'inactive') {
    await verifyEndpoint(url);
    secret = generateWebhookSecret();
  }
  const now = clock.nowSeconds();
  const next: WebhookRecord = {
    ...current,
    trigger_types: triggers,
    webhook_url: url.href,
    description: body.description ?? current.description,
    notification_email_addresses: body.notification_email_addresses
      ? uniqueAddresses(body.notification_email_addresses)
      : current.notification_email_addresses,
    compressed_delivery: body.compressed_delivery ?? current.compressed_delivery,
    status,
    status_updated_at: status !== current.status ? now : current.status_updated_at,
    ...(secret ? { secret: await encryptSecret(secret) } : {}),
    updated_at: now,
    version: current.version + 1,
  };
  await save(current, next);
  return webhookView(next, secret);
}

export async function deleteWebhook(app: ApplicationContext, webhookId: string): Promise<void> {
  const current = await requireWebhook(app, webhookId);
  try {
    // The delivery log and counters go in the background, by a job committed with the deletion.
    await repo.deleteWebhook(current, [
      {
        job: { kind: 'purge-webhook', webhook_id: current.id },
        id: newId('job'),
        applicationId: current.application_id,
      },
    ]);
  } catch (error) {
    if (error instanceof VersionConflictError) throw new NotFoundError(`Webhook '${webhookId}' not found`);
    throw error;
  }
}

export async function rotateSecret(app: ApplicationContext, webhookId: string) {
  const current = await requireWebhook(app, webhookId);
  const secret = generateWebhookSecret();
  const next = {
    ...current,
    secret: await encryptSecret(secret),
    updated_at: clock.nowSeconds(),
    version: current.version + 1,
  };
  await save(current, next);
  return webhookView(next, secret);
}

export function mockPayload(app: ApplicationContext, body: MockPayloadBody) {
  checkTriggerTypes([body.trigger_type], 'trigger_type');
  return deliveredPayload(exampleNotification(body.trigger_type, app.applicationId), 1);
}

/**
 * Delivers one signed example payload of `trigger_type` to `webhook_url`, which must be one of the
 * application's destinations: its secret signs the test, as it will sign real deliveries.
 */
export async function sendTestEvent(app: ApplicationContext, body: SendTestEventBody) {
  checkTriggerTypes([body.trigger_type], 'trigger_type');
  const url = checkWebhookUrl(body.webhook_url, POLICY).href;
  const destination = (await repo.listWebhooks(app.applicationId)).find((w) => w.webhook_url === url);
  if (!destination) {
    throw new InvalidRequestError(
      "'webhook_url' must be the URL of one of this application's webhook destinations: its secret signs the test event",
    );
  }
  try {
    const response = await postPayload(
      destination,
      deliveredBody(exampleNotification(body.trigger_type, app.applicationId), 1),
    );
    return { delivered: response.status === 200, status_code: response.status, duration_ms: response.durationMs };
  } catch (error) {
    if (!(error instanceof WebhookRequestError)) throw error;
    return { delivered: false, status_code: null, duration_ms: error.durationMs, error: error.message };
  }
}

export function ipAddresses() {
  return { ip_addresses: EGRESS_IPS, updated_at: EGRESS_IPS_UPDATED_AT };
}

export async function listDeliveries(app: ApplicationContext, webhookId: string, limit: number, pageToken?: string) {
  const webhook = await requireWebhook(app, webhookId);
  const before = pageToken ? decodeBeforeCursor(pageToken, 'deliveries', 'delivery') : undefined;
  const page = await repo.listAttempts(webhook.id, limit, before);
  return {
    items: page.items.map((a) => ({ object: 'webhook_delivery' as const, ...a })),
    nextCursor: page.last ? encodeBeforeCursor('deliveries', page.last) : undefined,
  };
}
