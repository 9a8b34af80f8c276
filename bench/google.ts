import { startGoogleFake, type GoogleFake } from '../scripts/local-stack/google/server';
import { startStack } from '../scripts/local-stack/index';
import type { Gateway } from '../test/support/gateway';
import { decodeBatchAnswer, encodeBatch } from '#shared/google/batch';
import { inPool } from '#shared/pool';
import { rng, scaled } from './lib';
import {
  answerMeasurer,
  DAY,
  iso,
  lagsOf,
  mailHtml,
  mailText,
  meetingTimes,
  printAnswers,
  printAvailability,
  printLags,
  startPipeline,
  waitUntil,
  type AnswerCase,
  type Counts,
  type Measured,
} from './live-provider';

/**
 * Provider A: google grants answered live from Gmail and Calendar (shared/google/), against the local
 * Google fake (scripts/local-stack/google/server.ts) on loopback. One run, three parts:
 *   1. Answer time ÷ the bare provider calls (target ≤ 1.2), for GET messages?limit=50 (the list
 *      and one batch of 50 gets; and beside it against a baseline without batches), GET one
 *      message, GET a week of events (expanded) and GET calendars, the fake answering each call after PROVIDER_MS: ours through the gateway of the tests
 *      (test/support/gateway.ts: serverless.yml's routes, the event API Gateway builds, the real
 *      handler in this process), in process (`invoke`, as the other suites call their handlers) and
 *      over loopback HTTP (which adds the test gateway's response-schema check); the baseline: the
 *      same Google calls our code makes for that request (shared/google/messages.ts, gmail-listing.ts,
 *      events.ts: the same methods, parameters, order and concurrency; their number checked at the
 *      fake), made with `fetch` and the grant's access token. Runs interleaved, the order rotating.
 *   2. Availability of 5 google participants over 30 days (collective): POST /v3/calendars/availability
 *      against the bare free/busy calls (one POST /calendar/v3/freeBusy per participant, at once),
 *      and the provider calls per request counted at the fake.
 *   3. Change → webhook: a message delivered to a watched mailbox (the connector's Pub/Sub topic, as
 *      test/integration/google-push.test.ts sets it up), the fake's Pub/Sub pushing it over HTTP to
 *      the push function's route (functions/push/routes.ts), the pushed sync run (functions/mail-sync),
 *      the table's stream read by the outbox consumer, then fan-out and delivery to a local receiver;
 *      from `deliver` to the receipt of its message.created (and to its arrival at the fan-out
 *      worker). Target p95 ≤ 5 s. Beside it, a grant of an application without a topic: only its
 *      scheduled runs (SYNC_INTERVALS.active apart) find what was delivered.
 */
const MESSAGES = Number(process.env.BENCH_GOOGLE_MESSAGES ?? scaled(200, 5));
/** Events of the part-1 grant's primary calendar, over the 30 days. */
const EVENTS = scaled(200, 10);
const RUNS = Number(process.env.BENCH_GOOGLE_RUNS ?? scaled(200, 3));
const WARM_UP = scaled(20, 1);
const LIST_LIMIT = 50;
/** Gets in flight at once of the second baseline (a listing without batches: the gets one by one, 10 at once). */
const GET_CONCURRENCY = 10;
/**
 * Gmail quota units per account per minute for this run. Google's default is 15,000 (250 a second):
 * one 50-message listing costs 255, so a real account answers about one such listing a second, and
 * our client paces its calls to that (shared/google/limits.ts). The bench repeats listings back to
 * back to time our overhead, not Google's quota: it raises the pace (GOOGLE_GMAIL_UNITS_PER_MINUTE).
 */
const GMAIL_UNITS_PER_MINUTE = '100000000';
/** Our page size when none is asked for (schemas/common.ts Limit), passed to Google as maxResults. */
const DEFAULT_LIMIT = 50;
const PUSHED = Number(process.env.BENCH_GOOGLE_PUSHED ?? scaled(50, 2));
const SPACING_MS = 200;
/** Deliveries to the grant without push (its scheduled runs only); none at smoke size: the interval is printed as the bound. */
const UNPUSHED = Number(process.env.BENCH_GOOGLE_UNPUSHED ?? scaled(6, 0));
const PARTICIPANTS = 5;
const PARTICIPANT_EVENTS = scaled(40, 10);
const AVAILABILITY_RUNS = Number(process.env.BENCH_GOOGLE_AVAILABILITY_RUNS ?? scaled(100, 3));
/**
 * Milliseconds the fake waits before answering each call: a fixed per-call latency, as far as Google's
 * APIs are from a Lambda (tens of ms; on loopback the fake answers in under one, which would make the
 * ratio measure our DynamoDB reads against nothing). 0 at smoke size; BENCH_GOOGLE_PROVIDER_MS sets it.
 */
const PROVIDER_MS = Number(process.env.BENCH_GOOGLE_PROVIDER_MS ?? scaled(30, 0));
/** How long a wait for the pipeline may take before the run fails, naming what never arrived. */
const WAIT_MS = scaled(120_000, 30_000);
const TOPIC = 'projects/switchboard-bench/topics/gmail-changes';
const PUSHER = 'gmail-push@switchboard-bench.iam.gserviceaccount.com';
/** The Google methods counted at the fake (each answered call, by its Discovery id); the rest as `other`. */
const COUNTED = [
  'gmail.users.messages.list',
  'gmail.users.messages.get',
  'calendar.calendarList.list',
  'calendar.calendarList.get',
  'calendar.events.list',
  'calendar.freebusy.query',
];

/**
 * Counts the answered calls of each method at the fake: a fault that changes nothing (no status, the
 * answer passed through; delayed by PROVIDER_MS only), never spent, per method; one for every other
 * method last (the fake takes the first fault that matches).
 */
function countCalls(fake: GoogleFake): Counts {
  const counts: Counts = new Map();
  const counter = (name: string) => (body: unknown) => {
    counts.set(name, (counts.get(name) ?? 0) + 1);
    return body;
  };
  for (const method of COUNTED)
    fake.inject({ method, times: Number.POSITIVE_INFINITY, delayMs: PROVIDER_MS, mangleAnswer: counter(method) });
  // A batch request is counted as one more call; its parts are delayed each, all at once (not the batch again).
  fake.inject({ method: 'batch', times: Number.POSITIVE_INFINITY, mangleAnswer: counter('gmail.batch') });
  fake.inject({ times: Number.POSITIVE_INFINITY, delayMs: PROVIDER_MS, mangleAnswer: counter('other') });
  return counts;
}

/** A mail as it arrives from outside: text and HTML alternatives, about 2 KB. */
function mail(to: string, i: number, tag: string): string {
  const text = mailText(i);
  return [
    `From: Sender ${i % 17} <sender${i % 17}@example.org>`,
    `To: ${to}`,
    `Subject: ${tag} ${i}`,
    `Date: ${new Date().toUTCString()}`,
    `Message-ID: <${tag.replace(/\W/g, '')}.${i}.${process.pid}@example.org>`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/alternative; boundary="bench-boundary"',
    '',
    '--bench-boundary',
    'Content-Type: text/plain; charset=utf-8',
    '',
    text,
    '--bench-boundary',
    'Content-Type: text/html; charset=utf-8',
    '',
    mailHtml(text),
    '--bench-boundary--',
    '',
  ].join('\r\n');
}

/** `count` events on the primary calendar of `email`, over the 30 days from `from`, on working hours (UTC), 30 to 90 minutes each. */
function seedEvents(fake: GoogleFake, email: string, count: number, from: number, seed: number): void {
  for (const [i, { start, end }] of meetingTimes(count, from, seed).entries()) {
    fake.calendarChangedOutside(email, 'primary', {
      summary: `Meeting ${i}`,
      description: 'Agenda: the figures, the plan, the next steps.',
      start: { dateTime: iso(start) },
      end: { dateTime: iso(end) },
      attendees: [{ email }, { email: `colleague${i % 7}@example.org` }],
    });
  }
}

export async function runGoogleBench(): Promise<void> {
  process.env.GOOGLE_GMAIL_UNITS_PER_MINUTE = GMAIL_UNITS_PER_MINUTE;
  console.log(
    `Gmail quota pacing raised to ${GMAIL_UNITS_PER_MINUTE} units a minute for this run (a real account: 15,000, about one 50-message listing a second)`,
  );
  console.log('\n## Provider A (google): answers from Gmail and Calendar, push → webhook, availability\n');
  const stack = await startStack(`benchgoogle${process.pid}`);
  Object.assign(process.env, stack.env, { LOG_LEVEL: 'warn' });
  const stops: (() => Promise<unknown>)[] = [];
  let fake: GoogleFake | undefined;
  let gateway: Gateway | undefined;
  try {
    const [
      { createApplication },
      { createConnector },
      { connectGrant },
      webhooks,
      { getSyncState },
      { SYNC_INTERVALS },
      { startGateway },
      { handler: jobs },
      { handler: mailSync },
      { handler: outbox },
      { handler: fanout },
      { handler: delivery },
      { routes: pushRoutes },
      { dynamo },
    ] = await Promise.all([
      import('#shared/applications/service'),
      import('#shared/connectors/service'),
      import('#shared/accounts/connected'),
      import('#shared/webhooks/service'),
      import('#shared/db/mail-sync'),
      import('#shared/services/mail-sync'),
      import('../test/support/gateway'),
      import('#functions/jobs/handler'),
      import('#functions/mail-sync/handler'),
      import('#functions/outbox/handler'),
      import('#functions/webhook-fanout/handler'),
      import('#functions/webhook-delivery/handler'),
      import('#functions/push/routes'),
      import('#shared/aws/dynamodb'),
    ]);
    /** The push endpoint of an application, by the push function's own route (the ID in the path, or in the query). */
    const pushPath = (applicationId: string) => {
      const path: string = pushRoutes.googlePush.path;
      return path.includes('{application_id}')
        ? path.replace('{application_id}', encodeURIComponent(applicationId))
        : `${path}?application_id=${encodeURIComponent(applicationId)}`;
    };
    type ApplicationId = import('#shared/ids').ApplicationId;
    fake = await startGoogleFake();
    const google = fake;
    const counts = countCalls(google);
    gateway = await startGateway();
    const api = gateway;
    // The functions' DynamoDB requests, by command, while one of our requests is counted (what our answer adds).
    const { measure } = answerMeasurer(api, counts, dynamo, 'bench-google-table-calls');

    /** An application with a google connector on the fake (and the Pub/Sub topic, when given). */
    const application = async (name: string, push = false) => {
      const app = await createApplication({ name });
      await createConnector({ applicationId: app.application_id as ApplicationId, credential: 'api_key' }, {
        provider: 'google',
        settings: {
          client_id: 'client-a',
          client_secret: 'secret-a',
          api_base_url: google.url,
          ...(push ? { topic_name: TOPIC, pubsub_service_account: PUSHER } : {}),
        },
      } as never);
      return app;
    };
    /** A google grant of `app` whose account is a new user of the fake (test/support/google.ts). */
    let users = 0;
    const connect = async (app: { application_id: string }, label: string) => {
      const email = `${label}-${++users}-${process.pid}@gmail.test`;
      const accessToken = `token-of-${email}`;
      google.addUser({ email, accessToken });
      const { grant } = await connectGrant({
        applicationId: app.application_id as ApplicationId,
        provider: 'google',
        email,
        providerUserId: `sub-${email}`,
        scope: ['https://www.googleapis.com/auth/gmail.modify', 'https://www.googleapis.com/auth/calendar'],
        settings: {},
        tokens: { source: 'oauth', access_token: accessToken, refresh_token: `refresh-${email}`, expires_in: 3600 },
      } as never);
      return { grant, email, accessToken };
    };

    /** A call of provider A made bare: `fetch` with the access token, the JSON answer read. */
    const bare = async <T>(token: string, path: string, body?: unknown): Promise<T> => {
      const answer = await fetch(`${google.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const parsed = (await answer.json()) as T;
      if (!answer.ok) throw new Error(`bare ${path}: ${answer.status} ${JSON.stringify(parsed)}`);
      return parsed;
    };

    /** Gmail calls made bare as one batch request (POST /batch/gmail/v1), each part's JSON read. */
    const bareBatch = async (token: string, targets: readonly string[]): Promise<void> => {
      const { contentType, body } = encodeBatch(targets.map((target) => ({ method: 'GET', target })));
      const answer = await fetch(`${google.url}/batch/gmail/v1`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': contentType },
        body,
      });
      const parts = decodeBatchAnswer(answer.headers.get('content-type'), await answer.text());
      if (!answer.ok || parts.size !== targets.length)
        throw new Error(`bare batch: ${answer.status}, ${parts.size} parts`);
      for (const part of parts.values()) {
        if (!part.ok) throw new Error(`bare batch part: ${part.status}`);
        await part.json();
      }
    };

    // 1. Answer time ÷ the bare provider calls.
    const tomorrow = (Math.floor(Date.now() / 1000 / DAY) + 1) * DAY;
    const appA = await application('bench google');
    const reader = await connect(appA, 'reader');
    const seedStart = performance.now();
    const delivered: string[] = [];
    for (let i = 0; i < MESSAGES; i++) delivered.push(google.deliver(reader.email, mail(reader.email, i, 'Report')).id);
    seedEvents(google, reader.email, EVENTS, tomorrow, 7);
    console.log(
      `seeded ${MESSAGES} messages (about ${(Buffer.byteLength(mail(reader.email, 0, 'Report')) / 1024).toFixed(1)} KB each) and ${EVENTS} events over 30 days at the fake in ${((performance.now() - seedStart) / 1000).toFixed(1)} s\n`,
    );
    const grantPath = `/v3/grants/${reader.grant.id}`;
    const token = reader.accessToken;
    const oneMessage = delivered[Math.floor(delivered.length / 2)]!;
    const weekStart = tomorrow + 7 * DAY;
    const weekEnd = weekStart + 7 * DAY;
    const primaryEvents = async () => {
      const calendar = await bare<{ id: string }>(token, '/calendar/v3/users/me/calendarList/primary');
      await bare(
        token,
        `/calendar/v3/calendars/${encodeURIComponent(calendar.id)}/events?maxResults=${DEFAULT_LIMIT}&timeMin=${encodeURIComponent(iso(weekStart))}&timeMax=${encodeURIComponent(iso(weekEnd))}&singleEvents=true&orderBy=startTime`,
      );
    };
    const cases: AnswerCase[] = [
      {
        label: `GET messages?limit=${LIST_LIMIT}`,
        ours: (via) => via(appA, 'GET', `${grantPath}/messages?limit=${LIST_LIMIT}`),
        bare: async () => {
          const page = await bare<{ messages?: { id: string }[] }>(
            token,
            `/gmail/v1/users/me/messages?maxResults=${LIST_LIMIT}`,
          );
          await bareBatch(
            token,
            (page.messages ?? []).map(({ id }) => `/gmail/v1/users/me/messages/${id}?format=full`),
          );
        },
      },
      {
        label: `GET messages?limit=${LIST_LIMIT}, bare without a batch`,
        ours: (via) => via(appA, 'GET', `${grantPath}/messages?limit=${LIST_LIMIT}`),
        bare: async () => {
          const page = await bare<{ messages?: { id: string }[] }>(
            token,
            `/gmail/v1/users/me/messages?maxResults=${LIST_LIMIT}`,
          );
          await inPool(page.messages ?? [], GET_CONCURRENCY, async ({ id }) => {
            await bare(token, `/gmail/v1/users/me/messages/${id}?format=full`);
          });
        },
      },
      {
        label: 'GET messages/{message_id}',
        ours: (via) => via(appA, 'GET', `${grantPath}/messages/${oneMessage}`),
        bare: async () => void (await bare(token, `/gmail/v1/users/me/messages/${oneMessage}?format=full`)),
      },
      {
        label: 'GET events?calendar_id=primary, one week, expanded',
        ours: (via) =>
          via(
            appA,
            'GET',
            `${grantPath}/events?calendar_id=primary&start=${weekStart}&end=${weekEnd}&expand_recurring=true`,
          ),
        bare: primaryEvents,
      },
      {
        label: 'GET calendars',
        ours: (via) => via(appA, 'GET', `${grantPath}/calendars`),
        bare: async () => void (await bare(token, `/calendar/v3/users/me/calendarList?maxResults=${DEFAULT_LIMIT}`)),
      },
    ];
    const answers: Measured[] = [];
    for (const c of cases) answers.push(await measure(c, RUNS, WARM_UP));
    printAnswers(
      answers,
      `${RUNS} runs each after ${WARM_UP} warm-up, bare, in process and over HTTP interleaved; ratio: p50 ours ÷ p50 bare; calls counted at the fake for one request${PROVIDER_MS ? `; the fake answers each call after ${PROVIDER_MS} ms (BENCH_GOOGLE_PROVIDER_MS)` : '; the fake answers on loopback at once'}`,
    );

    // 2. Availability of 5 google participants over 30 days.
    const people: Awaited<ReturnType<typeof connect>>[] = [];
    for (let n = 0; n < PARTICIPANTS; n++) {
      const person = await connect(appA, `person${n}`);
      seedEvents(google, person.email, PARTICIPANT_EVENTS, tomorrow, 100 + n);
      people.push(person);
    }
    const window = { start_time: tomorrow, end_time: tomorrow + 30 * DAY };
    const availabilityBody = {
      ...window,
      duration_minutes: 30,
      interval_minutes: 30,
      participants: people.map((p) => ({
        email: p.email,
        open_hours: [{ days: [1, 2, 3, 4, 5], timezone: 'UTC', start: '8:00', end: '18:00' }],
      })),
      availability_rules: { availability_method: 'collective' },
    };
    const freeBusyOf = (p: (typeof people)[number]) =>
      bare(p.accessToken, '/calendar/v3/freeBusy', {
        timeMin: iso(window.start_time),
        timeMax: iso(window.end_time),
        items: [{ id: 'primary' }],
      });
    const slots = async () => {
      const answer = await api.invoke({
        method: 'POST',
        path: '/v3/calendars/availability',
        headers: { authorization: `Bearer ${appA.api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify(availabilityBody),
      });
      return typeof answer === 'object' && answer.body
        ? (JSON.parse(answer.body) as { data: { time_slots: unknown[] } }).data.time_slots.length
        : NaN;
    };
    const availability = await measure(
      {
        label: `POST calendars/availability, ${PARTICIPANTS} × ${PARTICIPANT_EVENTS} events, 30 days, collective`,
        ours: (via) => via(appA, 'POST', '/v3/calendars/availability', availabilityBody),
        bare: async () => void (await Promise.all(people.map(freeBusyOf))),
      },
      AVAILABILITY_RUNS,
      WARM_UP,
    );
    printAvailability(
      availability,
      await slots(),
      `bare: ${PARTICIPANTS} POST /calendar/v3/freeBusy at once`,
      AVAILABILITY_RUNS,
    );

    // 3. Change → webhook through the push, and without it (the workers run from here on).
    // The platform around the functions, as Lambda runs it (bench/live-provider.ts startPipeline).
    const pipeline = await startPipeline(stack.env, { jobs, mailSync, outbox, fanout, delivery }, stops);
    const { hookUrl, runs } = pipeline;

    const appB = await application('bench google push', true);
    google.subscribe(TOPIC, { endpoint: `${api.url}${pushPath(appB.application_id)}`, serviceAccount: PUSHER });
    for (const app of [appA, appB])
      await webhooks.createWebhook(
        { applicationId: app.application_id, credential: 'api_key' },
        { webhook_url: hookUrl, trigger_types: ['message.created'] },
      );
    const watched = await connect(appB, 'watched');
    const unwatched = await connect(appA, 'unwatched');
    // Their start-mail-sync jobs run; the first runs take the mailboxes' history IDs (and ask Gmail to watch the first).
    await waitUntil(
      async () =>
        (await getSyncState(watched.grant.id))?.gmail?.watch?.topic === TOPIC &&
        (await getSyncState(unwatched.grant.id))?.gmail?.history_id !== undefined,
      () => 'the grants’ first sync runs (and the watch) not done',
      WAIT_MS,
    );

    const lagOf = (email: string, count: number, momentsMs: number[], tag: string) =>
      lagsOf(
        pipeline,
        count,
        momentsMs,
        (i) => google.deliver(email, mail(email, i, tag)).id,
        tag,
        WAIT_MS + SYNC_INTERVALS.active * 2000,
      );
    const pushesBefore = google.pushes.length;
    const runsBefore = { ...runs };
    const pushed = await lagOf(
      watched.email,
      PUSHED,
      Array.from({ length: PUSHED }, (_, i) => i * SPACING_MS),
      'Pushed',
    );
    await google.pushesSettled();
    const pushes = google.pushes.slice(pushesBefore);
    const pushRuns = { pushed: runs.pushed - runsBefore.pushed, scheduled: runs.scheduled - runsBefore.scheduled };
    const random = rng(11);
    const spreadMs = 2 * SYNC_INTERVALS.active * 1000;
    const unpushed = UNPUSHED
      ? await lagOf(
          unwatched.email,
          UNPUSHED,
          Array.from({ length: UNPUSHED }, () => random() * spreadMs).sort((a, b) => a - b),
          'Unpushed',
        )
      : undefined;
    printLags({
      what: `(${PUSHED} messages delivered ${SPACING_MS} ms apart to a watched mailbox)`,
      pushed,
      pushesText: `${pushes.length} pushes (answered ${[...new Set(pushes.map((p) => p.status))].join(', ') || 'none'}); ${pushRuns.pushed} pushed runs (with those that found a run under way and came back), ${pushRuns.scheduled} scheduled`,
      ...(unpushed ? { unpushed: { ...unpushed, count: UNPUSHED, spreadMs } } : {}),
      intervalSeconds: SYNC_INTERVALS.active,
      setting:
        'one process: the gateway, the push, mail-sync, outbox, fan-out and delivery functions in process, 2 pollers per queue, the jobs worker; DynamoDB Local, the SQS emulator and the Google fake on loopback; the stream relay rests 50 ms when a shard had nothing new',
    });
    const violations = [...google.requestViolations, ...google.responseViolations];
    if (violations.length) throw new Error(`the Google fake recorded violations:\n  ${violations.join('\n  ')}`);
  } finally {
    for (const stop of stops.reverse()) await stop().catch((error) => console.error(error));
    await gateway?.close();
    await fake?.close();
    await stack.stop();
  }
}
