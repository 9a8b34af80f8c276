import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { startStack } from '../scripts/local-stack/index';
import { RADICALE_NOT_INSTALLED, startRadicale } from '../scripts/local-stack/radicale';
import { scaled, table, timeList } from './lib';

/**
 * Issue 27: a CalDAV grant's events are served from synced data. One run, on the local stack and a
 * real Radicale:
 *   1. N events (20 a week around the measured week, 1 % of them daily or weekly series, as the
 *      calendar bench has them) are PUT on the server as another client would (not timed); the
 *      grant's first sync (calendar list, sync-collection, multiget in batches, records stored) is
 *      timed: events/s. Against two floors measured in the same run: the same sync-collection and
 *      multigets alone (what the server costs, nothing stored), and the durable floor: those plus
 *      bare TransactWriteItems (no Switchboard code) writing as many items per event as ours stored
 *      (the event, its window copies, its UID item), as many at once as ours. And the bound this
 *      machine puts on that ratio: the same server part plus our own items (every attribute, the
 *      condition on each event item, one transaction per object), written bare under other keys.
 *      DynamoDB Local spends CPU per attribute and per byte; DynamoDB bills a write by each KB it
 *      starts, so there an event's items (printed: about 650 bytes each) cost what the floor's do.
 *      Before it, a small account's calendar is synced through the same code (not timed, full size
 *      only), so that neither DynamoDB Local's JVM nor this process meets our code paths cold (the
 *      floors run after ours, on a warm JVM).
 *   2. The same events stored for an Agent Account (the same items, written as the service writes
 *      them). Then the p50 of listing one week with expand_recurring=true through each provider's
 *      events implementation (the CalDAV one checks its calendars are known first), and the ratio
 *      CalDAV / Agent Account (target ≤ 1.2).
 */
const N = Number(process.env.BENCH_CALDAV_EVENTS ?? scaled(1_000, 100));
const PER_WEEK = 20;
const RUNS = scaled(200, 5);
const WARM_UP = scaled(20, 2);
/**
 * Events of the warm-up account synced before the measured sync (none at smoke size, whose figures
 * mean nothing): DynamoDB Local's JIT reaches its steady state on these transactions after about a
 * thousand of them (ours ÷ durable floor measured 0.53 cold, 0.60 after 200, 0.78 after 1,000).
 */
const WARM_EVENTS = Number(process.env.BENCH_CALDAV_WARM_EVENTS ?? scaled(1_000, 0));
const WEEK = 7 * 86_400;
const WINDOW_START = Date.UTC(2026, 11, 7) / 1000;
const PUT_CONCURRENCY = 8;
const USER = 'bench@example.org';
const WARM_USER = 'warm@example.org';
const PASSWORD = 'bench caldav password 1';
const TARGET = 1.2;
/** Ours ÷ the durable floor (issue 33). */
const DURABLE_TARGET = 0.8;

const stamp = (s: number) =>
  new Date(s * 1000)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');

/** The events of the bench as iCalendar objects, each its own UID. */
function objects(count: number): { name: string; text: string }[] {
  const weeks = Math.ceil(count / PER_WEEK);
  const from = WINDOW_START - Math.floor(weeks / 2) * WEEK;
  const seriesCount = Math.round(count / 100);
  const out: { name: string; text: string }[] = [];
  const vevent = (uid: string, start: number, end: number, extra: string[] = []) =>
    [
      'BEGIN:VCALENDAR',
      'VERSION:2.0',
      'PRODID:-//Bench//EN',
      'BEGIN:VEVENT',
      `UID:${uid}`,
      `DTSTAMP:${stamp(WINDOW_START)}`,
      `DTSTART:${stamp(start)}`,
      `DTEND:${stamp(end)}`,
      `SUMMARY:Event ${out.length}`,
      ...extra,
      'END:VEVENT',
      'END:VCALENDAR',
      '',
    ].join('\r\n');
  for (let i = 0; i < count - seriesCount; i++) {
    const start = from + Math.floor(((i / (count - seriesCount)) * weeks * WEEK) / 3600) * 3600;
    const uid = randomUUID();
    out.push({ name: `${uid}.ics`, text: vevent(uid, start, start + 1800 + (i % 4) * 900) });
  }
  for (let s = 0; s < seriesCount; s++) {
    const openEnded = s < 3;
    const daily = s % 2 === 0;
    const start = openEnded
      ? WINDOW_START - (s + 1) * 10 * WEEK + 9 * 3600
      : from + Math.floor((((s + 0.5) / seriesCount) * weeks * WEEK) / 3600) * 3600;
    const rule = `RRULE:FREQ=${daily ? 'DAILY' : 'WEEKLY'}${openEnded ? '' : `;COUNT=${daily ? 10 + (s % 20) : 4 + (s % 10)}`}`;
    const uid = randomUUID();
    out.push({ name: `${uid}.ics`, text: vevent(uid, start, start + 1800, [rule]) });
  }
  return out;
}

async function inPool<T>(items: readonly T[], concurrency: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await run(items[next++]!);
    }),
  );
}

export async function runCalDavBench(): Promise<void> {
  console.log(
    `\n## CalDAV: first sync of ${N} events, and one week listed from synced data vs an Agent Account (issue 27)\n`,
  );
  let radicale;
  try {
    radicale = await startRadicale({
      accounts: [
        { user: USER, password: PASSWORD },
        { user: WARM_USER, password: PASSWORD },
      ],
    });
  } catch (error) {
    if ((error as Error).message !== RADICALE_NOT_INSTALLED) throw error;
    console.log(`skipped: ${RADICALE_NOT_INSTALLED}`);
    return;
  }
  const stack = await startStack(`benchcaldav${process.pid}`);
  Object.assign(process.env, stack.env, { LOG_LEVEL: 'warn' });
  try {
    const [
      { createApplication },
      { connectGrant },
      grantsCreate,
      { DavClient },
      { syncCalendarList },
      { syncCalendarObjects, calDavEvents },
      agentCalendars,
      agentEvents,
      { eventItems },
      { batchWrite, putRequests },
      { newId },
    ] = await Promise.all([
      import('#shared/applications/service'),
      import('#shared/accounts/connected'),
      import('#shared/grants/create'),
      import('#shared/dav/client'),
      import('#shared/dav/calendars'),
      import('#shared/dav/events'),
      import('#shared/mailbox/calendars'),
      import('#shared/mailbox/events'),
      import('#shared/db/events'),
      import('#shared/db/batch'),
      import('#shared/ids'),
    ]);
    const clientOf = (user: string) =>
      new DavClient({
        fetch: (input, init) => fetch(input, init),
        auth: { type: 'basic', username: user, password: PASSWORD },
      });
    const homeOf = (user: string) => `${radicale.url}${encodeURIComponent(user)}/`;
    const client = clientOf(USER);
    const home = homeOf(USER);
    const calendarUrl = `${home}bench/`;
    await client.makeCalendar(calendarUrl, { name: 'Bench' });
    /** Creates a calendar of `user` on the server and PUTs the objects into it, as another client would. */
    const seed = async (user: string, url: string, list: { name: string; text: string }[]) => {
      await inPool(list, PUT_CONCURRENCY, async (o) => {
        const response = await fetch(`${url}${o.name}`, {
          method: 'PUT',
          body: o.text,
          headers: {
            'content-type': 'text/calendar',
            'if-none-match': '*',
            authorization: `Basic ${Buffer.from(`${user}:${PASSWORD}`).toString('base64')}`,
          },
        });
        await response.arrayBuffer();
        if (response.status !== 201) throw new Error(`PUT ${o.name}: ${response.status}`);
      });
    };

    // 1. Seed the server as another client would, then the first sync.
    const seeded = objects(N);
    const seedStart = performance.now();
    await seed(USER, calendarUrl, seeded);
    console.log(
      `PUT ${N} events on Radicale in ${((performance.now() - seedStart) / 1000).toFixed(1)} s (not timed below)`,
    );

    const app = await createApplication({ name: 'bench caldav' });
    const connect = async (user: string) =>
      (
        await connectGrant({
          applicationId: app.application_id as never,
          provider: 'imap',
          email: user,
          providerUserId: user,
          scope: ['email'],
          settings: {
            imap_username: user,
            imap_host: '127.0.0.1',
            imap_port: 993,
            smtp_username: user,
            smtp_host: '127.0.0.1',
            smtp_port: 587,
            caldav_url: radicale.url,
            calendar_home: homeOf(user),
          },
          tokens: { source: 'password', passwords: { imap_password: PASSWORD, smtp_password: PASSWORD } },
          ip: '127.0.0.1',
          userAgent: 'bench',
        } as never)
      ).grant;
    // Warm-up (not timed): another account's calendar synced through the same code.
    if (WARM_EVENTS) {
      const warmClient = clientOf(WARM_USER);
      const warmUrl = `${homeOf(WARM_USER)}warm/`;
      await warmClient.makeCalendar(warmUrl, { name: 'Warm' });
      await seed(WARM_USER, warmUrl, objects(WARM_EVENTS));
      const warmGrant = await connect(WARM_USER);
      const warmList = await syncCalendarList(warmGrant, warmClient, { quiet: true });
      const warmCalendar = warmList.calendars.find((c) => c.href === warmUrl)!;
      const warmed = await syncCalendarObjects(
        warmGrant,
        warmClient,
        { ...warmCalendar, href: warmUrl },
        undefined,
        true,
      );
      if (warmed.changed !== WARM_EVENTS)
        throw new Error(`the warm-up sync stored ${warmed.changed} of ${WARM_EVENTS} events`);
    }

    // The server's own cost, measured first: the same sync-collection and multigets, nothing stored.
    const floorStart = performance.now();
    const listing = await client.syncCollection(calendarUrl);
    const urls = listing.changed.map((c) => c.url);
    let fetched = 0;
    for (let i = 0; i < urls.length; i += 50)
      fetched += (await client.multiget(calendarUrl, urls.slice(i, i + 50), 'calendar')).length;
    const floorMs = performance.now() - floorStart;

    const grant = await connect(USER);
    const syncStart = performance.now();
    const list = await syncCalendarList(grant, client, { quiet: true });
    const calendar = list.calendars.find((c) => c.href === calendarUrl)!;
    const outcome = await syncCalendarObjects(grant, client, { ...calendar, href: calendarUrl }, undefined, true);
    const syncMs = performance.now() - syncStart;
    if (outcome.changed !== N || fetched !== N)
      throw new Error(
        `sync stored ${outcome.changed} and the floor fetched ${fetched} of ${N} events (skipped: ${JSON.stringify(outcome.skipped.slice(0, 3))})`,
      );

    // The durable floor: the server's part again, plus one bare transaction per event of as many items as ours wrote.
    const { scanEvents } = await import('#shared/db/events');
    const synced = (await scanEvents(grant.id, calendar.id as never, { limit: N + 10, keep: () => true })).items;
    const itemsPerEvent = synced.reduce((sum, r) => sum + eventItems(r).length, 0) / synced.length;
    const { DynamoDBClient, TransactWriteItemsCommand } = await import('@aws-sdk/client-dynamodb');
    const bare = new DynamoDBClient({});
    const durableStart = performance.now();
    const again = (await client.syncCollection(calendarUrl)).changed.map((c) => c.url);
    const fetchedAgain: string[] = [];
    for (let i = 0; i < again.length; i += 50)
      fetchedAgain.push(...(await client.multiget(calendarUrl, again.slice(i, i + 50), 'calendar')).map((o) => o.data));
    await inPool(
      fetchedAgain.map((data, i) => ({ data, i })),
      8,
      async ({ data, i }) => {
        const count = Math.round(itemsPerEvent);
        await bare.send(
          new TransactWriteItemsCommand({
            TransactItems: Array.from({ length: count }, (_, k) => ({
              Put: {
                TableName: process.env.TABLE_NAME!,
                Item: { pk: { S: `floor#${i}` }, sk: { S: String(k) }, ...(k === 0 ? { data: { S: data } } : {}) },
              },
            })),
          }),
        );
      },
    );
    const durableMs = performance.now() - durableStart;

    // The bound DynamoDB Local puts on ours: the server's part again, plus our own items (every
    // attribute, the same condition on each event item, one transaction per object as ours), written
    // bare under other keys. Marshalled before the clock starts: what is timed is the server and the table.
    const { marshall } = await import('@aws-sdk/util-dynamodb');
    const objectsOf = new Map<string, (typeof synced)[number][]>();
    for (const r of synced)
      objectsOf.set(r.master_event_id ?? r.id, [...(objectsOf.get(r.master_event_id ?? r.id) ?? []), r]);
    const ownTransactions = [...objectsOf.values()].map((records) =>
      records.flatMap((r) =>
        eventItems(r).map((item, k) => ({
          Put: {
            TableName: process.env.TABLE_NAME!,
            Item: marshall({ ...item, pk: `bound#${item.pk as string}` }, { removeUndefinedValues: true }),
            ...(k === 0 ? { ConditionExpression: 'attribute_not_exists(pk)' } : {}),
          },
        })),
      ),
    );
    // About an item's size as DynamoDB counts it (names and values): its JSON's bytes.
    const sizes = synced.flatMap((r) => eventItems(r).map((item) => Buffer.byteLength(JSON.stringify(item))));
    const boundStart = performance.now();
    const listedAgain = (await client.syncCollection(calendarUrl)).changed.map((c) => c.url);
    for (let i = 0; i < listedAgain.length; i += 50)
      await client.multiget(calendarUrl, listedAgain.slice(i, i + 50), 'calendar');
    await inPool(ownTransactions, 8, async (TransactItems) => {
      await bare.send(new TransactWriteItemsCommand({ TransactItems }));
    });
    const boundMs = performance.now() - boundStart;
    bare.destroy();

    // 2. The same events for an Agent Account, stored as the service stores them.
    const agentGrant = await grantsCreate.createCustomGrant(
      { applicationId: app.application_id, credential: 'api_key' } as never,
      { provider: 'agent', settings: { email_address: `bench-caldav-${process.pid}@agents.test` } },
      { ip: '127.0.0.1', userAgent: 'bench' },
    );
    const agentCalendar = await agentCalendars.createCalendar(agentGrant, { name: 'Bench', timezone: 'UTC' });
    const copies = synced.map((r) => {
      const { href: _h, etag: _e, ...rest } = r;
      return { ...rest, id: newId('event'), grant_id: agentGrant.id, calendar_id: agentCalendar.id as never };
    });
    await batchWrite(putRequests(copies.flatMap(eventItems)));

    const measure = (run: () => Promise<{ items: unknown[] }>) => timeList(run, RUNS, WARM_UP);
    const week = { expand_recurring: true, start: WINDOW_START, end: WINDOW_START + WEEK, limit: 200 };
    const agentRun = await measure(() =>
      agentEvents.listEvents(agentGrant, { ...week, calendar_id: agentCalendar.id }, 200),
    );
    const davRun = await measure(() => calDavEvents.list(grant, { ...week, calendar_id: calendar.id }, 200));
    const perSecond = (ms: number) => ((N / ms) * 1000).toFixed(0);
    console.log(
      table([
        ['first sync', 'time', 'events/s'],
        [
          `ours: calendar list, sync-collection, multiget, ${N} events stored`,
          `${(syncMs / 1000).toFixed(2)} s`,
          perSecond(syncMs),
        ],
        [
          'floor: the same sync-collection and multigets alone (the server)',
          `${(floorMs / 1000).toFixed(2)} s`,
          perSecond(floorMs),
        ],
        [
          `durable floor: those plus bare transactions of ${itemsPerEvent.toFixed(2)} items per event`,
          `${(durableMs / 1000).toFixed(2)} s`,
          perSecond(durableMs),
        ],
        [
          'bound on this machine: those plus our own items, written bare',
          `${(boundMs / 1000).toFixed(2)} s`,
          perSecond(boundMs),
        ],
      ]),
    );
    console.log(
      `\nour items: ${itemsPerEvent.toFixed(2)} per event, about ${(sizes.reduce((a, b) => a + b, 0) / sizes.length).toFixed(0)} bytes on average, ${Math.max(...sizes)} the largest`,
    );
    console.log(
      `ours ÷ floor (events/s): ${(floorMs / syncMs).toFixed(2)}; ours ÷ durable floor: ${(durableMs / syncMs).toFixed(2)} (goal ≥ ${DURABLE_TARGET}: ${durableMs / syncMs >= DURABLE_TARGET ? 'met' : 'MISSED'}); ours ÷ our own items written bare: ${(boundMs / syncMs).toFixed(2)}\n`,
    );
    console.log(
      table([
        ['one week, expand_recurring=true', 'p50', 'p99', 'events in the week (instances)'],
        ['Agent Account', `${agentRun.p50.toFixed(2)} ms`, `${agentRun.p99.toFixed(2)} ms`, agentRun.items],
        ['CalDAV grant (synced data)', `${davRun.p50.toFixed(2)} ms`, `${davRun.p99.toFixed(2)} ms`, davRun.items],
      ]),
    );
    const ratio = davRun.p50 / agentRun.p50;
    console.log(
      `\nratio p50(CalDAV) / p50(Agent Account): ${ratio.toFixed(2)} (target ≤ ${TARGET}: ${ratio <= TARGET ? 'met' : 'NOT met'})`,
    );
    if (davRun.items !== agentRun.items)
      throw new Error(
        `the week holds ${davRun.items} instances for the CalDAV grant and ${agentRun.items} for the Agent Account`,
      );
  } finally {
    await stack.stop();
    await radicale.stop();
  }
}
