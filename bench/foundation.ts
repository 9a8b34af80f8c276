import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { build, type Metafile } from 'esbuild';
import { join, relative } from 'node:path';
import { buildEvent, lambdaContext } from '../scripts/local-stack/api-gateway-event';
import { esbuildOptions, functionEntries } from '../scripts/local-stack/build';
import { ROOT, loadServerlessConfig } from '../scripts/local-stack/serverless-config';
import { fmt, functionEnvironments, median, packageFunctions, percentile, scaled, table } from './lib';
import { REGION, startStack } from '../scripts/local-stack/index';

/**
 * Issue 2 and issue 24 benchmark, measured in one run:
 *   1. each function bundle's minified size, from the real `serverless package` artifacts, and what
 *      fills it: the bytes each package (or folder of ours) adds, from esbuild's metafile. The bundle
 *      is the handler file, what module init loads; the lazy chunks zipped beside it (heavy libraries
 *      loaded by the first request that needs them, scripts/esbuild-plugins.cjs) are counted apart
 *   2. each bundle's module-init time: `node` importing the bundle minus a bare `node -e 0`, beside
 *      the same figure for a bundle of the AWS SDK clients alone
 *   3. p50 latency of GET /v3/grants/{id} invoked in-process (packaged bundle, real event) over the
 *      p50 of the DynamoDB calls that request makes, against the same DynamoDB Local
 */
const require = createRequire(import.meta.url);
const SIZE_TARGET_KB = 250;
/**
 * The functions issue 2's targets were set for; later functions (mail: MIME, template and HTML
 * libraries; the webhooks API and workers) are measured and listed for the record, not judged.
 */
const JUDGED = new Set(['connect', 'grants', 'fallback']);
const verdict = (name: string, met: boolean) => (JUDGED.has(name) ? (met ? 'met' : 'MISSED') : 'for the record');
const INIT_TARGET_MS = 40;
const RATIO_TARGET = 1.3;

/**
 * Issue 24 (cost and cold start), for every function: an HTTP function's bundle at most 400 KB and
 * its module init at most 25 ms over the SDK clients alone (same run); a worker's bundle (queues,
 * the stream, the schedule, SES's invocation) at most 1 MB, its init for the record.
 */
const HTTP_SIZE_KB = 400;
const WORKER_SIZE_KB = 1024;
const INIT_OVER_SDK_MS = 25;
const TOP_MODULES = 6;
const mark = (met: boolean) => (met ? 'met' : 'MISSED');

/** Whether API Gateway invokes the function (its events name an httpApi route). */
function isHttpFunction(name: string): boolean {
  return (loadServerlessConfig().functions[name]?.events ?? []).some((e) => 'httpApi' in e);
}

/** What a bundle's bytes are: a package (`@smithy/core`), or one folder of ours (`shared/agent`), and a generated file on its own. */
function moduleGroup(input: string): string {
  const packages = input.match(/node_modules\/(?:@[^/]+\/)?[^/]+/g);
  if (packages) return packages.at(-1)!.slice('node_modules/'.length);
  if (input.includes('.generated.')) return input;
  if (input.includes(':')) return input.slice(0, input.indexOf(':')); // a plugin's stand-in module
  return input.includes('/') ? input.slice(0, input.lastIndexOf('/')) : input;
}

/**
 * Each function's bundle, built again as `serverless package` builds it (serverless.yml's esbuild
 * options, aliases and plugins) in one esbuild call that writes nothing, for its metafile: the
 * largest groups of the bundle with their minified bytes, and the bundle's own size to check the
 * build matches the packaged file.
 */
/** Whether a module group is the AWS SDK (its clients, core and the Smithy runtime they share). */
const isSdkGroup = (group: string) => /^@(aws-sdk|smithy|aws)\//.test(group);

async function bundleContents(): Promise<
  Map<string, { bytes: number; sdk: number; clients: string[]; top: [string, number][] }>
> {
  const config = loadServerlessConfig();
  const result = await build({
    ...esbuildOptions(config),
    absWorkingDir: ROOT,
    entryPoints: functionEntries(config),
    outdir: join(ROOT, '.esbuild', 'bench-metafile'),
    outbase: ROOT,
    metafile: true,
    write: false,
    logLevel: 'error',
  });
  const byEntry = new Map<string, Metafile['outputs'][string]>();
  for (const output of Object.values(result.metafile.outputs))
    if (output.entryPoint) byEntry.set(output.entryPoint, output);
  const contents = new Map<string, { bytes: number; sdk: number; clients: string[]; top: [string, number][] }>();
  for (const [name, fn] of Object.entries(config.functions)) {
    const output = byEntry.get(relative(ROOT, join(ROOT, `${fn.handler.slice(0, fn.handler.lastIndexOf('.'))}.ts`)));
    if (!output) continue;
    const groups = new Map<string, number>();
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs))
      groups.set(moduleGroup(input), (groups.get(moduleGroup(input)) ?? 0) + bytesInOutput);
    const sdk = [...groups].filter(([group]) => isSdkGroup(group)).reduce((sum, [, bytes]) => sum + bytes, 0);
    const clients = [...groups.keys()]
      .filter((group) => group.startsWith('@aws-sdk/client-'))
      .map((group) => group.slice('@aws-sdk/client-'.length))
      .sort();
    contents.set(name, {
      bytes: output.bytes,
      sdk,
      clients,
      top: [...groups].sort((a, b) => b[1] - a[1]).slice(0, TOP_MODULES),
    });
  }
  return contents;
}

/**
 * Reference point for the figures above: a bundle that only constructs the AWS SDK clients the API
 * functions use (DynamoDB document client and SQS), built with serverless.yml's esbuild options.
 */
async function buildSdkFloor(dir: string): Promise<{ bundle: string; bytes: number }> {
  const options = loadServerlessConfig().custom.esbuild as Record<string, unknown>;
  const { concurrency: _c, exclude: _e, outputFileExtension: _o, plugins, ...esbuildOptions } = options;
  const alias = Object.fromEntries(
    Object.entries((esbuildOptions.alias ?? {}) as Record<string, string>).map(([k, v]) => [k, join(ROOT, v)]),
  );
  const outfile = join(dir, `sdk-floor.${esbuildOptions.format === 'esm' ? 'mjs' : 'cjs'}`);
  await build({
    ...(esbuildOptions as object),
    alias,
    plugins: require(join(ROOT, plugins as string)),
    stdin: {
      contents: [
        "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';",
        "import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';",
        "import { SQSClient } from '@aws-sdk/client-sqs';",
        'export const dynamo = DynamoDBDocumentClient.from(new DynamoDBClient({}));',
        'export const sqs = new SQSClient({});',
      ].join('\n'),
      resolveDir: ROOT,
      loader: 'ts',
    },
    outfile,
    logLevel: 'error',
  });
  const { statSync } = await import('node:fs');
  return { bundle: outfile, bytes: statSync(outfile).size };
}

/**
 * Issue 37: the same bundles without Powertools, for its cost side by side in one run. Built as
 * `serverless package` builds them (serverless.yml's esbuild options and plugins), except that
 * @aws-lambda-powertools/logger and /metrics resolve to bench/without-powertools/: the logger as it
 * was before (JSON lines, nothing more) and no metrics. The Tracer is a lazy chunk either way
 * (shared/aws/tracing.ts): off, nothing of it loads; with tracing on, the packaged bundle loads it.
 * Answers each function's bundle by the path of its entry (`functions/grants/handler`).
 */
async function buildWithoutPowertools(dir: string): Promise<Map<string, { bundle: string; bytes: number }>> {
  const config = loadServerlessConfig();
  const options = esbuildOptions(config);
  const standIns: Record<string, string> = {
    '@aws-lambda-powertools/logger': join(ROOT, 'bench', 'without-powertools', 'logger.ts'),
    '@aws-lambda-powertools/metrics': join(ROOT, 'bench', 'without-powertools', 'metrics.ts'),
  };
  const outdir = join(dir, 'without-powertools');
  const result = await build({
    ...options,
    absWorkingDir: ROOT,
    entryPoints: functionEntries(config),
    outdir,
    outbase: ROOT,
    metafile: true,
    logLevel: 'error',
    plugins: [
      {
        name: 'without-powertools',
        setup(b) {
          b.onResolve({ filter: /^@aws-lambda-powertools\/(logger|metrics)$/ }, (args) => ({
            path: standIns[args.path]!,
          }));
        },
      },
      ...(options.plugins ?? []),
    ],
  });
  const bundles = new Map<string, { bundle: string; bytes: number }>();
  for (const [file, output] of Object.entries(result.metafile.outputs))
    if (output.entryPoint)
      bundles.set(output.entryPoint.replace(/\.ts$/, ''), { bundle: join(ROOT, file), bytes: output.bytes });
  return bundles;
}

/**
 * How the Lambda Node.js runtime loads a handler file: `require()` for `.cjs` (and `.js` outside a
 * `"type": "module"` package), `import()` for `.mjs`.
 */
function loadArgs(bundle: string): string[] {
  return bundle.endsWith('.mjs')
    ? ['--input-type=module', '-e', `await import(${JSON.stringify(pathToFileURL(bundle).href)})`]
    : ['-e', `require(${JSON.stringify(bundle)})`];
}

/** The lazy chunks (`<bundle>.lazy/<module>.cjs`) in require's cache once the bundle is loaded: none, unless init reads a lazy export. */
function lazyChunksLoadedByInit(bundle: string, env: NodeJS.ProcessEnv): string[] {
  const script = `require(${JSON.stringify(bundle)}); console.log(JSON.stringify(Object.keys(require.cache).filter((f) => f.includes('.lazy/'))))`;
  const result = spawnSync(process.execPath, ['-e', script], { env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`node -e require(${bundle}) failed: ${result.stderr}`);
  return (JSON.parse(result.stdout.trim().split('\n').at(-1)!) as string[]).map((file) =>
    file.slice(file.lastIndexOf('.lazy/') + '.lazy/'.length),
  );
}

function wallMs(args: string[], env: NodeJS.ProcessEnv): number {
  const start = performance.now();
  const result = spawnSync(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const elapsed = performance.now() - start;
  if (result.status !== 0) throw new Error(`node ${args.join(' ')} failed: ${result.stderr}`);
  return elapsed;
}

export async function runFoundationBench(): Promise<void> {
  console.log('\n## Foundation (issue 2)\n');
  console.log('packaging with `serverless package` (esbuild, minified)…');
  const packaged = await packageFunctions();
  try {
    // 1. Bundle sizes.
    const floor = await buildSdkFloor(packaged.dir);
    const contents = await bundleContents();
    const sizeTarget = (name: string) => (isHttpFunction(name) ? HTTP_SIZE_KB : WORKER_SIZE_KB);
    const sizeRows: (string | number)[][] = [
      [
        'function',
        'bundle',
        `issue 2: ≤ ${SIZE_TARGET_KB} KB`,
        `issue 24: ≤ ${HTTP_SIZE_KB} KB (HTTP), ≤ ${WORKER_SIZE_KB} KB (worker)`,
        'of which the AWS SDK (clients it calls)',
        'lazy chunks KB (loaded on first use)',
      ],
    ];
    for (const fn of packaged.functions) {
      const kb = fn.bytes / 1024;
      const sdk = contents.get(fn.name)?.sdk;
      sizeRows.push([
        fn.name,
        `${kb.toFixed(1)} KB`,
        verdict(fn.name, kb <= SIZE_TARGET_KB),
        `${mark(kb <= sizeTarget(fn.name))} (≤ ${sizeTarget(fn.name)})`,
        sdk === undefined ? '' : `${(sdk / 1024).toFixed(1)} KB`,
        fn.lazyBytes ? (fn.lazyBytes / 1024).toFixed(1) : '',
      ]);
    }
    sizeRows.push([
      '(reference: AWS SDK DynamoDB + SQS clients alone)',
      `${(floor.bytes / 1024).toFixed(1)} KB`,
      '',
      '',
      '',
      '',
    ]);
    console.log(`\n${table(sizeRows)}\n`);
    // What fills each bundle (KB of minified output). A build that does not match the packaged file is said so.
    const contentRows: (string | number)[][] = [
      ['function', `largest parts of the bundle (KB; lazy chunks not included)`],
    ];
    for (const fn of packaged.functions) {
      const content = contents.get(fn.name);
      const note = !content
        ? ' (no metafile build)'
        : content.bytes === fn.bytes
          ? ''
          : ` (metafile build: ${(content.bytes / 1024).toFixed(1)} KB)`;
      contentRows.push([
        fn.name,
        `${(content?.top ?? []).map(([group, bytes]) => `${group} ${(bytes / 1024).toFixed(0)}`).join(' · ')}${note}`,
      ]);
    }
    console.log(`${table(contentRows)}\n`);

    // On the `local` stage serverless.yml takes the resources' addresses from the environment of the
    // local stack (as `npm start` hands it to serverless offline): the stack comes first.
    const stack = await startStack(`bench${process.pid}`);
    try {
      // 2. Module init: interleave bare node and each bundle so machine noise hits both alike.
      // Each function gets the environment serverless.yml gives it (a function whose init needs a
      // variable serverless.yml does not give it fails here, as it would when deployed), plus what
      // Lambda sets itself. Values are never used: nothing is called.
      // Without NODE_EXTRA_CA_CERTS, which Lambda does not set: with it (some machines set it for a
      // proxy) even a bare `node -e 0` loads the extra certificates and initialises OpenSSL at start-up
      // (~45 ms here), so the crypto start-up every bundle pays would vanish from the difference.
      const environments = functionEnvironments('local', stack.env);
      const { NODE_EXTRA_CA_CERTS: _extraCerts, ...inherited } = process.env;
      const lambdaRuntime = {
        AWS_REGION: REGION,
        AWS_ACCESS_KEY_ID: 'bench',
        AWS_SECRET_ACCESS_KEY: 'bench',
        // Local Node may be older than the Lambda runtime; the SDK's notice about it is not init work there.
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      };
      const envOf = (name: string) => {
        const declared = name.startsWith('(') ? environments.provider : environments.functions[name];
        if (!declared) throw new Error(`serverless package made ${name}, which serverless print does not list`);
        return { ...inherited, ...lambdaRuntime, ...declared };
      };
      const runs = scaled(31, 1);
      const bare: number[] = [];
      const targets = [
        ...packaged.functions,
        { name: '(reference: SDK clients alone)', bundle: floor.bundle, bytes: floor.bytes },
      ];
      const init = new Map<string, number[]>(targets.map((f) => [f.name, []]));
      for (let i = 0; i < runs; i++) {
        bare.push(wallMs(['-e', '0'], envOf('(node -e 0)')));
        for (const fn of targets) init.get(fn.name)!.push(wallMs(loadArgs(fn.bundle), envOf(fn.name)));
      }
      // A lazy chunk is for the first request that needs it: module init loading one (code reading a
      // lazy module's export at module level) would put its cost back into every cold start.
      const chunksAtInit = packaged.functions
        .filter((fn) => fn.lazyBytes)
        .flatMap((fn) => lazyChunksLoadedByInit(fn.bundle, envOf(fn.name)).map((chunk) => `${fn.name}: ${chunk}`));
      const bareMedian = median(bare);
      const sdkOver = median(init.get(targets.at(-1)!.name)!) - bareMedian;
      const initRows: (string | number)[][] = [
        [
          'function',
          'node + import (median)',
          'init over `node -e 0`',
          `issue 2: ≤ ${INIT_TARGET_MS} ms`,
          'over SDK alone',
          `issue 24: HTTP ≤ SDK alone + ${INIT_OVER_SDK_MS} ms`,
          'bundle',
        ],
      ];
      let missed = 0;
      for (const fn of targets) {
        const total = median(init.get(fn.name)!);
        const over = total - bareMedian;
        const reference = fn.name.startsWith('(');
        const sizeMet = reference || fn.bytes / 1024 <= sizeTarget(fn.name);
        const initMet = reference || !isHttpFunction(fn.name) || over - sdkOver <= INIT_OVER_SDK_MS;
        if (!sizeMet || !initMet) missed++;
        initRows.push([
          fn.name,
          fmt(total, 1),
          fmt(over, 1),
          reference ? '' : verdict(fn.name, over <= INIT_TARGET_MS),
          reference ? '' : `${over - sdkOver >= 0 ? '+' : ''}${fmt(over - sdkOver, 1)}`,
          reference ? '' : isHttpFunction(fn.name) ? mark(initMet) : 'worker: for the record',
          reference ? `${(fn.bytes / 1024).toFixed(1)} KB` : `${(fn.bytes / 1024).toFixed(1)} KB ${mark(sizeMet)}`,
        ]);
      }
      console.log(
        `bare \`node -e 0\`: ${fmt(bareMedian, 1)} (median of ${runs}); SDK clients alone: ${fmt(sdkOver, 1)} over it\n${table(initRows)}\n`,
      );
      console.log(`lazy chunks loaded by module init: ${chunksAtInit.length ? chunksAtInit.join(', ') : 'none'}`);

      // Issue 37: Powertools' cost, side by side (the same functions, runs interleaved).
      const without = await buildWithoutPowertools(packaged.dir);
      const config = loadServerlessConfig();
      const entryOf = (name: string) => {
        const handler = config.functions[name]?.handler ?? '';
        return handler.slice(0, handler.lastIndexOf('.'));
      };
      const compared = packaged.functions.filter((fn) => without.has(entryOf(fn.name)));
      const ways = { without: new Map<string, number[]>(), tracingOn: new Map<string, number[]>() };
      for (const fn of compared) {
        ways.without.set(fn.name, []);
        ways.tracingOn.set(fn.name, []);
      }
      const withPowertools = new Map(compared.map((fn) => [fn.name, [] as number[]]));
      const bareAgain: number[] = [];
      for (let i = 0; i < runs; i++) {
        bareAgain.push(wallMs(['-e', '0'], envOf('(node -e 0)')));
        for (const fn of compared) {
          ways.without.get(fn.name)!.push(wallMs(loadArgs(without.get(entryOf(fn.name))!.bundle), envOf(fn.name)));
          withPowertools.get(fn.name)!.push(wallMs(loadArgs(fn.bundle), envOf(fn.name)));
          ways.tracingOn
            .get(fn.name)!
            .push(wallMs(loadArgs(fn.bundle), { ...envOf(fn.name), POWERTOOLS_TRACE_ENABLED: 'true' }));
        }
      }
      const bareAgainMedian = median(bareAgain);
      const over = (samples: number[]) => median(samples) - bareAgainMedian;
      const signed = (ms: number) => `${ms >= 0 ? '+' : ''}${fmt(ms, 1)}`;
      const powertoolsRows: (string | number)[][] = [
        [
          'function',
          'init without Powertools',
          'with Powertools (Logger, Metrics; tracing off)',
          'Powertools costs',
          'with tracing on (Tracer, X-Ray SDK)',
          'tracing costs',
          'bundle without → with',
        ],
      ];
      const costs: number[] = [];
      const tracingCosts: number[] = [];
      for (const fn of compared) {
        const before = over(ways.without.get(fn.name)!);
        const after = over(withPowertools.get(fn.name)!);
        const traced = over(ways.tracingOn.get(fn.name)!);
        costs.push(after - before);
        tracingCosts.push(traced - after);
        powertoolsRows.push([
          fn.name,
          fmt(before, 1),
          fmt(after, 1),
          signed(after - before),
          fmt(traced, 1),
          signed(traced - after),
          `${(without.get(entryOf(fn.name))!.bytes / 1024).toFixed(1)} → ${(fn.bytes / 1024).toFixed(1)} KB`,
        ]);
      }
      console.log(
        `\nPowertools for AWS Lambda (issue 37), init over \`node -e 0\` (median of ${runs}, interleaved):\n${table(powertoolsRows)}`,
      );
      console.log(
        `Powertools (Logger + Metrics) costs a cold start ${fmt(median(costs), 1)} at the median function (${fmt(Math.min(...costs), 1)} to ${fmt(Math.max(...costs), 1)}); tracing on adds ${fmt(median(tracingCosts), 1)} more (off by default: the Tracer is a lazy chunk)\n`,
      );
      console.log(
        `issue 24: ${targets.length - 1 - missed} of ${targets.length - 1} functions meet their size and init targets; MISSED: ${missed}`,
      );
      // What the size target leaves a function that misses it, once the AWS SDK clients it calls are in.
      for (const fn of targets) {
        const sdk = contents.get(fn.name)?.sdk;
        if (fn.name.startsWith('(') || sdk === undefined || fn.bytes / 1024 <= sizeTarget(fn.name)) continue;
        const clients = (contents.get(fn.name)?.clients ?? []).join(', ');
        console.log(
          `  ${fn.name}: the AWS SDK it bundles (${clients}) is ${(sdk / 1024).toFixed(1)} KB, which leaves ${(sizeTarget(fn.name) - sdk / 1024).toFixed(1)} KB of the ${sizeTarget(fn.name)} KB for everything else; that is ${((fn.bytes - sdk) / 1024).toFixed(1)} KB`,
        );
      }
      console.log('');

      // 3. In-process latency ratio against DynamoDB Local.
      Object.assign(process.env, stack.env);
      // Access logs and metrics are formatted as in Lambda but not written to this terminal.
      const write = process.stdout.write.bind(process.stdout);
      process.stdout.write = ((chunk: string | Uint8Array) =>
        typeof chunk === 'string' && (chunk.startsWith('{"level"') || chunk.startsWith('{"_aws"'))
          ? true
          : write(chunk)) as typeof process.stdout.write;
      const { createApplication } = await import('#shared/applications/service');
      const app = await createApplication({ name: 'bench' });
      const grantsBundle = packaged.functions.find((f) => f.name === 'grants')!.bundle;
      const connectBundle = packaged.functions.find((f) => f.name === 'connect')!.bundle;
      const { handler: connect } = await import(pathToFileURL(connectBundle).href);
      const createEvent = buildEvent(
        { routeKey: 'POST /v3/connect/custom' },
        {
          method: 'POST',
          url: '/v3/connect/custom',
          headers: { authorization: `Bearer ${app.api_key}`, 'content-type': 'application/json' },
          body: Buffer.from(
            JSON.stringify({ provider: 'agent', settings: { email_address: `bench-${process.pid}@agents.test` } }),
          ),
          sourceIp: '127.0.0.1',
        },
      );
      const created = (await connect(createEvent, lambdaContext('connect'))) as APIGatewayProxyStructuredResultV2;
      const grantId = JSON.parse(created.body!).data.id as string;

      const { handler } = await import(pathToFileURL(grantsBundle).href);
      const getEvent = () =>
        buildEvent(
          { routeKey: 'GET /v3/grants/{grant_id}', params: { grant_id: grantId } },
          {
            method: 'GET',
            url: `/v3/grants/${grantId}`,
            headers: { authorization: `Bearer ${app.api_key}` },
            body: Buffer.alloc(0),
            sourceIp: '127.0.0.1',
          },
        );
      // The calls the handler makes on a warm container: the API key is cached (API_KEY_CACHE_SECONDS,
      // default 30 s), so one GetItem of the grant in the caller's partition while the application's
      // rate bucket and the grant's (named by ID in the path) take their tokens (a conditional
      // UpdateItem each), all three at once.
      const dynamo = DynamoDBDocumentClient.from(new DynamoDBClient({}));
      const { takeToken } = await import('#shared/db/rate-limits');
      const { applicationRateLimitKey, grantRateLimitKey } = await import('#shared/db/keys');
      // 1,000,000 a second, as bench/run.ts sets the limits: never refused.
      const unlimited = { intervalMs: 0.001, toleranceMs: 1000 };
      const directCall = async () => {
        const now = Date.now();
        await Promise.all([
          dynamo.send(
            new GetCommand({
              TableName: stack.env.TABLE_NAME,
              Key: { pk: `app#${app.application_id}`, sk: `grant#${grantId}` },
            }),
          ),
          takeToken(applicationRateLimitKey(app.application_id as never), unlimited, now),
          takeToken(grantRateLimitKey(app.application_id as never, grantId as never), unlimited, now),
        ]);
      };

      const iterations = scaled(2000, 20);
      for (let i = 0; i < scaled(200, 5); i++) {
        await handler(getEvent(), lambdaContext('grants'));
        await directCall();
      }
      const viaHandler: number[] = [];
      const viaDynamo: number[] = [];
      for (let i = 0; i < iterations; i++) {
        let t = performance.now();
        const result = (await handler(getEvent(), lambdaContext('grants'))) as APIGatewayProxyStructuredResultV2;
        viaHandler.push(performance.now() - t);
        if (result.statusCode !== 200) throw new Error(`GET grant answered ${result.statusCode}`);
        t = performance.now();
        await directCall();
        viaDynamo.push(performance.now() - t);
      }
      process.stdout.write = write;
      const ratio = median(viaHandler) / median(viaDynamo);
      console.log(
        table([
          ['GET /v3/grants/{id}', 'p50', 'p99'],
          ['handler in-process (packaged bundle)', fmt(median(viaHandler), 3), fmt(percentile(viaHandler, 99), 3)],
          [
            'its DynamoDB calls (1 GetItem ∥ 2 UpdateItem)',
            fmt(median(viaDynamo), 3),
            fmt(percentile(viaDynamo, 99), 3),
          ],
        ]),
      );
      console.log(
        `ratio handler / DynamoDB p50: ${ratio.toFixed(3)} (target ≤ ${RATIO_TARGET}: ${ratio <= RATIO_TARGET ? 'met' : 'MISSED'}; ${iterations} interleaved requests)`,
      );
      dynamo.destroy();
    } finally {
      await stack.stop();
    }
  } finally {
    packaged.cleanup();
  }
}
