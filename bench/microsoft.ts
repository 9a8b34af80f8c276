import { startStack } from '../scripts/local-stack/index';
import type { Delivery } from '../scripts/local-stack/microsoft/mail';
import { startGraphFake, type GraphFake } from '../scripts/local-stack/microsoft/server';
import type { Gateway } from '../test/support/gateway';
import { GRAPH_CALENDAR_SELECT, GRAPH_EVENT_SELECT, METADATA_EXPAND } from '#shared/microsoft/graph-event';
import { GRAPH_ATTACHMENT_SELECT, GRAPH_MESSAGE_SELECT } from '#shared/microsoft/graph-message';
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
 * Provider B: microsoft grants answered live from Microsoft Graph (shared/microsoft/), against the
 * local Graph fake (scripts/local-stack/microsoft/server.ts) on loopback; the same run and figures as
 * provider A's (bench/google.ts, sharing bench/live-provider.ts):
 *   1. Answer time ÷ the bare provider calls (target ≤ 1.2), for GET messages?limit=50 (the list, and
 *      one `$batch` of the attachment lists of its messages that have attachments; and beside it
 *      against a baseline without batches), GET one message (one `$batch`: the message and its
 *      attachment list), GET a week of events (expanded: the default calendar, then its calendarView)
 *      and GET calendars, the fake answering each HTTP request after PROVIDER_MS (a `$batch` once):
 *      ours through the test gateway, in process and over loopback HTTP; the baseline: the same Graph
 *      calls our code makes for that request (shared/microsoft/messages.ts, events.ts, calendars.ts:
 *      the same paths, `$select`, `Prefer` headers, batches and order; their number checked at the
 *      fake), made with `fetch` and the grant's access token. Runs interleaved, the order rotating.
 *   2. Availability of 5 microsoft participants over 30 days (collective): POST
 *      /v3/calendars/availability against the bare free/busy calls (one POST
 *      …/calendar/getSchedule per participant, at once), the provider calls per request counted.
 *   3. Change → webhook: a message delivered to a mailbox whose grant holds a Graph subscription (the
 *      runs keep it, with this deployment's PUBLIC_BASE_URL: shared/microsoft/subscriptions.ts), the
 *      fake POSTing Graph's change notification to the push function's route (POST /v3/push/microsoft),
 *      the pushed sync run reading the mailbox's delta (functions/mail-sync), the table's stream read
 *      by the outbox consumer, then fan-out and delivery to a local receiver; from `deliver` to the
 *      receipt of its message.created (and to its arrival at the fan-out worker). Target p95 ≤ 5 s.
 *      Beside it, a grant without a subscription (the deployment's public URL gone: its run deletes
 *      the subscription): only its scheduled runs (SYNC_INTERVALS.active apart) find what was delivered.
 */
const MESSAGES = Number(process.env.BENCH_MICROSOFT_MESSAGES ?? scaled(200, 5));
/** One message in ATTACHED_EVERY carries a file attachment (a listing then reads those messages' attachment lists). */
const ATTACHED_EVERY = 5;
/** Events of the part-1 grant's default calendar, over the 30 days. */
const EVENTS = scaled(200, 10);
const RUNS = Number(process.env.BENCH_MICROSOFT_RUNS ?? scaled(200, 3));
const WARM_UP = scaled(20, 1);
const LIST_LIMIT = 50;
/** Gets in flight at once of the second baseline (a listing without batches: the attachment lists one by one, 10 at once). */
const GET_CONCURRENCY = 10;
/** Graph's most requests in one `$batch`. */
const MAX_BATCH = 20;
/**
 * Graph requests per mailbox per 10 minutes for this run. Outlook's limit is 10,000, which our client
 * keeps per mailbox (shared/microsoft/limits.ts); the bench repeats requests of one grant back to back
 * (about 12,000 in part 1) to time our overhead, not the limit: it raises it
 * (MICROSOFT_GRAPH_REQUESTS_PER_10_MINUTES).
 */
const GRAPH_REQUESTS_PER_10_MINUTES = '100000000';
/** Our page size when none is asked for (schemas/common.ts Limit), passed to Graph as `$top`. */
const DEFAULT_LIMIT = 50;
const PUSHED = Number(process.env.BENCH_MICROSOFT_PUSHED ?? scaled(50, 2));
const SPACING_MS = 200;
/** Deliveries to the grant without a subscription (its scheduled runs only); none at smoke size: the interval is printed as the bound. */
const UNPUSHED = Number(process.env.BENCH_MICROSOFT_UNPUSHED ?? scaled(6, 0));
const PARTICIPANTS = 5;
const PARTICIPANT_EVENTS = scaled(40, 10);
const AVAILABILITY_RUNS = Number(process.env.BENCH_MICROSOFT_AVAILABILITY_RUNS ?? scaled(100, 3));
/**
 * Milliseconds the fake waits before answering each HTTP request (GraphFakeOptions.latencyMs; a
 * `$batch` once): as far as Graph is from a Lambda (tens of ms; on loopback the fake answers in about
 * one, which would make the ratio measure our DynamoDB reads against nothing). 0 at smoke size;
 * BENCH_MICROSOFT_PROVIDER_MS sets it.
 */
const PROVIDER_MS = Number(process.env.BENCH_MICROSOFT_PROVIDER_MS ?? scaled(30, 0));
/** How long a wait for the pipeline may take before the run fails, naming what never arrived. */
const WAIT_MS = scaled(120_000, 30_000);
/** Every call of ours asks for immutable IDs (shared/microsoft/client.ts); so do the bare ones. */
const IMMUTABLE_IDS = 'IdType="ImmutableId"';
/** Event reads ask for text bodies (shared/microsoft/events.ts), with immutable IDs. */
const PREFER_EVENTS = `outlook.body-content-type="text", ${IMMUTABLE_IDS}`;
const SCOPES = ['Mail.ReadWrite', 'Mail.Send', 'Calendars.ReadWrite', 'offline_access'];
/** A user's mailbox path under the version: `/v1.0/me/…` or `/v1.0/users/{id}/…`. */
const MAILBOX = String.raw`^/v1\.0/(?:me|users/[^/]+)`;
/** The Graph calls counted at the fake (each answered call, by its path), the rest as `other`. */
const COUNTED: [name: string, method: string, path: RegExp][] = [
  ['graph.messages.list', 'GET', new RegExp(`${MAILBOX}/(?:mailFolders/[^/]+/)?messages$`)],
  ['graph.messages.get', 'GET', new RegExp(`${MAILBOX}/messages/[^/]+$`)],
  ['graph.attachments.list', 'GET', new RegExp(`${MAILBOX}/messages/[^/]+/attachments$`)],
  ['graph.calendar.get', 'GET', new RegExp(`${MAILBOX}/calendar$`)],
  ['graph.calendars.list', 'GET', new RegExp(`${MAILBOX}/calendars$`)],
  ['graph.calendarView', 'GET', new RegExp(`${MAILBOX}/(?:calendar|calendars/[^/]+)/calendarView$`)],
  ['graph.getSchedule', 'POST', new RegExp(`${MAILBOX}/calendar/getSchedule$`)],
];

/**
 * Counts the answered calls of each kind at the fake: a fault that changes nothing (no status, the
 * answer passed through), never spent, per kind; one for the `$batch` envelope (its members are
 * counted each, by their kinds), and one for every other call last (the fake takes the first fault
 * that matches). The fake's latency is its own option, not a fault's delay.
 */
function countCalls(fake: GraphFake): Counts {
  const counts: Counts = new Map();
  const counter = (name: string) => (body: unknown) => {
    counts.set(name, (counts.get(name) ?? 0) + 1);
    return body;
  };
  for (const [name, method, path] of COUNTED)
    fake.inject({ method, path, times: Number.POSITIVE_INFINITY, mangleAnswer: counter(name) });
  fake.inject({
    method: 'POST',
    path: /^\/v1\.0\/\$batch$/,
    times: Number.POSITIVE_INFINITY,
    mangleAnswer: counter('graph.$batch'),
  });
  fake.inject({ times: Number.POSITIVE_INFINITY, mangleAnswer: counter('graph.other') });
  return counts;
}

/** A path and its OData query, encoded as our client encodes it (`$` and `,` left readable). */
function withQuery(path: string, query: Record<string, string | number | readonly string[]>): string {
  const encode = (value: string) => encodeURIComponent(value).replace(/%24/g, '$').replace(/%2C/gi, ',');
  const pairs = Object.entries(query).map(
    ([name, value]) => `${encode(name)}=${encode(Array.isArray(value) ? value.join(',') : String(value))}`,
  );
  return `${path}?${pairs.join('&')}`;
}

/** A mail as it arrives from outside: text and HTML alternatives, about 2 KB; one in ATTACHED_EVERY with a 4 KB PDF. */
function mail(to: string, i: number, tag: string): Delivery {
  const text = mailText(i);
  return {
    from: { name: `Sender ${i % 17}`, address: `sender${i % 17}@example.org` },
    to,
    subject: `${tag} ${i}`,
    text,
    html: mailHtml(text),
    ...(i % ATTACHED_EVERY === 0
      ? {
          attachments: [
            { name: `figures-${i}.pdf`, contentType: 'application/pdf', content: Buffer.alloc(4096, `%PDF-1.4 ${i} `) },
          ],
        }
      : {}),
  };
}

/** `count` events on the default calendar of `email`, over the 30 days from `from`, as provider A's suite seeds them. */
function seedEvents(fake: GraphFake, email: string, count: number, from: number, seed: number): void {
  const at = (seconds: number) => ({ dateTime: iso(seconds).slice(0, 19), timeZone: 'UTC' });
  for (const [i, { start, end }] of meetingTimes(count, from, seed).entries()) {
    fake.changeOutside(email, {
      kind: 'createEvent',
      event: {
        subject: `Meeting ${i}`,
        body: { contentType: 'text', content: 'Agenda: the figures, the plan, the next steps.' },
        start: at(start),
        end: at(end),
        attendees: [
          { emailAddress: { address: email }, type: 'required' },
          { emailAddress: { address: `colleague${i % 7}@example.org` }, type: 'required' },
        ],
      },
    });
  }
}

export async function runMicrosoftBench(): Promise<void> {
  process.env.MICROSOFT_GRAPH_REQUESTS_PER_10_MINUTES = GRAPH_REQUESTS_PER_10_MINUTES;
  console.log(
    `Graph request pacing raised to ${GRAPH_REQUESTS_PER_10_MINUTES} requests per mailbox per 10 minutes for this run (Outlook's limit: 10,000, about 16 a second)`,
  );
  console.log('\n## Provider B (microsoft): answers from Graph mail and calendars, push → webhook, availability\n');
  const stack = await startStack(`benchmicrosoft${process.pid}`);
  Object.assign(process.env, stack.env, { LOG_LEVEL: 'warn' });
  // No public URL (so no subscriptions) until part 3 gives the gateway's: the runs subscribe with it from then on.
  delete process.env.PUBLIC_BASE_URL;
  const stops: (() => Promise<unknown>)[] = [];
  let fake: GraphFake | undefined;
  let gateway: Gateway | undefined;
  try {
    const [
      { createApplication },
      { createConnector },
      { connectGrant },
      webhooks,
      { getSyncState },
      { SYNC_INTERVALS },
      { syncSoon },
      { startGateway },
      { handler: jobs },
      { handler: mailSync },
      { handler: outbox },
      { handler: fanout },
      { handler: delivery },
      { dynamo },
    ] = await Promise.all([
      import('#shared/applications/service'),
      import('#shared/connectors/service'),
      import('#shared/accounts/connected'),
      import('#shared/webhooks/service'),
      import('#shared/db/mail-sync'),
      import('#shared/services/mail-sync'),
      import('#shared/jobs/sync-runs'),
      import('../test/support/gateway'),
      import('#functions/jobs/handler'),
      import('#functions/mail-sync/handler'),
      import('#functions/outbox/handler'),
      import('#functions/webhook-fanout/handler'),
      import('#functions/webhook-delivery/handler'),
      import('#shared/aws/dynamodb'),
    ]);
    type ApplicationId = import('#shared/ids').ApplicationId;
    fake = await startGraphFake({ latencyMs: PROVIDER_MS });
    const graph = fake;
    const counts = countCalls(graph);
    gateway = await startGateway();
    const api = gateway;
    // The functions' DynamoDB requests, by command, while one of our requests is counted (what our answer adds).
    const { measure } = answerMeasurer(api, counts, dynamo, 'bench-microsoft-table-calls');

    /** An application with a microsoft connector on the fake (test/support/microsoft.ts). */
    const app = await createApplication({ name: 'bench microsoft' });
    await createConnector({ applicationId: app.application_id as ApplicationId, credential: 'api_key' }, {
      provider: 'microsoft',
      settings: { client_id: 'client-b', client_secret: 'secret-b', api_base_url: graph.url },
    } as never);
    /** A microsoft grant whose account is a new user of the fake (test/support/microsoft.ts). */
    let users = 0;
    const connect = async (label: string) => {
      const email = `${label}-${++users}-${process.pid}@outlook.test`;
      const accessToken = `token-of-${email}`;
      const { id } = graph.addUser({ email, accessToken });
      const { grant } = await connectGrant({
        applicationId: app.application_id as ApplicationId,
        provider: 'microsoft',
        email,
        providerUserId: id,
        scope: SCOPES,
        settings: {},
        tokens: { source: 'oauth', access_token: accessToken, refresh_token: `refresh-${email}`, expires_in: 3600 },
      });
      return { grant, email, accessToken };
    };

    /** A call of provider B made bare: `fetch` with the access token and immutable IDs asked for, the JSON answer read. */
    const bare = async <T>(token: string, path: string, options: { body?: unknown; prefer?: string } = {}) => {
      const { body, prefer = IMMUTABLE_IDS } = options;
      const answer = await fetch(`${graph.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          prefer,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const parsed = (await answer.json()) as T;
      if (!answer.ok) throw new Error(`bare ${path}: ${answer.status} ${JSON.stringify(parsed)}`);
      return parsed;
    };

    /** Graph GETs made bare as `$batch`es of at most 20 (at once), each member's answer checked; one alone as itself. */
    const bareBatch = async (token: string, urls: readonly string[]): Promise<void> => {
      const batches = Array.from({ length: Math.ceil(urls.length / MAX_BATCH) }, (_, b) =>
        urls.slice(b * MAX_BATCH, (b + 1) * MAX_BATCH),
      );
      await Promise.all(
        batches.map(async (batch) => {
          // One call alone goes as itself, as our client sends it.
          if (batch.length === 1) return void (await bare(token, batch[0]!));
          const answer = await bare<{ responses: { status: number }[] }>(token, '/v1.0/$batch', {
            body: {
              requests: batch.map((url, i) => ({
                id: String(i),
                method: 'GET',
                url: url.slice('/v1.0'.length),
                headers: { prefer: IMMUTABLE_IDS },
              })),
            },
          });
          const failed = answer.responses.filter((r) => r.status !== 200);
          if (answer.responses.length !== batch.length || failed.length)
            throw new Error(`bare batch: ${answer.responses.length} answers, ${failed.length} failed`);
        }),
      );
    };

    // 1. Answer time ÷ the bare provider calls.
    const tomorrow = (Math.floor(Date.now() / 1000 / DAY) + 1) * DAY;
    const reader = await connect('reader');
    const seedStart = performance.now();
    const delivered: string[] = [];
    for (let i = 0; i < MESSAGES; i++) delivered.push(graph.deliver(reader.email, mail(reader.email, i, 'Report')).id);
    seedEvents(graph, reader.email, EVENTS, tomorrow, 7);
    console.log(
      `seeded ${MESSAGES} messages (about ${(Buffer.byteLength(JSON.stringify(mail(reader.email, 1, 'Report'))) / 1024).toFixed(1)} KB each; one in ${ATTACHED_EVERY} with a 4 KB attachment) and ${EVENTS} events over 30 days at the fake in ${((performance.now() - seedStart) / 1000).toFixed(1)} s\n`,
    );
    const grantPath = `/v3/grants/${reader.grant.id}`;
    const token = reader.accessToken;
    const oneMessage = delivered[Math.floor(delivered.length / 2)]!;
    const weekStart = tomorrow + 7 * DAY;
    const weekEnd = weekStart + 7 * DAY;
    const messagePath = (id: string) => `/v1.0/me/messages/${encodeURIComponent(id)}`;
    const attachmentsOf = (id: string) =>
      withQuery(`${messagePath(id)}/attachments`, { $select: GRAPH_ATTACHMENT_SELECT });
    const listing = () =>
      bare<{ value: { id: string; hasAttachments?: boolean }[] }>(
        token,
        withQuery('/v1.0/me/messages', { $top: LIST_LIMIT, $select: GRAPH_MESSAGE_SELECT }),
      );
    const defaultCalendarEvents = async () => {
      await bare(token, withQuery('/v1.0/me/calendar', { $select: GRAPH_CALENDAR_SELECT }));
      await bare(
        token,
        withQuery('/v1.0/me/calendar/calendarView', {
          startDateTime: iso(weekStart),
          endDateTime: iso(weekEnd),
          $top: DEFAULT_LIMIT,
          $select: GRAPH_EVENT_SELECT,
          $expand: METADATA_EXPAND,
          $filter: 'isCancelled eq false',
        }),
        { prefer: PREFER_EVENTS },
      );
    };
    const cases: AnswerCase[] = [
      {
        label: `GET messages?limit=${LIST_LIMIT}`,
        ours: (via) => via(app, 'GET', `${grantPath}/messages?limit=${LIST_LIMIT}`),
        bare: async () => {
          const page = await listing();
          await bareBatch(
            token,
            page.value.filter((m) => m.hasAttachments).map((m) => attachmentsOf(m.id)),
          );
        },
      },
      {
        label: `GET messages?limit=${LIST_LIMIT}, bare without a batch`,
        ours: (via) => via(app, 'GET', `${grantPath}/messages?limit=${LIST_LIMIT}`),
        bare: async () => {
          const page = await listing();
          await inPool(
            page.value.filter((m) => m.hasAttachments),
            GET_CONCURRENCY,
            async (m) => void (await bare(token, attachmentsOf(m.id))),
          );
        },
      },
      {
        label: 'GET messages/{message_id}',
        ours: (via) => via(app, 'GET', `${grantPath}/messages/${encodeURIComponent(oneMessage)}`),
        bare: () =>
          bareBatch(token, [
            withQuery(messagePath(oneMessage), { $select: GRAPH_MESSAGE_SELECT }),
            attachmentsOf(oneMessage),
          ]),
      },
      {
        label: 'GET events?calendar_id=primary, one week, expanded',
        ours: (via) =>
          via(
            app,
            'GET',
            `${grantPath}/events?calendar_id=primary&start=${weekStart}&end=${weekEnd}&expand_recurring=true`,
          ),
        bare: defaultCalendarEvents,
      },
      {
        label: 'GET calendars',
        ours: (via) => via(app, 'GET', `${grantPath}/calendars`),
        bare: async () =>
          void (await bare(
            token,
            withQuery('/v1.0/me/calendars', { $top: DEFAULT_LIMIT, $select: GRAPH_CALENDAR_SELECT }),
          )),
      },
    ];
    const answers: Measured[] = [];
    for (const c of cases) answers.push(await measure(c, RUNS, WARM_UP));
    printAnswers(
      answers,
      `${RUNS} runs each after ${WARM_UP} warm-up, bare, in process and over HTTP interleaved; ratio: p50 ours ÷ p50 bare; calls counted at the fake for one request, a $batch's members each${PROVIDER_MS ? `; the fake answers each HTTP request after ${PROVIDER_MS} ms, a $batch once (BENCH_MICROSOFT_PROVIDER_MS)` : '; the fake answers on loopback at once'}`,
    );

    // 2. Availability of 5 microsoft participants over 30 days.
    const people: Awaited<ReturnType<typeof connect>>[] = [];
    for (let n = 0; n < PARTICIPANTS; n++) {
      const person = await connect(`person${n}`);
      seedEvents(graph, person.email, PARTICIPANT_EVENTS, tomorrow, 100 + n);
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
    const scheduleOf = (p: (typeof people)[number]) =>
      bare(p.accessToken, '/v1.0/me/calendar/getSchedule', {
        body: {
          schedules: [p.email],
          startTime: { dateTime: iso(window.start_time).slice(0, 19), timeZone: 'UTC' },
          endTime: { dateTime: iso(window.end_time).slice(0, 19), timeZone: 'UTC' },
          availabilityViewInterval: 30,
        },
      });
    const slots = async () => {
      const answer = await api.invoke({
        method: 'POST',
        path: '/v3/calendars/availability',
        headers: { authorization: `Bearer ${app.api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify(availabilityBody),
      });
      return typeof answer === 'object' && answer.body
        ? (JSON.parse(answer.body) as { data: { time_slots: unknown[] } }).data.time_slots.length
        : NaN;
    };
    const availability = await measure(
      {
        label: `POST calendars/availability, ${PARTICIPANTS} × ${PARTICIPANT_EVENTS} events, 30 days, collective`,
        ours: (via) => via(app, 'POST', '/v3/calendars/availability', availabilityBody),
        bare: async () => void (await Promise.all(people.map(scheduleOf))),
      },
      AVAILABILITY_RUNS,
      WARM_UP,
    );
    printAvailability(
      availability,
      await slots(),
      `bare: ${PARTICIPANTS} POST /v1.0/me/calendar/getSchedule at once`,
      AVAILABILITY_RUNS,
    );

    // 3. Change → webhook through Graph's change notifications, and without them (the workers run from here on).
    // The runs subscribe with this deployment's public URL: its push route, on the test gateway.
    process.env.PUBLIC_BASE_URL = api.url;
    const pipeline = await startPipeline(stack.env, { jobs, mailSync, outbox, fanout, delivery }, stops);
    const { hookUrl, runs } = pipeline;
    await webhooks.createWebhook(
      { applicationId: app.application_id, credential: 'api_key' },
      { webhook_url: hookUrl, trigger_types: ['message.created'] },
    );
    const watched = await connect('watched');
    const unwatched = await connect('unwatched');
    // Their start-mail-sync jobs run; the first runs take the delta links and subscribe (the grants of
    // parts 1 and 2 were connected before the stream relay started: their runs never start).
    let waiting: string[] = [];
    await waitUntil(
      async () => {
        const states = await Promise.all(
          [watched, unwatched].map(async (p) => [p.email, await getSyncState(p.grant.id)] as const),
        );
        waiting = states
          .filter(([, state]) => !state?.graph_push?.subscriptions.messages?.id)
          .map(([email, state]) => `${email}: ${JSON.stringify(state?.graph_push ?? state?.next_due ?? 'no run yet')}`);
        return !waiting.length;
      },
      () => `the grants’ first sync runs (and their subscriptions) not done: ${waiting.join('; ')}`,
      WAIT_MS,
    );

    const lagOf = (email: string, count: number, momentsMs: number[], tag: string) =>
      lagsOf(
        pipeline,
        count,
        momentsMs,
        (i) => graph.deliver(email, mail(email, i, tag)).id,
        tag,
        WAIT_MS + SYNC_INTERVALS.active * 2000,
      );
    const notificationsBefore = graph.subscriptions.delivered.length;
    const runsBefore = { ...runs };
    const pushed = await lagOf(
      watched.email,
      PUSHED,
      Array.from({ length: PUSHED }, (_, i) => i * SPACING_MS),
      'Pushed',
    );
    await graph.subscriptions.settled();
    const notifications = graph.subscriptions.delivered.slice(notificationsBefore);
    const pushRuns = { pushed: runs.pushed - runsBefore.pushed, scheduled: runs.scheduled - runsBefore.scheduled };
    const random = rng(11);
    const spreadMs = 2 * SYNC_INTERVALS.active * 1000;
    let unpushed: { lags: number[]; fanoutLags: number[] } | undefined;
    if (UNPUSHED) {
      // No public URL any more: the grant's next run deletes its subscriptions, and its runs poll.
      delete process.env.PUBLIC_BASE_URL;
      await syncSoon({ application_id: unwatched.grant.application_id, id: unwatched.grant.id });
      await waitUntil(
        async () => (await getSyncState(unwatched.grant.id))?.graph_push === undefined,
        () => 'the unwatched grant’s subscriptions not deleted',
        WAIT_MS,
      );
      unpushed = await lagOf(
        unwatched.email,
        UNPUSHED,
        Array.from({ length: UNPUSHED }, () => random() * spreadMs).sort((a, b) => a - b),
        'Unpushed',
      );
    }
    printLags({
      what: `(${PUSHED} messages delivered ${SPACING_MS} ms apart to a mailbox with a Graph subscription)`,
      pushed,
      pushesText: `${notifications.length} notifications (answered ${[...new Set(notifications.map((n) => n.status))].join(', ') || 'none'}); ${pushRuns.pushed} pushed runs (with those that found a run under way and came back), ${pushRuns.scheduled} scheduled`,
      ...(unpushed ? { unpushed: { ...unpushed, count: UNPUSHED, spreadMs } } : {}),
      intervalSeconds: SYNC_INTERVALS.active,
      setting:
        'one process: the gateway, the push, mail-sync, outbox, fan-out and delivery functions in process, 2 pollers per queue, the jobs worker; DynamoDB Local, the SQS emulator and the Graph fake on loopback, its notifications POSTed at once; the stream relay rests 50 ms when a shard had nothing new',
    });
    const violations = graph.violations();
    if (violations.length)
      throw new Error(
        `the Graph fake recorded violations:\n  ${violations.map((v) => `${v.kind}: ${v.message}`).join('\n  ')}`,
      );
  } finally {
    for (const stop of stops.reverse()) await stop().catch((error) => console.error(error));
    await gateway?.close();
    await fake?.subscriptions.settled();
    await fake?.close();
    await stack.stop();
  }
}
