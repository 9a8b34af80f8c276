import { performance } from 'node:perf_hooks';
import { percentile, rng, scaled } from './lib';

const DAY = 86_400;

/**
 * An Agent Account whose primary calendar holds `count` events over `days` from `windowStart`, a
 * fifth of them recurring series (daily 3–10 times and weekly 2–4 times; one in twenty open-ended,
 * begun weeks before), stored as the service stores them (the same items) with batch writes, so
 * seeding thousands takes seconds. Deterministic for the same `n` and `count`. Call once the local
 * stack's environment is set: the modules are loaded then.
 */
export async function seedBusyAccount(
  context: { applicationId: string },
  n: number,
  count: number,
  windowStart: number,
  days: number,
) {
  const [grants, { primaryCalendarId }, { eventItems }, { batchWrite, putRequests }, { newId }, { seriesBounds }] =
    await Promise.all([
      import('#shared/grants/create'),
      import('#shared/mailbox/calendars'),
      import('#shared/db/events'),
      import('#shared/db/batch'),
      import('#shared/ids'),
      import('#shared/calendar/recurrence'),
    ]);
  type EventRecord = import('#shared/db/events').EventRecord;
  const grant = await grants.createCustomGrant(
    { ...context, credential: 'api_key' } as never,
    { provider: 'agent', settings: { email_address: `bench-${n}-${count}-${process.pid}@agents.test` } },
    { ip: '127.0.0.1', userAgent: 'bench' },
  );
  const calendarId = primaryCalendarId(grant.id);
  const rnd = rng(n * 7919 + count);
  const now = Math.floor(Date.now() / 1000);
  const base = (start: number, end: number, i: number): EventRecord => {
    const id = newId('event');
    return {
      id,
      grant_id: grant.id,
      calendar_id: calendarId,
      ical_uid: `${id}@agents.bench`,
      sequence: 0,
      title: `Event ${i}`,
      when: { object: 'timespan', start_time: start, end_time: end },
      zone: 'UTC',
      start,
      end,
      status: 'confirmed',
      busy: rnd() > 0.05,
      hide_participants: false,
      organizer: { email: grant.email },
      creator: { email: grant.email },
      participants: [],
      resources: [],
      metadata: rnd() < 0.2 ? { key5: 'rr' } : {},
      created_at: now,
      updated_at: now,
      version: 1,
    };
  };
  const records: EventRecord[] = [];
  const seriesCount = Math.round(count / 5);
  // Singles: anywhere in the window, on the quarter hour between 06:00 and 21:00 UTC, 15 to 90 minutes.
  for (let i = 0; i < count - seriesCount; i++) {
    const start = windowStart + Math.floor(rnd() * days) * DAY + (6 * 4 + Math.floor(rnd() * 60)) * 900;
    records.push(base(start, start + (1 + Math.floor(rnd() * 6)) * 900, i));
  }
  for (let s = 0; s < seriesCount; s++) {
    const daily = s % 2 === 0;
    const openEnded = s % 20 === 0;
    const start =
      (openEnded ? windowStart - (1 + (s % 5)) * 7 * DAY : windowStart + Math.floor(rnd() * days) * DAY) +
      (6 * 4 + Math.floor(rnd() * 60)) * 900;
    const rule = `RRULE:FREQ=${daily ? 'DAILY' : 'WEEKLY'}${openEnded ? '' : `;COUNT=${daily ? 3 + Math.floor(rnd() * 8) : 2 + Math.floor(rnd() * 3)}`}`;
    const record = base(start, start + 1800, count + s);
    record.recurrence = [rule];
    record.last_end = seriesBounds({ when: record.when, zone: 'UTC', recurrence: [rule] }).last_end;
    record.exceptions = [];
    record.pattern_revision = 0;
    records.push(record);
  }
  await batchWrite(putRequests(records.flatMap(eventItems)));
  return grant;
}

/**
 * The floor of reading busy time on this machine: the same window queries the services make (every
 * bucket of each account's primary calendar, side by side, the same projected fields), straight to
 * the database with nothing of ours around them. p50 over `runs`, after 10 warm-up reads (2 in a smoke run).
 */
export async function windowReadFloor(
  accounts: readonly { id: string }[],
  from: number,
  to: number,
  runs: number,
): Promise<number> {
  const [
    { dynamo, TABLE_NAME },
    { QueryCommand },
    { windowPartition, windowSortKey },
    { primaryCalendarId },
    { bucketsOfWindow },
    { BUSY_FIELDS },
  ] = await Promise.all([
    import('#shared/aws/dynamodb'),
    import('@aws-sdk/lib-dynamodb'),
    import('#shared/db/keys'),
    import('#shared/mailbox/calendars'),
    import('#shared/db/events'),
    import('#shared/mailbox/event-windows'),
  ]);
  const names = ['id', ...BUSY_FIELDS];
  const projection = {
    ProjectionExpression: names.map((_, i) => `#f${i}`).join(', '),
    ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#f${i}`, n])),
  };
  const read = () =>
    Promise.all(
      accounts.flatMap((g) =>
        bucketsOfWindow(from, to).map(async (bucket) => {
          let startKey: Record<string, unknown> | undefined;
          do {
            const out = await dynamo.send(
              new QueryCommand({
                TableName: TABLE_NAME,
                KeyConditionExpression: 'pk = :pk AND sk < :to',
                FilterExpression: 'window_end > :from',
                ExpressionAttributeValues: {
                  ':pk': windowPartition(g.id as never, primaryCalendarId(g.id as never), bucket),
                  ':to': windowSortKey(to, ''),
                  ':from': from,
                },
                ExclusiveStartKey: startKey,
                ...projection,
              }),
            );
            startKey = out.LastEvaluatedKey;
          } while (startKey);
        }),
      ),
    );
  for (let i = 0; i < scaled(10, 2); i++) await read();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await read();
    samples.push(performance.now() - t);
  }
  return percentile(samples, 50);
}
