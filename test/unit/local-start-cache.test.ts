import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import JSZip from 'jszip';
import { afterAll, describe, expect, it } from 'vitest';
import { buildFunctionBundles } from '../../scripts/local-stack/build';
import { entries, makingFolder, prune, publish } from '../../scripts/local-stack/cache';
import { startDynamoDbLocal } from '../../scripts/local-stack/dynamodb-local';
import { freePort } from '../../scripts/local-stack/index';
import { readZipEntry, rewriteZip } from '../../scripts/local-stack/zip';

/**
 * What `npm start` keeps between starts (scripts/local-stack/cache.ts): entries made whole before
 * they appear, the function bundles reused only while every input is unchanged, and DynamoDB Local's
 * class archive made by the first start on its way out and used by the next.
 */
const scratchDirs: string[] = [];
const scratch = (name: string) => {
  const dir = mkdtempSync(join(tmpdir(), `start-cache-${name}-`));
  scratchDirs.push(dir);
  return dir;
};
// Bundles and jars: tens of megabytes each.
afterAll(() => {
  for (const dir of scratchDirs) rmSync(dir, { recursive: true, force: true });
});
/** Every file under `dir`, by its path from there, with a digest of its bytes. */
function files(dir: string, under = ''): Record<string, string> {
  const found: Record<string, string> = {};
  for (const entry of readdirSync(join(dir, under), { withFileTypes: true })) {
    const path = join(under, entry.name);
    if (entry.isDirectory()) Object.assign(found, files(dir, path));
    else
      found[path] = createHash('sha256')
        .update(readFileSync(join(dir, path)))
        .digest('hex');
  }
  return found;
}

describe('Function: rewriteZip', () => {
  it('replaces and adds files, and copies every other entry as it was', async () => {
    // Prepare: a jar whose manifest's class path runs over continuation lines
    const zip = new JSZip();
    zip.file(
      'META-INF/MANIFEST.MF',
      'Manifest-Version: 1.0\r\nClass-Path: . lib/a.jar\r\n  lib/b.jar\r\nMain-Class: x.Y\r\n\r\n',
    );
    zip.file('x/Y.class', Buffer.alloc(5000, 7), { compression: 'DEFLATE' });
    zip.file('notes.txt', 'stored as is', { compression: 'STORE' });
    const source = join(scratch('zip'), 'in.jar');
    writeFileSync(source, await zip.generateAsync({ type: 'nodebuffer' }));
    const target = join(scratch('zip'), 'out.jar');
    const manifest = readZipEntry(source, 'META-INF/MANIFEST.MF')!.toString('utf8');

    // Act
    rewriteZip(source, target, {
      'META-INF/MANIFEST.MF': Buffer.from(manifest.replace(/^Class-Path:.*\r?\n(?: .*\r?\n)*/m, '')),
      'Launcher.class': Buffer.from('launcher'),
    });

    // Assess: read back by another zip reader, and by ours
    const out = await JSZip.loadAsync(readFileSync(target));
    expect(
      Object.keys(out.files)
        .filter((name) => !name.endsWith('/'))
        .sort(),
    ).toEqual(['Launcher.class', 'META-INF/MANIFEST.MF', 'notes.txt', 'x/Y.class']);
    expect(await out.file('META-INF/MANIFEST.MF')!.async('string')).toBe(
      'Manifest-Version: 1.0\r\nMain-Class: x.Y\r\n\r\n',
    );
    expect(await out.file('x/Y.class')!.async('nodebuffer')).toEqual(Buffer.alloc(5000, 7));
    expect(readZipEntry(target, 'notes.txt')!.toString()).toBe('stored as is');
    expect(readZipEntry(target, 'Launcher.class')!.toString()).toBe('launcher');
    expect(readZipEntry(target, 'missing')).toBeUndefined();
  });

  it('makes a zip of just the given files without a source', async () => {
    const target = join(scratch('zip'), 'new.jar');
    rewriteZip(undefined, target, { 'A.class': Buffer.from('a') });
    expect(Object.keys((await JSZip.loadAsync(readFileSync(target))).files)).toEqual(['A.class']);
  });
});

describe('Function: publish', () => {
  it('shows an entry only once made, and the second maker of the same entry loses', () => {
    // Prepare
    const dir = scratch('publish');
    const first = makingFolder(dir, 'entry');
    writeFileSync(join(first, 'file'), 'first');
    expect(entries(dir)).toEqual([]);

    // Act
    const won = publish(first, dir, 'entry');
    const second = makingFolder(dir, 'entry');
    writeFileSync(join(second, 'file'), 'second');
    const lost = publish(second, dir, 'entry');

    // Assess
    expect([won, lost]).toEqual([true, false]);
    expect(readFileSync(join(dir, 'entry', 'file'), 'utf8')).toBe('first');
    expect(readdirSync(dir)).toEqual(['entry']);
  });
});

describe('Function: prune', () => {
  it('keeps the newest entries and what a live process is making, and removes the rest', () => {
    const dir = scratch('prune');
    for (const [name, at] of [
      ['old', new Date('2026-01-01')],
      ['new', new Date('2026-01-02')],
    ] as const) {
      mkdirSync(join(dir, name));
      utimesSync(join(dir, name), at, at);
    }
    makingFolder(dir, 'mine');
    mkdirSync(join(dir, 'theirs.tmp-99999999'));
    prune(dir, 1);
    expect(readdirSync(dir).sort()).toEqual(['mine.tmp-' + process.pid, 'new']);
  });
});

describe('Function: buildFunctionBundles', () => {
  it('copies the last build while every input is unchanged, and builds again when one changed', async () => {
    // Prepare
    const cacheDir = scratch('build');
    const [a, b, c] = ['a', 'b', 'c'].map((name) => join(scratch('bundles'), name));

    // Act
    const built = await buildFunctionBundles(a!, { cacheDir });
    const copied = await buildFunctionBundles(b!, { cacheDir });
    // An input that changed since: its digest no longer matches the one kept.
    const [kept] = entries(join(cacheDir, 'functions'));
    const record = join(cacheDir, 'functions', kept!, 'build.json');
    const build = JSON.parse(readFileSync(record, 'utf8')) as { inputs: Record<string, string> };
    build.inputs[Object.keys(build.inputs).find((path) => path.startsWith('functions/'))!] = 'changed';
    writeFileSync(record, JSON.stringify(build));
    const rebuilt = await buildFunctionBundles(c!, { cacheDir });

    // Assess
    expect([built.fromCache, copied.fromCache, rebuilt.fromCache]).toEqual([false, true, false]);
    expect(built.entries.length).toBeGreaterThan(10);
    const bundles = files(a!);
    expect(Object.keys(bundles)).toContain(join('functions', 'grants', 'handler.cjs'));
    expect(files(b!)).toEqual(bundles);
    expect(files(c!)).toEqual(bundles);
  }, 120_000);
});

describe('Function: startDynamoDbLocal', () => {
  it('leaves its class archive and compiled launcher on the way out, and the next start uses them', async () => {
    // Prepare
    const cacheDir = scratch('dynamodb');
    const listTables = (endpoint: string) =>
      fetch(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': 'DynamoDB_20120810.ListTables',
          authorization:
            'AWS4-HMAC-SHA256 Credential=local/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
        },
        body: '{}',
      });

    // Act
    const first = await startDynamoDbLocal({ port: await freePort(), cacheDir });
    const [folder] = readdirSync(join(cacheDir, 'dynamodb-local')).filter((name) => !name.endsWith('.lock'));
    const lockedWhileRunning = existsSync(join(cacheDir, 'dynamodb-local', `${folder}.lock`));
    await first.stop();
    const made = readdirSync(join(cacheDir, 'dynamodb-local', folder!)).sort();
    const second = await startDynamoDbLocal({ port: await freePort(), cacheDir });
    const answer = await listTables(second.endpoint);
    await second.stop();

    // Assess
    expect(lockedWhileRunning).toBe(true);
    expect(made).toEqual(['DynamoDBLocal.jar', 'classes.jsa', 'launcher.jar']);
    expect(readdirSync(join(cacheDir, 'dynamodb-local'))).toEqual([folder]);
    expect(answer.status).toBe(200);
  }, 120_000);
});
