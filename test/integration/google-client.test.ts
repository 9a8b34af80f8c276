import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GoogleGoneError, GoogleNotFoundError, googleClientOf, type GoogleClient } from '#shared/google/client';
import { createConnector } from '#shared/connectors/service';
import type { GrantRecord } from '#shared/db/grants';
import { ApiError, InvalidRequestError, ProviderError, RateLimitError } from '#shared/errors';
import type { ApplicationId } from '#shared/ids';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { makeApplication } from '../support/factories';
import { connectFakeGoogleGrant } from '../support/google';

/**
 * Provider A's REST client (shared/google/client.ts) against the local Google fake, which checks
 * every request and answer against Google's Discovery documents: the grant's token on each call,
 * the connector's api_base_url, retries of the provider's "later" (429, 403 rate limits, 5xx) within
 * the wait budget and after Retry-After, and what is left becoming our 429 or 504; the provider's
 * 4xx becoming ours. Waits are recorded, not slept.
 */
let fake: GoogleFake;
let grant: GrantRecord;
const waits: number[] = [];

beforeAll(async () => {
  fake = await startGoogleFake();
  ({ grant } = await connectFakeGoogleGrant(fake, 'google client'));
});

afterAll(async () => {
  await fake?.close();
});

const client = () =>
  googleClientOf(grant, {
    sleep: async (ms) => void waits.push(ms),
    random: () => 0.5,
  });
const labels = (c: GoogleClient) =>
  c.call<{ labels: { id: string }[] }>({ api: 'gmail', path: '/gmail/v1/users/me/labels' });

describe("provider A's client", () => {
  it("calls the connector's api_base_url with the grant's token", async () => {
    const c = await client();
    const answer = await labels(c);
    expect(answer.labels.map((l) => l.id)).toContain('INBOX');
    expect(c.calls).toBe(1);
  });

  it('retries a 429 after its Retry-After, and a 403 userRateLimitExceeded after a backoff', async () => {
    waits.length = 0;
    fake.inject({ method: 'gmail.users.labels.list', status: 429, retryAfter: 2 });
    const c = await client();
    await labels(c);
    expect(c.calls).toBe(2);
    expect(waits).toEqual([2000]);

    waits.length = 0;
    fake.inject({ method: 'gmail.users.labels.list', status: 403, reason: 'userRateLimitExceeded', times: 2 });
    const d = await client();
    await labels(d);
    expect(d.calls).toBe(3);
    expect(waits).toEqual([100, 200]);
  });

  it('answers 429 with Retry-After when the rate limit outlasts the budget, and 504 when the provider keeps failing', async () => {
    fake.inject({ method: 'gmail.users.labels.list', status: 429, retryAfter: 30 });
    const limited = await labels(await client()).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(RateLimitError);
    expect((limited as RateLimitError).headers['retry-after']).toBe('30');
    expect((limited as Error).message).toContain('smaller limit');

    fake.inject({ method: 'gmail.users.labels.list', status: 503, times: 4 });
    const c = await client();
    const failed = await labels(c).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(ProviderError);
    expect((failed as ProviderError).status).toBe(504);
    expect((failed as ProviderError).type).toBe('provider_error');
    expect(c.calls).toBe(4);
  });

  it("turns the provider's 4xx into ours, a 410 into a cursor to start over", async () => {
    const c = await client();
    const missing = await c
      .call({ api: 'gmail', path: '/gmail/v1/users/me/messages/0000000000000000' })
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(GoogleNotFoundError);
    expect((missing as ApiError).status).toBe(404);

    fake.inject({ method: 'gmail.users.history.list', status: 410 });
    const gone = await c
      .call({ api: 'gmail', path: '/gmail/v1/users/me/history', query: { startHistoryId: '1' } })
      .catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(GoogleGoneError);
  });

  it('serves a slow answer without an error', async () => {
    fake.inject({ method: 'gmail.users.labels.list', delayMs: 300 });
    const c = await client();
    await labels(c);
    expect(c.calls).toBe(1);
  });

  it('refuses an api_base_url that is not https (or http to loopback locally)', async () => {
    const other = await makeApplication('google client bad base');
    const refused = await createConnector(
      { applicationId: other.applicationId as ApplicationId, credential: 'api_key' },
      {
        provider: 'google',
        settings: { client_id: 'c', client_secret: 's', api_base_url: 'ftp://example.com' },
      } as never,
    ).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidRequestError);
    expect((refused as Error).message).toContain('settings.api_base_url');
  });

  it('sent nothing Google does not describe, and the fake answered nothing it does not', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});
