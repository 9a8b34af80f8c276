import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import type { Key } from '#shared/db/keys';

/**
 * Request rate buckets kept in DynamoDB, so that every Lambda instance counts against the same one: the
 * generic cell rate algorithm (GCRA). A bucket is one item holding `tat`, its theoretical arrival time
 * (epoch milliseconds): the moment the bucket would be full again if no other request came. Each
 * request moves it one interval (1000 / rate ms) later; a request is refused when that would put it
 * more than the tolerance (burst × interval) ahead of now. An idle bucket (tat in the past) starts
 * again from now, so a bucket never saves up more than its burst.
 *
 * A request costs one conditional UpdateItem, two when its first guess of the bucket's state was
 * wrong, and never a read: a failed condition answers the item as it was
 * (ReturnValuesOnConditionCheckFailure), which says what to do next. `tat` only ever grows (an idle
 * write sets it to now + interval, later than the past tat it replaces), so a tat once seen is a lower
 * bound of the bucket's: callers keep the last one they saw to make the first guess, and to refuse
 * without a write while it says the bucket is full.
 */

export interface BucketLimits {
  /** Milliseconds between requests at the sustained rate: 1000 / requests a second. */
  intervalMs: number;
  /** How far ahead of now `tat` may run: burst × interval (a full bucket takes `burst` requests at once). */
  toleranceMs: number;
}

export type Take =
  /** Taken; `tat` is the bucket's theoretical arrival time after this request. */
  | { allowed: true; tat: number; writes: number }
  /** Refused: the bucket's `tat` (a lower bound), and when the next request would be taken. */
  | { allowed: false; tat: number; retryAt: number; writes: number };

/** How long an idle bucket's item stays after its tat has passed, in seconds: by then it is the same as no item. */
const IDLE_TTL_SECONDS = 60;

/** When a bucket whose theoretical arrival time is `tat` takes its next request: tat − tolerance + interval. */
export const nextAllowedAt = (tat: number, limits: BucketLimits): number =>
  tat - limits.toleranceMs + limits.intervalMs;

/**
 * Takes one request from the bucket at `key`, at `now` (epoch milliseconds). `hint` is a tat this
 * caller saw before (undefined when none): at or after `now`, the bucket is busy and the busy write is
 * tried first; otherwise the idle one. At most two UpdateItems.
 */
export async function takeToken(key: Key, limits: BucketLimits, now: number, hint?: number): Promise<Take> {
  const latest = now + limits.toleranceMs - limits.intervalMs;
  // The item may go once its tat is behind now; the latest tat this request can leave is `now + tolerance`.
  const expiresAt = Math.ceil((now + limits.toleranceMs) / 1000) + IDLE_TTL_SECONDS;
  const idle = () => idleWrite(key, limits, now, expiresAt);
  const busy = () => busyWrite(key, limits, now, latest, expiresAt);
  const busyFirst = hint !== undefined && hint >= now;
  const outcome = (written: Written, writes: number): Take | undefined => {
    if (written.taken) return { allowed: true, tat: written.tat!, writes };
    // Full, whichever write found it so: tat only grows, so no other write can take this request.
    if (written.tat !== undefined && written.tat > latest)
      return { allowed: false, tat: written.tat, retryAt: nextAllowedAt(written.tat, limits), writes };
    return undefined;
  };
  // A failed idle write saw tat at or after now, a failed busy write (not full) saw it behind now or no
  // item: either way the other write is the one that fits.
  const first = await (busyFirst ? busy() : idle());
  const decided = outcome(first, 1);
  if (decided) return decided;
  const second = await (busyFirst ? idle() : busy());
  // Neither fitted: the bucket changed between the two writes (an idle bucket found busy again after
  // its item expired, say). Refused for the shortest wait rather than a third write.
  return outcome(second, 2) ?? { allowed: false, tat: second.tat ?? now, retryAt: now, writes: 2 };
}

interface Written {
  taken: boolean;
  /** After a taken write, the new tat; after a refused one, the stored tat (undefined: no item). */
  tat: number | undefined;
}

/** An idle bucket (no item, or its tat behind now) starts again: tat = now + interval. */
async function idleWrite(key: Key, limits: BucketLimits, now: number, expiresAt: number): Promise<Written> {
  const tat = now + limits.intervalMs;
  return conditionalWrite(
    {
      TableName: TABLE_NAME,
      Key: key,
      UpdateExpression: 'SET tat = :tat, expires_at = :exp',
      ConditionExpression: 'attribute_not_exists(tat) OR tat < :now',
      ExpressionAttributeValues: { ':tat': tat, ':now': now, ':exp': expiresAt },
    },
    tat,
  );
}

/**
 * A busy bucket (tat at or after now, and room for one more) moves one interval on. The lower bound
 * matters: on an idle bucket this write would count from its past tat and hand out more than the burst.
 */
async function busyWrite(
  key: Key,
  limits: BucketLimits,
  now: number,
  latest: number,
  expiresAt: number,
): Promise<Written> {
  return conditionalWrite(
    {
      TableName: TABLE_NAME,
      Key: key,
      UpdateExpression: 'SET tat = tat + :interval, expires_at = :exp',
      ConditionExpression: 'tat BETWEEN :now AND :latest',
      ExpressionAttributeValues: { ':interval': limits.intervalMs, ':now': now, ':latest': latest, ':exp': expiresAt },
      ReturnValues: 'UPDATED_NEW',
    },
    undefined,
  );
}

async function conditionalWrite(
  input: ConstructorParameters<typeof UpdateCommand>[0],
  written: number | undefined,
): Promise<Written> {
  try {
    const { Attributes } = await dynamo.send(
      new UpdateCommand({ ...input, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
    );
    return { taken: true, tat: written ?? (Attributes?.tat as number) };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    // The item as it was, in DynamoDB's own format (the document client does not convert errors).
    const old = error.Item ? unmarshall(error.Item) : undefined;
    return { taken: false, tat: typeof old?.tat === 'number' ? old.tat : undefined };
  }
}
