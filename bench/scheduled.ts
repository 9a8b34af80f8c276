import { performance } from 'node:perf_hooks';
import { CreateScheduleCommand, SchedulerClient } from '@aws-sdk/client-scheduler';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import type { APIGatewayProxyStructuredResultV2, SQSEvent, SQSRecord } from 'aws-lambda';
import { buildEvent, lambdaContext } from '../scripts/local-stack/api-gateway-event';
import { startStack } from '../scripts/local-stack/index';
import { percentile, scaled, SMOKE, table } from './lib';

/**
 * Issue 11 benchmark: scheduled sends leave on time to the second although EventBridge Scheduler
 * fires anywhere in the minute after a schedule's time. On the local stack, whose Scheduler
 * stand-in fires at a random moment of that minute like the real service (jitter ON), it schedules
 * SENDS messages due over the next few minutes through the real send handler, runs the real
 * scheduled-send worker on its queue (WORKERS concurrent pollers, as Lambda's event source mapping
 * scales out), and measures, for each message, the lag between its send_at and its arrival at the
 * recipient's mail server (the local SMTP sink's receipt time).
 *
 * Baseline in the same run: the platform alone. PROBES plain one-shot schedules set at the due time
 * itself (what a naive design would do) fire into a probe queue; their lag between due time and
 * arrival is the Scheduler's precision as the stand-in emulates it.
 */
const SENDS = Number(process.env.BENCH_SCHEDULED_SENDS ?? scaled(1000, 10));
const PROBES = Number(process.env.BENCH_SCHEDULER_PROBES ?? scaled(200, 5));
const WORKERS = 8;
const CREATE_CONCURRENCY = 16;
/** Messages are due between FIRST_DUE and FIRST_DUE + SPREAD seconds from the start (all through the Scheduler path). */
const FIRST_DUE = scaled(90, 16);
const SPREAD = scaled(120, 4);
/**
 * The Scheduler stand-in fires in the minute after a schedule's time, as the real one does; a smoke
 * run cannot wait that minute, so there it fires on time and messages may be due 11 s ahead (the
 * configured minimum lead; the path is the same).
 */
const JITTER = !SMOKE;
const SMOKE_ENV = SMOKE ? { SCHEDULED_SEND_MIN_LEAD_SECONDS: '11' } : {};
const TARGET_P99_S = 2;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (n: number) => `${n.toFixed(2)} s`;

export async function runScheduledBench(): Promise<void> {
  console.log(
    `\n## Scheduled send: ${SENDS} messages due over ${SPREAD} s, Scheduler in-minute jitter ${JITTER ? 'ON' : 'OFF'} (issue 11)\n`,
  );
  process.env.SCHEDULER_JITTER = JITTER ? 'on' : 'off';
  const stack = await startStack(`benchsched${process.pid}`);
  // One sender sends them all: its daily quota (500 by default) must not be what is measured.
  Object.assign(process.env, stack.env, { LOG_LEVEL: 'warn', DAILY_SEND_QUOTA: String(SENDS * 2) }, SMOKE_ENV);
  const sqs = new SQSClient({});
  let stopping = false;
  try {
    const [{ createApplication }, grantsService, { handler: send }, { handler: worker }] = await Promise.all([
      import('#shared/applications/service'),
      import('#shared/grants/create'),
      import('#functions/send/handler'),
      import('#functions/scheduled-send/handler'),
    ]);
    const app = await createApplication({ name: 'bench scheduled send' });
    const sender = await grantsService.createCustomGrant(
      { applicationId: app.application_id, credential: 'api_key' },
      { provider: 'nylas', settings: { email: `scheduler-${process.pid}@agents.test` } },
      { ip: '127.0.0.1', userAgent: 'bench' },
    );

    // The worker: concurrent pollers of the scheduled-send queue, each invoking the real handler.
    const queueUrl = process.env.SCHEDULED_SEND_QUEUE_URL!;
    const toRecord = (m: Message) =>
      ({
        messageId: m.MessageId!,
        receiptHandle: m.ReceiptHandle!,
        body: m.Body!,
        attributes: m.Attributes ?? {},
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
      }) as unknown as SQSRecord;
    const pollers = Array.from({ length: WORKERS }, async () => {
      while (!stopping) {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: 1,
            WaitTimeSeconds: 0,
            AttributeNames: ['All'],
          }),
        );
        if (!Messages.length) {
          await sleep(20);
          continue;
        }
        const result = await worker({ Records: Messages.map(toRecord) } as SQSEvent);
        const failed = new Set(result.batchItemFailures.map((f) => f.itemIdentifier));
        const done = Messages.filter((m) => !failed.has(m.MessageId!));
        if (done.length)
          await sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: queueUrl,
              Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
            }),
          );
      }
    });

    // Baseline probes: schedules at the due time itself, into a queue of their own.
    const probeQueue = (await sqs.send(new CreateQueueCommand({ QueueName: `bench-probe-${process.pid}` }))).QueueUrl!;
    const probeArn = (
      await sqs.send(new GetQueueAttributesCommand({ QueueUrl: probeQueue, AttributeNames: ['QueueArn'] }))
    ).Attributes!.QueueArn!;
    const scheduler = new SchedulerClient({});
    const start = Math.floor(Date.now() / 1000);
    const dueOf = (i: number, n: number) => start + FIRST_DUE + Math.floor((i * SPREAD) / n);
    for (let i = 0; i < PROBES; i += 20) {
      await Promise.all(
        Array.from({ length: Math.min(20, PROBES - i) }, (_, j) =>
          scheduler.send(
            new CreateScheduleCommand({
              Name: `probe-${i + j}`,
              GroupName: process.env.SCHEDULE_GROUP,
              ScheduleExpression: `at(${new Date(dueOf(i + j, PROBES) * 1000).toISOString().slice(0, 19)})`,
              FlexibleTimeWindow: { Mode: 'OFF' },
              ActionAfterCompletion: 'DELETE',
              Target: {
                Arn: probeArn,
                RoleArn: process.env.SCHEDULER_ROLE_ARN,
                Input: JSON.stringify({ due: dueOf(i + j, PROBES) }),
              },
            }),
          ),
        ),
      );
    }
    const probeLags: number[] = [];
    const probing = (async () => {
      while (probeLags.length < PROBES && !stopping) {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({ QueueUrl: probeQueue, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
        );
        const at = Date.now() / 1000;
        for (const m of Messages) probeLags.push(at - (JSON.parse(m.Body!) as { due: number }).due);
        if (Messages.length)
          await sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: probeQueue,
              Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
            }),
          );
      }
    })();

    // Scheduling SENDS messages through the send handler, CREATE_CONCURRENCY at a time.
    const dueByRecipient = new Map<string, number>();
    const scheduleOne = async (i: number) => {
      const to = `r${i}-${process.pid}@example.net`;
      const sendAt = dueOf(i, SENDS);
      dueByRecipient.set(to, sendAt);
      const body = Buffer.from(
        JSON.stringify({ to: [{ email: to }], subject: `Scheduled ${i}`, body: '<p>on time</p>', send_at: sendAt }),
      );
      const event = buildEvent(
        { routeKey: 'POST /v3/grants/{grant_id}/messages/send', params: { grant_id: sender.id } },
        {
          method: 'POST',
          url: `/v3/grants/${sender.id}/messages/send`,
          headers: {
            authorization: `Bearer ${app.api_key}`,
            'content-type': 'application/json',
            'content-length': String(body.length),
          },
          body,
          sourceIp: '127.0.0.1',
        },
      );
      const result = (await send(event, lambdaContext('send', 29_000))) as APIGatewayProxyStructuredResultV2;
      if (result.statusCode !== 202) throw new Error(`schedule: ${result.statusCode} ${result.body}`);
    };
    const created = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CREATE_CONCURRENCY }, async () => {
        while (next < SENDS) await scheduleOne(next++);
      }),
    );
    const createSeconds = (performance.now() - created) / 1000;
    const lastDue = dueOf(SENDS - 1, SENDS);
    console.log(
      `scheduled ${SENDS} sends in ${seconds(createSeconds)} (${(SENDS / createSeconds).toFixed(0)}/s); waiting for the last one, due in ${lastDue - Math.floor(Date.now() / 1000)} s…`,
    );

    // Arrivals at the SMTP sink (receipt times), until all arrived or 90 s after the last due time.
    type Sunk = { recipients: string[]; receivedAt: string };
    let sunk: Sunk[] = [];
    while (Date.now() / 1000 < lastDue + 90) {
      sunk = (await (await fetch(`${process.env.SMTP_SINK_URL}/messages`)).json()) as Sunk[];
      if (sunk.length >= SENDS) break;
      await sleep(2000);
    }
    const lags = sunk.flatMap((m) =>
      m.recipients
        .filter((r) => dueByRecipient.has(r))
        .map((r) => Date.parse(m.receivedAt) / 1000 - dueByRecipient.get(r)!),
    );
    // Every probe fires within a minute of its due time.
    await Promise.race([probing, sleep(Math.max(0, (dueOf(PROBES - 1, PROBES) + 65) * 1000 - Date.now()))]);
    stopping = true;
    await Promise.all(pollers);
    scheduler.destroy();

    const early = lags.filter((l) => l < 0).length;
    const p99 = percentile(lags, 99);
    console.log(
      table([
        ['', 'count', 'p50', 'p90', 'p99', 'max', 'before send_at'],
        [
          'ours: send_at → arrival at the recipient',
          `${lags.length}/${SENDS}`,
          seconds(percentile(lags, 50)),
          seconds(percentile(lags, 90)),
          seconds(p99),
          seconds(Math.max(...lags)),
          String(early),
        ],
        [
          'platform alone: at(due) → firing received',
          `${probeLags.length}/${PROBES}`,
          seconds(percentile(probeLags, 50)),
          seconds(percentile(probeLags, 90)),
          seconds(percentile(probeLags, 99)),
          seconds(Math.max(...probeLags)),
          String(probeLags.filter((l) => l < 0).length),
        ],
      ]),
    );
    console.log(
      `\ncreate throughput: ${(SENDS / createSeconds).toFixed(0)} scheduled sends/s (${CREATE_CONCURRENCY} concurrent requests, in-process handler, local emulators)`,
    );
    console.log(
      `p99 lag ${seconds(p99)} (target ≤ ${TARGET_P99_S} s: ${p99 <= TARGET_P99_S ? 'met' : 'NOT met'}); the platform alone: p99 ${seconds(percentile(probeLags, 99))}`,
    );
    if (lags.length < SENDS) console.log(`MISSING: ${SENDS - lags.length} messages did not arrive`);
  } finally {
    stopping = true;
    sqs.destroy();
    await stack.stop();
  }
}
