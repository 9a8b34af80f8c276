import { performance } from 'node:perf_hooks';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { buildEvent, lambdaContext } from '../scripts/local-stack/api-gateway-event';
import { startStack } from '../scripts/local-stack/index';
import { fmt, percentile, scaled, table } from './lib';
import { seedBusyAccount, windowReadFloor } from './busy-calendars';

/**
 * Issue 15 benchmark, through the real scheduling handler in process against the local stack:
 * 1. p50 of `GET /v3/scheduling/availability` for a public collective configuration of five Agent
 *    Accounts with 1,000 events each over the 30 days asked for (target ≤ 100 ms);
 * 2. 50 clients racing to book 10 slots of one organizer (five per slot, all at once): bookings per
 *    second, and every slot booked exactly once with exactly one event each.
 */
const DAY = 86_400;
const RUNS = scaled(60, 5);
const WARM_UP = scaled(10, 2);
/** Events of each of the five participants' calendars. */
const EVENTS = scaled(1000, 20);
const FIVE = `5 × ${EVENTS.toLocaleString('en')}`;
/** The race: CLIENTS bookings at once, over SLOTS slots. */
const CLIENTS = scaled(50, 10);
const SLOTS = scaled(10, 2);
const ZONES = ['America/New_York', 'Europe/Berlin', 'UTC', 'Europe/Lisbon', 'America/Toronto'];

export async function runSchedulerBench(): Promise<void> {
  console.log(
    `\n## Scheduler: availability of a ${FIVE}-event configuration, and ${CLIENTS} clients racing for ${SLOTS} slots (issue 15)\n`,
  );
  const stack = await startStack(`benchsched${process.pid}`);
  Object.assign(process.env, stack.env, { LOG_LEVEL: 'warn' });
  try {
    const [{ createApplication }, { handler }, { createConfiguration }] = await Promise.all([
      import('#shared/applications/service'),
      import('#functions/scheduling/handler'),
      import('#shared/scheduling/configurations'),
    ]);
    const app = await createApplication({ name: 'bench scheduler' });
    const context = { applicationId: app.application_id };
    const apiKeyCaller = { ...context, credential: 'api_key' as const };
    const windowStart = (Math.floor(Date.now() / 1000 / DAY) + 1) * DAY;
    const windowEnd = windowStart + 30 * DAY;

    const call = async (
      routeKey: string,
      method: string,
      url: string,
      body?: unknown,
      params?: Record<string, string>,
    ) => {
      const event = buildEvent(
        { routeKey, ...(params ? { params } : {}) },
        {
          method,
          url,
          headers: body ? { 'content-type': 'application/json' } : {},
          body: body ? Buffer.from(JSON.stringify(body)) : Buffer.alloc(0),
          sourceIp: '127.0.0.1',
        },
      );
      const result = (await handler(event, lambdaContext('scheduling'))) as APIGatewayProxyStructuredResultV2;
      return {
        status: result.statusCode!,
        body: JSON.parse(result.body!) as { data: any; error?: { message: string } },
      };
    };

    // 1. Availability of a busy collective configuration.
    const started = performance.now();
    const people = await Promise.all([0, 1, 2, 3, 4].map((n) => seedBusyAccount(context, n, EVENTS, windowStart, 30)));
    console.log(`seeded ${FIVE} events in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    const participant = (g: { email: string }, i: number) => ({
      email: g.email,
      ...(i === 0 ? { is_organizer: true, booking: { calendar_id: 'primary' } } : {}),
      availability: {
        calendar_ids: ['primary'],
        open_hours: [{ days: [0, 1, 2, 3, 4, 5, 6], timezone: ZONES[i]!, start: '7:00', end: '21:00' }],
      },
    });
    const busyConfig = await createConfiguration(apiKeyCaller, people[0]!, {
      participants: people.map(participant),
      availability: {
        duration_minutes: 30,
        interval_minutes: 30,
        availability_rules: { availability_method: 'collective', buffer: { before: 5, after: 5 } },
      },
      event_booking: { title: 'Team call' },
      scheduler: { min_booking_notice: 0, available_days_in_future: 60 },
    });
    const availabilityUrl = `/v3/scheduling/availability?configuration_id=${busyConfig.id}&start_time=${windowStart}&end_time=${windowEnd}`;
    const samples: number[] = [];
    let slots = 0;
    for (let i = 0; i < RUNS + WARM_UP; i++) {
      const t = performance.now();
      const r = await call('GET /v3/scheduling/availability', 'GET', availabilityUrl);
      const elapsed = performance.now() - t;
      if (r.status !== 200) throw new Error(`availability: ${r.status} ${r.body.error?.message}`);
      if (i >= WARM_UP) samples.push(elapsed);
      slots = r.body.data.time_slots.length;
    }

    const floor = await windowReadFloor(people, windowStart - 300, windowEnd + 300, RUNS);

    // 2. CLIENTS clients racing over SLOTS slots of an organizer with a free calendar.
    const free = await seedBusyAccount(context, 99, 0, windowStart, 1);
    const raceConfig = await createConfiguration(apiKeyCaller, free, {
      participants: [
        {
          email: free.email,
          is_organizer: true,
          availability: { calendar_ids: ['primary'] },
          booking: { calendar_id: 'primary' },
        },
      ],
      availability: { duration_minutes: 30, interval_minutes: 30 },
      event_booking: { title: 'Race', disable_emails: true },
      scheduler: { min_booking_notice: 0, available_days_in_future: 60 },
    });
    const offered = await call(
      'GET /v3/scheduling/availability',
      'GET',
      `/v3/scheduling/availability?configuration_id=${raceConfig.id}&start_time=${windowStart}&end_time=${windowStart + DAY}`,
    );
    const targets = (offered.body.data.time_slots as { start_time: number; end_time: number }[]).slice(0, SLOTS);
    const raceStarted = performance.now();
    const results = await Promise.all(
      Array.from({ length: CLIENTS }, (_, i) => {
        const slot = targets[i % SLOTS]!;
        return call(
          'POST /v3/scheduling/bookings',
          'POST',
          `/v3/scheduling/bookings?configuration_id=${raceConfig.id}`,
          {
            start_time: slot.start_time,
            end_time: slot.end_time,
            guest: { name: `Guest ${i}`, email: `guest${i}@example.com` },
          },
        ).then((r) => ({ ...r, slot: slot.start_time }));
      }),
    );
    const raceSeconds = (performance.now() - raceStarted) / 1000;
    const won = results.filter((r) => r.status === 201);
    const perSlot = new Map<number, number>();
    for (const r of won) perSlot.set(r.slot, (perSlot.get(r.slot) ?? 0) + 1);
    const refused = results.filter((r) => r.status === 409).length;
    const { listEvents } = await import('#shared/mailbox/events');
    const events = await listEvents(free, { calendar_id: 'primary', start: windowStart, end: windowStart + DAY }, 200);
    const exactlyOnce = targets.every((t) => perSlot.get(t.start_time) === 1) && events.items.length === SLOTS;

    console.log(
      `\n${table([
        ['measure', 'value'],
        [`availability p50 (${FIVE} events, 30 days, collective)`, fmt(percentile(samples, 50))],
        ['availability p99', fmt(percentile(samples, 99))],
        ['DynamoDB floor p50 (the same window queries alone)', fmt(floor)],
        ['slots offered', slots],
        ['race: requests', `${CLIENTS} over ${SLOTS} slots, ${raceSeconds.toFixed(2)} s`],
        ['race: bookings / 409', `${won.length} / ${refused}`],
        ['race: bookings per second', (won.length / raceSeconds).toFixed(1)],
        ['race: requests per second', (CLIENTS / raceSeconds).toFixed(1)],
        ['race: events on the calendar', events.items.length],
      ])}`,
    );
    const p50 = percentile(samples, 50);
    console.log(
      `\navailability p50: ${fmt(p50)} (target ≤ 100 ms: ${p50 <= 100 ? 'met' : 'NOT met'}; this machine's floor ${fmt(floor)}, ours ${(p50 / floor).toFixed(2)} × floor); every slot booked exactly once: ${exactlyOnce ? 'yes' : 'NO'}`,
    );
  } finally {
    await stack.stop();
  }
}
