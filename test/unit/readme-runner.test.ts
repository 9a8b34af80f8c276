import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReadme, shellBlocks, statements } from '../support/readme-runner';

/**
 * The README test's runner, on small READMEs of its own against a loopback server that answers by
 * path: it must pass a good README and fail each kind of broken one, saying where.
 */
const fence = '```';
const readme = (...parts: string[]) => ['# A README', '', ...parts].join('\n');
const sh = (...lines: string[]) => [`${fence}sh`, ...lines, fence, ''].join('\n');

let server: Server;
let base: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    const status =
      { '/ok': 200, '/created': 201, '/missing': 404, '/taken': 409 }[new URL(req.url!, 'http://x').pathname] ?? 500;
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ status }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const run = (markdown: string) => runReadme(markdown, { cwd: tmpdir(), env: { ...process.env, BASE: base } });

describe('Function: shellBlocks', () => {
  it('finds the sh and bash blocks in order, with their first line of code and skip reasons', () => {
    // Prepare
    const text = readme(
      sh('echo one'),
      '```json',
      '{"not": "shell"}',
      '```',
      '<!-- readme-test: skip — needs AWS credentials -->',
      '',
      '```bash',
      'npx serverless deploy',
      '```',
    );

    // Act
    const blocks = shellBlocks(text);

    // Assess
    expect(blocks.map((b) => ({ index: b.index, line: b.line, lines: b.lines, skip: b.skip }))).toEqual([
      { index: 1, line: 4, lines: ['echo one'], skip: undefined },
      { index: 2, line: 13, lines: ['npx serverless deploy'], skip: 'needs AWS credentials' },
    ]);
  });

  it('refuses a skip marker that does not say why', () => {
    expect(() => shellBlocks(readme('<!-- readme-test: skip -->', sh('true')))).toThrow(/must say why/);
  });
});

describe('Function: statements', () => {
  it('keeps a command together across continuations, quotes and here-documents, and reads its announcements', () => {
    // Prepare
    const [block] = shellBlocks(
      readme(
        sh(
          'curl -sS -X POST $BASE/taken \\',
          '  -d \'{"a":',
          "  1}'   # → 409",
          'ID=$(curl -sS -d @- $BASE/ok <<JSON | jq -r .id',
          '{"n": $((1 + 2))}',
          'JSON',
          ')',
          'echo "#not a comment → 404"',
          'URL="$BASE/auth?to=$(jq -rn --arg u "$R" \'$u|@uri\')"',
          'curl -sS "$URL"   # → 400',
        ),
      ),
    );

    // Act
    const found = statements(block!);

    // Assess: a `$(` inside double quotes opens one substitution, closed by its one `)`.
    expect(found.map((s) => [s.start, s.end, s.announced])).toEqual([
      [4, 6, [409]],
      [7, 10, []],
      [11, 11, []],
      [12, 12, []],
      [13, 13, [400]],
    ]);
  });
});

describe('Function: runReadme', () => {
  it('passes a README whose blocks succeed, with its announced error statuses, in one shell', async () => {
    // Act
    const result = await run(
      readme(
        sh('N=$(curl -sS --fail-with-body $BASE/ok | jq .status)', 'curl -sS $BASE/taken   # → 409'),
        '<!-- readme-test: skip — would fail: it must not run -->',
        sh('exit 1'),
        sh(
          '# Variables of earlier blocks are still set.',
          'test "$N" = 200',
          'curl -sS --fail-with-body -X POST $BASE/created',
        ),
      ),
    );

    // Assess
    expect(result.failures).toEqual([]);
    expect(result.exitCode).toBe(0);
    expect(result.transfers.map((t) => [t.line, t.method, t.status, t.url])).toEqual([
      [4, 'GET', 200, `${base}/ok`],
      [5, 'GET', 409, `${base}/taken`],
      [16, 'POST', 201, `${base}/created`],
    ]);
  });

  it('fails on an error status the README does not announce, naming the block and the command', async () => {
    // Act
    const result = await run(
      readme(sh('curl -sS $BASE/ok'), sh('curl -sS $BASE/missing \\', '  -H "Accept: application/json"')),
    );

    // Assess
    expect(result.exitCode).toBe(0);
    expect(result.failures).toHaveLength(1);
    expect(result.failures[0]).toContain(`HTTP 404 to GET ${base}/missing, which the README does not announce`);
    expect(result.failures[0]).toContain(
      'block 2 (README line 8), command at README line 8:\ncurl -sS $BASE/missing \\\n  -H "Accept: application/json"',
    );
    expect(result.failures[0]).toContain('answer: {"status":404}');
  });

  it('fails when a block exits non-zero, naming the command, and runs nothing after it', async () => {
    // Act
    const result = await run(
      readme(sh('echo before', 'curl -sS --fail-with-body $BASE/missing   # → 404', 'curl -sS $BASE/ok')),
    );

    // Assess
    expect(result.exitCode).toBe(22);
    expect(result.failures).toHaveLength(1);
    expect(result.failures[0]).toContain("the README's shell blocks exited with status 22");
    expect(result.failures[0]).toContain(
      'command at README line 5:\ncurl -sS --fail-with-body $BASE/missing   # → 404',
    );
    expect(result.output).toContain('before\n');
    expect(result.output).toContain('{"status":404}');
    expect(result.output).toContain('curl: (22) The requested URL returned error: 404');
    expect(result.transfers.map((t) => t.url)).toEqual([`${base}/missing`]);
  });

  it('fails when a command fails outside curl, and when a polling loop gives up', async () => {
    // Prepare
    const poll =
      'until_ok() { for _ in 1 2 3; do if eval "$1"; then return 0; fi; done; echo "gave up: $1" >&2; return 1; }';

    // Act
    const failed = await run(readme(sh('grep -q needle /dev/null')));
    const gaveUp = await run(readme(sh(poll, "until_ok 'curl -sS $BASE/ok | grep -q never'", 'echo after')));

    // Assess
    expect(failed.failures).toEqual([
      expect.stringContaining(
        'exited with status 1\nat block 1 (README line 4), command at README line 4:\ngrep -q needle /dev/null',
      ),
    ]);
    expect(gaveUp.failures).toEqual([
      expect.stringContaining("command at README line 5:\nuntil_ok 'curl -sS $BASE/ok | grep -q never'"),
    ]);
    expect(gaveUp.failures[0]).toContain('gave up: curl');
    expect(gaveUp.transfers).toHaveLength(3);
    expect(gaveUp.output).not.toContain('after');
  });

  it('fails when an announced status is not what the command was answered', async () => {
    // Act
    const result = await run(readme(sh('curl -sS $BASE/ok   # → 409')));

    // Assess
    expect(result.failures).toEqual([
      expect.stringContaining('the README announces HTTP 409, but the command was answered 200'),
    ]);
  });
});
