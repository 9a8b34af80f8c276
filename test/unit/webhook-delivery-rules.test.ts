import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TRIGGER_TYPES } from '#schemas/webhooks';
import { InvalidRequestError } from '#shared/errors';
import type { Notification } from '#shared/notifications/notification';
import {
  MAX_ATTEMPTS,
  MAX_DELAY_SECONDS,
  parseRetryAfter,
  RETRY_SCHEDULE_SECONDS,
  retryDelay,
} from '#shared/webhooks/deliver';
import { deliveredBody } from '#shared/webhooks/payloads';
import { decryptSecret, encryptSecret, generateWebhookSecret, sign } from '#shared/webhooks/secrets';
import { baseTrigger, checkTriggerTypes, subscribed } from '#shared/webhooks/triggers';

/**
 * The delivery rules as data: the retry schedule with jitter, Retry-After, trigger suffixes,
 * secrets at rest and signatures, and the byte layout of delivered payloads. This file keeps the
 * default schedule (WEBHOOK_RETRY_SCHEDULE unset).
 */
const JITTERS = [0, 0.5, 0.999];
const fixed = (value: number) => () => value;

describe('retryDelay', () => {
  it('uses the default schedule of 180 s then 600 s for 3 attempts', () => {
    expect(process.env.WEBHOOK_RETRY_SCHEDULE).toBeUndefined();
    expect(RETRY_SCHEDULE_SECONDS).toEqual([180, 600]);
    expect(MAX_ATTEMPTS).toBe(3);
    expect(MAX_DELAY_SECONDS).toBe(900);
  });

  it.each(JITTERS)('keeps the first delay within 180 s ±20 %% for random %s', (r) => {
    const delay = retryDelay(1, undefined, fixed(r));
    expect(delay).toBeGreaterThanOrEqual(144);
    expect(delay).toBeLessThanOrEqual(216);
    expect(Number.isInteger(delay)).toBe(true);
  });

  it.each(JITTERS)('keeps the second delay within 600 s ±20 %% for random %s', (r) => {
    const delay = retryDelay(2, undefined, fixed(r));
    expect(delay).toBeGreaterThanOrEqual(480);
    expect(delay).toBeLessThanOrEqual(720);
  });

  it('gives the exact jittered values at the ends and the middle of the range', () => {
    expect([0, 0.5, 0.999].map((r) => retryDelay(1, undefined, fixed(r)))).toEqual([144, 180, 216]);
    expect([0, 0.5, 0.999].map((r) => retryDelay(2, undefined, fixed(r)))).toEqual([480, 600, 720]);
  });

  it('lands the third attempt 10 to 20 minutes after the first for every jitter combination', () => {
    // Prepare
    const thirdAttemptOffsets: number[] = [];

    // Act
    for (const r1 of JITTERS)
      for (const r2 of JITTERS)
        thirdAttemptOffsets.push(retryDelay(1, undefined, fixed(r1)) + retryDelay(2, undefined, fixed(r2)));

    // Assess
    expect(Math.min(...thirdAttemptOffsets)).toBe(624);
    expect(Math.max(...thirdAttemptOffsets)).toBe(936);
    for (const offset of thirdAttemptOffsets) {
      expect(offset).toBeGreaterThanOrEqual(10 * 60);
      expect(offset).toBeLessThanOrEqual(20 * 60);
    }
  });

  it('lets a Retry-After longer than the schedule win, and ignores a shorter one', () => {
    expect(retryDelay(1, 400, fixed(0.5))).toBe(400);
    expect(retryDelay(2, 800, fixed(0.5))).toBe(800);
    expect(retryDelay(1, 10, fixed(0.5))).toBe(180);
    expect(retryDelay(1, 0, fixed(0))).toBe(144);
  });

  it('never delays more than 900 s (the SQS message delay limit), whatever Retry-After asks', () => {
    expect(retryDelay(1, 901, fixed(0.5))).toBe(900);
    expect(retryDelay(2, 86_400, fixed(0.999))).toBe(900);
    for (const attempt of [1, 2, 3])
      for (const r of JITTERS) expect(retryDelay(attempt, undefined, fixed(r))).toBeLessThanOrEqual(MAX_DELAY_SECONDS);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-03-01T12:00:00Z');

  it('reads delay-seconds, trimmed', () => {
    expect(parseRetryAfter('120', now)).toBe(120);
    expect(parseRetryAfter(' 7 ', now)).toBe(7);
    expect(parseRetryAfter('0', now)).toBe(0);
  });

  it('reads an HTTP date relative to now, rounding up, and a past date as 0', () => {
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:01:30 GMT', now)).toBe(90);
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:00:00 GMT', now + 1)).toBe(0);
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:00:10 GMT', now + 500)).toBe(10);
    expect(parseRetryAfter('Sun, 01 Mar 2026 11:00:00 GMT', now)).toBe(0);
  });

  it.each([undefined, '', 'soon', 'abc', 'not a date at all'])('answers undefined for %j', (value) => {
    expect(parseRetryAfter(value, now)).toBeUndefined();
  });

  it('takes the first value of a repeated header', () => {
    expect(parseRetryAfter(['30', '600'], now)).toBe(30);
    expect(parseRetryAfter(['Sun, 01 Mar 2026 12:00:45 GMT'], now)).toBe(45);
    expect(parseRetryAfter([], now)).toBeUndefined();
  });
});

describe('trigger types', () => {
  it.each([
    ['message.created.cleaned.transformed.truncated', 'message.created'],
    ['message.created.truncated', 'message.created'],
    ['message.updated.transformed', 'message.updated'],
    ['message.updated.metadata', 'message.updated'],
    ['event.created.transformed.truncated', 'event.created'],
    ['grant.created', 'grant.created'],
  ])('baseTrigger(%s) is %s', (type, base) => {
    expect(baseTrigger(type)).toBe(base);
  });

  it('delivers suffixed types to subscribers of the base type, and nothing else', () => {
    expect(subscribed(['message.created'], 'message.created')).toBe(true);
    expect(subscribed(['message.created'], 'message.created.truncated')).toBe(true);
    expect(subscribed(['message.created'], 'message.created.cleaned.transformed.truncated')).toBe(true);
    expect(subscribed(['grant.created', 'message.updated'], 'message.updated.transformed')).toBe(true);
    expect(subscribed(['message.created'], 'message.updated')).toBe(false);
    expect(subscribed(['message.created'], 'message.updated.truncated')).toBe(false);
    expect(subscribed(['grant.deleted'], 'grant.created')).toBe(false);
    expect(subscribed([], 'grant.created')).toBe(false);
    // A variant subscription gets that variant (with further suffixes) and not the full notifications.
    expect(subscribed(['message.created.metadata'], 'message.created.metadata')).toBe(true);
    expect(subscribed(['message.created.metadata'], 'message.created.metadata.truncated')).toBe(true);
    expect(subscribed(['message.created.metadata'], 'message.created')).toBe(false);
    expect(subscribed(['message.created.cleaned'], 'message.created.cleaned.transformed.truncated')).toBe(true);
    expect(subscribed(['message.created.cleaned'], 'message.created.truncated')).toBe(false);
  });

  it('accepts every known trigger type and returns a copy', () => {
    const input = [...TRIGGER_TYPES];
    const out = checkTriggerTypes(input);
    expect(out).toEqual(input);
    expect(out).not.toBe(input);
  });

  it('refuses unknown trigger types, naming them and listing the valid ones', () => {
    let error: unknown;
    try {
      checkTriggerTypes(['grant.created', 'message.exploded', 'nope']);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect((error as InvalidRequestError).status).toBe(400);
    expect((error as Error).message).toBe(
      `'trigger_types' has unknown trigger type(s) message.exploded, nope; valid trigger types: ${TRIGGER_TYPES.join(', ')}`,
    );
  });

  it('names the field it was given', () => {
    expect(() => checkTriggerTypes(['x.y'], 'trigger_type')).toThrow(
      "'trigger_type' has unknown trigger type(s) x.y; valid trigger types: grant.created, ",
    );
  });

  it('does not accept a suffixed type as a subscription of its own unless listed', () => {
    expect(() => checkTriggerTypes(['message.created.truncated'])).toThrow(InvalidRequestError);
  });
});

describe('secrets', () => {
  it('generates 64 hex characters, different every time', () => {
    const a = generateWebhookSecret();
    const b = generateWebhookSecret();
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(b).toMatch(/^[0-9a-f]{64}$/);
    expect(a).not.toBe(b);
  });

  it('encrypts and decrypts back to the same secret, with a fresh ciphertext each time', async () => {
    const secret = generateWebhookSecret();
    const first = await encryptSecret(secret);
    const second = await encryptSecret(secret);
    expect(first).toMatch(/^v1:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+$/);
    expect(first).not.toBe(second);
    expect(first).not.toContain(secret);
    expect(await decryptSecret(first)).toBe(secret);
    expect(await decryptSecret(second)).toBe(secret);
  });

  it('refuses a tampered ciphertext, tag or IV', async () => {
    const stored = await encryptSecret(generateWebhookSecret());
    const [version, iv, tag, data] = stored.split(':') as [string, string, string, string];
    const flip = (part: string) => {
      const bytes = Buffer.from(part, 'base64url');
      bytes[0] = bytes[0]! ^ 0x01;
      return bytes.toString('base64url');
    };
    await expect(decryptSecret([version, iv, tag, flip(data)].join(':'))).rejects.toThrow();
    await expect(decryptSecret([version, iv, flip(tag), data].join(':'))).rejects.toThrow();
    await expect(decryptSecret([version, flip(iv), tag, data].join(':'))).rejects.toThrow();
    await expect(decryptSecret(['v2', iv, tag, data].join(':'))).rejects.toThrow('Unknown webhook secret format');
    await expect(decryptSecret('plaintext-secret')).rejects.toThrow('Unknown webhook secret format');
  });

  it('signs with hex HMAC-SHA256 of the exact bytes, keyed with the secret', () => {
    // RFC 4231, test case 2.
    expect(sign(Buffer.from('what do ya want for nothing?'), 'Jefe')).toBe(
      '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    );
    const secret = generateWebhookSecret();
    const body = Buffer.from('{"specversion":"1.0","data":{"s":"é\\u0000"}}\n', 'utf8');
    expect(sign(body, secret)).toBe(createHmac('sha256', secret).update(body).digest('hex'));
    expect(sign(body, secret)).toMatch(/^[0-9a-f]{64}$/);
    expect(sign(Buffer.concat([body, Buffer.from(' ')]), secret)).not.toBe(sign(body, secret));
    const binary = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0xff, 0x00]);
    expect(sign(binary, secret)).toBe(createHmac('sha256', secret).update(binary).digest('hex'));
  });
});

describe('deliveredBody', () => {
  const notification = {
    // Keys deliberately out of order, plus one that is not delivered.
    data: { application_id: 'app_x', grant_id: 'grant_x', object: { id: 'msg_1', subject: 'Hi' } },
    time: 1_760_000_000,
    id: 'ntf_01jd6abcdefghjkmnpqrstvwxy',
    type: 'message.created',
    source: '/switchboard/test',
    specversion: '1.0',
    extra: 'not delivered',
  } as unknown as Notification;

  it('orders keys specversion, type, source, id, time, webhook_delivery_attempt, data', () => {
    const body = deliveredBody(notification, 2);
    const parsed = JSON.parse(body.toString('utf8'));
    expect(Object.keys(parsed)).toEqual([
      'specversion',
      'type',
      'source',
      'id',
      'time',
      'webhook_delivery_attempt',
      'data',
    ]);
    expect(parsed).toEqual({
      specversion: '1.0',
      type: 'message.created',
      source: '/switchboard/test',
      id: 'ntf_01jd6abcdefghjkmnpqrstvwxy',
      time: 1_760_000_000,
      webhook_delivery_attempt: 2,
      data: { application_id: 'app_x', grant_id: 'grant_x', object: { id: 'msg_1', subject: 'Hi' } },
    });
  });

  it('is compact JSON bytes', () => {
    expect(deliveredBody(notification, 1).toString('utf8')).toBe(
      '{"specversion":"1.0","type":"message.created","source":"/switchboard/test","id":"ntf_01jd6abcdefghjkmnpqrstvwxy","time":1760000000,"webhook_delivery_attempt":1,"data":{"application_id":"app_x","grant_id":"grant_x","object":{"id":"msg_1","subject":"Hi"}}}',
    );
  });
});

describe('trigger types of features still to come', () => {
  it('refuses a contract trigger Switchboard does not emit yet as not available, naming it', () => {
    expect(() => checkTriggerTypes(['grant.created', 'thread.replied.legacy', 'notetaker.created'])).toThrow(
      "'trigger_types' names trigger type(s) not available yet: thread.replied.legacy, notetaker.created",
    );
  });
  it('accepts every trigger Switchboard emits, folder triggers included', () => {
    expect(checkTriggerTypes(['folder.created', 'folder.updated', 'folder.deleted', 'grant.updated'])).toHaveLength(4);
  });
});
