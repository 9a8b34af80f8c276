import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePort } from '../scripts/local-stack/index';
import { ROOT } from '../scripts/local-stack/serverless-config';
import { fmt, median, scaled, table } from './lib';

/**
 * Issue 22 ("the first hour") benchmark: how long `npm start` takes to be usable, measured from the
 * outside as a developer meets it. Each run spawns `npm start` on free ports in a process group of
 * its own (as a terminal runs it) and records, from the spawn: its "[switchboard] ready in" line and
 * the first 2xx answer to GET /v3/grants with its API key (asked every POLL_MS from the spawn on);
 * then Ctrl-C (SIGINT to the group) and the time until every process of the group has exited.
 *
 * Baselines in the same run, interleaved with it: a bare `node -e 0`, and the emulators alone
 * (`startLocalStack` from its call to its return, in a fresh process, then stopped): what this
 * machine needs for Node and for the JVM of DynamoDB Local and the other emulators before any work
 * of npm start's own.
 *
 * npm start keeps what it can between starts in a cache (scripts/local-stack/cache.ts). The first run
 * gets an empty one of its own (SWITCHBOARD_CACHE_DIR), as after a fresh clone; the runs after it,
 * and the baseline, use what it left there: later starts, as a developer's day has them. The
 * checkout's own cache is left alone.
 */
const RUNS = scaled(3, 1);
const NODE_RUNS = 5;
const POLL_MS = 100;
const READY_TIMEOUT_MS = 180_000;
const STOP_TIMEOUT_MS = 30_000;
const API_KEY = 'bench-start-key';
const READY_LINE = '[switchboard] ready in';
/** A line in which npm start reports how long something took: `… in 3.2 s`, `… 850 ms`. */
const REPORTED = /^\[switchboard\] (.*?)(\d+(?:\.\d+)?) ?(ms|s)\b(.*)$/;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

interface Line {
  /** Milliseconds from the spawn to the line's arrival. */
  at: number;
  text: string;
}

interface StartRun {
  readyMs: number;
  firstOkMs: number;
  stopMs: number;
  lines: Line[];
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Sends SIGINT to the group (Ctrl-C) and returns how long until all of it has exited. */
async function ctrlC(pgid: number, output: () => string): Promise<number> {
  const sent = performance.now();
  try {
    process.kill(-pgid, 'SIGINT');
  } catch {
    return 0;
  }
  while (groupAlive(pgid)) {
    if (performance.now() - sent > STOP_TIMEOUT_MS) {
      process.kill(-pgid, 'SIGKILL');
      throw new Error(
        `processes of npm start still running ${STOP_TIMEOUT_MS / 1000} s after SIGINT:\n${output().slice(-3000)}`,
      );
    }
    await sleep(50);
  }
  return performance.now() - sent;
}

/** The environment of a fresh terminal: nothing of a stack this process or its parent may point at. */
function terminalEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    if (
      key.startsWith('AWS_') ||
      key.endsWith('_QUEUE_URL') ||
      key.endsWith('_DLQ_URL') ||
      key === 'TABLE_NAME' ||
      key.startsWith('VITEST') ||
      key === 'BENCH_SIZE'
    )
      delete env[key];
  }
  return { ...env, ...extra };
}

async function startOnce(cache: string): Promise<StartRun> {
  const ports = {
    PORT: await freePort(),
    LAMBDA_PORT: await freePort(),
    DYNAMODB_PORT: await freePort(),
    SQS_PORT: await freePort(),
    SMTP_PORT: await freePort(),
  };
  const env = terminalEnv({
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
    API_KEY,
    SWITCHBOARD_CACHE_DIR: cache,
  });
  const url = `http://127.0.0.1:${ports.PORT}/v3/grants`;

  const spawned = performance.now();
  const child = spawn('npm', ['start'], { cwd: ROOT, detached: true, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const lines: Line[] = [];
  let readyMs: number | undefined;
  for (const stream of [child.stdout!, child.stderr!]) {
    let partial = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const at = performance.now() - spawned;
      output += chunk;
      const parts = (partial + chunk).split('\n');
      partial = parts.pop()!;
      for (const text of parts) {
        lines.push({ at, text });
        if (readyMs === undefined && text.includes(READY_LINE)) readyMs = at;
      }
    });
  }
  let exitCode = null as number | null;
  child.once('exit', (code, signal) => (exitCode = code ?? (signal ? 128 : 1)));

  let firstOkMs: number | undefined;
  let stopMs = 0;
  try {
    while (readyMs === undefined || firstOkMs === undefined) {
      if (exitCode !== null)
        throw new Error(`npm start exited (${exitCode}) before it was ready:\n${output.slice(-3000)}`);
      if (performance.now() - spawned > READY_TIMEOUT_MS)
        throw new Error(`npm start not ready after ${READY_TIMEOUT_MS / 1000} s:\n${output.slice(-3000)}`);
      if (firstOkMs === undefined) {
        const asked = performance.now();
        try {
          const response = await fetch(url, {
            headers: { authorization: `Bearer ${API_KEY}` },
            signal: AbortSignal.timeout(10_000),
          });
          await response.arrayBuffer();
          if (response.ok) firstOkMs = performance.now() - spawned;
        } catch {
          /* nothing listens yet */
        }
        // One question every POLL_MS, however long the answer took.
        if (firstOkMs === undefined) await sleep(Math.max(0, POLL_MS - (performance.now() - asked)));
      } else {
        await sleep(20);
      }
    }
  } finally {
    if (child.pid) stopMs = await ctrlC(child.pid, () => output);
  }
  const usable = Math.max(readyMs!, firstOkMs!);
  return { readyMs: readyMs!, firstOkMs: firstOkMs!, stopMs, lines: lines.filter((l) => l.at <= usable) };
}

function stackAlone(cache: string): { startMs: number; stopMs: number } {
  // A fresh process as npm start's is, loading TypeScript the way this one was loaded (tsx).
  const result = spawnSync(process.execPath, [...process.execArgv, join(ROOT, 'bench', 'stack-alone.ts')], {
    cwd: ROOT,
    env: terminalEnv({ SWITCHBOARD_CACHE_DIR: cache }),
    encoding: 'utf8',
    timeout: READY_TIMEOUT_MS,
  });
  if (result.status !== 0)
    throw new Error(`the emulators alone failed (${result.status ?? result.signal}):\n${result.stderr.slice(-3000)}`);
  return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as { startMs: number; stopMs: number };
}

function bareNode(): number {
  const started = performance.now();
  const result = spawnSync(process.execPath, ['-e', '0'], { stdio: 'ignore', env: terminalEnv({}) });
  if (result.status !== 0) throw new Error('node -e 0 failed');
  return performance.now() - started;
}

interface Phase {
  /** The line with its figures replaced: "emulators up in … s", "23 functions built in … s (…)". */
  label: string;
  /** The durations the line reported, and when it arrived after the spawn, in ms, one per run. */
  reported: number[];
  at: number[];
}

/** What npm start reports of its phases: its `[switchboard]` lines that name a duration, in order. */
function reportedPhases(runs: StartRun[]): Phase[] {
  const phases = new Map<string, Phase>();
  for (const run of runs) {
    for (const line of run.lines) {
      const match = REPORTED.exec(line.text);
      if (!match) continue;
      const [, before, value, unit, after] = match;
      const label = `${before}…${unit === 'ms' ? ' ms' : ' s'}${after!.replace(/\d+/g, '…')}`;
      const phase = phases.get(label) ?? { label, reported: [], at: [] };
      phase.reported.push(Number(value) * (unit === 'ms' ? 1 : 1000));
      phase.at.push(line.at);
      phases.set(label, phase);
    }
  }
  return [...phases.values()].sort((a, b) => median(a.at) - median(b.at));
}

export async function runStartBench(): Promise<void> {
  console.log(
    `\n## npm start: from the command to a usable API, a first start and ${RUNS} later one${RUNS === 1 ? '' : 's'} (issue 22)\n`,
  );
  const node: number[] = [];
  const alone: { startMs: number; stopMs: number }[] = [];
  const runs: StartRun[] = [];
  const cache = mkdtempSync(join(tmpdir(), 'switchboard-bench-cache-'));
  let first: StartRun;
  try {
    // The first start, on an empty cache: what a fresh clone gets.
    first = await startOnce(cache);
    // Interleaved, so machine noise hits the baselines and npm start alike.
    for (let i = 0; i < RUNS; i++) {
      for (let j = 0; j < NODE_RUNS; j++) node.push(bareNode());
      alone.push(stackAlone(cache));
      runs.push(await startOnce(cache));
    }
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }

  const stat = (samples: number[], format = seconds) => [format(median(samples)), format(Math.min(...samples))];
  const ready = runs.map((r) => r.readyMs);
  const firstOk = runs.map((r) => r.firstOkMs);
  const aloneStart = alone.map((a) => a.startMs);
  console.log(
    table([
      ['from the spawn of `npm start`', 'median', 'min', 'runs'],
      [
        `first start (empty cache, as a fresh clone): to its line "${READY_LINE}"`,
        seconds(first.readyMs),
        seconds(first.readyMs),
        '1',
      ],
      ['first start: to the first 2xx of GET /v3/grants', seconds(first.firstOkMs), seconds(first.firstOkMs), '1'],
      [
        'first start: Ctrl-C until every process has exited (it leaves its cache)',
        seconds(first.stopMs),
        seconds(first.stopMs),
        '1',
      ],
      [`to its line "${READY_LINE}"`, ...stat(ready), ready.map(seconds).join(', ')],
      [
        `to the first 2xx of GET /v3/grants with its API key (asked every ${POLL_MS} ms)`,
        ...stat(firstOk),
        firstOk.map(seconds).join(', '),
      ],
      [
        'Ctrl-C (SIGINT to its group) until every process of the group has exited',
        ...stat(runs.map((r) => r.stopMs)),
        runs.map((r) => seconds(r.stopMs)).join(', '),
      ],
      [
        'baseline: the emulators alone, startLocalStack() to its return (fresh process)',
        ...stat(aloneStart),
        aloneStart.map(seconds).join(', '),
      ],
      [
        'baseline: the emulators alone, stop()',
        ...stat(alone.map((a) => a.stopMs)),
        alone.map((a) => seconds(a.stopMs)).join(', '),
      ],
      ['baseline: `node -e 0`', ...stat(node, (ms) => fmt(ms, 1)), `${node.length} runs`],
    ]),
  );
  console.log(`\n(rows without "first start": the later starts, each with the cache the runs before it left)`);
  console.log(
    `npm start's own time beyond the emulators (medians of later starts): ready − emulators alone = ${seconds(median(ready) - median(aloneStart))}`,
  );
  for (const [which, group] of [
    ['the first start', [first]],
    [`the later starts (median over ${RUNS})`, runs],
  ] as const) {
    const phases = reportedPhases([...group]);
    const own = phases.find((p) => p.label.startsWith('ready in'));
    if (own)
      console.log(
        `\n${which}: before npm start's own clock starts (npm, tsx, loading scripts/start.ts): ready line − its "ready in" = ${seconds(median(group.map((r) => r.readyMs)) - median(own.reported))}`,
      );
    if (phases.length) {
      console.log(`phases npm start reports in ${which} (its own lines with a duration):\n`);
      console.log(
        table([
          ['npm start says', 'median', 'min', 'printed after the spawn at'],
          ...phases.map((p) => [
            p.label,
            seconds(median(p.reported)),
            seconds(Math.min(...p.reported)),
            seconds(median(p.at)),
          ]),
        ]),
      );
    } else {
      console.log(`\n(npm start reports no phases in ${which})`);
    }
  }
}
