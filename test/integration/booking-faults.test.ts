import type { SQSEvent } from 'aws-lambda';
import { beforeAll, afterEach, describe, expect, it, vi } from 'vitest';
import { dynamo } from '#shared/aws/dynamodb';
import { getGrant } from '#shared/db/grants';
import { bookedDays, daysOf, getBooking } from '#shared/db/scheduling';
import { NotFoundError } from '#shared/errors';
import type { ApplicationId, BookingId, GrantId } from '#shared/ids';
import type { Job } from '#shared/jobs/job';
import { eventsOf } from '#shared/registries/events';
import type { EventsProvider } from '#shared/providers/contract';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway } from '../support/gateway';
import { outboxDrained } from '../support/outbox-relay';
import { createTestQueue, drainQueue, messagesIn } from '../support/queues';
import { drainThroughHandler } from '../support/sqs-worker';

/**
 * Bookings under faults. Each change (create, reschedule, cancel) commits its booking, slot locks
 * and `booking-event` job in one transaction; the request then does the provider step inline. Here
 * the request is killed at each point after that transaction (before the inline run, during the
 * provider call, after it but before the booking's update), then the committed jobs run as the jobs
 * worker runs them on redelivery, each booking-event job twice at once. Whatever the fault: no slot
 * lock without a live booking holding it, no booking without its event (or a visible failure), one
 * event on the organizer's calendar, one `booking.*` notification per change.
 */
let api: ApiClient;
let guestApi: ApiClient;
let jobsQueue: string;
let fanout: string;
let applicationId: string;

beforeAll(async () => {
  // Jobs run by hand here (this file's own queue), so a test decides when the "redelivery" happens.
  jobsQueue = await createTestQueue('booking-faults-jobs');
  process.env.JOBS_QUEUE_URL = jobsQueue;
  fanout = await createTestQueue('booking-faults-fanout');
  process.env.FANOUT_QUEUE_URL = fanout;
  const gateway = await startGateway();
  const app = await makeApplication('booking faults');
  applicationId = app.applicationId;
  api = apiClient(gateway.url, app.apiKey);
  guestApi = apiClient(gateway.url);
  return () => gateway.close();
});

afterEach(() => {
  vi.restoreAllMocks();
});

const DAY = 86_400;
const midnight = (days: number) => (Math.floor(Date.now() / 1000 / DAY) + days) * DAY;
const allDay = [{ days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', start: '8:00', end: '18:00' }];
const guest = { name: 'Fay Guest', email: 'fay@guest.example.com' };

async function configuration() {
  const organizer = await makeAgentGrant(api);
  const response = await api.post(`/v3/grants/${organizer.id}/scheduling/configurations`, {
    participants: [
      {
        email: organizer.email,
        name: 'Org',
        is_organizer: true,
        availability: { calendar_ids: ['primary'], open_hours: allDay },
        booking: { calendar_id: 'primary' },
      },
    ],
    availability: { duration_minutes: 30, interval_minutes: 30 },
    event_booking: { title: 'Fault call' },
    scheduler: { min_booking_notice: 0, available_days_in_future: 30 },
  });
  expect(response.status, response.text).toBe(201);
  const grant = await getGrant(applicationId as ApplicationId, organizer.id as GrantId);
  return { organizer, config: response.body.data as { id: string }, provider: eventsOf(grant!) };
}

const book = (configId: string, start: number) =>
  guestApi.post(`/v3/scheduling/bookings?configuration_id=${configId}`, {
    start_time: start,
    end_time: start + 1800,
    guest,
  });
const bookingPath = (configId: string, id: string) => `/v3/scheduling/bookings/${id}?configuration_id=${configId}`;

// ---- faults ----------------------------------------------------------------------------------

type Command = {
  constructor: { name: string };
  input: { TransactItems?: { Put?: { Item?: Record<string, unknown> } }[]; Key?: { pk?: string } };
};
const bookingPuts = (command: Command) =>
  (command.input.TransactItems ?? []).map((i) => i.Put?.Item).filter((item) => item?.entity === 'booking');

/**
 * Fails DynamoDB calls as a crash would: `after-commit` fails the first call of any kind once a
 * change with a pending event step has committed (the inline run never gets anywhere); `after-provider`
 * fails the first booking update that records a step's outcome (the provider has acted, the booking
 * does not know). Everything else goes through.
 */
function crashOnStorage(point: 'after-commit' | 'after-provider') {
  const send = dynamo.send.bind(dynamo);
  let armed = false;
  let crashed = false;
  vi.spyOn(dynamo, 'send').mockImplementation(((command: Command) => {
    if (!crashed && command.constructor.name === 'TransactWriteCommand') {
      const puts = bookingPuts(command);
      if (point === 'after-provider' && puts.some((item) => item!.event_status !== 'pending')) {
        crashed = true;
        return Promise.reject(new Error('killed before the booking update'));
      }
      if (point === 'after-commit' && puts.some((item) => item!.event_status === 'pending')) {
        return send(command as never).then((out: unknown) => ((armed = true), out));
      }
    }
    if (armed && !crashed) {
      crashed = true;
      return Promise.reject(new Error('killed after the transaction'));
    }
    return send(command as never);
  }) as never);
  return () => crashed;
}

/** Fails the provider call itself (a connection reset: nothing happened on the calendar). */
function crashInProvider(provider: EventsProvider, method: 'create' | 'update' | 'delete') {
  const spy = vi.spyOn(provider, method).mockRejectedValueOnce(new Error('connection reset by the calendar'));
  return () => spy.mock.calls.length > 0;
}

type Point = 'after-commit' | 'during-provider' | 'after-provider';
const inject = (point: Point, provider: EventsProvider, method: 'create' | 'update' | 'delete') =>
  point === 'during-provider' ? crashInProvider(provider, method) : crashOnStorage(point);

// ---- the worker, on redelivery ---------------------------------------------------------------

/** Runs every committed job through the real jobs worker; each booking-event job twice at once (a redelivery racing the first). */
async function runJobs(): Promise<Job[]> {
  await outboxDrained();
  const { handler } = await import('#functions/jobs/handler');
  const seen: Job[] = [];
  await drainThroughHandler(
    jobsQueue,
    async (event: SQSEvent, context) => {
      const jobs = event.Records.map((r) => JSON.parse(r.body) as Job);
      seen.push(...jobs);
      if (!jobs.some((j) => j.kind === 'booking-event')) return handler(event, context);
      const [first, second] = await Promise.all([handler(event, context), handler(event, context)]);
      // The message stays only when both deliveries failed (one of them finishing is the job done).
      const failed = new Set((second?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
      return { batchItemFailures: (first?.batchItemFailures ?? []).filter((f) => failed.has(f.itemIdentifier)) };
    },
    { functionName: 'jobs', maxBatches: 200 },
  );
  return seen;
}

/** The `booking.*` notifications of a configuration's bookings published since the last call, by booking ID. */
async function bookingNotifications(configId: string): Promise<Map<string, string[]>> {
  await outboxDrained();
  const messages = await drainQueue(fanout, await messagesIn(fanout), 10_000);
  const byBooking = new Map<string, string[]>();
  for (const m of messages) {
    const type = m.body.type as string;
    if (!type.startsWith('booking.') || m.body.data.object.configuration_id !== configId) continue;
    const id = m.body.data.object.booking_id as string;
    byBooking.set(id, [...(byBooking.get(id) ?? []), type].sort());
  }
  return byBooking;
}

const eventsOn = async (grantId: string, from: number, to: number) =>
  (await api.get(`/v3/grants/${grantId}/events?calendar_id=primary&start=${from}&end=${to}`)).body.data as {
    id: string;
    status: string;
    when: { start_time: number; end_time: number };
  }[];

/**
 * The invariants: every slot lock of the organizer's days is held by a live booking at that time;
 * the booking holds its days (when live) and has its event, in place (or says it failed); the
 * calendar has exactly that one event (none once cancelled).
 */
async function expectConsistent(grantId: string, bookingId: string, day: number) {
  const b = (await getBooking(bookingId as BookingId))!;
  expect(b, 'the booking exists').toBeDefined();
  for (const { day: d, slots } of await bookedDays(grantId as GrantId, daysOf(day, day + DAY))) {
    for (const [holder, [s, e]] of Object.entries(slots)) {
      const owner = await getBooking(holder as BookingId);
      expect(
        owner && owner.status !== 'cancelled'
          ? [owner.start, owner.end]
          : `no live booking for the lock of ${holder} on ${d}`,
      ).toEqual([s, e]);
    }
    if (b.status !== 'cancelled' && daysOf(b.start, b.end).includes(d))
      expect(slots[b.id], 'a live booking holds its time').toEqual([b.start, b.end]);
  }
  expect(b.event_status).not.toBe('pending');
  const events = await eventsOn(grantId, day, day + DAY);
  if (b.status === 'cancelled') {
    expect(events).toEqual([]);
  } else {
    expect(b.event_status).toBe('synced');
    expect(events.map((e) => [e.id, e.when.start_time])).toEqual([[b.event_id, b.start]]);
  }
  return b;
}

// ---- the tests -------------------------------------------------------------------------------

const POINTS: Point[] = ['after-commit', 'during-provider', 'after-provider'];

describe('a booking killed between its steps', () => {
  it.each(POINTS)(
    'create, killed %s: the job creates the one event and announces it once',
    async (point) => {
      const { organizer, config, provider } = await configuration();
      const day = midnight(2 + POINTS.indexOf(point));
      const start = day + 10 * 3600;
      const crashed = inject(point, provider, 'create');
      const created = await book(config.id, start);
      vi.restoreAllMocks();
      expect(crashed()).toBe(true);
      // The change committed: the answer is the booking, its event still to come.
      expect(created.status, created.text).toBe(201);
      expect(created.body.data).toMatchObject({ status: 'booked', event_status: 'pending', event_id: '' });
      const id = created.body.data.booking_id as string;
      // Meanwhile the time is taken, by the booking.
      expect((await book(config.id, start)).status).toBe(409);
      expect((await guestApi.get(bookingPath(config.id, id))).body.data).toMatchObject({ event_status: 'pending' });

      const jobs = await runJobs();
      expect(
        jobs.filter((j) => j.kind === 'booking-event').map((j) => (j as { booking_id: string }).booking_id),
      ).toEqual([id]);
      const b = await expectConsistent(organizer.id, id, day);
      expect(b.status).toBe('booked');
      expect((await guestApi.get(bookingPath(config.id, id))).body.data).toMatchObject({
        event_status: 'synced',
        event_id: b.event_id,
      });
      expect((await bookingNotifications(config.id)).get(id)).toEqual(['booking.created']);
      // Redelivered once more, later: nothing changes.
      await (
        await import('#shared/scheduling/booking-events')
      ).runBookingEventJob({ kind: 'booking-event', booking_id: id, version: 1 });
      await expectConsistent(organizer.id, id, day);
      expect((await bookingNotifications(config.id)).get(id)).toBeUndefined();
    },
    60_000,
  );

  /** A configuration and a booking on its own day (`dayOffset` days ahead), its create settled and its notification read: where reschedule and cancel start. */
  async function settledBooking(dayOffset: number) {
    const { organizer, config, provider } = await configuration();
    const day = midnight(dayOffset);
    const start = day + 10 * 3600;
    const created = await book(config.id, start);
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.booking_id as string;
    await runJobs();
    await bookingNotifications(config.id);
    return { organizer, config, provider, day, start, id };
  }

  it.each(POINTS)(
    'reschedule, killed %s: the job moves the one event, the old time is free, one booking.rescheduled',
    async (point) => {
      const { organizer, config, provider, day, start, id } = await settledBooking(6 + POINTS.indexOf(point));

      const crashed = inject(point, provider, 'update');
      const moved = await guestApi.patch(bookingPath(config.id, id), {
        start_time: start + 3600,
        end_time: start + 5400,
      });
      vi.restoreAllMocks();
      expect(crashed()).toBe(true);
      expect(moved.status, moved.text).toBe(200);
      expect(moved.body.data).toMatchObject({ start_time: start + 3600, event_status: 'pending' });
      // A second change waits for the first to reach the calendar.
      expect(
        (await guestApi.patch(bookingPath(config.id, id), { start_time: start + 7200, end_time: start + 9000 })).status,
      ).toBe(409);
      // The new time is taken at once, by the booking (its locks moved in the change's transaction).
      expect((await book(config.id, start + 3600)).status).toBe(409);

      await runJobs();
      const b = await expectConsistent(organizer.id, id, day);
      expect([b.start, b.end]).toEqual([start + 3600, start + 5400]);
      expect((await bookingNotifications(config.id)).get(id)).toEqual(['booking.rescheduled']);
      const again = await book(config.id, start);
      expect(again.status, again.text).toBe(201);
      await runJobs();
    },
    60_000,
  );

  it.each(POINTS)(
    'cancel, killed %s: the time is free at once, the job deletes the event, one booking.cancelled',
    async (point) => {
      const { organizer, config, provider, day, start, id } = await settledBooking(10 + POINTS.indexOf(point));

      const crashed = inject(point, provider, 'delete');
      const cancelled = await guestApi.request('DELETE', bookingPath(config.id, id), {
        body: { cancellation_reason: 'Killed' },
      });
      vi.restoreAllMocks();
      expect(crashed()).toBe(true);
      expect(cancelled.status, cancelled.text).toBe(200);
      expect(cancelled.body.data).toMatchObject({ status: 'cancelled', event_status: 'pending' });
      // The slot locks went with the cancellation's transaction, before the job ran.
      expect((await bookedDays(organizer.id as GrantId, daysOf(start, start + 1800)))[0]!.slots[id]).toBeUndefined();

      await runJobs();
      const b = await expectConsistent(organizer.id, id, day);
      expect(b).toMatchObject({ status: 'cancelled', event_status: 'synced', cancellation_reason: 'Killed' });
      // Once its event is gone, the time is bookable again.
      const rebooked = await book(config.id, start);
      expect(rebooked.status, rebooked.text).toBe(201);
      await runJobs();
      await expectConsistent(organizer.id, rebooked.body.data.booking_id, day);
      const announced = await bookingNotifications(config.id);
      expect(announced.get(id)).toEqual(['booking.cancelled']);
      expect(announced.get(rebooked.body.data.booking_id)).toEqual(['booking.created']);
    },
    60_000,
  );
});

describe('a provider that refuses for good', () => {
  it('a create refused in the job cancels the booking, frees its time and says why; never a silent lock', async () => {
    const { organizer, config, provider } = await configuration();
    const day = midnight(14);
    const start = day + 10 * 3600;
    crashInProvider(provider, 'create');
    const created = await book(config.id, start);
    expect(created.body.data).toMatchObject({ event_status: 'pending' });
    const id = created.body.data.booking_id as string;
    vi.spyOn(provider, 'create').mockRejectedValue(new NotFoundError("Calendar 'primary' not found"));

    await runJobs();
    vi.restoreAllMocks();
    const view = (await guestApi.get(bookingPath(config.id, id))).body.data;
    expect(view).toMatchObject({
      status: 'cancelled',
      event_status: 'failed',
      event_error: "Calendar 'primary' not found",
      event_id: '',
    });
    await expectConsistent(organizer.id, id, day);
    expect((await bookedDays(organizer.id as GrantId, daysOf(start, start + 1800)))[0]!.slots[id]).toBeUndefined();
    expect((await bookingNotifications(config.id)).get(id)).toEqual(['booking.cancelled']);
    const again = await book(config.id, start);
    expect(again.status, again.text).toBe(201);
    await runJobs();
  }, 60_000);

  it('a create refused inline answers the refusal, and the time stays free', async () => {
    const { organizer, config, provider } = await configuration();
    const day = midnight(15);
    const start = day + 10 * 3600;
    vi.spyOn(provider, 'create').mockRejectedValueOnce(new NotFoundError("Calendar 'primary' not found"));
    const refused = await book(config.id, start);
    vi.restoreAllMocks();
    expect(refused.status).toBe(404);
    expect(refused.body.error.message).toMatch(/Calendar 'primary' not found/);
    await runJobs();
    expect(await eventsOn(organizer.id, day, day + DAY)).toEqual([]);
    expect(
      Object.keys((await bookedDays(organizer.id as GrantId, [daysOf(start, start + 1800)[0]!]))[0]!.slots),
    ).toEqual([]);
    expect([...(await bookingNotifications(config.id)).values()]).toEqual([]);
    expect((await book(config.id, start)).status).toBe(201);
    await runJobs();
  }, 60_000);
});

describe('the events contract: create with an idempotency key', () => {
  it('gives one event for one key, however many creates run at once, each answered with it', async () => {
    const { organizer, provider } = await configuration();
    const grant = (await getGrant(applicationId as ApplicationId, organizer.id as GrantId))!;
    const day = midnight(16);
    const body = { title: 'Keyed', when: { start_time: day + 9 * 3600, end_time: day + 10 * 3600 } };
    const key = `key-${organizer.id}@agents.test`;
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => provider.create(grant, 'primary', body, false, key)),
    );
    expect(new Set(answers.map((e) => e.id)).size).toBe(1);
    expect(answers[0]!.ical_uid).toBe(key);
    expect((await eventsOn(organizer.id, day, day + DAY)).map((e) => e.id)).toEqual([answers[0]!.id]);
    // Without a key, each create is an event of its own.
    await provider.create(grant, 'primary', body, false);
    expect(await eventsOn(organizer.id, day, day + DAY)).toHaveLength(2);
  });
});
