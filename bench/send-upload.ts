import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { median, scaled, table } from './lib';

/**
 * Issue 36: a large attachment sent through an upload (`attachment-uploads`, the presigned PUT,
 * `complete`, then a send naming it by ID), from an Agent Account to an outside address (the local
 * SMTP relay) with its Sent copy stored. The attachments and send functions run in a child process
 * of their own (bench/send-upload-child.ts), which measures the memory each request takes; the file
 * goes from here straight to the local S3, as a client's would. Reported: the time from create to
 * sent, its steps, and the send function's peak extra memory against the file's size (the target:
 * under 2, never the whole file twice).
 */
const FILE_BYTES = scaled(20 * 1024 * 1024, 256 * 1024);
const RUNS = scaled(3, 1);
const TARGET_RATIO = 2;

interface Answer {
  status: number;
  body: string;
  ms: number;
  peak: number;
  peakRss: number;
}

function startChild(): Promise<{ child: ChildProcess; call: (request: object) => Promise<Answer> }> {
  const child = fork(fileURLToPath(new URL('./send-upload-child.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx', '--expose-gc'],
    env: process.env,
    // Its log lines and metrics are not the benchmark's output.
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  let next = 0;
  const pending = new Map<number, (answer: Answer & { error?: string }) => void>();
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.on('message', (message: { ready?: true; id?: number } & Answer & { error?: string }) => {
      if (message.ready) {
        resolve({
          child,
          call: (request) =>
            new Promise((done, failed) => {
              const id = next++;
              pending.set(id, (answer) => (answer.error ? failed(new Error(answer.error)) : done(answer)));
              child.send({ id, ...request });
            }),
        });
        return;
      }
      pending.get(message.id!)?.(message);
      pending.delete(message.id!);
    });
  });
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** Runs within runSendBench's stack (its environment already set); `apiKey` and `grantId`: an application and its Agent Account. */
export async function runUploadSendBench(apiKey: string, grantId: string, outside: string): Promise<void> {
  console.log(`\n## A ${mb(FILE_BYTES)} attachment sent through an upload (issue 36)\n`);
  const { child, call } = await startChild();
  const ok = (answer: Answer, what: string, status = 200) => {
    if (answer.status !== status) throw new Error(`${what}: ${answer.status} ${answer.body}`);
    return JSON.parse(answer.body) as { data: Record<string, unknown> };
  };
  /** One upload and send of `bytes`; the times of each step and the send's memory. */
  const once = async (bytes: Buffer, live = false) => {
    const t0 = performance.now();
    const created = ok(
      await call({
        fn: 'attachments',
        routeKey: 'POST /v3/grants/{grant_id}/attachment-uploads',
        params: { grant_id: grantId },
        path: `/v3/grants/${grantId}/attachment-uploads`,
        apiKey,
        body: { filename: 'video.mp4', content_type: 'video/mp4', size: bytes.length },
      }),
      'create',
      201,
    ).data as { attachment_id: string; url: string; headers: Record<string, string> };
    const t1 = performance.now();
    const put = await fetch(created.url, { method: 'PUT', headers: created.headers, body: bytes });
    await put.arrayBuffer();
    if (put.status !== 200) throw new Error(`PUT: ${put.status}`);
    const t2 = performance.now();
    ok(
      await call({
        fn: 'attachments',
        routeKey: 'POST /v3/grants/{grant_id}/attachment-uploads/{attachment_id}/complete',
        params: { grant_id: grantId, attachment_id: created.attachment_id },
        path: `/v3/grants/${grantId}/attachment-uploads/${created.attachment_id}/complete`,
        apiKey,
        body: {},
      }),
      'complete',
    );
    const t3 = performance.now();
    const send = await call({
      fn: 'send',
      routeKey: 'POST /v3/grants/{grant_id}/messages/send',
      params: { grant_id: grantId },
      path: `/v3/grants/${grantId}/messages/send`,
      apiKey,
      body: {
        to: [{ email: outside }],
        subject: 'Bench upload',
        body: '<p>The file</p>',
        attachments: [{ id: created.attachment_id }],
      },
      live,
    });
    const sent = ok(send, 'send').data as { attachments: { size: number }[] };
    if (sent.attachments[0]?.size !== bytes.length) throw new Error('send: the Sent copy lacks the file');
    const t4 = performance.now();
    return { create: t1 - t0, put: t2 - t1, complete: t3 - t2, send: t4 - t3, total: t4 - t0, ...send };
  };
  try {
    // Warm: modules, lazy chunks and clients loaded as a warm Lambda instance has them.
    await once(randomBytes(1024));
    const runs: Awaited<ReturnType<typeof once>>[] = [];
    for (let run = 0; run < RUNS; run++) runs.push(await once(randomBytes(FILE_BYTES)));
    // Memory: what the send function holds, sampled after full collections (see the child).
    const held: Awaited<ReturnType<typeof once>>[] = [];
    for (let run = 0; run < RUNS; run++) held.push(await once(randomBytes(FILE_BYTES), true));
    type Run = (typeof runs)[number];
    const col = (list: Run[], pick: (r: Run) => number, unit: string, digits = 0) => [
      `${median(list.map(pick)).toFixed(digits)}${unit}`,
      list.map((r) => pick(r).toFixed(digits)).join(', '),
    ];
    const MB = 1024 * 1024;
    const ratio = (r: Run) => r.peak / FILE_BYTES;
    console.log(
      table([
        [`upload and send of ${mb(FILE_BYTES)}`, 'median', 'runs'],
        ['create the upload', ...col(runs, (r) => r.create, ' ms')],
        ['PUT to the presigned URL', ...col(runs, (r) => r.put, ' ms')],
        ['complete', ...col(runs, (r) => r.complete, ' ms')],
        ['send, answered with the Sent copy', ...col(runs, (r) => r.send, ' ms')],
        ['create → sent', ...col(runs, (r) => r.total, ' ms')],
        ['send: peak extra heap + external, garbage included', ...col(runs, (r) => r.peak / MB, ' MB', 1)],
        ['send: peak extra RSS', ...col(runs, (r) => r.peakRss / MB, ' MB', 1)],
        ['send: peak extra heap + external held (live)', ...col(held, (r) => r.peak / MB, ' MB', 1)],
        ['held ÷ file size', ...col(held, ratio, '×', 2)],
        ['garbage included ÷ file size', ...col(runs, ratio, '×', 2)],
      ]),
    );
    const largest = Math.max(...held.map(ratio));
    console.log(
      `\ntarget: the send function never holds the whole file twice (held under ${TARGET_RATIO}× the file): ${largest < TARGET_RATIO ? 'met' : 'NOT met'} (largest ${largest.toFixed(2)}×)`,
    );
    console.log(
      '(held: the MIME the relay takes whole, about 1.37× the file as base64, with the file streamed into it from S3; the Sent copy stores its attachment by an S3 copy)',
    );
  } finally {
    child.kill();
  }
}
