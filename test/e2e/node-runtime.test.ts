import { basename } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/local-stack/index';
import { apiClient } from '../support/api';
import { installedNode, nodeBinaryPackage, processTree } from '../support/node-runtime';
import { ctrlC, groupAlive, npmStart, type Started } from '../support/npm-start';

/**
 * `npm start` runs on the Node.js Lambda runs, all the way down, as the kernel sees it (/proc, so
 * Linux only): npm itself, tsx and scripts/start.ts, the SQS emulator's process, and serverless
 * offline, whose worker threads run the handlers (serverless.yml asks for neither child processes
 * nor Docker). A handler's thread is named `WorkerThread` by Node 24 (Node 20 names every thread
 * `node`): the thread of the handler that answered below is one of Node 24's workers.
 */
const binaryPackage = nodeBinaryPackage();

let started: Started | undefined;
afterAll(() => {
  if (started && groupAlive(started.child.pid!)) process.kill(-started.child.pid!, 'SIGKILL');
});

describe.skipIf(process.platform !== 'linux' || !binaryPackage)('npm start on Node 24', () => {
  it('runs every Node process it starts, serverless offline and the handlers in its worker threads included, on the installed Node 24', async () => {
    // Prepare
    const ports = {
      PORT: await freePort(),
      LAMBDA_PORT: await freePort(),
      DYNAMODB_PORT: await freePort(),
      SQS_PORT: await freePort(),
      SMTP_PORT: await freePort(),
    };
    const node = installedNode(binaryPackage!);

    // Act: a request answered by the grants function.
    started = await npmStart({
      ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
      API_KEY: 'e2e-node-key',
    });
    const answer = await apiClient(`http://127.0.0.1:${ports.PORT}`, 'e2e-node-key').get('/v3/grants');
    const tree = processTree(started.child.pid!);

    // Assess
    expect(answer.status).toBe(200);
    const nodes = tree.filter((p) => basename(p.exe) === 'node');
    const show = (p: (typeof tree)[number]) => `${p.pid} ${p.exe}: ${p.argv.join(' ').slice(0, 200)}`;
    expect(
      nodes.filter((p) => p.exe !== node).map(show),
      `Node processes under npm start on another binary than ${node}`,
    ).toEqual([]);
    // npm, tsx, scripts/start.ts (tsx's child), the SQS emulator and serverless offline at least.
    expect(nodes.length, tree.map(show).join('\n')).toBeGreaterThanOrEqual(5);
    const offline = tree.find((p) => p.argv.some((a) => a.endsWith('serverless.js')) && p.argv.includes('offline'));
    expect(offline, tree.map(show).join('\n')).toBeDefined();
    expect(offline!.exe).toBe(node);
    expect(offline!.threads).toContain('WorkerThread');
    // oidc-provider warns on a Node before its supported LTS lines; the launcher, on a fallback.
    expect(started.output()).not.toMatch(/Unsupported runtime|no Node\.js 24/);

    await ctrlC(started);
  });
});
