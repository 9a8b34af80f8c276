import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { buildEvent, lambdaContext } from '../scripts/local-stack/api-gateway-event';
import { startStack } from '../scripts/local-stack/index';
import { isOutboxInsert, startStreamRelay } from '../scripts/local-stack/stream-relay';
import { startJobsWorker } from './jobs';
import { fmt, median, scaled, table } from './lib';
import { runUploadSendBench } from './send-upload';

/**
 * Issues 9 and 24 (part 2): a send to many Agent Accounts of this deployment answers in bounded
 * time, and their copies are stored soon after. The send handler is invoked in-process with API
 * Gateway events (multipart, a 2 MB attachment) against the local stack; the answer time for 300
 * local recipients is compared with the same send to one recipient (target: under 5 s, and a ratio
 * near 1). The copies are then stored by the real jobs worker, fed by the table's stream through the
 * outbox consumer, with JOB_CONCURRENCY jobs at a time as Lambda runs several instances of a busy
 * queue: one delivery job per batch of recipients, each storing its copies with their writes batched
 * (target: all 300 copies stored within 10 s of the answer), then one message-stored job per copy
 * (thread, search merge), whose end is reported too.
 */
const RECIPIENTS = Number(process.env.BENCH_LOCAL_RECIPIENTS ?? scaled(300, 3));
const RUNS = scaled(3, 1);
const TARGET_MS = 5000;
const TARGET_STORED_MS = 10_000;
const JOB_CONCURRENCY = Number(process.env.BENCH_JOB_CONCURRENCY ?? 4);

export async function runSendBench(): Promise<void> {
  console.log(`\n## Send to ${RECIPIENTS} local Agent Accounts with a 2 MB attachment (issues 9, 24)\n`);
  const stack = await startStack(`benchsend${process.pid}`);
  Object.assign(process.env, stack.env, { LOG_LEVEL: 'warn' });
  const jobsQueue = process.env.JOBS_QUEUE_URL!;
  const relay = await startStreamRelay({
    tableName: process.env.TABLE_NAME!,
    filter: isOutboxInsert,
    consumer: async (event) => (await import('#functions/outbox/handler')).handler(event),
  });
  try {
    const [{ createApplication }, grantsService, { handler: send }, { handler: jobs }, { batchGet }, keys, messages] =
      await Promise.all([
        import('#shared/applications/service'),
        import('#shared/grants/create'),
        import('#functions/send/handler'),
        import('#functions/jobs/handler'),
        import('#shared/db/batch'),
        import('#shared/db/keys'),
        import('#shared/db/messages'),
      ]);
    const app = await createApplication({ name: 'bench send' });
    const context = { applicationId: app.application_id, credential: 'api_key' as const };
    const grant = (name: string) =>
      grantsService.createCustomGrant(
        context,
        { provider: 'agent', settings: { email_address: `${name}-${process.pid}@agents.test` } },
        { ip: '127.0.0.1', userAgent: 'bench' },
      );
    const sender = await grant('sender');
    const recipients: (typeof sender)[] = [];
    for (let i = 0; i < RECIPIENTS; i += 20)
      recipients.push(
        ...(await Promise.all(Array.from({ length: Math.min(20, RECIPIENTS - i) }, (_, j) => grant(`r${i + j}`)))),
      );
    const attachment = randomBytes(2 * 1024 * 1024);

    /** One send through the real handler; returns its answer time and the Message-ID header. */
    const sendTo = async (to: typeof recipients) => {
      const list = (from: number) => to.slice(from, from + 100).map((g) => ({ email: g.email }));
      const form = new FormData();
      form.append(
        'message',
        JSON.stringify({ to: list(0), cc: list(100), bcc: list(200), subject: 'Bench', body: '<p>bench</p>' }),
      );
      form.append('file', new Blob([attachment], { type: 'application/octet-stream' }), 'report.bin');
      const request = new Request('http://localhost/', { method: 'POST', body: form });
      const body = Buffer.from(await request.arrayBuffer());
      const event = buildEvent(
        { routeKey: 'POST /v3/grants/{grant_id}/messages/send', params: { grant_id: sender.id } },
        {
          method: 'POST',
          url: `/v3/grants/${sender.id}/messages/send`,
          headers: {
            authorization: `Bearer ${app.api_key}`,
            'content-type': request.headers.get('content-type')!,
            'content-length': String(body.length),
          },
          body,
          sourceIp: '127.0.0.1',
        },
      );
      const t = performance.now();
      const result = (await send(event, lambdaContext('send', 29_000))) as APIGatewayProxyStructuredResultV2;
      const elapsed = performance.now() - t;
      if (result.statusCode !== 200) throw new Error(`send: ${result.statusCode} ${result.body}`);
      const sent = (JSON.parse(result.body!) as { data: { id: string } }).data;
      const record = await messages.getMessage(sender.id, sent.id as Parameters<typeof messages.getMessage>[1]);
      return { elapsed, header: record!.message_id_header! };
    };

    const worker = startJobsWorker(jobsQueue, jobs, JOB_CONCURRENCY);
    /** Whether every mailbox of `to` holds the message with this Message-ID header. */
    const storedIn = async (to: typeof recipients, header: string) =>
      (await batchGet(to.map((g) => keys.messageIdHeaderKey(g.id, header)))).length === to.length;
    /** Sends, then waits for the copies (polled every 50 ms) and for every job; returns the three times. */
    const sendAndDeliver = async (to: typeof recipients) => {
      const { elapsed: answered, header } = await sendTo(to);
      const t = performance.now();
      while (!(await storedIn(to, header))) {
        if (performance.now() - t > 600_000) throw new Error('copies not stored after 10 minutes');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const stored = performance.now() - t;
      await relay.drained();
      await worker.idle();
      return { answered, stored, done: performance.now() - t };
    };

    const one: number[] = [];
    const many: number[] = [];
    const stored: number[] = [];
    const done: number[] = [];
    try {
      for (let run = 0; run < RUNS; run++) {
        one.push((await sendAndDeliver(recipients.slice(0, 1))).answered);
        const r = await sendAndDeliver(recipients);
        many.push(r.answered);
        stored.push(r.stored);
        done.push(r.done);
      }
    } finally {
      await worker.stop();
    }
    // Every mailbox holds exactly the copies sent to it (1 + RUNS for the first, RUNS for the others).
    const counts = await Promise.all(
      recipients.map(
        async (g) => (await batchGet([keys.folderKey(g.id, 'inbox')]))[0]?.total_count as number | undefined,
      ),
    );
    const wrong = counts.filter((c, i) => c !== (i === 0 ? 2 * RUNS : RUNS)).length;

    const ratio = median(many) / median(one);
    console.log(
      table([
        ['send (multipart, 2 MB attachment)', 'median', 'runs'],
        ['answer, to 1 local Agent Account', fmt(median(one), 0), one.map((v) => v.toFixed(0)).join(', ')],
        [
          `answer, to ${RECIPIENTS} local Agent Accounts`,
          fmt(median(many), 0),
          many.map((v) => v.toFixed(0)).join(', '),
        ],
        [
          `answer → all ${RECIPIENTS} copies stored`,
          fmt(median(stored), 0),
          stored.map((v) => v.toFixed(0)).join(', '),
        ],
        [
          `answer → every job done (copies' threads and search merges too)`,
          fmt(median(done), 0),
          done.map((v) => v.toFixed(0)).join(', '),
        ],
      ]),
    );
    console.log(
      `\n(jobs worker in-process, ${JOB_CONCURRENCY} jobs at a time; ${worker.handled} jobs run, ${worker.failures} failed)`,
    );
    console.log(`answer ${RECIPIENTS} ÷ 1 recipient: ${ratio.toFixed(2)}`);
    console.log(
      `target: answer under ${TARGET_MS} ms for ${RECIPIENTS} local recipients: ${median(many) < TARGET_MS ? 'met' : 'NOT met'}`,
    );
    console.log(
      `target: all ${RECIPIENTS} copies stored within ${TARGET_STORED_MS} ms of the answer: ${median(stored) <= TARGET_STORED_MS ? 'met' : 'NOT met'}`,
    );
    console.log(
      `inbox counts: ${wrong === 0 ? 'every mailbox holds exactly the copies sent to it' : `${wrong} mailbox(es) hold another count`}`,
    );
    console.log(
      "(before batching: one delivery job stored the copies one by one, 8 at a time, uploading each copy's contents; 110 s until the last of 300 copies and their jobs, jobs one at a time)",
    );
    await runUploadSendBench(app.api_key, sender.id, `outside-${process.pid}@example.net`);
  } finally {
    await relay.stop();
    await stack.stop();
  }
}
