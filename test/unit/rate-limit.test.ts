import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { applicationRateLimitKey } from '#shared/db/keys';
import { nextAllowedAt, takeToken, type BucketLimits } from '#shared/db/rate-limits';
import { newId } from '#shared/ids';

/**
 * The GCRA arithmetic of the request rate buckets (shared/db/rate-limits.ts), against DynamoDB Local,
 * with time given explicitly: a full bucket takes `burst` requests at once, then one per interval; an
 * idle one starts again from now and never saves up more than its burst; a refusal says when the next
 * request fits; concurrent takes never hand out more than the burst; and a request costs one
 * conditional write when its guess of the bucket's state is right, two at most, and never a read.
 */
const T = 1_800_000_000_000;
/** 10 requests a second (one per 100 ms), 3 at once. */
const LIMITS: BucketLimits = { intervalMs: 100, toleranceMs: 300 };
const freshKey = () => applicationRateLimitKey(newId('application'));

describe('Function: takeToken', () => {
  it('takes a burst at once from a fresh bucket, then refuses until one interval has passed', async () => {
    // Prepare
    const key = freshKey();

    // Act
    const burst = [];
    for (let i = 0; i < 3; i++) burst.push(await takeToken(key, LIMITS, T));
    const over = await takeToken(key, LIMITS, T);
    const early = await takeToken(key, LIMITS, T + 99);
    const onTime = await takeToken(key, LIMITS, T + 100);
    const again = await takeToken(key, LIMITS, T + 100);

    // Assess
    expect(burst.map((t) => [t.allowed, t.tat])).toEqual([
      [true, T + 100],
      [true, T + 200],
      [true, T + 300],
    ]);
    expect(over).toEqual({ allowed: false, tat: T + 300, retryAt: T + 100, writes: 1 });
    expect(early).toMatchObject({ allowed: false, retryAt: T + 100 });
    expect(onTime).toMatchObject({ allowed: true, tat: T + 400 });
    expect(again).toMatchObject({ allowed: false, retryAt: T + 200 });
  });

  it('starts an idle bucket again from now: a long pause saves up no more than the burst', async () => {
    // Prepare: the bucket used, then a minute of silence.
    const key = freshKey();
    await takeToken(key, LIMITS, T);
    const later = T + 60_000;

    // Act
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await takeToken(key, LIMITS, later));

    // Assess
    expect(results.map((r) => r.allowed)).toEqual([true, true, true, false]);
    expect(results[0]!.tat).toBe(later + 100);
    expect(results[3]).toMatchObject({ retryAt: later + 100 });
  });

  it('allows a steady rate at the limit indefinitely, and refuses anything faster', async () => {
    // Prepare
    const key = freshKey();

    // Act: one request every interval for 20 intervals, with a second one squeezed into each after the burst.
    const steady = [];
    const extra = [];
    for (let i = 0; i < 20; i++) {
      steady.push(await takeToken(key, LIMITS, T + i * 100));
      if (i >= 3) extra.push(await takeToken(key, LIMITS, T + i * 100));
    }

    // Assess: the steady requests all fit; past the burst, no extra one does.
    expect(steady.every((r) => r.allowed)).toBe(true);
    expect(extra.filter((r) => r.allowed)).toHaveLength(2);
  });

  it('costs one write when its guess is right, two when it is wrong, and one for a refusal', async () => {
    // Prepare
    const key = freshKey();

    // Act
    const first = await takeToken(key, LIMITS, T); // no item: the idle write (the default guess)
    const guessedBusy = await takeToken(key, LIMITS, T, first.tat); // the tat seen says busy
    const guessedIdle = await takeToken(key, LIMITS, T); // no hint: idle tried first, then busy
    const refused = await takeToken(key, LIMITS, T, guessedIdle.tat);
    const staleHint = await takeToken(key, LIMITS, T + 60_000, refused.tat); // the hint is behind now

    // Assess
    expect([first, guessedBusy, guessedIdle, refused, staleHint].map((r) => [r.allowed, r.writes])).toEqual([
      [true, 1],
      [true, 1],
      [true, 2],
      [false, 1],
      [true, 1],
    ]);
  });

  it('refuses a busy write on an idle bucket: a wrong guess never counts from a past tat', async () => {
    // Prepare: a bucket last used long ago, and a hint that claims it is busy.
    const key = freshKey();
    await takeToken(key, LIMITS, T);
    const later = T + 10_000;

    // Act: the busy write is refused (its tat is behind now), and the idle write takes the request.
    const result = await takeToken(key, LIMITS, later, later + 50);
    const burst = [];
    for (let i = 0; i < 3; i++) burst.push(await takeToken(key, LIMITS, later, result.tat));

    // Assess: started again from now, so the same burst of 3 remains, not more.
    expect(result).toEqual({ allowed: true, tat: later + 100, writes: 2 });
    expect(burst.map((r) => r.allowed)).toEqual([true, true, false]);
  });

  it('never hands out more than the burst to concurrent requests', async () => {
    // Prepare
    const key = freshKey();
    const limits: BucketLimits = { intervalMs: 100, toleranceMs: 500 };

    // Act: twelve requests at the same moment, as from twelve instances.
    const results = await Promise.all(Array.from({ length: 12 }, () => takeToken(key, limits, T)));

    // Assess
    expect(results.filter((r) => r.allowed)).toHaveLength(5);
    expect(results.every((r) => r.writes <= 2)).toBe(true);
    expect(results.filter((r) => r.allowed).map((r) => (r.allowed ? r.tat : 0))).toEqual(
      expect.arrayContaining([T + 100, T + 200, T + 300, T + 400, T + 500]),
    );
  });

  it('keeps one item per bucket, which expires a minute after the bucket could be idle', async () => {
    // Prepare
    const key = freshKey();

    // Act
    await takeToken(key, LIMITS, T);
    const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: key, ConsistentRead: true }));

    // Assess
    expect(Item).toEqual({ ...key, tat: T + 100, expires_at: Math.ceil((T + 300) / 1000) + 60 });
    expect(key.pk).toMatch(/^ratelimit#app#app_[0-9a-z]{26}$/);
  });

  it('says when a full bucket takes its next request: tat − tolerance + interval', () => {
    expect(nextAllowedAt(T + 300, LIMITS)).toBe(T + 100);
    expect(nextAllowedAt(T + 1000, { intervalMs: 200, toleranceMs: 1000 })).toBe(T + 200);
  });
});
