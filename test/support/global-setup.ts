import type { TestProject } from 'vitest/node';
import { startStack, type LocalStack } from '../../scripts/local-stack/index';

/**
 * Starts the real emulators once for the whole run (DynamoDB Local, SQS), provisioned from
 * serverless.yml, and hands their environment to every test worker. With AWS_ENDPOINT_URL set
 * (LocalStack, say), it provisions a fresh table and queues there instead of starting emulators.
 */
// One stack for the run, also when several test projects each run this setup (kept on globalThis:
// each project may load this module anew); stopped when the last project tears down.
const shared = globalThis as typeof globalThis & { switchboardStack?: { stack: Promise<LocalStack>; users: number } };

declare module 'vitest' {
  export interface ProvidedContext {
    stackEnv: Record<string, string>;
  }
}

export async function setup(project: TestProject) {
  shared.switchboardStack ??= { stack: startStack(`test${process.pid}`), users: 0 };
  shared.switchboardStack.users++;
  project.provide('stackEnv', (await shared.switchboardStack.stack).env);
}

export async function teardown() {
  const current = shared.switchboardStack;
  if (!current || --current.users > 0) return;
  shared.switchboardStack = undefined;
  await (await current.stack).stop();
}
