/**
 * One cold start of the emulators alone, the `start` suite's baseline (bench/start.ts): in a fresh
 * process, as `npm start` starts them, `startLocalStack` timed from its call to its return, then
 * stopped. Prints `{"startMs":…,"stopMs":…}`.
 */
import { performance } from 'node:perf_hooks';
import { startLocalStack } from '../scripts/local-stack/index';

const started = performance.now();
const stack = await startLocalStack({ stage: 'local' });
const startMs = performance.now() - started;
const stopping = performance.now();
await stack.stop();
console.log(JSON.stringify({ startMs, stopMs: performance.now() - stopping }));
process.exit(0);
