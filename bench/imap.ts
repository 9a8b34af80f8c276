import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBClient, TransactWriteItemsCommand, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { ImapFlow } from 'imapflow';
import { DOVECOT_NOT_INSTALLED, startDovecot, type RunningDovecot } from '../scripts/local-stack/dovecot';
import { startStack, type LocalStack } from '../scripts/local-stack/index';
import { startSmtpSink } from '../scripts/local-stack/smtp-sink';
import { isOutboxInsert, startStreamRelay, type StreamRelay } from '../scripts/local-stack/stream-relay';
import { startJobsWorker } from './jobs';
import { cpuSince, cpuTime, percentile, rng, scaled, SMOKE, startWebhookReceiver, table, type CpuTime } from './lib';
import { pollQueue } from './queue-poller';

/**
 * IMAP grants synced from a real Dovecot (shared/imap/sync.ts run by shared/services/mail-sync.ts),
 * measured in one run:
 *   1. first sync of N messages (three folders, INBOX the largest; small text mails with distinct
 *      Message-IDs and reply threads, APPENDed beforehand, not timed): messages/s from the first
 *      run's start to the sync state's `seeded`, runs looped with a generous remaining time, while
 *      the table's stream feeds the real outbox consumer and the real jobs worker runs the batches'
 *      messages-stored jobs (as Lambda would, meanwhile); the time until those jobs are drained is
 *      reported apart. Against two floors measured in the same run: a bare imapflow FETCH of the
 *      same messages over one connection, and the durable floor: that FETCH plus, per batch of 50,
 *      bare TransactWriteItems writing as many items per message as ours wrote (section 3), with one
 *      item per message holding its source and the others minimal, and no Switchboard code. And
 *      the bound this machine puts on that ratio: the same corpus in a second account, synced with
 *      the jobs worker stopped until its sync ends (the floors run with no jobs; on AWS the jobs run
 *      in Lambdas of their own against a DynamoDB that is not one process on two shared cores).
 *   2. APPEND by another client → message.created at a local webhook receiver, with the mail-sync
 *      worker polling MAIL_SYNC_QUEUE_URL with the real handler (its delayed messages are the
 *      scheduler), the outbox consumer on the stream, and the fan-out and delivery workers: K APPENDs
 *      at random moments (spread over K/2 intervals; at smoke size over 5 s, the interval itself
 *      unchanged); p50/p99/max of the APPEND's OK → receipt, and the interval in force.
 *   3. DynamoDB writes per synced message: requests and items (PutItem, UpdateItem, DeleteItem: one;
 *      BatchWriteItem, TransactWriteItems: one per item) counted by a middleware on the functions'
 *      document client, attributed to the sync, the jobs or the outbox consumer by the async context
 *      each was started in.
 * Before the measured sync, a small account is synced through the same code (not timed, full size
 * only), so that neither DynamoDB Local's JVM nor this process meets our code paths cold. The bare
 * floor runs before ours, the durable floor after it (it needs ours' item count).
 */
const N = Number(process.env.BENCH_IMAP_MESSAGES ?? scaled(10_000, 300));
const SAMPLES = Number(process.env.BENCH_IMAP_SAMPLES ?? scaled(10, 2));
/** Messages of the warm-up account (none at smoke size, whose figures mean nothing). */
const WARM_UP = scaled(200, 0);
const BATCH = 50;
/** Shares of the messages per folder. */
const FOLDERS: [string, number][] = [
  ['INBOX', 0.6],
  ['Archive', 0.25],
  ['Sent', 0.15],
];
const FLOOR_TARGET = 0.5;
/** Ours ÷ the durable floor (issue 33). */
const DURABLE_TARGET = 0.8;
const LATENCY_TARGET_P50_S = 30;
const PASSWORD = 'bench imap password 1';
const USER = 'bench@example.org';
const WARM_USER = 'warm@example.org';
/** The same corpus again, synced with the jobs held until its sync ends: the bound this machine puts on the ratio. */
const HELD_USER = 'held@example.org';
/** A generous remaining time for the measured runs: one run does the whole first sync. */
const GENEROUS_MS = 3_600_000;

type Tag = 'warm-up' | 'sync' | 'held' | 'jobs' | 'outbox' | 'live';
const origin = new AsyncLocalStorage<Tag>();

interface Counts {
  writeRequests: number;
  items: number;
  readRequests: number;
  byCommand: Record<string, number>;
}
const emptyCounts = (): Counts => ({ writeRequests: 0, items: 0, readRequests: 0, byCommand: {} });

/** The processes whose CPU time the bench reports beside its own. */
const SERVICES = { dynamodb: 'DynamoDBLocal', sqs: 'sqs-child', dovecot: 'dovecot' };
const cpuLine = (c: CpuTime, seconds: number) =>
  (['self', 'dynamodb', 'sqs', 'dovecot'] as const)
    .map(
      (k) =>
        `${k === 'self' ? 'this process' : k === 'dynamodb' ? 'DynamoDB Local' : k === 'sqs' ? 'SQS emulator' : 'Dovecot'} ${c[k] === undefined ? 'n/a' : `${(c[k]! / 1000).toFixed(1)} s (${((c[k]! / 10 / seconds) | 0).toString()} %)`}`,
    )
    .join(', ');

interface Mail {
  folder: string;
  raw: Buffer;
  date: Date;
  flags: string[];
}

const WORDS =
  'the a meeting report budget plan review draft schedule update invoice customer project deadline team call notes follow up attached please thanks regards question answer launch quarter roadmap design feedback release server cost estimate travel lunch agenda minutes contract proposal'.split(
    ' ',
  );
const CONTACTS = Array.from(
  { length: 60 },
  (_, i) => `${['ann', 'bob', 'carol', 'dan', 'eve', 'frank'][i % 6]}${i}@example.net`,
);

/** n small text mails of one account over the last 80 days (inside the 90-day sync window), oldest first, about a third of them replies. */
function corpus(n: number, account: string, tag: string, seed: number): Mail[] {
  const random = rng(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  const words = (count: number) => Array.from({ length: count }, () => pick(WORDS)).join(' ');
  const span = 80 * 86_400_000;
  const start = Date.now() - span - 3_600_000;
  const sent: { id: string; subject: string; references: string[]; from: string }[] = [];
  const mails: Mail[] = [];
  for (let i = 0; i < n; i++) {
    const r = random();
    let share = 0;
    const folder = FOLDERS.find(([, s]) => r < (share += s))?.[0] ?? 'INBOX';
    const date = new Date(start + Math.floor(((i + random()) / n) * span));
    const outgoing = folder === 'Sent';
    const contact = pick(CONTACTS);
    const from = outgoing ? account : contact;
    const to = outgoing ? contact : account;
    // A reply to one of the last 100 mails of the account, most of the time in its thread's direction.
    const parent =
      sent.length && random() < 0.35 ? sent[Math.max(0, sent.length - 1 - Math.floor(random() * 100))] : undefined;
    const subject = parent
      ? `Re: ${parent.subject.replace(/^Re: /, '')}`
      : `${words(1 + Math.floor(random() * 5))} ${i}`;
    const id = `<${tag}.${i}.${seed}@${outgoing ? 'example.org' : 'example.net'}>`;
    const references = parent ? [...parent.references, parent.id].slice(-10) : [];
    const paragraphs = Array.from({ length: 1 + Math.floor(random() * 4) }, () =>
      words(20 + Math.floor(random() * 60)),
    );
    const quote = parent ? `\r\n\r\nOn ${date.toUTCString()}, ${parent.from} wrote:\r\n> ${words(15)}` : '';
    const raw = Buffer.from(
      [
        `Return-Path: <${from}>`,
        `From: ${from.split('@')[0]} <${from}>`,
        `To: ${to}`,
        `Subject: ${subject}`,
        `Date: ${date.toUTCString()}`,
        `Message-ID: ${id}`,
        ...(parent ? [`In-Reply-To: ${parent.id}`, `References: ${references.join(' ')}`] : []),
        'MIME-Version: 1.0',
        'Content-Type: text/plain; charset=utf-8',
        'Content-Transfer-Encoding: 7bit',
        '',
        `${paragraphs.join('\r\n\r\n')}${quote}\r\n\r\n-- \r\n${from.split('@')[0]}`,
        '',
      ].join('\r\n'),
    );
    const seen = outgoing || folder === 'Archive' || random() < 0.7;
    mails.push({ folder, raw, date, flags: [...(seen ? ['\\Seen'] : []), ...(random() < 0.03 ? ['\\Flagged'] : [])] });
    sent.push({ id, subject, references, from });
  }
  return mails;
}

const imapClient = async (dovecot: RunningDovecot, user: string) => {
  const client = new ImapFlow({
    host: dovecot.host,
    port: dovecot.imapPort,
    secure: false,
    auth: { user, pass: PASSWORD },
    logger: false,
  });
  await client.connect();
  return client;
};

/** Connections APPENDing to each folder side by side (Dovecot syncs each APPEND to disk: one at a time is slow). */
const SEED_CONNECTIONS = 3;

/** APPENDs the mails, each folder oldest first, dealt round-robin to its connections (so UIDs follow dates but for neighbours). */
async function seed(dovecot: RunningDovecot, user: string, mails: Mail[]): Promise<void> {
  await Promise.all(
    FOLDERS.flatMap(([folder]) =>
      Array.from({ length: SEED_CONNECTIONS }, async (_, c) => {
        const client = await imapClient(dovecot, user);
        try {
          const mine = mails.filter((m) => m.folder === folder).filter((_, i) => i % SEED_CONNECTIONS === c);
          for (const mail of mine) await client.append(folder, mail.raw, mail.flags, mail.date);
        } finally {
          await client.logout();
        }
      }),
    ),
  );
}

/** The bare floor: one connection, each folder selected read-only and FETCHed whole, as ours fetches (uid, flags, internal date, size, source). */
async function fetchFloor(
  dovecot: RunningDovecot,
  user: string,
  each?: (message: { uid: number; source?: Buffer }, folder: string) => Promise<void>,
  end?: (folder: string) => Promise<void>,
) {
  const client = await imapClient(dovecot, user);
  let count = 0;
  const start = performance.now();
  try {
    for (const [folder] of FOLDERS) {
      await client.mailboxOpen(folder, { readOnly: true });
      for await (const message of client.fetch('1:*', {
        uid: true,
        flags: true,
        internalDate: true,
        size: true,
        source: true,
      })) {
        count++;
        if (each) await each(message, folder);
      }
      if (end) await end(folder);
    }
  } finally {
    await client.logout();
  }
  return { count, seconds: (performance.now() - start) / 1000 };
}

export async function runImapBench(): Promise<void> {
  console.log('\n## IMAP sync (grants synced from a real Dovecot)\n');
  const sink = await startSmtpSink({ smtpPort: 0, httpPort: 0 });
  let dovecot: RunningDovecot | undefined;
  let stack: LocalStack | undefined;
  const stops: (() => Promise<unknown>)[] = [];
  /** Where the suite's own time went, phase by phase (printed last). */
  const phases: string[] = [];
  let phaseStart = performance.now();
  const phase = (name: string) => {
    const now = performance.now();
    phases.push(`${name} ${((now - phaseStart) / 1000).toFixed(1)} s`);
    phaseStart = now;
  };
  try {
    const relayUrl = new URL(sink.smtpUrl);
    try {
      dovecot = await startDovecot({
        accounts: [
          { user: USER, password: PASSWORD },
          { user: WARM_USER, password: PASSWORD },
          { user: HELD_USER, password: PASSWORD },
        ],
        smtpRelay: { host: relayUrl.hostname, port: Number(relayUrl.port) },
      });
    } catch (error) {
      if (!(error as Error).message.includes(DOVECOT_NOT_INSTALLED)) throw error;
      console.log(`skipped: ${(error as Error).message}`);
      return;
    }
    const server = dovecot;
    phase('Dovecot');
    stack = await startStack(`benchimap${process.pid}`);
    phase('stack');
    Object.assign(process.env, stack.env, { LOG_LEVEL: 'warn' });

    // Seeded first (not timed): the measured account and the warm-up account.
    const seedStart = performance.now();
    const mails = corpus(N, USER, 'bench', 11);
    await seed(server, USER, mails);
    await seed(server, HELD_USER, corpus(N, HELD_USER, 'bench', 11));
    if (WARM_UP) await seed(server, WARM_USER, corpus(WARM_UP, WARM_USER, 'warm', 5));
    const seedSeconds = (performance.now() - seedStart) / 1000;
    phase('seeding');
    const perFolder = FOLDERS.map(([f]) => `${f} ${mails.filter((m) => m.folder === f).length}`).join(', ');
    const averageBytes = mails.reduce((a, m) => a + m.raw.length, 0) / mails.length;

    const [
      { createApplication },
      grants,
      webhooks,
      { dynamo },
      { createSyncState, getSyncState },
      { mailSyncKey },
      mailSync,
      { handler: outbox },
      { handler: jobs },
      { handler: mailSyncHandler },
      { handler: fanout },
      { handler: delivery },
    ] = await Promise.all([
      import('#shared/applications/service'),
      import('#shared/grants/create'),
      import('#shared/webhooks/service'),
      import('#shared/aws/dynamodb'),
      import('#shared/db/mail-sync'),
      import('#shared/db/keys'),
      import('#shared/services/mail-sync'),
      import('#functions/outbox/handler'),
      import('#functions/jobs/handler'),
      import('#functions/mail-sync/handler'),
      import('#functions/webhook-fanout/handler'),
      import('#functions/webhook-delivery/handler'),
    ]);
    type GrantId = import('#shared/ids').GrantId;
    type ApplicationId = import('#shared/ids').ApplicationId;

    let measured: string | undefined;
    // Section 3's counter: every request of the functions' document client, by the async context it came from.
    const counts = new Map<Tag | 'other', Counts>();
    /** Wall time with at least one DynamoDB request of the measured sync in flight. */
    const inFlight = { count: 0, since: 0, ms: 0 };
    /** Runs of the measured grant as the worker ran them: lease taken (start), lease released with the next run's due time (end). */
    const runStarts: number[] = [];
    const runEnds: { at: number; delayMs: number }[] = [];
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        const tag = origin.getStore() ?? 'other';
        const c = counts.get(tag) ?? emptyCounts();
        counts.set(tag, c);
        const command = (context as { commandName?: string }).commandName ?? 'unknown';
        const input = args.input as Record<string, unknown>;
        let items = 0;
        let write = true;
        if (/^(Put|Update|Delete)(Item)?Command$/.test(command)) items = 1;
        else if (/^BatchWrite(Item)?Command$/.test(command))
          items = Object.values((input.RequestItems ?? {}) as Record<string, unknown[]>).reduce(
            (n, list) => n + list.length,
            0,
          );
        else if (/^TransactWrite(Items)?Command$/.test(command))
          items = ((input.TransactItems ?? []) as Record<string, unknown>[]).filter((i) => !i.ConditionCheck).length;
        else write = false;
        const name = command.replace(/Command$/, '');
        if (write) {
          c.writeRequests++;
          c.items += items;
          c.byCommand[name] = (c.byCommand[name] ?? 0) + items;
        } else {
          c.readRequests++;
          c.byCommand[name] = (c.byCommand[name] ?? 0) + 1;
        }
        // A run of the measured grant starting (takeSyncLease) or ending (releaseSyncLease: its state with next_due), shared/db/mail-sync.ts.
        // (Attribute values plain, or marshalled where the command reaches this middleware after the document client's marshalling.)
        const key = (input.Key ?? input.Item) as Record<string, unknown> | undefined;
        const value = (v: unknown) =>
          v && typeof v === 'object' ? ((v as { S?: string }).S ?? (v as { N?: string }).N) : v;
        if (measured && key && value(key.pk) === measured && value(key.sk) === 'mail_sync') {
          if (/^Update(Item)?$/.test(name) && String(input.UpdateExpression).startsWith('SET lease_id'))
            runStarts.push(performance.now());
          if (/^Put(Item)?$/.test(name) && key.next_due !== undefined && key.lease_id === undefined)
            runEnds.push({ at: performance.now(), delayMs: Number(value(key.next_due)) - Date.now() });
        }
        if (tag !== 'sync') return next(args);
        if (inFlight.count++ === 0) inFlight.since = performance.now();
        try {
          return await next(args);
        } finally {
          if (--inFlight.count === 0) inFlight.ms += performance.now() - inFlight.since;
        }
      },
      { step: 'initialize', name: 'bench-imap-counter' },
    );

    // The receiver: answers challenges, records when each message.created arrived, by subject.
    const received = new Map<string, number>();
    const receiver = await startWebhookReceiver((body, arrivedAt) => {
      const subject = (body.data.object.subject as string | undefined) ?? '';
      if (body.type === 'message.created' && !received.has(subject)) received.set(subject, arrivedAt);
    });
    stops.push(receiver.stop);

    const app = await createApplication({ name: 'bench imap' });
    const context = { applicationId: app.application_id, credential: 'api_key' as const };
    await webhooks.createWebhook(context, {
      webhook_url: receiver.url,
      trigger_types: ['message.created'],
    });
    const connect = (user: string) =>
      grants.createCustomGrant(
        context,
        {
          provider: 'imap',
          settings: {
            imap_username: user,
            imap_password: PASSWORD,
            imap_host: '127.0.0.1',
            imap_port: server.imapPort,
            smtp_host: '127.0.0.1',
            smtp_port: server.submissionPort!,
          },
        },
        { ip: '127.0.0.1', userAgent: 'bench' },
      );
    // The grants' start-mail-sync jobs are committed before the relay reads the stream (from now on): the bench creates the sync states itself.
    const warmGrant = WARM_UP ? await connect(WARM_USER) : undefined;
    const grant = await connect(USER);
    const heldGrant = await connect(HELD_USER);
    measured = mailSyncKey(grant.id).pk;

    let relay: StreamRelay | undefined;
    /** Stream records handed to the outbox consumer, and when last. */
    const stream = { records: 0, last: 0 };
    await origin.run('outbox', async () => {
      relay = await startStreamRelay({
        tableName: stack!.env.TABLE_NAME!,
        // serverless.yml's filter criteria: the consumer is handed outbox entries and messages only.
        filter: isOutboxInsert,
        consumer: (event) => {
          stream.records += event.Records.length;
          stream.last = performance.now();
          return outbox(event);
        },
      });
    });
    stops.push(() => relay!.stop());
    // Each job's start and how long the handler held it.
    const jobRuns: { at: number; ms: number }[] = [];
    const timedJobs: typeof jobs = async (event, ctx) => {
      const at = performance.now();
      try {
        return await jobs(event, ctx);
      } finally {
        jobRuns.push({ at, ms: performance.now() - at });
      }
    };
    let worker = origin.run('jobs', () => startJobsWorker(stack!.env.JOBS_QUEUE_URL!, timedJobs, 2));
    stops.push(() => worker.stop());
    /** Outbox drained and the jobs queue empty (nothing waiting, delayed or in flight), twice: a job's own changes may commit more. */
    const jobsDrained = async () => {
      for (let i = 0; i < 2; i++) {
        await relay!.drained();
        await worker.idle();
      }
    };
    const snapshot = (tag: Tag): Counts => {
      const c = counts.get(tag) ?? emptyCounts();
      return { ...c, byCommand: { ...c.byCommand } };
    };

    /** A first sync: runs until the state is seeded (each with the generous remaining time); how many runs. */
    const firstSync = async (grantId: GrantId) => {
      await createSyncState(grantId, app.application_id as ApplicationId, Math.floor(Date.now() / 1000));
      for (let runs = 1; ; runs++) {
        await mailSync.runMailSync({ application_id: app.application_id, grant_id: grantId }, () => GENEROUS_MS);
        const state = await getSyncState(grantId);
        if (!state) throw new Error('the sync state is gone');
        if (state.failures) throw new Error(`sync run ${runs} failed: ${state.last_error}`);
        if (state.seeded) return { runs, state };
        if (runs >= 20) throw new Error(`not seeded after ${runs} runs`);
      }
    };

    phase('grants and workers');
    // Warm-up: a small account through the same code, its jobs drained (not measured).
    if (warmGrant) await origin.run('warm-up', () => firstSync(warmGrant.id));
    await jobsDrained();

    phase('warm-up');
    // 1a. The bare floor: FETCH of the same messages over one connection.
    const bare = await fetchFloor(server, USER);
    if (bare.count !== N) throw new Error(`the floor fetched ${bare.count} of ${N} messages`);
    const bareRate = bare.count / bare.seconds;

    // 1b. Ours: the first sync, its jobs run meanwhile.
    counts.clear();
    const jobsBefore = worker.handled;
    const streamBefore = stream.records;
    const jobRunsBefore = jobRuns.length;
    const cpuBefore = cpuTime(SERVICES);
    const syncStart = performance.now();
    const { runs, state } = await origin.run('sync', () => firstSync(grant.id));
    const syncSeconds = (performance.now() - syncStart) / 1000;
    const syncCpu = cpuSince(cpuBefore, SERVICES);
    const syncCounts = snapshot('sync');
    const synced = Object.values(state.folders).reduce((a, f) => a + f.messages, 0);
    if (synced !== N) throw new Error(`the sync stored ${synced} of ${N} messages`);
    const oursRate = N / syncSeconds;
    const jobsAtSyncEnd = snapshot('jobs');
    const streamAtSyncEnd = stream.records;
    await jobsDrained();
    const drainedSeconds = (performance.now() - syncStart) / 1000;
    const jobsCounts = snapshot('jobs');
    const outboxCounts = snapshot('outbox');
    const jobsHandled = worker.handled - jobsBefore;
    const syncJobs = jobRuns.slice(jobRunsBefore);
    const streamRecords = stream.records - streamBefore;
    const streamDoneSeconds = (stream.last - syncStart) / 1000;
    const itemsPerMessage = syncCounts.items / N;

    // 1c. The durable floor: the same FETCH, and per batch of 50 as many items as ours wrote per
    // message, in TransactWriteItems of up to 100 items (sequential, as ours commits), no Switchboard code.
    const bareDynamo = new DynamoDBClient({});
    const table_ = stack.env.TABLE_NAME!;
    let floorRequests = 0;
    let floorItems = 0;
    let written = 0;
    let batch: { uid: number; source?: Buffer }[] = [];
    const writeBatch = async (folder: string) => {
      if (!batch.length) return;
      const items: TransactWriteItem[] = [];
      const total = Math.round(itemsPerMessage * (written + batch.length)) - Math.round(itemsPerMessage * written);
      batch.forEach((m) =>
        items.push({
          Put: {
            TableName: table_,
            Item: { pk: { S: `floor#${folder}` }, sk: { S: `m#${m.uid}` }, source: { B: m.source ?? Buffer.alloc(0) } },
          },
        }),
      );
      for (let i = items.length; i < total; i++)
        items.push({
          Put: {
            TableName: table_,
            Item: { pk: { S: `floor#${folder}#${written}` }, sk: { S: `i#${i}` }, v: { N: '1' } },
          },
        });
      for (let i = 0; i < items.length; i += 100) {
        await bareDynamo.send(new TransactWriteItemsCommand({ TransactItems: items.slice(i, i + 100) }));
        floorRequests++;
      }
      floorItems += items.length;
      written += batch.length;
      batch = [];
    };
    const durableCpuBefore = cpuTime(SERVICES);
    const durable = await fetchFloor(
      server,
      USER,
      async (message, folder) => {
        batch.push({ uid: message.uid, source: message.source });
        if (batch.length === BATCH) await writeBatch(folder);
      },
      writeBatch,
    );
    const durableCpu = cpuSince(durableCpuBefore, SERVICES);
    bareDynamo.destroy();
    const durableRate = durable.count / durable.seconds;

    // 1d. The bound this machine puts on ours: the same corpus in a second account, its first sync with
    // the jobs worker stopped until the sync ends. On AWS the jobs run in Lambdas of their own against
    // a DynamoDB that is not one process; here they share two cores and DynamoDB Local, which runs
    // one transaction at a time, with the sync (and the floors ran with no jobs at all).
    await jobsDrained();
    await worker.stop();
    const heldStart = performance.now();
    await origin.run('held', () => firstSync(heldGrant.id));
    const heldSeconds = (performance.now() - heldStart) / 1000;
    const heldRate = N / heldSeconds;
    worker = origin.run('jobs', () => startJobsWorker(stack!.env.JOBS_QUEUE_URL!, timedJobs, 2));
    stops.push(() => worker.stop());
    await jobsDrained();
    const heldDrainedSeconds = (performance.now() - heldStart) / 1000;

    phase('first sync, its jobs and the floors');
    // 2. APPEND by another client → message.created, the mail-sync worker polling its queue as Lambda would.
    const sqs = new SQSClient({});
    stops.push(async () => sqs.destroy());
    await origin.run('live', async () => {
      for (let i = 0; i < 2; i++) {
        stops.push(
          pollQueue(sqs, stack!.env.MAIL_SYNC_QUEUE_URL!, mailSyncHandler, 'mail-sync', 300_000),
          pollQueue(sqs, stack!.env.FANOUT_QUEUE_URL!, fanout, 'webhook-fanout', 30_000),
          pollQueue(sqs, stack!.env.DELIVERY_QUEUE_URL!, delivery, 'webhook-delivery', 30_000),
        );
      }
    });
    const liveStart = performance.now();
    const interval = mailSync.nextInterval((await getSyncState(grant.id))!, Math.floor(Date.now() / 1000));
    // Full size: the moments spread over several intervals; smoke size: over a few seconds, to stay short.
    const windowMs = SMOKE ? 5000 : Math.max(1, SAMPLES / 2) * interval * 1000;
    const random = rng(23);
    const moments = Array.from({ length: SAMPLES }, () => random() * windowMs).sort((a, b) => a - b);
    const appender = await imapClient(server, USER);
    stops.push(() => appender.logout().catch(() => appender.close()));
    const appended = new Map<string, number>();
    for (const [i, at] of moments.entries()) {
      const wait = liveStart + at - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const subject = `Live ${i} ${process.pid}`;
      const raw = Buffer.from(
        [
          'From: Live Sender <live@example.net>',
          `To: ${USER}`,
          `Subject: ${subject}`,
          `Date: ${new Date().toUTCString()}`,
          `Message-ID: <live.${i}.${process.pid}@example.net>`,
          'MIME-Version: 1.0',
          'Content-Type: text/plain; charset=utf-8',
          '',
          `Just arrived, sample ${i}.`,
          '',
        ].join('\r\n'),
      );
      await appender.append('INBOX', raw, []);
      appended.set(subject, performance.now());
    }
    const deadline = performance.now() + 3 * interval * 1000 + 30_000;
    while ([...appended.keys()].some((s) => !received.has(s)) && performance.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const missing = [...appended.keys()].filter((s) => !received.has(s));
    if (missing.length)
      throw new Error(
        `${missing.length} of ${SAMPLES} APPENDed messages never reached the receiver as message.created`,
      );
    const lags = [...appended].map(([s, at]) => (received.get(s)! - at) / 1000).sort((a, b) => a - b);
    // After each run's end, the next run's start: the interval as the queue delivered it.
    // (Runs that ended before the pollers started waited for them, not for the queue.)
    const gaps = runEnds
      .filter((end) => end.at >= liveStart)
      .flatMap((end) => {
        const next = runStarts.find((start) => start > end.at);
        return next === undefined ? [] : [(next - end.at) / 1000];
      });
    const scheduled = runEnds.slice(1).map((end) => end.delayMs / 1000);

    phase('APPENDs → receipts');
    // The report.
    const ratio = oursRate / bareRate;
    const durableRatio = oursRate / durableRate;
    const describe = (c: Counts) =>
      Object.entries(c.byCommand)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
    const p50 = percentile(lags, 50);
    console.log(
      `seeded ${N} messages (${perFolder}; ${averageBytes.toFixed(0)} bytes on average, about a third replies) by IMAP APPEND in ${seedSeconds.toFixed(1)} s${WARM_UP ? `, with a ${WARM_UP}-message warm-up account synced first (not timed)` : ''}\n`,
    );
    console.log(
      table([
        ['measure', 'value'],
        [
          `first sync of ${N} messages: ours, first run's start → seeded`,
          `${oursRate.toFixed(0)} messages/s (${syncSeconds.toFixed(1)} s, ${runs} run${runs === 1 ? '' : 's'})`,
        ],
        [
          `  its messages-stored jobs drained`,
          `${drainedSeconds.toFixed(1)} s after the first run's start (${(drainedSeconds - syncSeconds).toFixed(1)} s after the sync; ${jobsHandled} jobs)`,
        ],
        [
          'floor: bare imapflow FETCH, one connection',
          `${bareRate.toFixed(0)} messages/s (${bare.seconds.toFixed(2)} s)`,
        ],
        ['  ours ÷ floor', `${ratio.toFixed(2)} (goal ≥ ${FLOOR_TARGET}: ${ratio >= FLOOR_TARGET ? 'met' : 'MISSED'})`],
        [
          `durable floor: the FETCH + ${itemsPerMessage.toFixed(1)} items/message in TransactWriteItems per batch of ${BATCH}`,
          `${durableRate.toFixed(0)} messages/s (${durable.seconds.toFixed(2)} s, ${floorItems} items in ${floorRequests} requests)`,
        ],
        [
          '  ours ÷ durable floor',
          `${durableRatio.toFixed(2)} (goal ≥ ${DURABLE_TARGET}: ${durableRatio >= DURABLE_TARGET ? 'met' : 'MISSED'})`,
        ],
        [
          `bound on this machine: the same first sync, its jobs held until it ends`,
          `${heldRate.toFixed(0)} messages/s (${heldSeconds.toFixed(1)} s; jobs drained ${heldDrainedSeconds.toFixed(1)} s after its start)`,
        ],
        [
          '  ours alone ÷ durable floor',
          `${(heldRate / durableRate).toFixed(2)} (goal ≥ ${DURABLE_TARGET}: ${heldRate / durableRate >= DURABLE_TARGET ? 'met' : 'MISSED'})`,
        ],
        [
          `APPEND → message.created receipt, ${SAMPLES} APPENDs at random moments`,
          `p50 ${p50.toFixed(1)} s, p99 ${percentile(lags, 99).toFixed(1)} s, max ${lags.at(-1)!.toFixed(1)} s (goal p50 ≤ ${LATENCY_TARGET_P50_S} s: ${p50 <= LATENCY_TARGET_P50_S ? 'met' : 'MISSED'})`,
        ],
        [
          '  polling interval in force',
          `${interval} s (active; SYNC_INTERVALS ${JSON.stringify(mailSync.SYNC_INTERVALS)}); runs scheduled ${scheduled.length ? `${Math.min(...scheduled).toFixed(1)}–${Math.max(...scheduled).toFixed(1)} s` : 'n/a'} after the previous one's end, started ${gaps.length ? `${Math.min(...gaps).toFixed(1)}–${Math.max(...gaps).toFixed(1)} s after it (${gaps.length} runs)` : 'n/a'}`,
        ],
        [
          'DynamoDB items written per synced message: sync, jobs',
          `${itemsPerMessage.toFixed(2)}, ${(jobsCounts.items / N).toFixed(2)} (write requests per message: ${(syncCounts.writeRequests / N).toFixed(2)}, ${(jobsCounts.writeRequests / N).toFixed(2)})`,
        ],
      ]),
    );
    console.log(
      `\nWhere the time goes (the first sync, ${syncSeconds.toFixed(1)} s, jobs and outbox consumer running meanwhile):`,
    );
    console.log(
      table([
        ['', 'value'],
        [
          'sync: writes (items)',
          describe({
            ...syncCounts,
            byCommand: Object.fromEntries(
              Object.entries(syncCounts.byCommand).filter(([k]) => /Put|Update|Delete|Write/.test(k)),
            ),
          }),
        ],
        [
          'sync: requests',
          `${syncCounts.writeRequests} writes, ${syncCounts.readRequests} reads (${describe({ ...syncCounts, byCommand: Object.fromEntries(Object.entries(syncCounts.byCommand).filter(([k]) => !/Put|Update|Delete|Write/.test(k))) })})`,
        ],
        [
          'sync: wall time with a DynamoDB request in flight',
          `${(inFlight.ms / 1000).toFixed(1)} s of ${syncSeconds.toFixed(1)} s (the rest: IMAP, parsing, building items)`,
        ],
        [
          'jobs during the sync / until drained',
          `${jobsAtSyncEnd.items} / ${jobsCounts.items} items; ${jobsCounts.writeRequests} writes, ${jobsCounts.readRequests} reads (${describe(jobsCounts)})`,
        ],
        [
          'jobs: when they ran',
          syncJobs.length
            ? `first ${((syncJobs[0]!.at - syncStart) / 1000).toFixed(1)} s after the sync's start, ${syncJobs.filter((j) => j.at < syncStart + syncSeconds * 1000).length} of ${syncJobs.length} started during the sync; handler ${(syncJobs.reduce((a, j) => a + j.ms, 0) / syncJobs.length).toFixed(0)} ms per job on average (2 pollers)`
            : 'none',
        ],
        [
          'stream → outbox consumer',
          `${streamRecords} records handed over, ${streamAtSyncEnd - streamBefore} of them by the sync's end, the last ${streamDoneSeconds.toFixed(1)} s after the sync's start; its own DynamoDB requests: ${outboxCounts.writeRequests} writes, ${outboxCounts.readRequests} reads`,
        ],
        ['CPU during the sync', cpuLine(syncCpu, syncSeconds)],
        ['CPU during the durable floor', cpuLine(durableCpu, durable.seconds)],
      ]),
    );
    console.log(
      `(one process, ${SMOKE ? 'smoke size' : 'full size'}; DynamoDB Local, the SQS emulator and Dovecot on loopback; the jobs worker with 2 pollers; latency: the APPEND's OK → receipt, ${SAMPLES} moments uniform over ${(windowMs / 1000).toFixed(0)} s, 2 mail-sync, fan-out and delivery pollers each)`,
    );
    console.log(`(this run: ${phases.join(', ')})`);
  } finally {
    for (const stop of [...stops].reverse()) await stop().catch((error: unknown) => console.error('stopping:', error));
    await stack?.stop();
    await dovecot?.stop();
    await sink.stop();
  }
}
