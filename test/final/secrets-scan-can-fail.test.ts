import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { logsDir, secretsDir, type RememberedSecret } from '../support/secrets';
import { readRemembered, scanItems, scanLogs, SecretFinder } from './secrets-scan';

/**
 * The scan of test/final/secrets-scan.test.ts can fail: fake runs in a temporary directory, with a
 * remembered secret in a log line or an item, are caught and named; clean ones are not.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function fakeRun(secrets: RememberedSecret[], logs: Record<string, string[]>): string {
  const dir = mkdtempSync(join(tmpdir(), 'secrets-scan-'));
  dirs.push(dir);
  mkdirSync(secretsDir(dir));
  mkdirSync(logsDir(dir));
  writeFileSync(join(secretsDir(dir), '100.txt'), secrets.map((s) => `${JSON.stringify(s)}\n`).join(''));
  for (const [name, lines] of Object.entries(logs))
    writeFileSync(join(logsDir(dir), name), lines.map((l) => `${l}\n`).join(''));
  return dir;
}

const logLine = (fields: Record<string, unknown>) =>
  JSON.stringify({
    level: 'info',
    time: '2026-11-23T10:00:00.000Z',
    message: 'request',
    service: 'switchboard',
    ...fields,
  });

describe('Function: the secrets scan', () => {
  it('names the kind of secret and the log file and line it is in', () => {
    // Prepare
    const refresh = `sbrt_${randomBytes(24).toString('base64url')}`;
    const clientSecret = `client "secret" ${randomBytes(8).toString('hex')}`;
    const run = fakeRun(
      [
        { what: 'refresh_token in the answer to POST /v3/connect/token', value: refresh },
        { what: 'client_secret sent with POST /v3/connectors', value: clientSecret },
      ],
      {
        '200.log': [logLine({ route: 'POST /v3/connect/token' }), logLine({ note: `refreshed with ${refresh}` })],
        '300.log': [
          logLine({ route: 'GET /v3/grants/me' }),
          logLine({ route: 'POST /v3/connectors' }),
          logLine({ error: { message: `bad ${clientSecret}` } }),
        ],
      },
    );
    const finder = new SecretFinder(readRemembered(run));
    // Act
    const { lines, files, findings } = scanLogs(run, finder);
    // Assess: the JSON-escaped secret is found too.
    expect({ lines, files }).toEqual({ lines: 5, files: 2 });
    expect(findings).toEqual([
      { file: join(logsDir(run), '200.log'), line: 2, what: 'refresh_token in the answer to POST /v3/connect/token' },
      { file: join(logsDir(run), '300.log'), line: 3, what: 'client_secret sent with POST /v3/connectors' },
    ]);
  });

  it('finds a secret URL-encoded, and one line of a private key', () => {
    const key = generateKeyPairSync('rsa', { modulusLength: 1024 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    const state = `a/b+c=d ${randomBytes(6).toString('hex')}`;
    const finder = new SecretFinder([
      { what: 'private_key', value: key },
      { what: 'app state', value: state },
    ]);
    expect(finder.find(logLine({ key_line: key.split('\n')[3] })).map((s) => s.what)).toEqual(['private_key']);
    expect(
      finder.find(logLine({ url: `https://app.example/cb?state=${encodeURIComponent(state)}` })).map((s) => s.what),
    ).toEqual(['app state']);
    expect(finder.find(logLine({ form: new URLSearchParams({ state }).toString() })).map((s) => s.what)).toEqual([
      'app state',
    ]);
    // The PEM armour is no secret of its own.
    expect(finder.find(logLine({ message: '-----BEGIN PRIVATE KEY-----' }))).toEqual([]);
  });

  it('finds nothing in clean lines, and leaves short secrets out', () => {
    const token = `sbat_${randomBytes(24).toString('base64url')}`;
    const run = fakeRun(
      [
        { what: 'access_token', value: token },
        { what: 'short client_secret', value: 'y' },
      ],
      { '400.log': [logLine({ route: 'GET /v3/grants/me', token_prefix: token.slice(0, 11) }), logLine({ y: 'y' })] },
    );
    const finder = new SecretFinder(readRemembered(run));
    expect(finder.size).toBe(1);
    expect(scanLogs(run, finder)).toEqual({ lines: 2, files: 1, findings: [] });
  });

  it('finds a secret in plaintext in any attribute of an item, and none in hashes or sealed values', () => {
    const apiKey = `sbk_${randomBytes(24).toString('base64url')}`;
    const finder = new SecretFinder([{ what: 'API key', value: apiKey }]);
    const items = [
      { pk: 'app#1', sk: 'key', key_hash: 'f'.repeat(64), sealed: 's1:abc:def:ghi' },
      { pk: 'app#2', sk: 'note', nested: { list: [{ text: `key ${apiKey}` }] } },
      { pk: 'app#3', sk: 'set', tags: new Set(['x', apiKey]) },
      { pk: 'app#4', sk: 'binary', blob: Buffer.from(`--${apiKey}--`) },
    ];
    expect(scanItems(items, finder)).toEqual([
      { pk: 'app#2', sk: 'note', attribute: 'nested', what: 'API key' },
      { pk: 'app#3', sk: 'set', attribute: 'tags', what: 'API key' },
      { pk: 'app#4', sk: 'binary', attribute: 'blob', what: 'API key' },
    ]);
  });

  it('finds nothing to scan in a run that remembered nothing and logged nothing', () => {
    const run = fakeRun([], {});
    const finder = new SecretFinder(readRemembered(run));
    expect(finder.size).toBe(0);
    expect(scanLogs(run, finder)).toEqual({ lines: 0, files: 0, findings: [] });
  });
});
