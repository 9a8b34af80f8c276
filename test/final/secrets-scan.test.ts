import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { dynamo } from '#shared/aws/dynamodb';
import { MIN_SECRET_LENGTH, readRemembered, scanItems, scanLogs, SecretFinder, type ItemFinding } from './secrets-scan';

/**
 * After every other test of the run (the `final` project): no client secret, refresh token, access
 * token, ID token, authorization code, API key, webhook secret, private key or credential data that a
 * test created or received (test/support/secrets.ts) is in any line the logger wrote in any worker, or
 * in plaintext in any item of the run's table. Run alone, it fails: there is nothing to scan.
 */
const runDir = inject('testArtifacts');
const finder = new SecretFinder(readRemembered(runDir));

/** The first findings (each names the secret's kind and where it was), and how many there are. */
const expectNone = (findings: string[], where: string) =>
  expect(findings.slice(0, 50), `${findings.length} secrets found in ${where}`).toEqual([]);

describe('the secrets scan of the whole run', () => {
  it('has secrets to look for', () => {
    expect(
      finder.size,
      `no secret of ${MIN_SECRET_LENGTH}+ characters was remembered in ${runDir}: run it with the other tests (npx vitest run)`,
    ).toBeGreaterThan(0);
  });

  it('finds no secret in any log line of any worker', () => {
    const { lines, files, findings } = scanLogs(runDir, finder);
    expect(
      lines,
      `no log line was written in ${runDir}/logs (${files} files): is the logger's capture installed (test/support/setup-env.ts)?`,
    ).toBeGreaterThan(0);
    expectNone(
      findings.map((f) => `${f.what}: ${f.file}:${f.line}`),
      'log lines',
    );
  });

  it('finds no secret in plaintext in any item of the table', async () => {
    const findings: ItemFinding[] = [];
    let scanned = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const page = await dynamo.send(
        new ScanCommand({ TableName: inject('stackEnv').TABLE_NAME, ExclusiveStartKey: start }),
      );
      scanned += page.Items?.length ?? 0;
      findings.push(...scanItems(page.Items ?? [], finder));
      start = page.LastEvaluatedKey;
    } while (start);
    expect(scanned, 'the table of the run is empty').toBeGreaterThan(0);
    expectNone(
      findings.map((f) => `${f.what}: item ${f.pk} / ${f.sk}, attribute ${f.attribute}`),
      `${scanned} items of the table`,
    );
  }, 600_000);
});
