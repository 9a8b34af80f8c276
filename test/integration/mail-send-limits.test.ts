import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/local-stack/index';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';

/**
 * The daily send quota of an Agent Account and a relay that cannot be reached. This file's
 * functions start with a quota of 2 and a relay address where nothing listens.
 */
let gateway: Gateway;
let api: ApiClient;

beforeAll(async () => {
  process.env.DAILY_SEND_QUOTA = '2';
  process.env.SMTP_RELAY_URL = `smtp://127.0.0.1:${await freePort()}`;
  gateway = await startGateway();
  api = apiClient(gateway.url, (await makeApplication()).apiKey);
});

afterAll(async () => gateway?.close());

describe('daily send quota', () => {
  it('answers 429 with Retry-After once the quota is used, per Agent Account', async () => {
    const [alice, bob] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api)]);
    for (let i = 0; i < 2; i++)
      expect(
        (await api.post(`/v3/grants/${alice.id}/messages/send`, { to: [{ email: bob.email }], subject: `n${i}` }))
          .status,
      ).toBe(200);
    const third = await api.post(`/v3/grants/${alice.id}/messages/send`, { to: [{ email: bob.email }], subject: 'n3' });
    expect(third.status).toBe(429);
    expect(third.body.error.type).toBe('rate_limit_error');
    const retryAfter = Number(third.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    // Nothing of the refused send was stored; Bob's own quota is untouched.
    expect((await api.get(`/v3/grants/${alice.id}/messages?in=sent`)).body.data).toHaveLength(2);
    expect(
      (await api.post(`/v3/grants/${bob.id}/messages/send`, { to: [{ email: alice.email }], subject: 'back' })).status,
    ).toBe(200);
  });
});

describe('relay failure', () => {
  it('answers 502 with a clear error, stores nothing in Sent and gives the quota unit back', async () => {
    const carol = await makeAgentGrant(api);
    const failed = await api.post(`/v3/grants/${carol.id}/messages/send`, {
      to: [{ email: 'someone@example.net' }],
      subject: 'lost?',
    });
    expect(failed.status).toBe(502);
    expect(failed.body.error.type).toBe('mail_delivery_error');
    expect(failed.body.error.message).toMatch(/not sent/);
    expect((await api.get(`/v3/grants/${carol.id}/messages`)).body.data).toEqual([]);
    expect((await api.get(`/v3/grants/${carol.id}/folders/sent`)).body.data.total_count).toBe(0);
    // Two failures later the quota (2) still allows a local send: failed sends were refunded.
    const failedAgain = await api.post(`/v3/grants/${carol.id}/messages/send`, {
      to: [{ email: 'someone@example.net' }],
      subject: 'lost again',
    });
    expect(failedAgain.status, failedAgain.text).toBe(502);
    expect(failedAgain.body.error.type).toBe('mail_delivery_error');
    const dave = await makeAgentGrant(api);
    expect(
      (await api.post(`/v3/grants/${carol.id}/messages/send`, { to: [{ email: dave.email }], subject: 'local' }))
        .status,
    ).toBe(200);
    expect(
      (await api.post(`/v3/grants/${carol.id}/messages/send`, { to: [{ email: dave.email }], subject: 'local 2' }))
        .status,
    ).toBe(200);
  });
});
