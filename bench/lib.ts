import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import JSZip from 'jszip';
import { ROOT } from '../scripts/local-stack/serverless-config';

const require = createRequire(import.meta.url);
const serverlessBin = () => join(dirname(require.resolve('osls/package.json')), 'bin', 'serverless.js');

/**
 * A smoke run (`npm run bench -- --smoke`, or `BENCH_SIZE=smoke`): every suite through the same code
 * at a size that takes seconds, so `npm test` proves the benchmarks still run. Its figures mean nothing.
 */
export const SMOKE = process.env.BENCH_SIZE === 'smoke';

/** A suite's count: `full` in a real run, `smoke` in a smoke run. */
export const scaled = (full: number, smoke: number): number => (SMOKE ? smoke : full);

/** A small deterministic generator (mulberry32), so every run seeds the same data: the seeded tests' own. */
export { rng } from '../test/support/rng';

export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  if (!sorted.length) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export const median = (samples: number[]) => percentile(samples, 50);

/** CPU time (ms) of this process and of the services it started, by name: `self`, then each service's, undefined where it cannot be read. */
export interface CpuTime {
  self: number;
  [service: string]: number | undefined;
}

/**
 * CPU time so far of this process and of its descendant processes whose command line contains each
 * service's marker (`{ dynamodb: 'DynamoDBLocal' }`), from /proc (Linux, 100 ticks a second; their
 * own waited-for children included); the services are undefined where there is no /proc.
 */
export function cpuTime(services: Record<string, string>): CpuTime {
  const own = process.cpuUsage();
  const time: CpuTime = { self: (own.user + own.system) / 1000 };
  try {
    const children = (pid: number): number[] =>
      readdirSync(`/proc/${pid}/task`).flatMap((task) =>
        readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8')
          .split(' ')
          .filter(Boolean)
          .map(Number)
          .flatMap((child) => [child, ...children(child)]),
      );
    for (const pid of children(process.pid)) {
      try {
        const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        const service = Object.keys(services).find((name) => command.includes(services[name]!));
        if (!service) continue;
        // utime, stime, cutime, cstime: fields 14 to 17, counted after the command name's closing parenthesis.
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        time[service] =
          (time[service] ?? 0) +
          (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10;
      } catch {
        // gone meanwhile
      }
    }
  } catch {
    // no /proc: this process only
  }
  return time;
}

/** CPU time spent since `before` (a service undefined in either reading is undefined). */
export function cpuSince(before: CpuTime, services: Record<string, string>): CpuTime {
  const now = cpuTime(services);
  const spent: CpuTime = { self: now.self - before.self };
  for (const name of Object.keys(services))
    spent[name] = now[name] === undefined || before[name] === undefined ? undefined : now[name]! - before[name]!;
  return spent;
}

/** p50 and p99 of `runs` timed calls of a list after `warmUp` untimed ones, and how many items the last one answered. */
export async function timeList(
  run: () => Promise<{ items: unknown[] }>,
  runs: number,
  warmUp: number,
): Promise<{ p50: number; p99: number; items: number }> {
  for (let i = 0; i < warmUp; i++) await run();
  const samples: number[] = [];
  let items = 0;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const page = await run();
    samples.push(performance.now() - started);
    items = page.items.length;
  }
  return { p50: percentile(samples, 50), p99: percentile(samples, 99), items };
}

export function fmt(ms: number, digits = 2): string {
  return `${ms.toFixed(digits)} ms`;
}

export function table(rows: (string | number)[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  return rows.map((r) => r.map((c, i) => String(c).padEnd(widths[i]!)).join('  ')).join('\n');
}

export interface PackagedFunction {
  name: string;
  /** Path of the unzipped handler bundle. */
  bundle: string;
  bytes: number;
  /** The lazy chunks unzipped beside it (`handler.lazy/<module>.cjs`, scripts/esbuild-plugins.cjs): their total bytes. */
  lazyBytes: number;
}

/** Runs `serverless package` (the deployment artifacts, built offline) and unzips each function. */
export async function packageFunctions(): Promise<{ dir: string; functions: PackagedFunction[]; cleanup: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-'));
  execFileSync(
    process.execPath,
    [serverlessBin(), 'package', '--stage', 'bench', '--package', join(dir, 'artifacts')],
    {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    },
  );
  const functions: PackagedFunction[] = [];
  for (const zip of readdirSync(join(dir, 'artifacts')).filter((f) => f.endsWith('.zip'))) {
    const name = zip.replace(/\.zip$/, '');
    const archive = await JSZip.loadAsync(readFileSync(join(dir, 'artifacts', zip)));
    const scripts = Object.values(archive.files).filter((f) => !f.dir && /\.[cm]?js$/.test(f.name));
    // The handler bundle, and the lazy chunks it loads from `<bundle>.lazy/`: all unzipped, as Lambda would.
    const entry = scripts.find((f) => !f.name.includes('.lazy/'));
    if (!entry) throw new Error(`${zip} holds no bundle`);
    let bytes = 0;
    let lazyBytes = 0;
    for (const file of scripts) {
      const path = join(dir, 'unzipped', name, file.name);
      mkdirSync(join(path, '..'), { recursive: true });
      const code = await file.async('nodebuffer');
      writeFileSync(path, code);
      if (file === entry) bytes = code.length;
      else lazyBytes += code.length;
    }
    functions.push({ name, bundle: join(dir, 'unzipped', name, entry.name), bytes, lazyBytes });
  }
  return {
    dir,
    functions: functions.sort((a, b) => a.name.localeCompare(b.name)),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface FunctionEnvironments {
  /** provider.environment: what every function gets. */
  provider: Record<string, string>;
  /** Per function: provider.environment with the function's own `environment` over it. */
  functions: Record<string, Record<string, string>>;
}

/**
 * The environment serverless.yml gives the functions, resolved by the framework itself
 * (`serverless print`) for `stage`, with `env` over this process's environment: for the `local`
 * stage and a local stack's environment that is what `npm start` hands serverless offline. Read from
 * serverless.yml rather than listed here, a variable added there reaches the benchmarks unasked.
 */
export function functionEnvironments(stage: string, env: Record<string, string>): FunctionEnvironments {
  const printed = execFileSync(process.execPath, [serverlessBin(), 'print', '--stage', stage, '--format', 'json'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    maxBuffer: 64 * 1024 * 1024,
  }).toString();
  const config = JSON.parse(printed) as {
    provider: { environment?: Record<string, unknown> };
    functions: Record<string, { environment?: Record<string, unknown> }>;
  };
  // On a deployed stage some values are CloudFormation references, which only a deployment resolves.
  const strings = (where: string, vars: Record<string, unknown> = {}) =>
    Object.fromEntries(
      Object.entries(vars).map(([name, value]) => {
        if (typeof value !== 'string')
          throw new Error(`${where} ${name} does not resolve to a string for stage ${stage}: ${JSON.stringify(value)}`);
        return [name, value];
      }),
    );
  const provider = strings('provider.environment', config.provider.environment);
  const functions = Object.fromEntries(
    Object.entries(config.functions).map(([name, fn]) => [
      name,
      { ...provider, ...strings(`functions.${name}.environment`, fn.environment) },
    ]),
  );
  return { provider, functions };
}

/** A notification as a webhook receiver reads it. */
export interface ReceivedNotification {
  type: string;
  data: { object: Record<string, unknown> };
}

/**
 * A local webhook receiver for the suites that time change → webhook: answers the verification
 * challenge, answers every POST 200, and hands each notification to `onNotification` with the
 * moment it arrived (performance.now()). `url` is its `/hook`; `stop` closes it.
 */
export async function startWebhookReceiver(
  onNotification: (notification: ReceivedNotification, arrivedAt: number) => void,
): Promise<{ url: string; stop: () => Promise<void> }> {
  const receiver = createServer((req, res) => {
    const challenge = new URL(req.url ?? '/', 'http://x').searchParams.get('challenge');
    if (challenge) return void res.writeHead(200, { 'content-length': Buffer.byteLength(challenge) }).end(challenge);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const arrivedAt = performance.now();
      try {
        onNotification(JSON.parse(Buffer.concat(chunks).toString()) as ReceivedNotification, arrivedAt);
      } catch {
        // not a notification
      }
      res.writeHead(200, { 'content-length': 2 }).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
    stop: async () => {
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
    },
  };
}
