import { performance } from 'node:perf_hooks';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { APIGatewayProxyResultV2, Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { startStack } from '../scripts/local-stack/index';
import {
  isOutboxInsert,
  startStreamRelay,
  type StreamConsumer,
  type StreamRelay,
} from '../scripts/local-stack/stream-relay';
import type { Gateway } from '../test/support/gateway';
import type { dynamo as Dynamo } from '#shared/aws/dynamodb';
import { startJobsWorker } from './jobs';
import { fmt, percentile, rng, startWebhookReceiver, table } from './lib';
import { pollQueue, type SqsHandler } from './queue-poller';

/**
 * What the suites of the providers answered live (bench/google.ts, bench/microsoft.ts) share: the
 * answer ÷ bare provider calls measurement (ours in process and over HTTP through the test gateway,
 * the bare calls beside them, interleaved), the DynamoDB requests of one of our answers, the seeded
 * mail and meetings, the pipeline that takes a provider's change to a webhook receiver, and the
 * printing of their figures, so that both print the same figures the same way.
 */

export const ANSWER_TARGET = 1.2;
export const LAG_TARGET_MS = 5_000;
export const DAY = 86_400;

/** Answered calls (or requests) by name. */
export type Counts = Map<string, number>;

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
export const ratioText = (ratio: number) =>
  `${ratio.toFixed(2)} (target ≤ ${ANSWER_TARGET}: ${ratio <= ANSWER_TARGET ? 'met' : 'NOT met'})`;
export const p50 = (s: number[]) => percentile(s, 50);
export const p95 = (s: number[]) => percentile(s, 95);
const pair = (s: number[]) => `${fmt(p50(s))} / ${fmt(p95(s))}`;

/** Calls counted since `before`, as `method × n` (the method's name without its API), or `none`. */
export function callsSince(counts: Counts, before: Counts): { total: number; text: string } {
  const spent = [...counts].map(([name, n]) => [name, n - (before.get(name) ?? 0)] as const).filter(([, n]) => n);
  const total = spent.reduce((sum, [, n]) => sum + n, 0);
  const short = (name: string) => name.split('.').slice(1).join('.');
  return {
    total,
    text: spent.length ? spent.map(([name, n]) => `${short(name)} ×${Number(n.toFixed(2))}`).join(', ') : 'none',
  };
}

/** Waits until `done()`, or throws naming `what` after `ms`. */
export async function waitUntil(done: () => boolean | Promise<boolean>, what: () => string, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error(`${what()} after ${(ms / 1000).toFixed(0)} s`);
    await sleep(20);
  }
}

/** The text of the seeded mail `i` (about 1 KB): the same in every suite's messages. */
export const mailText = (i: number) =>
  Array.from(
    { length: 12 },
    (_, line) => `Line ${line} of message ${i}: the quarterly figures are attached below, as discussed.`,
  ).join('\r\n');

/** The HTML alternative of a seeded mail's text. */
export const mailHtml = (text: string) => `<html><body><p>${text.split('\r\n').join('</p><p>')}</p></body></html>`;

/**
 * `count` meetings over the 30 days from `from` (Unix seconds), on working hours (UTC), 30 to 90
 * minutes each, the same for a seed in every suite.
 */
export function meetingTimes(count: number, from: number, seed: number): { start: number; end: number }[] {
  const random = rng(seed);
  return Array.from({ length: count }, (_, i) => {
    const day = from + Math.floor((i * 30) / count) * DAY;
    const start = day + (8 + Math.floor(random() * 9)) * 3600 + (random() < 0.5 ? 0 : 1800);
    return { start, end: start + (1 + Math.floor(random() * 3)) * 1800 };
  });
}

/** One of our requests, made one way (in process or over HTTP); throws unless it answers 200. */
export type Way = (app: { api_key: string }, method: string, path: string, body?: unknown) => Promise<void>;

export interface AnswerCase {
  label: string;
  ours: (via: Way) => Promise<void>;
  bare: () => Promise<void>;
}

export interface Measured {
  label: string;
  calls: { ours: { total: number; text: string }; bare: { total: number; text: string } };
  /** DynamoDB requests of our one counted request, by command. */
  dynamo: { total: number; text: string };
  bare: number[];
  inProcess: number[];
  overHttp: number[];
}

/**
 * Our requests both ways, and the measurement of a case against its bare calls: `counts` are the
 * provider calls counted at the fake; the functions' DynamoDB requests are counted (by command)
 * while one of our requests is.
 */
export function answerMeasurer(
  api: Gateway,
  counts: Counts,
  dynamo: typeof Dynamo,
  name: string,
): { invoke: Way; http: Way; measure: (c: AnswerCase, runs: number, warmUp: number) => Promise<Measured> } {
  const tableCalls: Counts = new Map();
  let countingTable = false;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      if (countingTable) {
        const command = `dynamodb.${(context.commandName ?? 'unknown').replace(/Command$/, '')}`;
        tableCalls.set(command, (tableCalls.get(command) ?? 0) + 1);
      }
      return next(args);
    },
    { step: 'initialize', name },
  );

  /** Our request in process: the event API Gateway builds, the route's real handler (no HTTP). */
  const invoke: Way = async (app, method, path, body) => {
    const result: APIGatewayProxyResultV2 = await api.invoke({
      method,
      path,
      headers: {
        authorization: `Bearer ${app.api_key}`,
        host: new URL(api.url).host,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const status = typeof result === 'object' ? result.statusCode : 200;
    if (status !== 200)
      throw new Error(`${method} ${path}: ${status} ${typeof result === 'object' ? result.body : result}`);
  };
  /** Our request over loopback HTTP, through the test gateway (with its response-schema check), the answer read. */
  const http: Way = async (app, method, path, body) => {
    const answer = await fetch(`${api.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${app.api_key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await answer.text();
    if (answer.status !== 200) throw new Error(`${method} ${path} over HTTP: ${answer.status} ${text}`);
    JSON.parse(text);
  };

  /** The provider calls of one request each way, then `runs` interleaved repetitions (after `warmUp`), the order rotating. */
  const measure = async (c: AnswerCase, runs: number, warmUp: number): Promise<Measured> => {
    for (let i = 0; i < warmUp; i++) {
      await c.bare();
      await c.ours(invoke);
      await c.ours(http);
    }
    let before = new Map(counts);
    const tableBefore = new Map(tableCalls);
    countingTable = true;
    await c.ours(invoke);
    countingTable = false;
    const ours = callsSince(counts, before);
    const dynamoCalls = callsSince(tableCalls, tableBefore);
    before = new Map(counts);
    await c.bare();
    const bareCalls = callsSince(counts, before);
    const samples = { bare: [] as number[], inProcess: [] as number[], overHttp: [] as number[] };
    const ways: [keyof typeof samples, () => Promise<void>][] = [
      ['bare', c.bare],
      ['inProcess', () => c.ours(invoke)],
      ['overHttp', () => c.ours(http)],
    ];
    for (let i = 0; i < runs; i++) {
      for (let k = 0; k < ways.length; k++) {
        const [way, run] = ways[(i + k) % ways.length]!;
        const started = performance.now();
        await run();
        samples[way].push(performance.now() - started);
      }
    }
    return { label: c.label, calls: { ours, bare: bareCalls }, dynamo: dynamoCalls, ...samples };
  };
  return { invoke, http, measure };
}

/** The table of answer ÷ bare provider calls, its legend (`how`: the runs and the fake's latency), and each case's calls and ratios. */
export function printAnswers(answers: readonly Measured[], how: string): void {
  console.log(
    table([
      [
        'request',
        'provider calls, ours (bare)',
        'DynamoDB requests, ours',
        'bare p50 / p95',
        'ours in process p50 / p95',
        'ratio',
        'ours − bare p50',
        'ours over HTTP p50 / p95',
        'ratio',
      ],
      ...answers.map((m) => [
        m.label,
        `${m.calls.ours.total} (${m.calls.bare.total})`,
        m.dynamo.total,
        pair(m.bare),
        pair(m.inProcess),
        (p50(m.inProcess) / p50(m.bare)).toFixed(2),
        fmt(p50(m.inProcess) - p50(m.bare)),
        pair(m.overHttp),
        (p50(m.overHttp) / p50(m.bare)).toFixed(2),
      ]),
    ]),
  );
  console.log(`(${how})`);
  for (const m of answers) {
    console.log(`\n${m.label}: calls ours ${m.calls.ours.text}; bare ${m.calls.bare.text}`);
    console.log(`  our DynamoDB requests: ${m.dynamo.text}`);
    console.log(`  answer ÷ bare provider calls, in process: ${ratioText(p50(m.inProcess) / p50(m.bare))}`);
    console.log(`  answer ÷ bare provider calls, over HTTP: ${ratioText(p50(m.overHttp) / p50(m.bare))}`);
    if (m.calls.ours.total !== m.calls.bare.total)
      console.log(`  NOTE: ours made ${m.calls.ours.total} provider calls, the baseline ${m.calls.bare.total}`);
  }
}

/** Availability against its bare free/busy calls (`bareLabel` says which), with the slots it found. */
export function printAvailability(availability: Measured, slots: number, bareLabel: string, runs: number): void {
  console.log(`\n${availability.label} (${slots} slots):\n`);
  console.log(
    table([
      ['way', 'p50', 'p95', 'provider calls per request'],
      [
        'ours in process',
        fmt(p50(availability.inProcess)),
        fmt(p95(availability.inProcess)),
        `${availability.calls.ours.total} (${availability.calls.ours.text})`,
      ],
      ['ours over HTTP', fmt(p50(availability.overHttp)), fmt(p95(availability.overHttp)), ''],
      [
        bareLabel,
        fmt(p50(availability.bare)),
        fmt(p95(availability.bare)),
        `${availability.calls.bare.total} (${availability.calls.bare.text})`,
      ],
    ]),
  );
  console.log(
    `availability ÷ bare free/busy calls, in process: ${ratioText(p50(availability.inProcess) / p50(availability.bare))}; over HTTP: ${(p50(availability.overHttp) / p50(availability.bare)).toFixed(2)} (${runs} runs)`,
  );
  console.log(
    `  ours − bare p50 in process: ${fmt(p50(availability.inProcess) - p50(availability.bare))}; our DynamoDB requests: ${availability.dynamo.text}`,
  );
}

/** The functions the change → webhook pipeline runs in process. */
export interface PipelineHandlers {
  jobs: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;
  mailSync: SqsHandler;
  outbox: StreamConsumer;
  fanout: SqsHandler;
  delivery: SqsHandler;
}

export interface Pipeline {
  /** The local webhook receiver's URL. */
  hookUrl: string;
  /** When each message.created arrived at the receiver (by message ID). */
  received: Map<string, number>;
  /** When the fan-out worker took each message.created (by message ID). */
  atFanout: Map<string, number>;
  /** The sync runs taken so far, by kind (a pushed run's message says so). */
  runs: { pushed: number; scheduled: number };
}

/**
 * The platform around the functions, as Lambda runs it: a webhook receiver, the table's stream to the
 * outbox consumer, the jobs worker, and pollers of the mail-sync, fan-out and delivery queues (two
 * each), timing each message.created at the fan-out worker and at the receiver. What stops each is
 * pushed on `stops`.
 */
export async function startPipeline(
  env: Awaited<ReturnType<typeof startStack>>['env'],
  handlers: PipelineHandlers,
  stops: (() => Promise<unknown>)[],
): Promise<Pipeline> {
  const received = new Map<string, number>();
  const receiver = await startWebhookReceiver((body, arrivedAt) => {
    const id = body.data.object.id as string;
    if (body.type.startsWith('message.created') && !received.has(id)) received.set(id, arrivedAt);
  });
  stops.push(receiver.stop);

  const relay: StreamRelay = await startStreamRelay({
    tableName: env.TABLE_NAME!,
    filter: isOutboxInsert,
    consumer: (event) => handlers.outbox(event),
  });
  stops.push(() => relay.stop());
  await relay.drained();
  const worker = startJobsWorker(env.JOBS_QUEUE_URL!, handlers.jobs, 1);
  stops.push(() => worker.stop());
  const sqs = new SQSClient({});
  stops.push(async () => sqs.destroy());
  const atFanout = new Map<string, number>();
  const runs = { pushed: 0, scheduled: 0 };
  const fanoutTimed: SqsHandler = (event, context) => {
    const now = performance.now();
    for (const record of event.Records) {
      try {
        const n = JSON.parse(record.body) as { type: string; data: { object: { id: string } } };
        if (n.type.startsWith('message.created') && !atFanout.has(n.data.object.id))
          atFanout.set(n.data.object.id, now);
      } catch {
        // not a notification
      }
    }
    return handlers.fanout(event, context);
  };
  const mailSyncCounted: SqsHandler = (event, context) => {
    for (const record of event.Records) {
      try {
        runs[(JSON.parse(record.body) as { pushed?: number }).pushed === undefined ? 'scheduled' : 'pushed']++;
      } catch {
        // counted by the handler's own refusal
      }
    }
    return handlers.mailSync(event, context);
  };
  for (let i = 0; i < 2; i++)
    stops.push(
      pollQueue(sqs, env.MAIL_SYNC_QUEUE_URL!, mailSyncCounted, 'mail-sync', 300_000),
      pollQueue(sqs, env.FANOUT_QUEUE_URL!, fanoutTimed, 'webhook-fanout', 30_000),
      pollQueue(sqs, env.DELIVERY_QUEUE_URL!, handlers.delivery, 'webhook-delivery', 30_000),
    );
  return { hookUrl: receiver.url, received, atFanout, runs };
}

/**
 * Lags of `count` changes made by `change(i)` (answering the message's ID) at `momentsMs` from now:
 * to their message.created at the receiver, and at the fan-out worker, sorted; throws naming what
 * never arrived after `waitMs`.
 */
export async function lagsOf(
  pipeline: Pipeline,
  count: number,
  momentsMs: readonly number[],
  change: (i: number) => string,
  tag: string,
  waitMs: number,
): Promise<{ lags: number[]; fanoutLags: number[] }> {
  const sent = new Map<string, number>();
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    const wait = start + momentsMs[i]! - performance.now();
    if (wait > 0) await sleep(wait);
    const at = performance.now();
    sent.set(change(i), at);
  }
  await waitUntil(
    () => [...sent.keys()].every((id) => pipeline.received.has(id)),
    () =>
      `${[...sent.keys()].filter((id) => !pipeline.received.has(id)).length} of ${count} delivered messages (${tag}) not announced at the receiver`,
    waitMs,
  );
  const lags = [...sent].map(([id, at]) => pipeline.received.get(id)! - at).sort((a, b) => a - b);
  const fanoutLags = [...sent].map(([id, at]) => pipeline.atFanout.get(id)! - at).sort((a, b) => a - b);
  return { lags, fanoutLags };
}

export interface LagFigures {
  /** `(50 messages delivered 200 ms apart to a watched mailbox)`. */
  what: string;
  pushed: { lags: number[]; fanoutLags: number[] };
  /** The pushes (notifications) and sync runs meanwhile. */
  pushesText: string;
  unpushed?: { lags: number[]; count: number; spreadMs: number };
  /** The sync-run interval in force (active), in seconds. */
  intervalSeconds: number;
  /** The closing legend: what ran where. */
  setting: string;
}

/** The change → webhook table, its p95 against the target, and the setting. */
export function printLags(figures: LagFigures): void {
  const summary = (lags: number[]) =>
    `p50 ${fmt(percentile(lags, 50), 0)}, p95 ${fmt(percentile(lags, 95), 0)}, max ${fmt(lags.at(-1)!, 0)}`;
  const lagP95 = percentile(figures.pushed.lags, 95);
  const { unpushed } = figures;
  console.log(`\nChange → webhook ${figures.what}:\n`);
  console.log(
    table([
      ['measure', 'value'],
      ['deliver → message.created at the webhook receiver, push on', summary(figures.pushed.lags)],
      ['  deliver → message.created taken by the fan-out worker', summary(figures.pushed.fanoutLags)],
      ['  pushes / sync runs meanwhile', figures.pushesText],
      [
        unpushed
          ? `without push (scheduled runs only), ${unpushed.count} messages at random moments over ${unpushed.spreadMs / 1000} s`
          : 'without push (scheduled runs only)',
        unpushed
          ? summary(unpushed.lags)
          : `not measured at this size; bounded by the interval, ${figures.intervalSeconds} s (active) plus a run`,
      ],
      ['  sync-run interval in force (active)', `${figures.intervalSeconds} s`],
    ]),
  );
  console.log(
    `change → webhook p95 with push: ${fmt(lagP95, 0)} (target ≤ ${LAG_TARGET_MS / 1000} s: ${lagP95 <= LAG_TARGET_MS ? 'met' : 'NOT met'})`,
  );
  console.log(`(${figures.setting})`);
}
