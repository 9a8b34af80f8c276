import { execFileSync, fork } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadServerlessConfig } from '../../scripts/local-stack/serverless-config';
import { installedNode, lambdaNodeMajor, nodeBinaryPackage } from '../support/node-runtime';

/**
 * `npm test` runs on the Node.js Lambda runs (scripts/node24.sh): this worker, and the processes
 * tests start by process.execPath, by the name `node` and through tsx (as the jobs worker process is).
 * Skipped only on a platform the registry carries no Node binary for, where the launcher falls back
 * to the system Node with a warning.
 */
const binaryPackage = nodeBinaryPackage();

/** What a child process reports of its Node: version and executable. */
const REPORT = 'process.stdout.write(JSON.stringify({ version: process.versions.node, execPath: process.execPath }))';

describe.skipIf(!binaryPackage)('Runtime: the Node.js of npm test', () => {
  it("is the registry's Node binary of this platform, of serverless.yml's runtime major version", () => {
    // Prepare
    const major = lambdaNodeMajor();

    // Assess
    expect(major).toBe('24');
    expect(process.versions.node.split('.')[0]).toBe(major);
    expect(process.execPath).toBe(installedNode(binaryPackage!));
    // oidc-provider stays quiet only on a Node LTS line from 22 ('Jod') on.
    expect(process.release.lts).toBe('Krypton');
  });

  it('is the Node of the processes tests start: by process.execPath, by the name node, and through tsx', async () => {
    // Prepare
    const script = join(mkdtempSync(join(tmpdir(), 'node-runtime-')), 'report.ts');
    writeFileSync(
      script,
      `const answer: string = JSON.stringify({ version: process.versions.node, execPath: process.execPath });\nprocess.send!(answer);\n`,
    );

    // Act
    const byExecPath = JSON.parse(execFileSync(process.execPath, ['-e', REPORT], { encoding: 'utf8' }));
    const byName = JSON.parse(execFileSync('node', ['-e', REPORT], { encoding: 'utf8' }));
    const throughTsx = await new Promise<{ version: string; execPath: string }>((resolve, reject) => {
      const child = fork(script, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      child.once('message', (m) => resolve(JSON.parse(String(m))));
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`exited (${code}) without answering`)));
    });

    // Assess
    for (const report of [byExecPath, byName, throughTsx])
      expect(report).toEqual({ version: process.versions.node, execPath: process.execPath });
  });
});

describe("Function: serverless.yml's esbuild target", () => {
  it('is the runtime the bundles run on, in Lambda and under npm start', () => {
    const esbuild = loadServerlessConfig().custom.esbuild as { target: string };
    expect(esbuild.target).toBe(`node${lambdaNodeMajor()}`);
  });
});
