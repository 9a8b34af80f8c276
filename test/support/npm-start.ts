import { spawn, type ChildProcess } from 'node:child_process';
import { ROOT } from '../../scripts/local-stack/serverless-config';

/**
 * The README's first command, run for real by the end-to-end tests: `npm start` detached (its own
 * process group, as a terminal runs it) with a clean environment, and stopped with Ctrl-C.
 */

/** The environment without anything of the test stack, plus `extra`. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    if (
      key.startsWith('AWS_') ||
      key.endsWith('_QUEUE_URL') ||
      key.endsWith('_DLQ_URL') ||
      key === 'TABLE_NAME' ||
      key.startsWith('VITEST')
    )
      delete env[key];
  }
  return { ...env, ...extra };
}

export interface Started {
  child: ChildProcess;
  output: () => string;
}

/** Starts `npm start` and resolves once it printed 'ready in' and the banner with its API key. */
export async function npmStart(env: Record<string, string>): Promise<Started> {
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    detached: true,
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c) => (output += c));
  child.stderr!.on('data', (c) => (output += c));
  const deadline = Date.now() + 120_000;
  while (!output.includes('ready in') || !/API key\s+\S+/.test(output)) {
    if (child.exitCode !== null) throw new Error(`npm start exited early (${child.exitCode}):\n${output}`);
    if (Date.now() > deadline) {
      process.kill(-child.pid!, 'SIGKILL');
      throw new Error(`npm start not ready after 120 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { child, output: () => output };
}

export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Sends SIGINT to the process group (Ctrl-C) and waits until every process of it has exited. */
export async function ctrlC(started: Started): Promise<void> {
  const pgid = started.child.pid!;
  process.kill(-pgid, 'SIGINT');
  const deadline = Date.now() + 30_000;
  while (groupAlive(pgid)) {
    if (Date.now() > deadline) {
      process.kill(-pgid, 'SIGKILL');
      throw new Error(`processes of npm start still running 30 s after SIGINT:\n${started.output().slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
