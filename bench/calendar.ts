import { performance } from 'node:perf_hooks';
import { startStack } from '../scripts/local-stack/index';
import { scaled, table, timeList } from './lib';

/**
 * Issue 13 benchmark: a one-week window of a calendar costs what the week holds, not what the
 * calendar holds. Two calendars of one Agent Account on the local stack, 1,000 and 100,000 events,
 * each with 1 % recurring series (daily and weekly; three of them open-ended, the rest ending after
 * a few weeks) spread over time at the same density (a bigger calendar is a longer history, about
 * 20 single events a week). The events are stored as the service stores them (the same items:
 * event, window copies, UID) with batch writes, to seed fast. Then the p50 of listing one week with
 * `expand_recurring=true` through the service, for each calendar, and the ratio (target ≤ 1.2).
 */
const SMALL = scaled(1_000, 100);
const BIG = Number(process.env.BENCH_CALENDAR_EVENTS ?? scaled(100_000, 300));
const PER_WEEK = 20;
const RUNS = scaled(200, 5);
const WARM_UP = scaled(20, 2);
const WEEK = 7 * 86_400;
const WINDOW_START = Date.UTC(2026, 11, 7) / 1000;

const fmtMs = (ms: number) => `${ms.toFixed(2)} ms`;

export async function runCalendarBench(): Promise<void> {
  console.log(`\n## Calendar: one week, expand_recurring=true, at ${SMALL} vs ${BIG} events (issue 13)\n`);
  const stack = await startStack(`benchcal${process.pid}`);
  Object.assign(process.env, stack.env, { LOG_LEVEL: 'warn' });
  try {
    const [
      { createApplication },
      grants,
      { createCalendar },
      { listEvents },
      { eventItems },
      { batchWrite, putRequests },
      { newId },
      { seriesBounds },
    ] = await Promise.all([
      import('#shared/applications/service'),
      import('#shared/grants/create'),
      import('#shared/mailbox/calendars'),
      import('#shared/mailbox/events'),
      import('#shared/db/events'),
      import('#shared/db/batch'),
      import('#shared/ids'),
      import('#shared/calendar/recurrence'),
    ]);
    type EventRecord = import('#shared/db/events').EventRecord;
    const app = await createApplication({ name: 'bench calendar' });
    const context = { applicationId: app.application_id, credential: 'api_key' as const };
    const grantRecord = await grants.createCustomGrant(
      context as never,
      { provider: 'agent', settings: { email_address: `bench-${process.pid}@agents.test` } },
      { ip: '127.0.0.1', userAgent: 'bench' },
    );

    const seed = async (count: number) => {
      const calendar = await createCalendar(grantRecord, { name: `events ${count}`, timezone: 'UTC' });
      const weeks = Math.ceil(count / PER_WEEK);
      const from = WINDOW_START - Math.floor(weeks / 2) * WEEK;
      const seriesCount = Math.round(count / 100);
      const now = Math.floor(Date.now() / 1000);
      const records: EventRecord[] = [];
      const base = (id: string, start: number, end: number): EventRecord => ({
        id,
        grant_id: grantRecord.id,
        calendar_id: calendar.id as never,
        ical_uid: `${id}@agents.bench`,
        sequence: 0,
        title: `Event ${records.length}`,
        when: { object: 'timespan', start_time: start, end_time: end },
        zone: 'UTC',
        start,
        end,
        status: 'confirmed',
        busy: true,
        hide_participants: false,
        organizer: { email: grantRecord.email },
        creator: { email: grantRecord.email },
        participants: [],
        resources: [],
        metadata: {},
        created_at: now,
        updated_at: now,
        version: 1,
      });
      for (let i = 0; i < count - seriesCount; i++) {
        // Spread evenly over the weeks, in working hours.
        const start = from + Math.floor(((i / (count - seriesCount)) * weeks * WEEK) / 3600) * 3600;
        records.push(base(newId('event'), start, start + 1800 + (i % 4) * 900));
      }
      for (let s = 0; s < seriesCount; s++) {
        const openEnded = s < 3;
        const daily = s % 2 === 0;
        // Open-ended ones began before the window; the others anywhere in the calendar's span.
        const start = openEnded
          ? WINDOW_START - (s + 1) * 10 * WEEK + 9 * 3600
          : from + Math.floor((((s + 0.5) / seriesCount) * weeks * WEEK) / 3600) * 3600;
        const rule = `RRULE:FREQ=${daily ? 'DAILY' : 'WEEKLY'}${openEnded ? '' : `;COUNT=${daily ? 10 + (s % 20) : 4 + (s % 10)}`}`;
        const record = base(newId('event'), start, start + 1800);
        record.recurrence = [rule];
        record.last_end = seriesBounds({ when: record.when, zone: 'UTC', recurrence: [rule] }).last_end;
        record.exceptions = [];
        record.pattern_revision = 0;
        records.push(record);
      }
      const started = performance.now();
      await batchWrite(putRequests(records.flatMap(eventItems)));
      return { calendar, ms: performance.now() - started, series: seriesCount };
    };

    const measure = async (calendarId: string) => {
      const query = {
        calendar_id: calendarId,
        expand_recurring: true,
        start: WINDOW_START,
        end: WINDOW_START + WEEK,
        limit: 200,
      };
      return timeList(() => listEvents(grantRecord, query, 200), RUNS, WARM_UP);
    };

    const small = await seed(SMALL);
    const big = await seed(BIG);
    console.log(
      `seeded ${SMALL} events in ${(small.ms / 1000).toFixed(1)} s and ${BIG} in ${(big.ms / 1000).toFixed(1)} s (${small.series} and ${big.series} series)\n`,
    );
    const smallRun = await measure(small.calendar.id);
    const bigRun = await measure(big.calendar.id);
    console.log(
      table([
        ['calendar of', 'week p50', 'p99', 'events in the week (instances)'],
        [`${SMALL} events`, fmtMs(smallRun.p50), fmtMs(smallRun.p99), smallRun.items],
        [`${BIG} events`, fmtMs(bigRun.p50), fmtMs(bigRun.p99), bigRun.items],
      ]),
    );
    const ratio = bigRun.p50 / smallRun.p50;
    console.log(
      `\nratio p50(${BIG}) / p50(${SMALL}): ${ratio.toFixed(2)} (target ≤ 1.2: ${ratio <= 1.2 ? 'met' : 'NOT met'}); p50 at ${BIG}: ${fmtMs(bigRun.p50)}`,
    );
  } finally {
    await stack.stop();
  }
}
