import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/local-stack/index';
import { ROOT } from '../../scripts/local-stack/serverless-config';
import { cleanEnv, ctrlC, groupAlive, npmStart, type Started } from '../support/npm-start';
import { runReadme } from '../support/readme-runner';

/**
 * The README as a script that stays true: every shell block it does not mark as skipped runs, top
 * to bottom in one bash, against a fresh `npm start` of its own (free ports, its own key), as a
 * reader pasting them into a second terminal would. Any HTTP answer outside 2xx that the README does
 * not announce (`# → 409`), a block exiting non-zero or a polling loop giving up fails it.
 */
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

let started: Started | undefined;
afterAll(async () => {
  if (started && groupAlive(started.child.pid!)) await ctrlC(started);
});

describe('README', () => {
  it('runs its shell blocks top to bottom against a fresh npm start', async () => {
    const ports = {
      PORT: await freePort(),
      LAMBDA_PORT: await freePort(),
      DYNAMODB_PORT: await freePort(),
      SQS_PORT: await freePort(),
      SMTP_PORT: await freePort(),
    };
    const env = Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)]));
    const key = 'readme-test-key';
    started = await npmStart({ ...env, API_KEY: key });

    const run = await runReadme(README, {
      cwd: ROOT,
      env: cleanEnv({
        BASE: `http://127.0.0.1:${ports.PORT}`,
        KEY: key,
        SMTP_PORT: env.SMTP_PORT!,
        HOOK_PORT: String(await freePort()),
      }),
    });

    // On failure, the block, the command and the tail of the output; then what npm start said.
    expect(run.failures.join('\n\n'), `npm start output (tail):\n${started.output().slice(-4000)}`).toBe('');
    // The curl shim saw the README's requests (and so would have seen an error status).
    expect(run.transfers.filter((t) => t.url.startsWith(`http://127.0.0.1:${ports.PORT}/v3/`)).length).toBeGreaterThan(
      20,
    );
  }, 600_000);
});
