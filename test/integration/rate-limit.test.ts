import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dynamo } from '#shared/aws/dynamodb';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';

/**
 * Request rate limits (shared/http/middleware/rate-limit.ts), over HTTP: an application driven past
 * its own limit gets 429 `rate_limit_error` with Retry-After in the error envelope while another
 * application keeps being served, and is served again once Retry-After has passed; a grant's bucket
 * limits that grant and not its siblings; an application sets its limit with PATCH /v3/applications
 * within the deployment's maximum; a refused application's next requests are refused without a
 * DynamoDB write; unauthenticated routes (a provider's push) are never limited. Limits are small so
 * the file stays fast: this file's functions allow a grant 2 requests a second, 3 at once.
 */
let gateway: Gateway;

beforeAll(async () => {
  // The deployment's settings, explicit here whatever the test environment raises them to.
  Object.assign(process.env, {
    RATE_LIMIT_PER_SECOND: '50',
    RATE_LIMIT_BURST: '100',
    RATE_LIMIT_MAX_PER_SECOND: '500',
    GRANT_RATE_LIMIT_PER_SECOND: '2',
    GRANT_RATE_LIMIT_BURST: '3',
  });
  gateway = await startGateway();
});

afterAll(async () => gateway?.close());

async function freshApplication(name: string) {
  const app = await makeApplication(name);
  return { id: app.applicationId, api: apiClient(gateway.url, app.apiKey) };
}

async function setLimit(api: ApiClient, requests_per_second: number, burst: number) {
  const r = await api.patch('/v3/applications', { rate_limit: { requests_per_second, burst } });
  expect(r.status, r.text).toBe(200);
  expect(r.body.data.rate_limit).toEqual({ requests_per_second, burst });
}

/** A 429 of the rate limiter, in the one error envelope, with a whole Retry-After of at least a second. */
function expectRefused(r: ApiResponse, message: RegExp): number {
  expect(r.status, r.text).toBe(429);
  expect(Object.keys(r.body).sort()).toEqual(['error', 'request_id']);
  expect(Object.keys(r.body.error).sort()).toEqual(['message', 'type']);
  expect(r.body.request_id).toMatch(/^req_/);
  expect(r.body.error.type).toBe('rate_limit_error');
  expect(r.body.error.message).toMatch(message);
  const retryAfter = r.headers.get('retry-after');
  expect(retryAfter).toMatch(/^[1-9][0-9]*$/);
  return Number(retryAfter);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Milliseconds each of `count` requests took, one after the other. */
async function timed(api: ApiClient, count: number): Promise<{ ms: number[]; statuses: number[] }> {
  const ms: number[] = [];
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    statuses.push((await api.get('/v3/grants?limit=1')).status);
    ms.push(performance.now() - started);
  }
  return { ms, statuses };
}

/** Counts the conditional writes sent to one bucket's item (the handlers run in this process, on this client). */
function countBucketWrites(pk: string): { count: () => number; stop: () => void } {
  let writes = 0;
  const name = `count-${pk}`;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { Key?: { pk?: string } };
      if (context.commandName === 'UpdateCommand' && input.Key?.pk === pk) writes++;
      return next(args);
    },
    { step: 'initialize', name },
  );
  return { count: () => writes, stop: () => void dynamo.middlewareStack.remove(name) };
}

describe('Rate limits: per application', () => {
  it('refuses an application past its limit with 429 and Retry-After while another one is served, then serves it again', async ({
    annotate,
  }) => {
    // Prepare: a busy application allowed 5 requests a second, 5 at once; a quiet one with the deployment's limits.
    const busy = await freshApplication('busy');
    const quiet = await freshApplication('quiet');
    await setLimit(busy.api, 5, 5);
    const before = await timed(quiet.api, 10);

    // Act: the busy application sends 30 requests at once, while the quiet one sends 10 in turn.
    const started = performance.now();
    const [flood, during] = await Promise.all([
      Promise.all(Array.from({ length: 30 }, () => busy.api.get('/v3/grants?limit=1'))),
      timed(quiet.api, 10),
    ]);
    const elapsedSeconds = (performance.now() - started) / 1000;
    await annotate(
      `quiet application p50: ${median(before.ms).toFixed(1)} ms before the flood, ${median(during.ms).toFixed(1)} ms during it`,
    );

    // Assess: the busy application was served up to its burst (and what refilled meanwhile), then refused.
    const served = flood.filter((r) => r.status === 200);
    const refused = flood.filter((r) => r.status !== 200);
    expect(served.length).toBeGreaterThan(0);
    expect(served.length).toBeLessThanOrEqual(5 + Math.ceil(elapsedSeconds * 5));
    expect(refused.length).toBeGreaterThan(0);
    const waits = refused.map((r) =>
      expectRefused(
        r,
        new RegExp(
          `^Application '${busy.id}' reached its rate limit of 5 requests a second \\(burst 5\\); retry after \\d+ s`,
        ),
      ),
    );
    // The quiet application was never refused.
    expect(before.statuses.every((s) => s === 200)).toBe(true);
    expect(during.statuses.every((s) => s === 200)).toBe(true);

    // Act: once Retry-After has passed, the busy application is served again.
    await new Promise((resolve) => setTimeout(resolve, Math.max(...waits) * 1000));
    const again = await busy.api.get('/v3/grants?limit=1');

    // Assess
    expect(again.status, again.text).toBe(200);
  });

  it("refuses a refused application's next requests in this instance without a DynamoDB write", async () => {
    // Prepare: one request a second, one at once; the first request takes it.
    const app = await freshApplication('refused');
    await setLimit(app.api, 1, 1);
    // The PATCH itself was counted at the deployment's rate (one 20 ms interval): let that pass.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await app.api.get('/v3/grants?limit=1')).status).toBe(200);
    const refusal = await app.api.get('/v3/grants?limit=1');
    expectRefused(refusal, /rate limit of 1 requests a second \(burst 1\)/);
    const writes = countBucketWrites(`ratelimit#app#${app.id}`);

    // Act: more requests within the second the refusal named.
    let next: ApiResponse[];
    try {
      next = await Promise.all(Array.from({ length: 3 }, () => app.api.get('/v3/grants?limit=1')));
    } finally {
      writes.stop();
    }

    // Assess
    for (const r of next) expectRefused(r, /rate limit of 1 requests a second/);
    expect(writes.count()).toBe(0);
  });

  it('never limits unauthenticated routes: a provider push naming a refused application gets its own answer', async () => {
    // Prepare: an application at its limit.
    const app = await freshApplication('pushed');
    await setLimit(app.api, 1, 1);
    // Until refused: on a loaded machine a second may pass between requests, and the bucket refill.
    let refused = false;
    for (let i = 0; i < 20 && !refused; i++)
      refused = (await Promise.all(Array.from({ length: 3 }, () => app.api.get('/v3/grants?limit=1')))).some(
        (r) => r.status === 429,
      );
    expect(refused).toBe(true);

    // Act: pushes for that application, without a valid token.
    const pushes = await Promise.all(
      Array.from({ length: 5 }, () =>
        apiClient(gateway.url).post(`/v3/push/google/pubsub?application_id=${app.id}`, {
          message: { data: '', messageId: '1' },
          subscription: 'projects/p/subscriptions/s',
        }),
      ),
    );

    // Assess: answered by the push receiver itself (a 4xx of its own), never a 429.
    for (const r of pushes) {
      expect(r.status, r.text).not.toBe(429);
      expect(r.body.error?.type).not.toBe('rate_limit_error');
    }
  });
});

describe('Rate limits: per grant', () => {
  it("limits one grant's endpoints by its own bucket while another grant of the application is served", async () => {
    // Prepare
    const app = await freshApplication('grants');
    const [hot, cold] = await Promise.all([makeAgentGrant(app.api), makeAgentGrant(app.api)]);

    // Act: 8 requests at once to one grant, then one to its sibling and one to the application's list.
    const started = performance.now();
    const burst = await Promise.all(Array.from({ length: 8 }, () => app.api.get(`/v3/grants/${hot.id}`)));
    const elapsedSeconds = (performance.now() - started) / 1000;
    const sibling = await app.api.get(`/v3/grants/${cold.id}`);
    const list = await app.api.get('/v3/grants?limit=1');

    // Assess: the hot grant was served up to its burst of 3 (and what refilled meanwhile), then refused.
    const served = burst.filter((r) => r.status === 200).length;
    expect(served).toBeGreaterThanOrEqual(3);
    expect(served).toBeLessThanOrEqual(3 + Math.ceil(elapsedSeconds * 2));
    const refused = burst.filter((r) => r.status !== 200);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused)
      expectRefused(
        r,
        new RegExp(
          `^Grant '${hot.id}' reached its rate limit of 2 requests a second \\(burst 3\\); retry after \\d+ s$`,
        ),
      );
    expect(sibling.status, sibling.text).toBe(200);
    expect(list.status, list.text).toBe(200);
  });
});

describe('Rate limits: a grant named by another application', () => {
  it("is a 404 that leaves the grant's own bucket whole (its bucket is its application's)", async () => {
    // Prepare
    const owner = await freshApplication('owner');
    const stranger = await freshApplication('stranger');
    const grant = await makeAgentGrant(owner.api);

    // Act: the stranger names the grant by ID, more times than its burst of 3, then the owner uses its burst.
    const foreign = await Promise.all(Array.from({ length: 6 }, () => stranger.api.get(`/v3/grants/${grant.id}`)));
    const own = await Promise.all(Array.from({ length: 3 }, () => owner.api.get(`/v3/grants/${grant.id}`)));

    // Assess
    for (const r of foreign) {
      expect(r.status, r.text).toBe(404);
      expect(r.body.error.type).toBe('not_found_error');
    }
    for (const r of own) expect(r.status, r.text).toBe(200);
  });
});

describe('Rate limits: PATCH /v3/applications rate_limit', () => {
  it("answers the deployment's limits until the application sets its own, and returns to them with null", async () => {
    // Prepare
    const app = await freshApplication('settings');

    // Act
    const initial = await app.api.get('/v3/applications');
    await setLimit(app.api, 20, 40);
    const own = await app.api.get('/v3/applications');
    const reset = await app.api.patch('/v3/applications', { rate_limit: null });

    // Assess
    expect(initial.body.data.rate_limit).toEqual({ requests_per_second: 50, burst: 100 });
    expect(own.body.data.rate_limit).toEqual({ requests_per_second: 20, burst: 40 });
    expect(reset.status, reset.text).toBe(200);
    expect(reset.body.data.rate_limit).toEqual({ requests_per_second: 50, burst: 100 });
  });

  it.each([
    [
      { requests_per_second: 501, burst: 10 },
      "'rate_limit.requests_per_second' may be at most 500 on this deployment (RATE_LIMIT_MAX_PER_SECOND)",
    ],
    [
      { requests_per_second: 500, burst: 1001 },
      "'rate_limit.burst' may be at most 1000 on this deployment (twice RATE_LIMIT_MAX_PER_SECOND)",
    ],
  ])('refuses %o above the deployment maximum with 400 naming it, changing nothing', async (rateLimit, message) => {
    // Prepare
    const app = await freshApplication('too fast');

    // Act
    const r = await app.api.patch('/v3/applications', { rate_limit: rateLimit });

    // Assess
    expect(r.status, r.text).toBe(400);
    expect(r.body.error).toEqual({ type: 'invalid_request_error', message });
    expect((await app.api.get('/v3/applications')).body.data.rate_limit).toEqual({
      requests_per_second: 50,
      burst: 100,
    });
  });

  it.each([
    [{ requests_per_second: 0, burst: 1 }, /requests_per_second/],
    [{ requests_per_second: 1.5, burst: 1 }, /requests_per_second/],
    [{ requests_per_second: 10 }, /burst/],
    [{ requests_per_second: 10, burst: 10, extra: 1 }, /extra/],
  ])('refuses the malformed rate_limit %o with 400', async (rateLimit, message) => {
    const app = await freshApplication('malformed');
    const r = await app.api.patch('/v3/applications', { rate_limit: rateLimit });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.type).toBe('invalid_request_error');
    expect(r.body.error.message).toMatch(message);
  });
});
