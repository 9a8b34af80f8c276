import type { TestProject } from 'vitest/node';
import { startLocalStack, type LocalStack } from '../../scripts/local-stack/index';

/**
 * Starts the real emulators once for the whole run (DynamoDB Local, SQS), provisioned from
 * serverless.yml, and hands their environment to every test worker.
 */
let stack: LocalStack | undefined;

declare module 'vitest' {
  export interface ProvidedContext {
    stackEnv: Record<string, string>;
  }
}

export async function setup(project: TestProject) {
  stack = await startLocalStack({ stage: `test${process.pid}` });
  project.provide('stackEnv', stack.env);
}

export async function teardown() {
  await stack?.stop();
}
