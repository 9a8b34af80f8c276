import { performance } from 'node:perf_hooks';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { buildEvent, lambdaContext } from '../scripts/local-stack/api-gateway-event';
import { startStack } from '../scripts/local-stack/index';
import { fmt, percentile, scaled, table } from './lib';
import { seedBusyAccount, windowReadFloor } from './busy-calendars';

/**
 * Issue 14 benchmark: a month of 30-minute slots for five busy people. Five Agent Accounts on the
 * local stack, each with 1,000 events on its primary calendar over the 30 days (a fifth of them
 * recurring series, daily and weekly, a few open-ended from before the window), stored as the
 * service stores them. Measured: the pure engine alone on the busy time those calendars hold, and
 * the whole `POST /v3/calendars/availability` through the real handler in process (API key check,
 * validation, grant lookups, one window query per calendar, series expansion, engine, JSON), for
 * 5 × 1,000 and for 1 × 100, so the growth is visible. Targets: engine p50 ≤ 20 ms, request p50
 * ≤ 100 ms at 5 × 1,000.
 */
const DAY = 86_400;
const WINDOW_START = Date.UTC(2026, 11, 1) / 1000;
const WINDOW_DAYS = 30;
const ENGINE_RUNS = scaled(200, 5);
const HTTP_RUNS = scaled(100, 5);
/** Events of each of the five busy calendars, and of the one quiet calendar. */
const BUSY_EVENTS = scaled(1000, 20);
const QUIET_EVENTS = scaled(100, 10);
const FIVE = `5 × ${BUSY_EVENTS.toLocaleString('en')}`;
const ONE = `1 × ${QUIET_EVENTS.toLocaleString('en')}`;
const ZONES = ['America/New_York', 'Europe/Berlin', 'UTC', 'Europe/Lisbon', 'America/Toronto'];

export async function runAvailabilityBench(): Promise<void> {
  console.log('\n## Availability: 30 days of 30-minute slots, engine and whole request (issue 14)\n');
  const stack = await startStack(`benchavail${process.pid}`);
  Object.assign(process.env, stack.env, { LOG_LEVEL: 'warn' });
  try {
    const [{ createApplication }, engine, { freeBusyOf }, { handler }] = await Promise.all([
      import('#shared/applications/service'),
      import('#shared/availability/engine'),
      import('#shared/registries/free-busy'),
      import('#functions/availability/handler'),
    ]);
    type GrantRecord = import('#shared/db/grants').GrantRecord;
    const app = await createApplication({ name: 'bench availability' });
    const context = { applicationId: app.application_id, credential: 'api_key' as const };

    const seed = (n: number, count: number) => seedBusyAccount(context, n, count, WINDOW_START, WINDOW_DAYS);

    const started = performance.now();
    const busyFive = await Promise.all([0, 1, 2, 3, 4].map((n) => seed(n, BUSY_EVENTS)));
    const busyOne = [await seed(9, QUIET_EVENTS)];
    console.log(`seeded ${FIVE} and ${ONE} events in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);

    const window = { start_time: WINDOW_START, end_time: WINDOW_START + WINDOW_DAYS * DAY };
    const openHours = (i: number) => [
      { days: [1, 2, 3, 4, 5], timezone: ZONES[i % ZONES.length]!, start: '7:00', end: '21:00' },
    ];
    const body = (people: GrantRecord[], method: string) => ({
      ...window,
      duration_minutes: 30,
      interval_minutes: 30,
      round_to: 15,
      participants: people.map((g, i) => ({ email: g.email, open_hours: openHours(i) })),
      availability_rules: { availability_method: method, buffer: { before: 5, after: 5 }, round_robin_group_id: 'rr' },
    });

    const engineRun = async (people: GrantRecord[], method: 'collective' | 'max-availability') => {
      const participants = await Promise.all(
        people.map(async (g, i) => {
          const times = await freeBusyOf(g).busy(g, {
            calendar_ids: ['primary'],
            start: window.start_time - 300,
            end: window.end_time + 300,
            tentative_as_busy: true,
            fairness_group: 'rr',
          });
          return { email: g.email, busy: times.busy, open_hours: openHours(i), fairness_count: times.fairness_count };
        }),
      );
      const input = {
        start: window.start_time,
        end: window.end_time,
        duration_minutes: 30,
        interval_minutes: 30,
        round_to: 15,
        method,
        buffer: { before: 5, after: 5 },
        participants,
      };
      for (let i = 0; i < scaled(20, 2); i++) engine.computeAvailability(input);
      const samples: number[] = [];
      let slots = 0;
      for (let i = 0; i < ENGINE_RUNS; i++) {
        const t = performance.now();
        slots = engine.computeAvailability(input).time_slots.length;
        samples.push(performance.now() - t);
      }
      return {
        p50: percentile(samples, 50),
        p99: percentile(samples, 99),
        slots,
        busy: participants.reduce((n, p) => n + p.busy.length, 0),
      };
    };

    const httpRun = async (people: GrantRecord[], method: string) => {
      const payload = Buffer.from(JSON.stringify(body(people, method)));
      const call = async () => {
        const event = buildEvent(
          { routeKey: 'POST /v3/calendars/availability' },
          {
            method: 'POST',
            url: '/v3/calendars/availability',
            headers: { authorization: `Bearer ${app.api_key}`, 'content-type': 'application/json' },
            body: payload,
            sourceIp: '127.0.0.1',
          },
        );
        const t = performance.now();
        const result = (await handler(event, lambdaContext('availability'))) as APIGatewayProxyStructuredResultV2;
        const elapsed = performance.now() - t;
        if (result.statusCode !== 200) throw new Error(`availability: ${result.statusCode} ${result.body}`);
        return {
          elapsed,
          slots: (JSON.parse(result.body!) as { data: { time_slots: unknown[] } }).data.time_slots.length,
        };
      };
      for (let i = 0; i < scaled(10, 2); i++) await call();
      const samples: number[] = [];
      let slots = 0;
      for (let i = 0; i < HTTP_RUNS; i++) {
        const r = await call();
        samples.push(r.elapsed);
        slots = r.slots;
      }
      return { p50: percentile(samples, 50), p99: percentile(samples, 99), slots };
    };

    const rows: (string | number)[][] = [
      [
        'case',
        'engine p50',
        'engine p99',
        'request p50',
        'request p99',
        'DynamoDB floor p50',
        'busy intervals',
        'slots',
      ],
    ];
    const results: Record<string, { engine: number; http: number; floor: number }> = {};
    for (const [label, people, method] of [
      [`${FIVE} collective`, busyFive, 'collective'],
      [`${FIVE} max-availability`, busyFive, 'max-availability'],
      [`${ONE} collective`, busyOne, 'collective'],
    ] as const) {
      const e = await engineRun(people, method);
      const h = await httpRun(people, method);
      const floor = await windowReadFloor(people, window.start_time - 300, window.end_time + 300, HTTP_RUNS);
      results[label] = { engine: e.p50, http: h.p50, floor };
      rows.push([
        label,
        fmt(e.p50, 3),
        fmt(e.p99, 3),
        fmt(h.p50),
        fmt(h.p99),
        fmt(floor),
        e.busy,
        `${e.slots}/${h.slots}`,
      ]);
    }
    console.log(table(rows));
    const five = results[`${FIVE} collective`]!;
    const one = results[`${ONE} collective`]!;
    console.log(
      `\nengine p50 at ${FIVE}: ${fmt(five.engine, 3)} (target ≤ 20 ms: ${five.engine <= 20 ? 'met' : 'NOT met'})`,
    );
    console.log(`request p50 at ${FIVE}: ${fmt(five.http)} (target ≤ 100 ms: ${five.http <= 100 ? 'met' : 'NOT met'})`);
    console.log(
      `  against this machine's floor (the same window queries alone on DynamoDB Local): ${fmt(five.floor)}, request / floor ${(five.http / five.floor).toFixed(2)}; our time above the floor ${fmt(five.http - five.floor)}`,
    );
    console.log(
      `growth ${FIVE} / ${ONE}: engine ×${(five.engine / one.engine).toFixed(1)}, request ×${(five.http / one.http).toFixed(1)}`,
    );
  } finally {
    await stack.stop();
  }
}
