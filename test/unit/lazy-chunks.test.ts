import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, type BuildOptions, type Plugin } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { esbuildOptions } from '../../scripts/local-stack/build';
import { ROOT } from '../../scripts/local-stack/serverless-config';

/**
 * The lazy-chunks esbuild plugin (scripts/esbuild-plugins.cjs): an import of `#shared/lazy/<name>`
 * is left out of the bundle, built beside it as `<bundle>.lazy/<name>.cjs`, and loaded by the first
 * read of one of its exports, whether the import was static or dynamic.
 */
const require = createRequire(import.meta.url);
const plugins = require(join(ROOT, 'scripts/esbuild-plugins.cjs')) as Plugin[];
const lazyChunks = plugins.find((p) => p.name === 'lazy-chunks')!;
const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'lazy-chunks-'));
  dirs.push(dir);
  return dir;
};

/** Bundles a snippet of Switchboard code with serverless.yml's esbuild options (plugins included) into a temporary directory. */
async function bundleSnippet(lines: string[]): Promise<{ dir: string; outfile: string }> {
  const dir = tempDir();
  const outfile = join(dir, 'handler.cjs');
  await build({
    ...esbuildOptions(),
    absWorkingDir: ROOT,
    stdin: { contents: lines.join('\n'), resolveDir: ROOT, loader: 'ts' },
    outfile,
    logLevel: 'silent',
  });
  return { dir, outfile };
}

/** A package of its own: `#shared/*` as in Switchboard's package.json, one lazy module over a "library" that says when it loads. */
function project(): string {
  const dir = tempDir();
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ type: 'module', imports: { '#shared/*': './shared/*.ts' } }),
  );
  mkdirSync(join(dir, 'shared/lazy'), { recursive: true });
  mkdirSync(join(dir, 'node_modules/tiny-library'), { recursive: true });
  writeFileSync(
    join(dir, 'node_modules/tiny-library/package.json'),
    JSON.stringify({ name: 'tiny-library', type: 'module', main: 'index.js' }),
  );
  writeFileSync(
    join(dir, 'node_modules/tiny-library/index.js'),
    'globalThis.loads = (globalThis.loads ?? 0) + 1;\nexport const shout = (s) => `${s.toUpperCase()}! (LIBRARY-BODY)`;\nexport const VERSION = 3;\n',
  );
  writeFileSync(join(dir, 'shared/lazy/tiny.ts'), "export { shout, VERSION } from 'tiny-library';\n");
  writeFileSync(
    join(dir, 'static.ts'),
    "import { shout } from '#shared/lazy/tiny';\nexport const handler = (s: string) => shout(s);\nexport const loads = () => (globalThis as { loads?: number }).loads ?? 0;\n",
  );
  writeFileSync(
    join(dir, 'dynamic.ts'),
    "export const handler = async (s: string) => { const { shout, VERSION } = await import('#shared/lazy/tiny'); return `${shout(s)} v${VERSION}`; };\nexport const loads = () => (globalThis as { loads?: number }).loads ?? 0;\n",
  );
  return dir;
}

const cjs = (dir: string): BuildOptions => ({
  absWorkingDir: dir,
  bundle: true,
  platform: 'node',
  target: 'node24',
  format: 'cjs',
  minify: true,
  outExtension: { '.js': '.cjs' },
  logLevel: 'silent',
});

/** Runs `code` in a fresh node with `bundle` required as `m`; returns what it prints. */
const run = (bundle: string, code: string) =>
  execFileSync(process.execPath, ['-e', `const m = require(${JSON.stringify(bundle)}); (async () => { ${code} })()`], {
    encoding: 'utf8',
  }).trim();

describe('esbuild plugin: lazy-chunks', () => {
  it('leaves the lazy module out of the bundle and writes it beside each bundle that uses it, in one build of several entries', async () => {
    const dir = project();
    const result = await build({
      ...cjs(dir),
      entryPoints: ['static.ts', 'dynamic.ts'],
      outdir: 'out',
      plugins: [lazyChunks],
    });
    expect(result.errors).toEqual([]);
    for (const name of ['static', 'dynamic']) {
      expect(readFileSync(join(dir, 'out', `${name}.cjs`), 'utf8')).not.toContain('LIBRARY-BODY');
      expect(readdirSync(join(dir, 'out', `${name}.lazy`))).toEqual(['tiny.cjs']);
      expect(readFileSync(join(dir, 'out', `${name}.lazy`, 'tiny.cjs'), 'utf8')).toContain('LIBRARY-BODY');
    }
  });

  it('loads the chunk on the first read of an export, not when the bundle loads (static import)', async () => {
    const dir = project();
    await build({ ...cjs(dir), entryPoints: ['static.ts'], outdir: 'out', plugins: [lazyChunks] });
    const printed = run(
      join(dir, 'out', 'static.cjs'),
      "const before = m.loads(); const out = m.handler('hi'); m.handler('again'); console.log(JSON.stringify([before, out, m.loads()]));",
    );
    expect(JSON.parse(printed)).toEqual([0, 'HI! (LIBRARY-BODY)', 1]);
  });

  it('gives a dynamic import the named exports of the chunk, loaded once', async () => {
    const dir = project();
    await build({ ...cjs(dir), entryPoints: ['dynamic.ts'], outdir: 'out', plugins: [lazyChunks] });
    const printed = run(
      join(dir, 'out', 'dynamic.cjs'),
      "const before = m.loads(); const out = await m.handler('hi'); await m.handler('again'); console.log(JSON.stringify([before, out, m.loads()]));",
    );
    expect(JSON.parse(printed)).toEqual([0, 'HI! (LIBRARY-BODY) v3', 1]);
  });

  it('finds the chunk beside the bundle wherever the bundle is moved with it', async () => {
    const dir = project();
    await build({
      ...cjs(dir),
      entryPoints: ['static.ts'],
      outfile: join(dir, 'out', 'handler.cjs'),
      plugins: [lazyChunks],
    });
    const moved = join(tempDir(), 'task');
    mkdirSync(join(moved, 'handler.lazy'), { recursive: true });
    writeFileSync(join(moved, 'handler.cjs'), readFileSync(join(dir, 'out', 'handler.cjs')));
    writeFileSync(join(moved, 'handler.lazy', 'tiny.cjs'), readFileSync(join(dir, 'out', 'handler.lazy', 'tiny.cjs')));
    expect(run(join(moved, 'handler.cjs'), "console.log(m.handler('moved'))")).toBe('MOVED! (LIBRARY-BODY)');
  });

  it('writes nothing when the build writes nothing', async () => {
    const dir = project();
    const result = await build({
      ...cjs(dir),
      entryPoints: ['static.ts'],
      outdir: 'out',
      write: false,
      plugins: [lazyChunks],
    });
    expect(result.outputFiles.map((f) => f.path)).toEqual([join(dir, 'out', 'static.cjs')]);
    expect(existsSync(join(dir, 'out'))).toBe(false);
  });

  it('refuses a lazy module that would bundle a module of ours (a second copy beside the bundle)', async () => {
    const dir = project();
    mkdirSync(join(dir, 'shared/errors'), { recursive: true });
    writeFileSync(join(dir, 'shared/errors/index.ts'), 'export class OurError extends Error {}\n');
    writeFileSync(join(dir, 'shared/lazy/ours.ts'), "export { OurError } from '../errors/index';\n");
    writeFileSync(
      join(dir, 'uses-ours.ts'),
      "import { OurError } from '#shared/lazy/ours';\nexport const make = () => new OurError('x');\n",
    );
    await expect(
      build({ ...cjs(dir), entryPoints: ['uses-ours.ts'], outdir: 'out', plugins: [lazyChunks] }),
    ).rejects.toThrow(/lazy chunk ours would bundle modules of ours .*errors.*libraries only/s);
  });

  it('refuses an output format other than CommonJS', async () => {
    const dir = project();
    await expect(
      build({ ...cjs(dir), format: 'esm', entryPoints: ['static.ts'], outdir: 'out', plugins: [lazyChunks] }),
    ).rejects.toThrow(/lazy-chunks needs format "cjs"/);
  });

  it("bundles Switchboard's recurrence rules with serverless.yml's options: rrule in the chunk, loaded by the first rule read", async () => {
    const { dir, outfile } = await bundleSnippet([
      "import { normalizeRecurrence } from '#shared/calendar/recurrence';",
      "export const loaded = () => Object.keys(require.cache).filter((f) => f.includes('.lazy')).map((f) => f.slice(f.lastIndexOf('/') + 1));",
      "export const rule = () => normalizeRecurrence(['RRULE:FREQ=WEEKLY;COUNT=3'], { object: 'timespan', start_time: 1767261600, end_time: 1767265200 }, 'Europe/Paris');",
    ]);
    expect(readdirSync(join(dir, 'handler.lazy'))).toEqual(['rrule.cjs']);
    expect(JSON.parse(run(outfile, 'console.log(JSON.stringify([m.loaded(), m.rule(), m.loaded()]))'))).toEqual([
      [],
      ['RRULE:FREQ=WEEKLY;COUNT=3'],
      ['rrule.cjs'],
    ]);
  });

  it('makes a chunk missing from beside the bundle an error, never taken for malformed input (clean, iCalendar, recurrence)', async () => {
    const { dir, outfile } = await bundleSnippet([
      "import { cleanMessageBody } from '#shared/mail/clean';",
      "import { parseCalendar } from '#shared/calendar/ical';",
      "import { normalizeRecurrence } from '#shared/calendar/recurrence';",
      'const attempt = (f: () => unknown) => { try { return { returned: f() }; } catch (error) { return { threw: (error as Error).constructor.name, missing: (error as { code?: string }).code === "MODULE_NOT_FOUND" }; } };',
      'export const attempts = () => [',
      "  attempt(() => cleanMessageBody('<p>Hello</p>')),",
      "  attempt(() => parseCalendar('BEGIN:VCALENDAR\\r\\nEND:VCALENDAR\\r\\n')),",
      "  attempt(() => normalizeRecurrence(['RRULE:FREQ=DAILY;COUNT=2'], { object: 'date', date: '2027-01-01' }, 'UTC')),",
      '];',
    ]);
    expect(readdirSync(join(dir, 'handler.lazy')).sort()).toEqual(['clean.cjs', 'ical.cjs', 'rrule.cjs']);
    rmSync(join(dir, 'handler.lazy'), { recursive: true });
    expect(JSON.parse(run(outfile, 'console.log(JSON.stringify(m.attempts()))'))).toEqual([
      { threw: 'Error', missing: true },
      { threw: 'Error', missing: true },
      { threw: 'Error', missing: true },
    ]);
  });
});
