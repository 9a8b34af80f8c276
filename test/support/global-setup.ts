import type { TestProject } from 'vitest/node';
import { startStack, type LocalStack } from '../../scripts/local-stack/index';

/**
 * Starts the real emulators once for the whole run (DynamoDB Local, SQS), provisioned from
 * serverless.yml, and hands their environment to every test worker. With AWS_ENDPOINT_URL set
 * (LocalStack, say), it provisions a fresh table and queues there instead of starting emulators.
 */
let stack: LocalStack | undefined;

declare module 'vitest' {
  export interface ProvidedContext {
    stackEnv: Record<string, string>;
  }
}

export async function setup(project: TestProject) {
  const stage = `test${process.pid}`;
  stack = await startStack(stage);
  project.provide('stackEnv', stack.env);
}

export async function teardown() {
  await stack?.stop();
}
