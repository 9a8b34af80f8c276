import { defineConfig } from 'vitest/config';

/**
 * Groups in turn: every test file but the heaviest runs two at a time; then the heavy ones (hundreds of
 * mailboxes and hundreds of megabytes through the emulators, and the end-to-end files) run alone, so
 * they neither starve nor are starved by the rest.
 */
/**
 * The end-to-end files each run `npm start`, which picks free loopback ports and binds them seconds
 * later: two of them side by side could take each other's ports (seen once: EADDRINUSE on the Lambda
 * port), so they run alone too.
 */
const HEAVY = [
  'test/integration/local-delivery.test.ts',
  'test/e2e/start.test.ts',
  'test/e2e/nylas-sdk.test.ts',
  'test/bench/bench-smoke.test.ts',
  'test/e2e/readme.test.ts',
  'test/e2e/node-runtime.test.ts',
];
/**
 * Last, the checks over the whole run (test/final/): the secrets scan reads every worker's log and
 * the run's table once everything else has written them.
 */
const FINAL = ['test/final/*.test.ts'];

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/setup-env.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['test/**/*.test.ts'],
          exclude: [...HEAVY, ...FINAL],
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: 'heavy', include: HEAVY, maxWorkers: 1, sequence: { groupOrder: 1 } } },
      { extends: true, test: { name: 'final', include: FINAL, maxWorkers: 1, sequence: { groupOrder: 2 } } },
    ],
  },
});
