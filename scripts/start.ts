/**
 * `npm start`: the whole API on this machine, no AWS account and no Docker.
 *
 *   1. starts DynamoDB Local and the SQS emulator on loopback and provisions them from serverless.yml
 *      (plus an S3 emulator for mail contents, an SMTP sink standing in for the outside world and an
 *      EventBridge Scheduler stand-in for scheduled sends)
 *   2. seeds one application whose API key is $API_KEY (default `local-dev-api-key`)
 *   3. listens for inbound mail to Agent Accounts over SMTP on $SMTP_PORT (default 2525), and starts a
 *      local OpenID Connect server (scripts/local-stack/oidc-local.ts) as the seeded application's google
 *      and microsoft connectors, for hosted OAuth without internet, and local fakes of provider A's
 *      own APIs (scripts/local-stack/google/) and of provider B's Microsoft Graph
 *      (scripts/local-stack/microsoft/) as the connectors' api_base_url
 *   4. where Dovecot is installed, starts it as an IMAP sandbox (scripts/local-stack/imap-sandbox.ts): one
 *      account, IMAP and SMTP submission on loopback, what it sends relayed into the outbound sink
 *   5. runs `serverless offline` with the emulators' endpoints on bundles built while the emulators
 *      start (scripts/local-stack/build.ts, into a folder of this instance's own); the queue workers
 *      (jobs, IMAP mail sync, scheduled sends, webhook fan-out and delivery) run through
 *      serverless-offline-sqs, the webhook health check every minute
 *
 * Everything that can overlap does (on 2 cores the start is CPU-bound): the build, the emulators and
 * serverless offline start together (serverless offline as soon as the emulators' endpoints and queues
 * exist, while DynamoDB Local's JVM still starts), and the seeding runs while serverless offline loads
 * its first function. What can be kept between starts is, in `.switchboard/cache/`
 * (scripts/local-stack/cache.ts): the bundles while their inputs are unchanged, DynamoDB Local's class
 * archive, Node's compiled code.
 *
 * The front door (the API Gateway stand-in) takes $PORT (default 3000) first of all and answers 503
 * "starting" with Retry-After until a request would succeed; then it prints "ready".
 * Ctrl-C (or SIGTERM) stops every child process. Local state lives in memory: each start is fresh.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { buildFunctionBundles } from './local-stack/build';
import { cacheDir } from './local-stack/cache';
import { startLocalStack, type LocalStack } from './local-stack/index';
import { startFrontDoor, type FrontDoor } from './local-stack/front-door';
import { freePort } from './local-stack/index';
import type { startImapSandbox } from './local-stack/imap-sandbox';
import { instanceFile, recordInstance } from './local-stack/instances';
import type { LocalOidcServer } from './local-stack/oidc-local';
import type { GoogleFake } from './local-stack/google/server';
import type { GraphFake } from './local-stack/microsoft/server';
import type { StreamRelay } from './local-stack/stream-relay';
import { ROOT, loadServerlessConfig } from './local-stack/serverless-config';
// What is needed only after DynamoDB Local and the build have started is imported then (dynamic
// imports below): loading it first would hold them back by most of a second.

const require = createRequire(import.meta.url);
const PORT = Number(process.env.PORT || 3000);
const LAMBDA_PORT = Number(process.env.LAMBDA_PORT || PORT + 2);
const API_KEY = process.env.API_KEY || 'local-dev-api-key';
const SMTP_PORT = Number(process.env.SMTP_PORT || 2525);
const STAGE = 'local';
/** The client the local application's google and microsoft connectors use at the local OpenID Connect server. */
const LOCAL_OIDC_CLIENT = 'switchboard-local';
/** serverless.yml, read once. */
const config = loadServerlessConfig();
/** serverless offline knows each function by its deployed name, `<service>-<stage>-<function>`. */
const functionUrl = (fn: string) =>
  `http://127.0.0.1:${LAMBDA_PORT}/2015-03-31/functions/${config.service}-${STAGE}-${fn}/invocations`;
/** Where this instance records its stack for `npm run admin` (one file per instance, by port). */
const INSTANCES_DIR = join(ROOT, '.switchboard');
/**
 * This instance's function bundles, by process ID: two `npm start` of one checkout never build into,
 * or remove, each other's folder. Relative to the checkout (serverless offline resolves it there).
 */
const BUILDS_DIR = join('.switchboard', 'build');
const BUILD_DIR = join(BUILDS_DIR, String(process.pid));
/** The IMAP sandbox's Dovecot folders (config, sockets, mail), one per instance by process ID. */
const IMAP_DIR = join(ROOT, '.switchboard', 'imap');

let stack: LocalStack | undefined;
let inbound: { stop(): Promise<void> } | undefined;
let healthTimer: NodeJS.Timeout | undefined;
let mailSyncPoller: { stop(): Promise<void> } | undefined;

/**
 * Lambda's event source mapping for one queue, as npm start runs it for the mail-sync queue (the
 * others are serverless-offline-sqs's): short polls, one message per invocation through the Lambda
 * invoke API, deleted unless the function failed or reported it (a delayed message, the next sync
 * run, waits in the emulator as on SQS).
 */
function pollQueue(queueUrl: string, fn: string): { stop(): Promise<void> } {
  let sqs: SQSClient | undefined;
  let running = true;
  const loop = (async () => {
    const { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } = await import('@aws-sdk/client-sqs');
    sqs = new SQSClient({});
    while (running) {
      try {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: 1,
            WaitTimeSeconds: 0,
            AttributeNames: ['All'],
          }),
        );
        if (!Messages.length) {
          await new Promise((resolve) => setTimeout(resolve, 1000));
          continue;
        }
        const records = Messages.map((m) => ({
          messageId: m.MessageId,
          receiptHandle: m.ReceiptHandle,
          body: m.Body,
          attributes: m.Attributes ?? {},
          messageAttributes: {},
          eventSource: 'aws:sqs',
          awsRegion: stack?.env.AWS_REGION ?? 'us-east-1',
        }));
        const response = await fetch(functionUrl(fn), { method: 'POST', body: JSON.stringify({ Records: records }) });
        const text = await response.text();
        const failed =
          !response.ok ||
          response.headers.get('x-amz-function-error') ||
          (JSON.parse(text || '{}') as { batchItemFailures?: unknown[] }).batchItemFailures?.length;
        if (failed) log(`${fn} function failed on a queue message (${response.status}): ${text.slice(0, 300)}`);
        else
          for (const m of Messages)
            await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
      } catch (error) {
        if (running) log(`${fn} queue poller: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      sqs?.destroy();
    },
  };
}
let relay: StreamRelay | undefined;
let ingestModule: Promise<typeof import('#shared/agent/ingest')> | undefined;
/** Inbound mail's handling (shared/agent/ingest.ts), loaded once, after the environment is set. */
const ingestion = () => (ingestModule ??= import('#shared/agent/ingest'));
let frontDoor: FrontDoor | undefined;
let oidc: LocalOidcServer | undefined;
let googleApis: GoogleFake | undefined;
let graphApi: GraphFake | undefined;
let offline: ChildProcess | undefined;
let imapSandbox: ReturnType<typeof startImapSandbox> | undefined;
let stopping = false;
let instanceRecorded = false;

function log(message: string) {
  process.stdout.write(`[switchboard] ${message}\n`);
}

/**
 * Stops everything this instance started, once. A terminal's Ctrl-C reaches this process twice (from
 * the process group, and relayed by tsx): the second signal must not cut the first shutdown short.
 */
let stopped: Promise<never> | undefined;
function shutdown(code: number): Promise<never> {
  stopped ??= stopEverything(code);
  return stopped;
}

async function stopEverything(code: number): Promise<never> {
  stopping = true;
  log('stopping…');
  clearInterval(healthTimer);
  await mailSyncPoller?.stop().catch(() => undefined);
  // Also keeps the event loop alive: a step waiting on something that will never come would otherwise
  // let Node exit silently, with the rest of the clean-up undone.
  const deadline = setTimeout(() => {
    log('stopping took over 20 s; exiting anyway');
    process.exit(code || 1);
  }, 20_000);
  // Each step runs even when one before it failed (an emulator the signal already stopped, say).
  const step = async (what: string, action: () => Promise<unknown> | unknown) => {
    try {
      await action();
    } catch (error) {
      log(`stopping ${what}: ${(error as Error).message}`);
    }
  };
  await step('the front door', () => frontDoor?.close());
  await step('the stream relay', () => relay?.stop());
  await step('serverless offline', async () => {
    if (!offline || offline.exitCode !== null || !offline.pid) return;
    const exited = new Promise((resolve) => offline!.once('exit', resolve));
    // serverless offline runs in its own process group so its workers stop with it.
    try {
      process.kill(-offline.pid, 'SIGTERM');
    } catch {
      /* already gone */
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-offline!.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, 5000);
    await exited;
    clearTimeout(timer);
  });
  await step('inbound SMTP', () => inbound?.stop());
  await step('the OpenID Connect server', () => oidc?.stop());
  await step("provider A's local APIs", () => googleApis?.close());
  await step("provider B's local Graph", () => graphApi?.close());
  await step('the IMAP sandbox', async () => {
    const started = await imapSandbox;
    if (started && 'stop' in started) await started.stop();
  });
  await step('the emulators', () => stack?.stop());
  await step('the build folder', () => rmSync(join(ROOT, BUILD_DIR), { recursive: true, force: true }));
  if (instanceRecorded)
    await step('the instance record', () => rmSync(instanceFile(INSTANCES_DIR, PORT), { force: true }));
  clearTimeout(deadline);
  process.exit(code);
}

process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));

/** Removes the build folders of instances that are gone (killed before they could clean up). */
function removeStaleBuilds() {
  let names: string[] = [];
  try {
    names = readdirSync(join(ROOT, BUILDS_DIR));
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      process.kill(pid, 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ESRCH')
        rmSync(join(ROOT, BUILDS_DIR, name), { recursive: true, force: true });
    }
  }
}

/** Waits until serverless offline itself (not the front door) answers a request through a function. */
async function waitForApi(offlineUrl: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`serverless offline exited with code ${child.exitCode}`);
    try {
      const response = await fetch(`${offlineUrl}/v3/grants`);
      // The grants function's own envelope: routed, loaded and answering.
      if (response.status === 401 && response.headers.get('x-request-id')) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('serverless offline did not answer within 120 s');
}

/** Starts serverless offline, in a process group of its own, on the bundles of BUILD_DIR (being built, maybe). */
function startOffline(env: Record<string, string>, offlinePort: number): ChildProcess {
  const serverlessBin = join(dirname(require.resolve('osls/package.json')), 'bin', 'serverless.js');
  const child = spawn(process.execPath, [serverlessBin, 'offline', 'start', '--stage', STAGE], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: {
      ...process.env,
      ...env,
      PORT: String(offlinePort),
      LAMBDA_PORT: String(LAMBDA_PORT),
      // Run the bundles built here (scripts/local-stack/serverless-prebuilt.cjs).
      SWITCHBOARD_PREBUILT_DIR: BUILD_DIR,
      // Polled by this process instead of serverless-offline-sqs (pollMailSync below).
      SWITCHBOARD_OWN_QUEUES: 'mail-sync',
      // One metrics line per request (CloudWatch's EMF) is for CloudWatch, not this terminal; set it to false to see them.
      POWERTOOLS_METRICS_DISABLED: process.env.POWERTOOLS_METRICS_DISABLED ?? 'true',
    },
  });
  child.once('exit', (code) => {
    if (!stopping) {
      log(`serverless offline exited (${code}); stopping`);
      void shutdown(code ?? 1);
    }
  });
  return child;
}

/**
 * Node's compiled code of this process's modules and of its Node children (serverless offline, the
 * SQS emulator) is kept in the cache (Node's compile cache: about a fifth off loading serverless
 * offline). The function bundles are not: serverless offline runs them with an environment of their own.
 */
function keepCompiledCode() {
  const dir = join(cacheDir(), 'node');
  process.env.NODE_COMPILE_CACHE ??= dir;
  (Module as { enableCompileCache?: (dir: string) => unknown }).enableCompileCache?.(process.env.NODE_COMPILE_CACHE);
}

async function main() {
  const started = Date.now();
  const seconds = (from: number) => `${((Date.now() - from) / 1000).toFixed(1)} s`;
  keepCompiledCode();
  removeStaleBuilds();
  // The port answers at once: 503 "starting" until the functions can serve.
  const offlinePort = await freePort();
  frontDoor = await startFrontDoor({
    port: PORT,
    target: { host: '127.0.0.1', port: offlinePort },
    starting: true,
    onFailure: ({ requestId, method, path, status, body }) =>
      log(
        `${method} ${path}: answered ${status} outside a function's HTTP stack, shown as an error envelope (${requestId}): ${body.slice(0, 500)}`,
      ),
  });
  log('starting DynamoDB Local and the SQS emulator, building the functions…');
  // The outbound sink's SMTP port, chosen here: the IMAP sandbox relays its submissions there.
  const smtpSinkPort = await freePort();
  const dynamodbPort = process.env.DYNAMODB_PORT ? Number(process.env.DYNAMODB_PORT) : await freePort();
  let offlineFrom = 0;
  /** The seeding's modules, loaded as soon as the environment they read when they load is set. */
  let seedModules:
    Promise<[typeof import('#shared/applications/service'), typeof import('#shared/connectors/service')]> | undefined;
  let oidcStarting: Promise<LocalOidcServer> | undefined;
  // First what takes longest: DynamoDB Local's JVM and the build (their processes start at once).
  const emulatorsStarting = (async () => {
    const from = Date.now();
    const result = await startLocalStack({
      stage: STAGE,
      dynamodbPort,
      sqsPort: process.env.SQS_PORT ? Number(process.env.SQS_PORT) : undefined,
      smtpSinkPort,
      config,
      // Endpoints and queues made, DynamoDB Local maybe still starting: serverless offline starts
      // now (it reads the environment once, at its start, and calls nothing until asked).
      onEnv: (env) => {
        Object.assign(process.env, env);
        log('starting serverless offline…');
        offlineFrom = Date.now();
        offline = startOffline(env, offlinePort);
        seedModules = Promise.all([import('#shared/applications/service'), import('#shared/connectors/service')]);
        seedModules.catch(() => undefined);
        // Then what needs nothing of the emulators, and is needed only once serverless offline is up:
        // the local OpenID Connect server (for the seeding), the IMAP sandbox.
        oidcStarting = import('./local-stack/oidc-local').then(({ startOidcServer }) =>
          startOidcServer({ port: process.env.OIDC_PORT ? Number(process.env.OIDC_PORT) : 0 }),
        );
        oidcStarting.then((server) => (oidc = server)).catch(() => undefined);
        imapSandbox = import('./local-stack/imap-sandbox').then(({ startImapSandbox }) =>
          startImapSandbox({
            parent: IMAP_DIR,
            relay: { host: '127.0.0.1', port: smtpSinkPort },
            imapPort: process.env.SANDBOX_IMAP_PORT ? Number(process.env.SANDBOX_IMAP_PORT) : undefined,
            smtpPort: process.env.SANDBOX_SMTP_PORT ? Number(process.env.SANDBOX_SMTP_PORT) : undefined,
            davPort: process.env.SANDBOX_DAV_PORT ? Number(process.env.SANDBOX_DAV_PORT) : undefined,
          }),
        );
      },
    });
    log(`emulators up in ${seconds(from)}`);
    return result;
  })();
  const building = (async () => {
    const from = Date.now();
    const { entries, fromCache } = await buildFunctionBundles(join(ROOT, BUILD_DIR), { cacheDir: cacheDir(), config });
    log(
      `${entries.length} functions built in ${seconds(from)} (${BUILD_DIR})${fromCache ? ': sources unchanged, copied from the last build' : ''}`,
    );
  })();
  const [emulators, build] = await Promise.allSettled([emulatorsStarting, building]);
  // Whichever succeeded is stopped by shutdown() if the other failed.
  if (emulators.status === 'fulfilled') stack = emulators.value;
  if (emulators.status === 'rejected') throw emulators.reason;
  if (build.status === 'rejected') throw build.reason;
  if (!stack || !offline || !seedModules || !oidcStarting || !imapSandbox)
    throw new Error('the emulators did not start');
  const localOidcStarting = oidcStarting;

  // The seeding, while serverless offline loads its first function.
  const seeding = (async () => {
    const [{ createApplication }, { createConnector }] = await seedModules!;
    const app = await createApplication({ name: 'Local development', apiKey: API_KEY });
    // A local OpenID Connect server plays provider A (google) and provider B (microsoft), registered as
    // the local application's connectors through `settings.issuer`: hosted OAuth works without internet.
    const oidc = await localOidcStarting;
    const oidcSecret = randomBytes(24).toString('base64url');
    oidc.addClient({
      client_id: LOCAL_OIDC_CLIENT,
      client_secret: oidcSecret,
      redirect_uris: [`http://127.0.0.1:${PORT}/v3/connect/callback`, `http://localhost:${PORT}/v3/connect/callback`],
    });
    // Provider A's own APIs (Gmail, Calendar, People) play locally too: a fake that checks every call
    // against Google's descriptions and knows the users the local sign-in signs in (its userinfo).
    const { startGoogleFake } = await import('./local-stack/google/server');
    // Provider B's Microsoft Graph too, checked against Graph's own descriptions, for the users the local sign-in signs in.
    const { startGraphFake } = await import('./local-stack/microsoft/server');
    [googleApis, graphApi] = await Promise.all([
      startGoogleFake({ userinfoUrl: `${oidc.issuers.google}/me` }),
      startGraphFake({ userinfoUrl: `${oidc.issuers.microsoft}/me` }),
    ]);
    for (const provider of ['google', 'microsoft'] as const) {
      await createConnector(
        { applicationId: app.application_id, credential: 'api_key' },
        {
          provider,
          settings: {
            client_id: LOCAL_OIDC_CLIENT,
            client_secret: oidcSecret,
            issuer: oidc.issuers[provider],
            api_base_url: provider === 'google' ? googleApis.url : graphApi.url,
          },
        },
      );
    }
    // The mail ingestion (MIME parsing and all: ~0.3 s of CPU to load) is loaded for the first message.
    const { startInboundSmtp } = await import('./local-stack/smtp-inbound');
    inbound = await startInboundSmtp({
      port: SMTP_PORT,
      handlers: {
        acceptsRecipient: async (address, mailFrom) => (await ingestion()).acceptsRecipient(address, mailFrom),
        deliver: async (raw, envelope) => void (await (await ingestion()).ingestMessage(raw, envelope)),
      },
    });
    return { app, oidc };
  })();
  seeding.catch(() => undefined);

  const baseUrl = `http://127.0.0.1:${PORT}`;
  await waitForApi(`http://127.0.0.1:${offlinePort}`, offline);
  log(`serverless offline up in ${seconds(offlineFrom)}`);
  const { app, oidc: localOidc } = await seeding;
  // The event source mapping of the table's stream (serverless offline has none): the outbox
  // function receives inserted records through serverless offline's Lambda invoke API.
  const { isOutboxInsert, startStreamRelay } = await import('./local-stack/stream-relay');
  relay = await startStreamRelay({
    tableName: stack.env.TABLE_NAME!,
    filter: isOutboxInsert,
    consumer: async (event) => {
      const response = await fetch(functionUrl('outbox'), { method: 'POST', body: JSON.stringify(event) });
      const text = await response.text();
      if (!response.ok || response.headers.get('x-amz-function-error'))
        throw new Error(`outbox function failed (${response.status}): ${text.slice(0, 500)}`);
      return JSON.parse(text);
    },
  });
  // EventBridge stand-in: serverless offline runs no schedules, so invoke the webhook health check
  // through its Lambda invoke API every minute.
  healthTimer = setInterval(() => {
    fetch(functionUrl('webhook-health'), { method: 'POST', body: '{}' })
      .then(async (response) => {
        if (!response.ok)
          log(`webhook health check failed (${response.status}): ${(await response.text()).slice(0, 300)}`);
      })
      .catch(() => undefined);
  }, 60_000);
  mailSyncPoller = pollQueue(stack.env.MAIL_SYNC_QUEUE_URL!, 'mail-sync');
  const imap = await imapSandbox;
  const sandbox = 'sandbox' in imap ? imap.sandbox : undefined;
  recordInstance(INSTANCES_DIR, {
    port: PORT,
    pid: process.pid,
    env: { ...stack.env, SMTP_PORT: String(SMTP_PORT) },
    ...(sandbox ? { imapSandbox: sandbox } : {}),
  });
  instanceRecorded = true;
  frontDoor.ready();
  log(`ready in ${seconds(started)}`);
  process.stdout.write(
    [
      '',
      `  Base URL        ${baseUrl}`,
      `  API key         ${API_KEY}`,
      `  Application     ${app.application_id}`,
      `  DynamoDB Local  ${stack.env.AWS_ENDPOINT_URL_DYNAMODB}`,
      `  SQS emulator    ${stack.env.AWS_ENDPOINT_URL_SQS}`,
      `  S3 emulator     ${stack.env.AWS_ENDPOINT_URL_S3}`,
      `  Inbound SMTP    127.0.0.1:${SMTP_PORT}   (mail to Agent Account addresses)`,
      `  Outbound sink   ${stack.env.SMTP_RELAY_URL}   (read it: ${stack.env.SMTP_SINK_URL}/messages)`,
      `  OpenID Connect  ${localOidc.issuers.google} (google), ${localOidc.issuers.microsoft} (microsoft): any email address signs in`,
      `  Google APIs     ${googleApis!.url}   (provider A's Gmail, Calendar and People, local: the google connector's api_base_url)`,
      `  Microsoft Graph ${graphApi!.url}   (provider B's mail, calendars and contacts, local: the microsoft connector's api_base_url)`,
      ...(sandbox
        ? [
            `  IMAP sandbox    host ${sandbox.host}, IMAP port ${sandbox.imapPort}, SMTP port ${sandbox.smtpPort} (plain text; sends go to the outbound sink)`,
            `                  username ${sandbox.username}, password ${sandbox.password}`,
            `  CalDAV/CardDAV  ${sandbox.davUrl ? `${sandbox.davUrl} (the same account: a calendar and an address book)` : sandbox.davOff}`,
          ]
        : [`  IMAP sandbox    ${'off' in imap ? imap.off : 'off'}`]),
      '',
      `  curl -H "Authorization: Bearer ${API_KEY}" ${baseUrl}/v3/grants`,
      '',
      '  Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
}

main().catch(async (error: Error) => {
  process.stderr.write(`[switchboard] failed to start: ${error.message}\n`);
  await shutdown(1);
});
