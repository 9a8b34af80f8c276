import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { DeleteMessageCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { APIGatewayProxyStructuredResultV2, SQSRecord } from 'aws-lambda';
import { buildEvent, lambdaContext } from '../scripts/local-stack/api-gateway-event';
import { startStack } from '../scripts/local-stack/index';
import { startStreamRelay } from '../scripts/local-stack/stream-relay';
import { fmt, median, scaled, table } from './lib';

/**
 * Issue 9 benchmark: a send to many Agent Accounts of this deployment answers in bounded time.
 * The send handler is invoked in-process with API Gateway events (multipart, a 2 MB attachment)
 * against the local stack; the answer time for 300 local recipients is compared with the same send
 * to one recipient (target: under 5 s, and a ratio near 1: the answer no longer grows with the number
 * of local mailboxes). The local copies are then stored by the real jobs worker, fed by the table's
 * stream through the outbox consumer, and the time until the last of them is reported too.
 */
const RECIPIENTS = Number(process.env.BENCH_LOCAL_RECIPIENTS ?? scaled(300, 3));
const RUNS = scaled(3, 1);
const TARGET_MS = 5000;

export async function runSendBench(): Promise<void> {
  console.log(`\n## Send to ${RECIPIENTS} local Agent Accounts with a 2 MB attachment (issue 9)\n`);
  const stack = await startStack(`benchsend${process.pid}`);
  Object.assign(process.env, stack.env, { LOG_LEVEL: 'warn' });
  const sqs = new SQSClient({});
  const jobsQueue = process.env.JOBS_QUEUE_URL!;
  const relay = await startStreamRelay({
    tableName: process.env.TABLE_NAME!,
    filter: (record) => record.dynamodb?.NewImage?.entity?.S === 'outbox',
    consumer: async (event) => (await import('#functions/outbox/handler')).handler(event),
  });
  try {
    const [{ createApplication }, grantsService, { handler: send }, { handler: jobs }, { batchGet }, keys] = await Promise.all([
      import('#shared/applications/service'),
      import('#shared/grants/create'),
      import('#functions/send/handler'),
      import('#functions/jobs/handler'),
      import('#shared/db/batch'),
      import('#shared/db/keys'),
    ]);
    const app = await createApplication({ name: 'bench send' });
    const context = { applicationId: app.application_id, credential: 'api_key' as const };
    const grant = (name: string) => grantsService.createCustomGrant(context, { provider: 'agent', settings: { email_address: `${name}-${process.pid}@agents.test` } }, { ip: '127.0.0.1', userAgent: 'bench' });
    const sender = await grant('sender');
    const recipients: typeof sender[] = [];
    for (let i = 0; i < RECIPIENTS; i += 20) recipients.push(...(await Promise.all(Array.from({ length: Math.min(20, RECIPIENTS - i) }, (_, j) => grant(`r${i + j}`)))));
    const attachment = randomBytes(2 * 1024 * 1024);

    /** One send through the real handler; returns its answer time and the Message-ID header. */
    const sendTo = async (to: typeof recipients) => {
      const list = (from: number) => to.slice(from, from + 100).map((g) => ({ email: g.email }));
      const form = new FormData();
      form.append('message', JSON.stringify({ to: list(0), cc: list(100), bcc: list(200), subject: 'Bench', body: '<p>bench</p>' }));
      form.append('file', new Blob([attachment], { type: 'application/octet-stream' }), 'report.bin');
      const request = new Request('http://localhost/', { method: 'POST', body: form });
      const body = Buffer.from(await request.arrayBuffer());
      const event = buildEvent(
        { routeKey: 'POST /v3/grants/{grant_id}/messages/send', params: { grant_id: sender.id } },
        {
          method: 'POST',
          url: `/v3/grants/${sender.id}/messages/send`,
          headers: { authorization: `Bearer ${app.api_key}`, 'content-type': request.headers.get('content-type')!, 'content-length': String(body.length) },
          body,
          sourceIp: '127.0.0.1',
        },
      );
      const t = performance.now();
      const result = (await send(event, lambdaContext('send', 29_000))) as APIGatewayProxyStructuredResultV2;
      const elapsed = performance.now() - t;
      if (result.statusCode !== 200) throw new Error(`send: ${result.statusCode} ${result.body}`);
      return elapsed;
    };

    /** Runs the jobs worker until the jobs queue is empty; returns when the last job finished. */
    const runJobs = async () => {
      for (;;) {
        await relay.drained();
        const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: jobsQueue, MaxNumberOfMessages: 1, WaitTimeSeconds: 0 }));
        const [m] = Messages;
        if (!m) {
          const { Attributes = {} } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: jobsQueue, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }));
          if (Number(Attributes.ApproximateNumberOfMessages) + Number(Attributes.ApproximateNumberOfMessagesNotVisible) === 0) return;
          continue;
        }
        const record = { messageId: m.MessageId!, receiptHandle: m.ReceiptHandle!, body: m.Body!, attributes: {}, messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs' } as unknown as SQSRecord;
        const result = await jobs({ Records: [record] }, lambdaContext('jobs', 300_000));
        if (result.batchItemFailures.length) throw new Error(`job failed: ${m.Body!.slice(0, 200)}`);
        await sqs.send(new DeleteMessageCommand({ QueueUrl: jobsQueue, ReceiptHandle: m.ReceiptHandle! }));
      }
    };

    const one: number[] = [];
    const many: number[] = [];
    const completion: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      one.push(await sendTo(recipients.slice(0, 1)));
      await runJobs();
      const answered = await sendTo(recipients);
      many.push(answered);
      const t = performance.now();
      await runJobs();
      completion.push(answered + performance.now() - t);
    }
    // Every mailbox holds exactly the copies sent to it (1 + RUNS for the first, RUNS for the others).
    const counts = await Promise.all(
      recipients.map(async (g) => (await batchGet([keys.folderKey(g.id, 'inbox')]))[0]?.total_count as number | undefined),
    );
    const wrong = counts.filter((c, i) => c !== (i === 0 ? 2 * RUNS : RUNS)).length;

    const ratio = median(many) / median(one);
    console.log(
      table([
        ['send (multipart, 2 MB attachment)', 'median answer', 'runs'],
        ['to 1 local Agent Account', fmt(median(one), 0), one.map((v) => v.toFixed(0)).join(', ')],
        [`to ${RECIPIENTS} local Agent Accounts`, fmt(median(many), 0), many.map((v) => v.toFixed(0)).join(', ')],
        [`until the last of ${RECIPIENTS} copies is stored (jobs worker, in-process)`, fmt(median(completion), 0), completion.map((v) => v.toFixed(0)).join(', ')],
      ]),
    );
    console.log(`\nanswer ${RECIPIENTS} ÷ 1 recipient: ${ratio.toFixed(2)}`);
    console.log(`target: answer under ${TARGET_MS} ms for ${RECIPIENTS} local recipients: ${median(many) < TARGET_MS ? 'met' : 'NOT met'}`);
    console.log(`inbox counts: ${wrong === 0 ? 'every mailbox holds exactly the copies sent to it' : `${wrong} mailbox(es) hold another count`}`);
    console.log('(before this change the request stored every copy itself: 23.5 s for 300 recipients without attachments; with 2 MB it timed out after 257)');
  } finally {
    await relay.stop();
    await stack.stop();
  }
}
