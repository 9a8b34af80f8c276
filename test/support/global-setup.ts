import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { startStack, type LocalStack } from '../../scripts/local-stack/index';
import { alive } from '../../scripts/local-stack/instances';

/**
 * Starts the real emulators once for the whole run (DynamoDB Local, SQS), provisioned from
 * serverless.yml, and hands their environment to every test worker. With AWS_ENDPOINT_URL set
 * (LocalStack, say), it provisions a fresh table and queues there instead of starting emulators.
 */
// One stack for the run, also when several test projects each run this setup (kept on globalThis:
// each project may load this module anew); stopped when the last project tears down.
const shared = globalThis as typeof globalThis & {
  switchboardStack?: { stack: Promise<LocalStack>; users: number; artifacts: string };
};

declare module 'vitest' {
  export interface ProvidedContext {
    stackEnv: Record<string, string>;
    /** This run's directory for the secrets audit (test/support/secrets.ts): worker logs and remembered secrets. */
    testArtifacts: string;
  }
}

const RUNS = fileURLToPath(new URL('../artifacts/runs/', import.meta.url));

/**
 * An empty directory for this run's logs and secrets, so no earlier run's files count; the
 * directories of finished runs go, those of runs still going in this checkout stay.
 */
function freshRunDirectory(): string {
  mkdirSync(RUNS, { recursive: true });
  for (const name of readdirSync(RUNS)) {
    if (Number(name) === process.pid || !alive(Number(name)))
      rmSync(`${RUNS}${name}`, { recursive: true, force: true });
  }
  const dir = `${RUNS}${process.pid}`;
  mkdirSync(dir, { recursive: true });
  return dir;
}

export async function setup(project: TestProject) {
  shared.switchboardStack ??= { stack: startStack(`test${process.pid}`), users: 0, artifacts: freshRunDirectory() };
  shared.switchboardStack.users++;
  project.provide('testArtifacts', shared.switchboardStack.artifacts);
  project.provide('stackEnv', (await shared.switchboardStack.stack).env);
}

export async function teardown() {
  const current = shared.switchboardStack;
  if (!current || --current.users > 0) return;
  shared.switchboardStack = undefined;
  await (await current.stack).stop();
}
