import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { esbuildOptions } from '../../scripts/local-stack/build';
import { ROOT } from '../../scripts/local-stack/serverless-config';

/**
 * What a function's module init loads besides its own code: Node's web streams, DNS, http and
 * BlockList modules and the OAuth library cost a cold start milliseconds each, and most requests
 * never use them. They are taken on first use (scripts/esbuild-plugins.cjs lazy-web-streams,
 * shared/net/addresses.ts and request.ts, shared/lazy/oauth.ts): bundled with serverless.yml's
 * options, loading the code loads none of them, and using it still works.
 */
const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

async function bundle(lines: string[]): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'cold-start-'));
  dirs.push(dir);
  const outfile = join(dir, 'handler.cjs');
  await build({
    ...esbuildOptions(),
    absWorkingDir: ROOT,
    stdin: { contents: lines.join('\n'), resolveDir: ROOT, loader: 'ts' },
    outfile,
    logLevel: 'silent',
  });
  return outfile;
}

/** Runs `code` in a fresh Node with the bundle required as `m`; `loaded()` lists the Node modules and chunks loaded since. */
const run = (file: string, code: string) =>
  JSON.parse(
    execFileSync(
      process.execPath,
      [
        '-e',
        [
          'const before = new Set(process.moduleLoadList);',
          `const m = require(${JSON.stringify(file)});`,
          "const loaded = () => [...process.moduleLoadList.filter((x) => !before.has(x)).map((x) => x.replace(/^NativeModule /, 'node:')), ...Object.keys(require.cache).filter((f) => f.includes('.lazy/')).map((f) => 'chunk:' + f.slice(f.lastIndexOf('/') + 1))];",
          `(async () => { ${code} })().then((out) => console.log(JSON.stringify(out)), (e) => { console.error(e); process.exit(1); });`,
        ].join('\n'),
      ],
      {
        encoding: 'utf8',
        env: { ...process.env, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' },
      },
    ).trim(),
  ) as Record<string, unknown>;

describe('cold start: what module init leaves for first use', () => {
  it("an S3 client does not load Node's web streams at init, and its checksum stream still wraps a web stream", async () => {
    const file = await bundle([
      "import { S3Client } from '@aws-sdk/client-s3';",
      "import { createChecksumStream } from '@smithy/core/serde';",
      "export const s3 = new S3Client({ region: 'us-east-1' });",
      'export { createChecksumStream };',
    ]);
    const out = run(
      file,
      [
        'const atInit = loaded();',
        'const source = new ReadableStream({ start(c) { c.enqueue(new Uint8Array([1, 2, 3])); c.close(); } });',
        "const stream = m.createChecksumStream({ expectedChecksum: 'AAAAAA==', checksum: { update() {}, async digest() { return new Uint8Array(3); } }, source, checksumSourceLocation: 'x', base64Encoder: () => 'AAAAAA==' });",
        'const chunks = []; for await (const c of stream) chunks.push(...c);',
        'return { atInit, webStream: stream instanceof ReadableStream, chunks };',
      ].join('\n'),
    );
    expect(out.atInit).not.toContain('node:internal/webstreams/readablestream');
    expect(out.webStream).toBe(true);
    expect(out.chunks).toEqual([1, 2, 3]);
  });

  it('the guarded fetch and the OAuth client load neither DNS, http, BlockList nor oauth4webapi at init, and all on first use', async () => {
    const file = await bundle([
      "export { guardedFetch } from '#shared/net/fetch';",
      "export { classifyAddress } from '#shared/net/addresses';",
      "export { refreshTokens } from '#shared/oauth/client';",
      "export { translate } from '#shared/oauth/http';",
    ]);
    const out = run(
      file,
      [
        'const atInit = loaded();',
        "const verdicts = ['127.0.0.1', '10.1.2.3', '93.184.216.34'].map((a) => m.classifyAddress(a));",
        "const translated = m.translate(new Error('plain')).message;",
        'return { atInit, verdicts, translated, afterUse: loaded() };',
      ].join('\n'),
    );
    for (const name of ['node:dns', 'node:http', 'node:internal/blocklist', 'chunk:oauth.cjs'])
      expect(out.atInit).not.toContain(name);
    expect(out.verdicts).toEqual(['loopback', 'private', 'public']);
    expect(out.translated).toBe('plain');
    expect(out.afterUse).toEqual(expect.arrayContaining(['node:internal/blocklist', 'chunk:oauth.cjs']));
  });

  it('loads no X-Ray SDK with tracing off, even unbundled; with it on, captures a client made before the Tracer was ready', async () => {
    const file = await bundle([
      "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';",
      "import { inSubsegment, traced } from '#shared/aws/tracing';",
      'export { inSubsegment };',
      "export const client = traced(new DynamoDBClient({ region: 'us-east-1' }));",
    ]);
    const captured = (tracing: string) =>
      JSON.parse(
        execFileSync(
          process.execPath,
          [
            '-e',
            `const m = require(${JSON.stringify(file)}); m.inSubsegment('ready', async () => undefined).then(() => console.log(JSON.stringify({ xray: m.client.middlewareStack.identify().some((n) => /XRay/.test(n)), chunks: Object.keys(require.cache).filter((f) => f.includes('.lazy/')).length })));`,
          ],
          {
            encoding: 'utf8',
            env: {
              ...process.env,
              POWERTOOLS_TRACE_ENABLED: tracing,
              // What Lambda sets: the Tracer turns itself off anywhere else.
              AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
              AWS_LAMBDA_FUNCTION_NAME: 'test',
              AWS_REGION: 'us-east-1',
              AWS_ACCESS_KEY_ID: 'test',
              AWS_SECRET_ACCESS_KEY: 'test',
            },
          },
        ).trim(),
      ) as { xray: boolean; chunks: number };
    // Unbundled (tsx), as tests and benches run the code: the module graph of a function holds no X-Ray SDK.
    const unbundled = execFileSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        "await import('#shared/aws/dynamodb'); await import('#shared/net/request'); const { createRequire } = await import('node:module'); console.log(Object.keys(createRequire(import.meta.url).cache).some((f) => f.includes('aws-xray-sdk-core')));",
      ],
      { encoding: 'utf8', cwd: ROOT, env: { ...process.env, POWERTOOLS_TRACE_ENABLED: 'false', TABLE_NAME: 'test' } },
    ).trim();

    expect(captured('false')).toEqual({ xray: false, chunks: 0 });
    expect(captured('true')).toEqual({ xray: true, chunks: 1 });
    expect(unbundled).toBe('false');
  });
});
