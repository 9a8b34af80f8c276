import { appendFileSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The secrets audit of a test run (test/final/secrets-scan.test.ts reads what this module writes).
 * Each test worker
 * - writes every structured line shared/logger.ts (and shared/metrics.ts) prints to `logs/<worker pid>.log` (`captureLogs`,
 *   installed by setup-env.ts with the logger at debug), and
 * - appends every secret the tests create or receive to `secrets/<worker pid>.txt` (`rememberSecret`),
 * both under the run's own directory, `test/artifacts/runs/<vitest pid>/`: global setup makes it and
 * hands it to the workers as SWITCHBOARD_TEST_ARTIFACTS. One directory per run, because several runs
 * may share this checkout at the same time; global setup removes the directories of finished runs.
 */
export const ARTIFACTS_ENV = 'SWITCHBOARD_TEST_ARTIFACTS';

export const logsDir = (runDir: string) => join(runDir, 'logs');
export const secretsDir = (runDir: string) => join(runDir, 'secrets');

/** One line of a registry file. */
export interface RememberedSecret {
  /** What the secret is and where it came from, e.g. `refresh_token in the answer to POST /v3/connect/token`. */
  what: string;
  value: string;
}

const remembered = new Set<string>();

/**
 * Records a secret a test created or received, so the end-of-run scan can prove it is neither in a log
 * line nor stored in plaintext. Outside a test run (no run directory) it does nothing.
 */
export function rememberSecret(value: unknown, what: string): void {
  const runDir = process.env[ARTIFACTS_ENV];
  if (!runDir || typeof value !== 'string' || value === '' || remembered.has(value)) return;
  remembered.add(value);
  mkdirSync(secretsDir(runDir), { recursive: true });
  const line: RememberedSecret = { what, value };
  appendFileSync(join(secretsDir(runDir), `${process.pid}.txt`), `${JSON.stringify(line)}\n`);
}

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
/** How shared/logger.ts starts every line it writes (its formatter puts `level` first). */
const LOG_LINE = /^\{"level":"(debug|info|warn|error)",/;
/** How shared/metrics.ts's lines start (CloudWatch's embedded metric format): kept with the logs, shown at debug. */
const METRICS_LINE = /^\{"_aws":\{/;

const installed = Symbol.for('switchboard.test.captureLogs');

/**
 * Tees the logger's lines into this worker's log file: every structured line goes to the file; the
 * terminal still gets only those at or above `terminalLevel` (TEST_LOG_LEVEL, silent by default), and
 * everything else written to stdout or stderr passes through untouched. Writes are synchronous, so
 * the file is complete even if the worker dies. Installed once per process.
 */
export function captureLogs(runDir: string, terminalLevel: string): void {
  const global = globalThis as { [installed]?: boolean };
  if (global[installed]) return;
  global[installed] = true;
  mkdirSync(logsDir(runDir), { recursive: true });
  const fd = openSync(join(logsDir(runDir), `${process.pid}.log`), 'a');
  const threshold = LEVELS[terminalLevel as keyof typeof LEVELS] ?? LEVELS.silent;
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      const text =
        typeof chunk === 'string'
          ? chunk
          : chunk instanceof Uint8Array
            ? Buffer.from(chunk).toString('utf8')
            : undefined;
      const level =
        text === undefined ? undefined : (LOG_LINE.exec(text)?.[1] ?? (METRICS_LINE.test(text) ? 'debug' : undefined));
      if (!level) return write(chunk, ...rest);
      writeSync(fd, text!);
      if (LEVELS[level as keyof typeof LEVELS] >= threshold) return write(chunk, ...rest);
      const callback = rest.find((r): r is () => void => typeof r === 'function');
      if (callback) process.nextTick(callback);
      return true;
    }) as typeof stream.write;
  }
}
